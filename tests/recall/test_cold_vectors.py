"""SQLite: a narrowed search on a store whose vectors are not in process memory yet reads
its scope's vectors from the table while the whole key loads on a thread of its own,
then takes the loaded slot and catches it up with what was written meanwhile."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memorybank.records import Thread
from memorybank.stores.contract._sync.store import VectorItem, Visibility
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.stores.sqlite._sync import _search as sqlite_search

MODEL = "test:m"
KEY = ("t", MODEL, "entry")
ALICE = Visibility(None, "alice")


def _vec(seed: int, dim: int = 16) -> list[float]:
    return [float(x) for x in np.random.default_rng(seed).standard_normal(dim)]


def _thread(store: SQLiteStore, tid: str, user: str | None) -> None:
    now = datetime.now(UTC)
    store.thread_create(Thread(tid, "t", user, None, None, {}, "active", now, now))


def _hits(store: SQLiteStore, seed: int, **scope: Any) -> list[tuple[str, float]]:
    hits = store.vector_search("t", _vec(seed), model_id=MODEL, kinds=["entry"], k=8, **scope)
    return [(h.id, round(h.score, 5)) for h in hits]


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A store of 3 users' threads and a shared one (90 vectors), loaded in the background
    from 50 vectors."""
    monkeypatch.setattr(sqlite_search, "BACKGROUND_LOAD_ROWS", 50)
    file = tmp_path / "v.db"
    with closing(SQLiteStore(file)) as writer:
        for user in ("alice", "bob", None):
            for t in range(3):
                tid = f"{user}-{t}"
                _thread(writer, tid, user)
                writer.vector_put(
                    "t",
                    [
                        VectorItem("entry", eid, MODEL, _vec(zlib.crc32(eid.encode())), tid)
                        for eid in (f"{tid}-{i}" for i in range(10))
                    ],
                )
    yield file


def _reference(path: Path, seed: int, **scope: Any) -> list[tuple[str, float]]:
    """The same search answered by a slot loaded inline (an unnarrowed search first)."""
    with closing(SQLiteStore(path)) as store:
        store.vector_search("t", _vec(0), model_id=MODEL, kinds=["entry"], k=1)
        assert KEY in store.__dict__["_vector_cache"].slots
        return _hits(store, seed, **scope)


def test_first_narrowed_search_does_not_load_every_vector(path: Path) -> None:
    expected = {seed: _reference(path, seed, visible_to=ALICE) for seed in range(5)}
    in_thread = _reference(path, 3, thread_id="bob-1")
    with closing(SQLiteStore(path)) as store:
        assert _hits(store, 0, visible_to=ALICE) == expected[0]
        cache = store.__dict__.get("_vector_cache")
        assert cache is None or KEY not in cache.slots  # not loaded by the search
        load = store.__dict__["_vector_loads"][KEY]
        assert load.done.wait(30)
        assert load.slot is not None and load.slot.n == 90
        assert _hits(store, 3, thread_id="bob-1") == in_thread  # takes the loaded slot
        assert store.__dict__["_vector_cache"].slots[KEY] is load.slot
        assert not store.__dict__["_vector_loads"]
        for seed in range(1, 5):
            assert _hits(store, seed, visible_to=ALICE) == expected[seed]
        # alice never sees bob's entries, before or after the slot
        assert all(not hit.startswith("bob") for seed in range(5) for hit, _ in expected[seed])


def test_writes_during_the_load_are_caught_up(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    reading = threading.Event()
    read = SQLiteStore._vector_slot_read

    def held(self: SQLiteStore, *args: Any) -> Any:
        if threading.current_thread().name == "memorybank-vector-load":
            reading.set()
            assert release.wait(30)
        return read(self, *args)

    monkeypatch.setattr(SQLiteStore, "_vector_slot_read", held)
    with closing(SQLiteStore(path)) as store, closing(SQLiteStore(path)) as other:
        _hits(store, 1, visible_to=ALICE)
        assert reading.wait(30)  # the loader holds its snapshot, before these writes
        store.vector_put("t", [VectorItem("entry", "new", MODEL, _vec(500), "alice-0")])
        other.vector_put("t", [VectorItem("entry", "far", MODEL, _vec(501), "alice-2")])
        gone = _hits(store, 2, visible_to=ALICE)[0][0]
        assert store.entry_delete("t", gone.rsplit("-", 1)[0], [gone]) in (0, 1)
        store.vector_put("t", [VectorItem("entry", gone, MODEL, _vec(502), "alice-1")])
        while_loading = _hits(store, 500, visible_to=ALICE)
        assert while_loading[0][0] == "new"  # read from the table
        release.set()
        load = store.__dict__["_vector_loads"][KEY]
        assert load.done.wait(30)
        after = _hits(store, 500, visible_to=ALICE)  # adopts the slot, catches it up
        assert store.__dict__["_vector_cache"].slots[KEY] is load.slot
        assert after == while_loading
        assert _hits(store, 501, visible_to=ALICE)[0][0] == "far"
        assert _hits(store, 502, visible_to=ALICE)[0][0] == gone  # its new vector
    monkeypatch.undo()
    assert _reference(path, 500, visible_to=ALICE) == after


def test_a_failed_load_is_done_inline(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = SQLiteStore._vector_slot_read

    def failing(self: SQLiteStore, *args: Any) -> Any:
        if threading.current_thread().name == "memorybank-vector-load":
            raise OSError("disk gone")
        return read(self, *args)

    monkeypatch.setattr(SQLiteStore, "_vector_slot_read", failing)
    expected = _reference(path, 4, visible_to=ALICE)
    with closing(SQLiteStore(path)) as store:
        assert _hits(store, 4, visible_to=ALICE) == expected
        load = store.__dict__["_vector_loads"][KEY]
        assert load.done.wait(30) and load.slot is None
        assert _hits(store, 4, visible_to=ALICE) == expected  # loaded inline now
        assert KEY in store.__dict__["_vector_cache"].slots


def test_small_or_unnarrowed_searches_load_inline(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with closing(SQLiteStore(path)) as store:
        store.vector_search("t", _vec(1), model_id=MODEL, kinds=["entry"], k=3)
        assert KEY in store.__dict__["_vector_cache"].slots
        assert not store.__dict__.get("_vector_loads")
    monkeypatch.setattr(sqlite_search, "BACKGROUND_LOAD_ROWS", 91)  # the store holds 90
    with closing(SQLiteStore(path)) as store:
        _hits(store, 1, visible_to=ALICE)
        assert KEY in store.__dict__["_vector_cache"].slots
        assert not store.__dict__.get("_vector_loads")


def test_a_wider_search_waits_for_the_load_instead_of_loading_again(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    read = SQLiteStore._vector_slot_read

    def counted(self: SQLiteStore, *args: Any) -> Any:
        reads.append(threading.current_thread().name)
        return read(self, *args)

    monkeypatch.setattr(SQLiteStore, "_vector_slot_read", counted)
    expected = _reference(path, 2)
    reads.clear()
    with closing(SQLiteStore(path)) as store:
        _hits(store, 1, visible_to=ALICE)  # starts the load
        assert _hits(store, 2) == expected  # tenant-wide: every row, from the loaded slot
        assert reads == ["memorybank-vector-load"]  # read once, by the loader
        assert not store.__dict__["_vector_loads"]
        assert store.__dict__["_vector_cache"].slots[KEY].n == 90
