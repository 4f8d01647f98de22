"""Processes of one host share one copy of a SQLite store's vectors (``files.Persisted.room``).

Real files, real child processes: the first process to load a slot saves its vectors
next to the database and maps them; another process maps the same file. Writes of
either process are seen by the other's next search, and a user's search never returns
another user's vectors, whichever process loaded or saved them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memorybank.records import Thread
from memorybank.stores.contract._sync.store import VectorItem
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.stores.vectors import exact as _vectors
from memorybank.stores.vectors import files as _vector_files
from tests.stores._shared_vectors_child import MODEL, SHARE_MIN_ROWS, mapped_f32, search, vec

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps"),
    pytest.mark.timeout(300),
]

ROOT = Path(__file__).resolve().parents[2]
N = 300  # vectors: even seeds alice's (thread a), odd ones bob's (thread b)


class Child:
    """The other process: one JSON command a line, one JSON answer a line."""

    def __init__(self, path: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + str(ROOT))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.stores._shared_vectors_child", str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )

    def __call__(self, **command: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the child process ended"
        return dict(json.loads(line))

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            assert self.proc.wait(60) == 0
        finally:
            self.proc.stdout.close()


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteStore]:
    monkeypatch.setattr(_vectors, "SHARE_MIN_ROWS", SHARE_MIN_ROWS)
    store = SQLiteStore(tmp_path / "v.db")
    now = datetime.now(UTC)
    for tid, user in (("a", "alice"), ("b", "bob")):
        store.thread_create(Thread(tid, "t", user, None, None, {}, "active", now, now))
    store.vector_put(
        "t", [VectorItem("entry", f"e{i}", MODEL, vec(i), "ab"[i % 2]) for i in range(N)]
    )
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def child(store: SQLiteStore) -> Iterator[Child]:
    other = Child(Path(store.path))
    try:
        yield other
    finally:
        other.close()


def _manifest(store: SQLiteStore) -> dict[str, Any]:
    (found,) = _vector_files.directory(store.path).glob("*.json")
    return dict(json.loads(found.read_text()))


def _f32(store: SQLiteStore) -> str:
    """The ``.f32`` file the manifest names now."""
    manifest = _manifest(store)
    (f32,) = _vector_files.directory(store.path).glob(f"*.{manifest['token']}.f32")
    return str(f32)


def _mine(paths: list[str], store: SQLiteStore) -> list[str]:
    """The paths of ``paths`` in this store's folder (this process may map others':
    an earlier test's store)."""
    folder = str(_vector_files.directory(store.path))
    return [p for p in paths if p.startswith(folder + os.sep)]


def test_two_processes_map_one_copy_and_see_each_others_writes(
    store: SQLiteStore, child: Child
) -> None:
    # this process loads the slot from the table, saves it and maps the file
    mine = search(store, 10, "alice")
    assert mine["ids"][0] == "e10" and mine["shared"]
    assert _manifest(store)["count"] == N and "usearch" not in _manifest(store)["files"]
    assert _mine(mapped_f32(), store) == [_f32(store)]
    # the other process maps the same file: one copy of the vectors for both
    theirs = child(op="search", seed=10, user="alice")
    assert theirs["ids"][0] == "e10" and theirs["shared"]
    assert theirs["maps"] == [_f32(store)]
    # never another user's vectors, in either process
    assert "e11" not in child(op="search", seed=11, user="alice")["ids"]
    assert child(op="search", seed=11, user="bob")["ids"][0] == "e11"
    assert all(int(i[1:]) % 2 == 0 for i in search(store, 11, "alice")["ids"])

    # a write here is seen by the other's next search, and the other way round
    store.vector_put("t", [VectorItem("entry", "new-a", MODEL, vec(9001), "a")])
    assert child(op="search", seed=9001, user="alice")["ids"][0] == "new-a"
    assert "new-a" not in child(op="search", seed=9001, user="bob")["ids"]
    child(op="put", id="new-b", seed=9002, thread="b")
    assert search(store, 9002, "bob")["ids"][0] == "new-b"
    assert "new-b" not in search(store, 9002, "alice")["ids"]

    # a replaced vector is searched as it is now (its old value stays only in the file,
    # which no search reads for a row deleted since)
    store.vector_put("t", [VectorItem("entry", "e10", MODEL, [-x for x in vec(10)], "a")])
    for got in (child(op="search", seed=10, user="alice"), search(store, 10, "alice")):
        scores = dict(zip(got["ids"], got["scores"], strict=True))
        assert scores.get("e10", -1.0) < 0


def test_a_slot_that_outgrows_its_room_is_shared_again(store: SQLiteStore, child: Child) -> None:
    assert search(store, 4, "alice")["shared"]
    first = _f32(store)
    assert child(op="search", seed=4, user="alice")["maps"] == [first]
    # more rows than the files' room: this process saves its rows again and maps them
    more = _vector_files.ROOM_MIN + 50
    store.vector_put(
        "t", [VectorItem("entry", f"m{i}", MODEL, vec(20_000 + i), "a") for i in range(more)]
    )
    got = search(store, 20_000 + more - 1, "alice")
    assert got["ids"][0] == f"m{more - 1}" and got["shared"]
    assert _f32(store) != first and _mine(mapped_f32(), store) == [_f32(store)]
    assert _manifest(store)["count"] == N + more
    # the other process catches up from its own mapping (the rows after it read from
    # the table); a new process maps the new files
    assert child(op="search", seed=20_000 + 7, user="alice")["ids"][0] == "m7"
    fresh = Child(Path(store.path))
    try:
        got = fresh(op="search", seed=20_000 + 7, user="alice")
        assert got["ids"][0] == "m7" and got["maps"] == [_f32(store)] and got["shared"]
        assert "m7" not in fresh(op="search", seed=20_000 + 7, user="bob")["ids"]
    finally:
        fresh.close()


def test_damaged_files_are_not_used(store: SQLiteStore) -> None:
    assert search(store, 6, "alice")["shared"]
    path = Path(_f32(store))
    data = bytearray(path.read_bytes())
    data[5] ^= 0xFF  # one bit of one vector: the CRC no longer matches
    path.write_bytes(bytes(data))
    other = Child(Path(store.path))
    try:
        got = other(op="search", seed=6, user="alice")
        assert got["ids"][0] == "e6" and got["scores"][0] > 0.999
        # it read the table, saved its own files and maps those
        assert got["shared"] and got["maps"] == [_f32(store)] and got["maps"] != [str(path)]
    finally:
        other.close()
