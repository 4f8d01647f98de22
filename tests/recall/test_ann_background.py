"""The SQLite store's HNSW index is built in a background thread; searches never wait for it.

Real store, real usearch, real threads; a low ``ANN_THRESHOLD`` makes a few hundred
vectors use the index. A test holds the slot's lock (which the builder needs to
publish the index it built) to keep a build in progress while it searches.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memorybank.records import Thread
from memorybank.stores.contract._sync.store import VectorItem
from memorybank.stores.contract.types import Visibility
from memorybank.stores.sql.common import unit_vector_bytes
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.stores.vectors import exact as _vectors
from memorybank.stores.vectors import files as _vector_files

pytestmark = [
    pytest.mark.skipif(not _vectors.ann_available(), reason="usearch not installed"),
    pytest.mark.timeout(300),
]

MODEL = "test:bg"
DIM = 16
N = 600
#: (thread, user) of each thread; vector i lives in thread OWNER[i % 3]
THREADS = {"a": "alice", "b": "bob", "c": None}
OWNER = ["a", "b", "c"]


def vec(seed: int) -> list[float]:
    return [float(x) for x in np.random.default_rng(seed).standard_normal(DIM)]


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_vectors, "ANN_THRESHOLD", 200)
    monkeypatch.setattr(_vectors, "EXACT_LIMIT", 100)
    monkeypatch.setattr(_vectors, "SCOPED_EXACT_LIMIT", 100)  # scoped searches too
    monkeypatch.setattr(_vectors, "EXTEND_AFTER", 10)
    monkeypatch.setattr(_vectors, "BUILD_BATCH", 16)
    monkeypatch.setattr(_vectors, "BACKGROUND_BUILD", True)


def _builders() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memorybank-ann-build" and t.is_alive()]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "v.db")
    now = datetime.now(UTC)
    for tid, user in THREADS.items():
        s.thread_create(Thread(tid, "t", user, None, None, {}, "active", now, now))
    put(s, 0, N)
    try:
        yield s
    finally:
        s.close()
    assert not _builders()


def put(store: SQLiteStore, first: int, count: int) -> None:
    store.vector_put(
        "t",
        [
            VectorItem("entry", f"e{i}", MODEL, vec(i), OWNER[i % 3])
            for i in range(first, first + count)
        ],
    )


#: scopes searched in every phase: (thread_id, visible_to)
SCOPES: list[tuple[str | None, Visibility | None]] = [
    (None, None),
    (None, Visibility(None, "alice")),
    (None, Visibility(None, "bob")),
    ("a", None),
]


def allowed(i: int, thread_id: str | None, visible_to: Visibility | None) -> bool:
    owner = OWNER[i % 3]
    if thread_id is not None and owner != thread_id:
        return False
    return visible_to is None or THREADS[owner] in (None, visible_to.user_id)


def exact(
    seed: int, k: int, rows: int, thread_id: str | None, visible_to: Visibility | None
) -> list[str]:
    q = np.asarray(vec(seed), dtype=np.float32)
    q /= np.linalg.norm(q)
    scored = sorted(
        (
            -float(np.dot(q, np.frombuffer(unit_vector_bytes(vec(i)), "<f4"))),
            f"e{i}",
        )
        for i in range(rows)
        if allowed(i, thread_id, visible_to)
    )
    return [rid for _, rid in scored[:k]]


def search(
    store: SQLiteStore, seed: int, k: int, thread_id: str | None, visible_to: Visibility | None
) -> list[str]:
    hits = store.vector_search(
        "t", vec(seed), model_id=MODEL, kinds=["entry"], k=k, thread_id=thread_id,
        visible_to=visible_to,
    )  # fmt: skip
    return [h.id for h in hits]


def check_all_scopes(store: SQLiteStore, rows: int, *, exactly: bool) -> None:
    """Every scope: hits in scope; equal to the exact answer (``exactly``) or nearly."""
    for seed in (3, 10_001, 10_002):
        for thread_id, visible_to in SCOPES:
            got = search(store, seed, 10, thread_id, visible_to)
            want = exact(seed, 10, rows, thread_id, visible_to)
            assert all(allowed(int(rid[1:]), thread_id, visible_to) for rid in got)
            if exactly:
                assert got == want
            else:
                assert len(set(got) & set(want)) >= 8


def slot_of(store: SQLiteStore) -> _vectors.VectorSlot:
    slot: _vectors.VectorSlot = store._vector_cache.slots[("t", MODEL, "entry")]  # type: ignore[attr-defined]
    return slot


def test_searches_are_exact_while_the_index_builds_then_use_it(
    store: SQLiteStore, tmp_path: Path
) -> None:
    search(store, 1, 5, "nobody", None)  # an empty scope: the slot is read, no build
    slot = slot_of(store)
    assert not slot.building() and not slot.has_ann()
    with slot._lock:  # the builder can add rows but not publish the index
        check_all_scopes(store, N, exactly=True)
        assert slot.building() and not slot.has_ann()
        assert len(_builders()) == 1  # one builder per slot, however many searches
    assert slot.wait_ann(60)
    assert slot.has_ann() and slot.ann_source == "built" and slot.ann_rows() == N
    assert not _builders()
    check_all_scopes(store, N, exactly=False)
    # the index is persisted by the builder, before the store is closed
    manifest = next(_vector_files.directory(str(tmp_path / "v.db")).glob("*.json"))
    assert '"count": 600' in manifest.read_text()


def test_rows_after_the_index_are_searched_exactly_and_the_index_extended(
    store: SQLiteStore,
) -> None:
    search(store, 1, 5, None, None)
    slot = slot_of(store)
    assert slot.wait_ann(60) and slot.ann_rows() == N
    put(store, N, 60)  # below EXACT_LIMIT behind: the index is used, the new rows exactly
    for seed in range(N, N + 60, 7):
        assert search(store, seed, 1, None, None) == [f"e{seed}"]
    assert slot_of(store) is slot and slot.has_ann()
    assert slot.wait_ann(60)
    assert slot.ann_rows() == N + 60 and slot.ann_source == "built"
    check_all_scopes(store, N + 60, exactly=False)
    put(store, N + 60, 150)  # more than EXACT_LIMIT behind: exact until extended
    with slot._lock:
        check_all_scopes(store, N + 210, exactly=True)
    assert slot.wait_ann(60) and slot.ann_rows() == N + 210
    check_all_scopes(store, N + 210, exactly=False)


def test_a_replaced_slot_stops_its_builder(store: SQLiteStore) -> None:
    search(store, 1, 5, None, None)
    first = slot_of(store)
    # a replaced vector is applied to the slot in place (a deletion, then a new row)
    store.vector_put("t", [VectorItem("entry", "e3", MODEL, vec(99_999), "a")])
    assert "e3" not in search(store, 3, 3, None, None)
    assert slot_of(store) is first
    # an update in place (counted by trigger): the next search reloads the slot, and
    # the old one's build stops
    with contextlib.closing(sqlite3.connect(store.path)) as conn:
        conn.execute("UPDATE memorybank_vectors SET thread_id = thread_id WHERE id = 'e4'")
        conn.commit()
    assert search(store, 4, 1, None, None) == ["e4"]
    second = slot_of(store)
    assert second is not first and not first.building()
    assert second.wait_ann(60)
    assert not _builders()
    assert "e3" not in search(store, 3, 3, None, None)
    assert search(store, 99_999, 1, None, None) == ["e3"]


def test_close_stops_the_builder_and_saves_what_it_built(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    s = SQLiteStore(path)
    now = datetime.now(UTC)
    for tid, user in THREADS.items():
        s.thread_create(Thread(tid, "t", user, None, None, {}, "active", now, now))
    put(s, 0, 3000)
    search(s, 1, 5, None, None)
    s.close()  # right after the build started
    assert not _builders()
    again = SQLiteStore(path)
    try:
        assert search(again, 7, 1, None, None) == ["e7"]
        slot = slot_of(again)
        # what the first builder had built when stopped was saved, else it is built again
        assert slot.ann_source in ("loaded", None)
        assert slot.wait_ann(60) and slot.ann_rows() == 3000
        assert search(again, 2998, 1, None, None) == ["e2998"]
    finally:
        again.close()
    assert not _builders()


def test_builders_of_many_stores_leave_no_thread(tmp_path: Path) -> None:
    began = time.monotonic()
    for round_ in range(3):
        s = SQLiteStore(tmp_path / f"v{round_}.db")
        now = datetime.now(UTC)
        for tid, user in THREADS.items():
            s.thread_create(Thread(tid, "t", user, None, None, {}, "active", now, now))
        put(s, 0, 400)
        search(s, 1, 5, None, None)
        s.close()
        assert not _builders()
    assert time.monotonic() - began < 120


def test_a_loaded_index_is_extended_as_a_copy_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new process maps the persisted index read-only and answers at once; rows written
    since are searched exactly until the builder has extended a copy and saved it."""
    monkeypatch.setattr(_vector_files, "SAVE_AFTER_ROWS", 10)
    path = tmp_path / "v.db"
    s = SQLiteStore(path)
    now = datetime.now(UTC)
    for tid, user in THREADS.items():
        s.thread_create(Thread(tid, "t", user, None, None, {}, "active", now, now))
    put(s, 0, N)
    search(s, 1, 5, None, None)
    assert slot_of(s).wait_ann(60)
    s.close()
    other = SQLiteStore(path)
    put(other, N, 60)  # another process writes, never searches
    other.close()
    again = SQLiteStore(path)
    try:
        search(again, 1, 5, "nobody", None)
        slot = slot_of(again)
        assert slot.ann_source == "loaded" and slot.ann_rows() == N and slot.n == N + 60
        with slot._lock:  # the builder copies and extends, but cannot publish yet
            check_all_scopes(again, N + 60, exactly=False)
            for seed in range(N, N + 60, 9):
                assert search(again, seed, 1, None, None) == [f"e{seed}"]
            assert slot.building()
        assert slot.wait_ann(60) and slot.ann_rows() == N + 60
        check_all_scopes(again, N + 60, exactly=False)
        manifest = next(_vector_files.directory(str(path)).glob("*.json"))
        assert '"count": 660' in manifest.read_text()  # saved by the builder
    finally:
        again.close()
    assert not _builders()
