"""The SQLite store's persisted ANN index (``<db>.ann/``): reused, caught up, never trusted blindly.

Real files, real usearch, real child processes; a low ``ANN_THRESHOLD`` makes
a few hundred 16-d vectors use the HNSW index.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memorybank.records import Thread
from memorybank.stores.contract._sync.store import VectorItem
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.stores.vectors import exact as _vectors
from memorybank.stores.vectors import files as _vector_files
from tests.recall._ann_child import DIM, EXACT_LIMIT, MODEL, THRESHOLD, vec

pytestmark = [
    pytest.mark.skipif(not _vectors.ann_available(), reason="usearch not installed"),
    pytest.mark.timeout(300),
]

ROOT = Path(__file__).resolve().parents[2]
N = 300


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_vectors, "ANN_THRESHOLD", THRESHOLD)
    monkeypatch.setattr(_vectors, "EXACT_LIMIT", EXACT_LIMIT)
    monkeypatch.setattr(_vectors, "SCOPED_EXACT_LIMIT", EXACT_LIMIT)  # scoped searches too
    monkeypatch.setattr(_vectors, "BACKGROUND_BUILD", False)  # the search waits for the build


def _thread(store: SQLiteStore, tid: str, user: str | None = None) -> None:
    now = datetime.now(UTC)
    store.thread_create(Thread(tid, "t", user, None, None, {}, "active", now, now))


def _search(store: SQLiteStore, seed: int, k: int = 5) -> tuple[str | None, list[str]]:
    hits = store.vector_search("t", vec(seed), model_id=MODEL, kinds=["entry"], k=k)
    slot = store._vector_cache.slots[("t", MODEL, "entry")]  # type: ignore[attr-defined]
    return slot.ann_source, [h.id for h in hits]


def _child(*args: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + str(ROOT))
    out = subprocess.run(
        [sys.executable, "-m", "tests.recall._ann_child", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def _folder(path: Path) -> Path:
    return _vector_files.directory(str(path))


def _manifest(path: Path) -> dict[str, Any]:
    (found,) = _folder(path).glob("*.json")
    return dict(json.loads(found.read_text()))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    """N vectors: odd seeds in thread a (alice), even ones in b and, multiples of 10, c (both
    bob's); the index built and saved."""
    path = tmp_path / "v.db"
    store = SQLiteStore(path)
    try:
        _thread(store, "a", "alice")
        _thread(store, "b", "bob")
        _thread(store, "c", "bob")
        owner = ["c" if i % 10 == 0 else "b" if i % 2 == 0 else "a" for i in range(N)]
        store.vector_put(
            "t", [VectorItem("entry", f"e{i}", MODEL, vec(i), owner[i]) for i in range(N)]
        )
        assert _search(store, 7) == ("built", _search(store, 7)[1])
        assert _search(store, 7)[1][0] == "e7"
    finally:
        store.close()
    yield path


def test_index_is_written_and_reused_by_a_new_process(db: Path) -> None:
    manifest = _manifest(db)
    assert manifest["count"] == N and manifest["dim"] == DIM
    files = sorted(p.suffix for p in _folder(db).iterdir())
    assert files == [".f32", ".i64", ".ids", ".json", ".usearch"]
    got = _child("search", str(db), "11")
    assert got["source"] == "loaded"  # not rebuilt
    assert got["n"] == N and got["ids"][0] == "e11"


def test_stale_index_is_caught_up_after_writes_of_another_process(db: Path) -> None:
    _child("put", str(db), "1000", "40")  # no search there: the files lag by 40 rows
    assert _manifest(db)["count"] == N
    store = SQLiteStore(db)
    try:
        source, ids = _search(store, 1005)
        assert source == "loaded" and ids[0] == "n1005"
        assert _search(store, 3)[1][0] == "e3"
    finally:
        store.close()  # saves the caught-up index
    assert _manifest(db)["count"] == N + 40
    assert _child("search", str(db), "1010") == {
        "source": "loaded",
        "n": N + 40,
        "ids": _child("search", str(db), "1010")["ids"],
    }


def _damage(db: Path, how: str) -> None:
    folder = _folder(db)
    (manifest,) = folder.glob("*.json")
    if how == "garbage manifest":
        manifest.write_bytes(b"{not json")
        return
    part = {
        "truncated index": ".usearch",
        "flipped vector byte": ".f32",
        "missing rowids": ".i64",
        "swapped ids": ".ids",
    }
    (target,) = folder.glob(f"*{part[how]}")
    if how == "truncated index":
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    elif how == "swapped ids":
        ids = json.loads(target.read_text())
        ids[0], ids[1] = ids[1], ids[0]
        target.write_text(json.dumps(ids))
    elif how == "flipped vector byte":
        data = bytearray(target.read_bytes())
        data[len(data) // 3] ^= 0x40
        target.write_bytes(bytes(data))
    else:
        target.unlink()


@pytest.mark.parametrize(
    "how",
    ["truncated index", "flipped vector byte", "missing rowids", "swapped ids", "garbage manifest"],
)
def test_damaged_files_are_detected_and_rebuilt(db: Path, how: str) -> None:
    _damage(db, how)
    got = _child("search", str(db), "21")
    assert got["source"] == "built"
    assert got["ids"][0] == "e21" and got["n"] == N
    assert _child("search", str(db), "22")["source"] == "loaded"  # saved again, whole


@pytest.mark.parametrize("log", ["kept", "pruned"])
def test_deleted_and_replaced_vectors_are_never_returned(db: Path, log: str) -> None:
    other = SQLiteStore(db)
    try:
        other.thread_delete("t", "c")  # every multiple of 10: gone
        # replace the vector with the highest rowid (its new row gets a new rowid)
        other.vector_put("t", [VectorItem("entry", f"e{N - 1}", MODEL, vec(5000), "a")])
    finally:
        other.close()
    if log == "pruned":  # as if the log had dropped these deletions (VECTOR_LOG_KEEP)
        import sqlite3

        conn = sqlite3.connect(db)
        conn.execute("DELETE FROM memorybank_vector_deletes WHERE seq < 5")
        conn.commit()
        conn.close()
    store = SQLiteStore(db)
    try:
        for seed in (4, 10, 298):
            source, ids = _search(store, seed, k=10)
            # kept: the files are current once the logged deletions are applied;
            # pruned: they cannot be caught up, so they are checked row by row
            assert source == ("loaded" if log == "kept" else "adopted")
            assert ids and all(int(i[1:]) % 10 for i in ids)
        assert _search(store, 5000)[1][0] == f"e{N - 1}"
        assert f"e{N - 1}" not in _search(store, N - 1)[1][:1]
    finally:
        store.close()
    gone = np.asarray(vec(10), dtype=np.float32)
    gone /= np.linalg.norm(gone)
    for path in _folder(db).iterdir():  # no trace of a deleted vector in the new files
        data = path.read_bytes()
        assert gone.tobytes() not in data
        assert gone.astype(np.float16).tobytes() not in data
    got = _child("search", str(db), "20")
    assert got["source"] == "loaded" and got["n"] == N - N // 10
    assert got["ids"] and all(int(i[1:]) % 10 for i in got["ids"])


def test_a_delete_after_the_files_are_loaded_edits_a_copy_of_the_mapped_index(
    db: Path,
) -> None:
    """The loaded index is a read-only view of its mapped file (usearch cannot change
    one): a delete in the same process is applied to a copy, and the next files hold
    no trace of the deleted vectors."""
    store = SQLiteStore(db)
    try:
        source, ids = _search(store, 10, k=10)
        assert source == "loaded" and ids[0] == "e10"
        slot = store._vector_cache.slots[("t", MODEL, "entry")]  # type: ignore[attr-defined]
        assert slot.ann_index().memorybank_mapped is not None
        store.thread_delete("t", "c")  # every multiple of 10
        source, ids = _search(store, 10, k=10)
        assert ids and all(int(i[1:]) % 10 for i in ids)
        assert getattr(slot.ann_index(), "memorybank_mapped", None) is None  # a copy
    finally:
        store.close()
    gone = np.asarray(vec(10), dtype=np.float32)
    gone /= np.linalg.norm(gone)
    for path in _folder(db).iterdir():
        data = path.read_bytes()
        assert gone.tobytes() not in data
        assert gone.astype(np.float16).tobytes() not in data


def test_scope_comes_from_the_database_not_the_files(db: Path) -> None:
    from memorybank.stores.contract._sync.store import Visibility

    store = SQLiteStore(db)
    try:
        hits = store.vector_search(
            "t", vec(8), model_id=MODEL, kinds=["entry"], k=10, visible_to=Visibility(None, "alice")
        )
        slot = store._vector_cache.slots[("t", MODEL, "entry")]  # type: ignore[attr-defined]
        assert slot.ann_source == "loaded"
        assert hits and all(int(h.id[1:]) % 2 for h in hits)  # alice owns thread a: odd seeds
    finally:
        store.close()


def _rows(slot: _vectors.VectorSlot) -> list[tuple[Any, ...]]:
    """Each row of a slot: rowid, id, thread, agent, user, visible, alive (codes decoded)."""
    names = {code: value for value, code in slot.codes.items()}
    return [
        (
            int(slot.rowids[i]),
            slot.ids[i],
            slot.threads[i],
            names[int(slot.agent_codes[i])],
            names[int(slot.user_codes[i])],
            bool(slot.visible[i]),
            bool(slot.alive[i]),
        )
        for i in range(slot.n)
    ]


def _read_row_by_row(store: SQLiteStore, kind: str) -> list[tuple[Any, ...]]:
    fresh = _vectors.VectorSlot(DIM)
    fresh.append(store._vector_rows(store._connect(), "t", MODEL, kind, 0))
    return _rows(fresh)


def test_loaded_scope_is_the_databases_row_by_row(db: Path) -> None:
    """A slot loaded from the files has, per row, the thread, owner and liveness a read of
    every row from the database gives, after owners changed behind the files' back."""
    import sqlite3

    raw = sqlite3.connect(db)
    with raw:
        raw.execute("UPDATE memorybank_threads SET user_id = 'carol' WHERE id = 'b'")
        raw.execute("DELETE FROM memorybank_threads WHERE id = 'c'")  # its vectors stay
    raw.close()
    store = SQLiteStore(db)
    try:
        store.vector_put("t", [VectorItem("entry", "e3", MODEL, vec(3), "a")])  # replaced
        source, hits = _search(store, 10)
        assert source == "loaded" and hits[0] != "e10"  # e10 is in thread c, now gone
        slot = store._vector_cache.slots[("t", MODEL, "entry")]  # type: ignore[attr-defined]
        loaded = [r for r in _rows(slot) if r[6]]
        assert loaded == _read_row_by_row(store, "entry")
        assert {r[2:6] for r in loaded} == {
            ("a", None, "alice", True),
            ("b", None, "carol", True),
            ("c", None, None, False),
        }
    finally:
        store.close()


def test_forget_user_removes_the_tenants_files(db: Path) -> None:
    store = SQLiteStore(db)
    try:
        assert _search(store, 1)[0] == "loaded"
        store.forget_user("t", "bob")
        assert not list(_folder(db).iterdir())
        source, ids = _search(store, 4, k=10)
        assert source == "built" and all(int(i[1:]) % 2 for i in ids)
    finally:
        store.close()


def test_memory_database_has_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = SQLiteStore(":memory:")
    try:
        _thread(store, "a")
        store.vector_put("t", [VectorItem("entry", f"e{i}", MODEL, vec(i), "a") for i in range(N)])
        assert _search(store, 9) == ("built", _search(store, 9)[1])
    finally:
        store.close()
    assert list(tmp_path.iterdir()) == []


def test_kill_mid_write_leaves_a_usable_store(db: Path) -> None:
    rng = random.Random()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + str(ROOT))
    upto = 0
    for kill in range(4):
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.recall._ann_child",
                "churn",
                str(db),
                str(10_000 * (kill + 1)),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        assert child.stdout is not None
        first = json.loads(child.stdout.readline())  # one save done, then at a random moment
        time.sleep(rng.uniform(0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        upto = max(upto, first["upto"])
    store = SQLiteStore(db)
    try:
        source, ids = _search(store, 7)
        assert source in ("loaded", "built") and ids[0] == "e7"
        assert _search(store, upto - 1)[1][0] == f"c{upto - 1}"
        slot = store._vector_cache.slots[("t", MODEL, "entry")]  # type: ignore[attr-defined]
        count = store._read(
            lambda conn: conn.execute("SELECT count(*) FROM memorybank_vectors").fetchone()[0]
        )
        assert slot.n == count
    finally:
        store.close()
    assert _child("search", str(db), "7")["source"] == "loaded"


def test_documents_scope_is_read_from_their_records(tmp_path: Path) -> None:
    from memorybank.stores.contract._sync.store import Visibility
    from memorybank.stores.contract.types import Record

    path = tmp_path / "d.db"
    now = datetime.now(UTC)
    store = SQLiteStore(path)
    try:  # even seeds are alice's documents, odd ones bob's
        store.record_put(
            "t",
            [
                Record(
                    "document", f"d{i}", None, "alice" if i % 2 == 0 else "bob", "x", {}, now, now
                )
                for i in range(N)
            ],
        )
        store.vector_put("t", [VectorItem("document", f"d{i}", MODEL, vec(i)) for i in range(N)])
        store.vector_search("t", vec(1), model_id=MODEL, kinds=["document"], k=3)
    finally:
        store.close()
    store = SQLiteStore(path)
    try:
        # d4 changes owner, its vector untouched: the files' scope would be stale
        store.record_put("t", [Record("document", "d4", None, "bob", "x", {}, now, now)])
        for who, parity in (("alice", 0), ("bob", 1)):
            hits = store.vector_search(
                "t",
                vec(4),
                model_id=MODEL,
                kinds=["document"],
                k=10,
                visible_to=Visibility(None, who),
            )
            assert hits and all(int(h.id[1:]) % 2 == parity or h.id == "d4" for h in hits)
            assert ("d4" in [h.id for h in hits]) is (who == "bob")
        slot = store._vector_cache.slots[("t", MODEL, "document")]  # type: ignore[attr-defined]
        assert slot.ann_source == "loaded"
        assert _rows(slot) == _read_row_by_row(store, "document")
    finally:
        store.close()
