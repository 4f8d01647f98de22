"""The change feed over a kill -9 of its writers, on SQLite, PostgreSQL, MySQL/MariaDB and
Redis, and over a kill -9 of a Redis server (one of the test's own, never the shared one).

Four writer processes (``tests.reliability._child append``) append batches to three
threads (two to one shared thread, so its appends interleave across processes) with the
feed on, while this process follows the feed with ``after=cursor``. The writers are
SIGKILLed once each has acknowledged 300 appends, or once 9,500 writes are acknowledged
in all, whichever comes first (the writers go on until the signal lands, so a few
hundred more may be acknowledged; the count only bounds the test's length). Afterwards:
every acknowledged entry has its ``entry.added`` event (0 lost); per thread, the events
name the entries in the thread's own order, each once (0 reordered); and what the
follower read while the writers ran, then after, is exactly the feed (a reader never
skips an event that committed after a later-numbered one).

The Redis server case: three writers append to a Redis with an append-only file fsynced
on every write (``tests.reliability.conftest.OwnRedis``) until the server is SIGKILLed
mid-load; restarted on the same data, every acknowledged entry has its event, and every
stored entry exactly one, in the thread's order (the event is written by the script
that writes the entry, so both are in the file or neither).
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank.events.types import Event
from memorybank.memory._sync.memory import Memory
from tests.reliability._harness import Child, StoreSpec, provide, store_params
from tests.reliability.conftest import OwnRedis, OwnServer, _own

#: Acknowledged appends (batches) each writer makes at least before the kill.
AT_LEAST = 300
#: Writes (entries) acknowledged in all at which the kill is decided even if a writer
#: has not reached ``AT_LEAST`` (a bound on the test's length, not a check: the writers
#: go on until the signal lands, and a follow of the feed may take a while under load).
ENOUGH = 9_500


def _follow(memory: Memory, after: str | None, seen: list[Event]) -> str | None:
    """Read the feed from ``after`` to its end into ``seen``; the last cursor."""
    while True:
        page = memory.events.list(after=after, limit=500)
        if not page:
            return after
        seen.extend(page)
        after = page[-1].cursor


def _acked(child: Child) -> int:
    return len(child.records())


def _written(writers: list[Child]) -> int:
    """Entries the writers have acknowledged so far."""
    return sum(len(r["ids"]) for c in writers for r in c.records())


@pytest.fixture(params=store_params(("sqlite-normal", "postgres", "mysql", "redis")))
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


@pytest.fixture
def own_redis() -> Iterator[OwnServer]:
    """A Redis of this test's own (fsync-always append-only file), which it may kill."""
    yield from _own(OwnRedis)


def _check_feed(memory: Memory, writers: list[Child], threads: list[str]) -> list[Event]:
    """Every acknowledged entry has its ``entry.added`` event; per thread, the events name
    the stored entries in their order, each once. The whole feed."""
    everything: list[Event] = []
    _follow(memory, None, everything)
    added: dict[str, list[str]] = defaultdict(list)
    for event in everything:
        if event.kind == "entry.added":
            assert event.thread_id is not None and event.item_id is not None
            added[event.thread_id].append(event.item_id)
    acked = {i for c in writers for r in c.records() for i in r["ids"]}
    evented = {i for ids in added.values() for i in ids}
    assert acked - evented == set(), "acknowledged writes without their event"
    for thread_id in threads:
        stored = [e.id for e in memory.entries.list(thread_id)]
        assert added[thread_id] == stored, f"events of {thread_id} out of order"
        assert len(set(stored)) == len(stored)
    return everything


def test_a_killed_writer_loses_and_reorders_no_event(spec: StoreSpec, tmp_path: Path) -> None:
    with spec.memory() as memory:
        memory.events.enable()
        shared = memory.threads.create(thread_id="shared").id
        own = [memory.threads.create(thread_id=f"own-{i}").id for i in range(2)]
        writers = [
            Child("append", spec, shared, "s0", directory=tmp_path),
            Child("append", spec, shared, "s1", directory=tmp_path),
            Child("append", spec, own[0], "o0", directory=tmp_path),
            Child("append", spec, own[1], "o1", directory=tmp_path),
        ]
        seen: list[Event] = []
        cursor: str | None = None
        try:
            for child in writers:
                child.wait_for(1, timeout=120)
            # follow while they write, until each has acknowledged enough
            while min(_acked(c) for c in writers) < AT_LEAST:
                cursor = _follow(memory, cursor, seen)
                if _written(writers) >= ENOUGH:
                    break
                time.sleep(0.05)
            for child in writers:
                child.kill()
        finally:
            for child in writers:
                child.stop()
        cursor = _follow(memory, cursor, seen)
        everything = _check_feed(memory, writers, [shared, *own])
        assert [e.cursor for e in seen] == [e.cursor for e in everything]
        assert seen == everything


@pytest.mark.server
def test_a_killed_redis_server_loses_no_event(own_redis: OwnServer, tmp_path: Path) -> None:
    spec = StoreSpec("redis-own", "redis", own_redis.url, f"mbrel:{uuid.uuid4().hex[:10]}:")
    with spec.memory() as memory:
        memory.events.enable()
        threads = [memory.threads.create(thread_id=t).id for t in ("shared", "own")]
    writers = [
        Child("append", spec, threads[0], "s0", directory=tmp_path),
        Child("append", spec, threads[0], "s1", directory=tmp_path),
        Child("append", spec, threads[1], "o0", directory=tmp_path),
    ]
    try:
        for child in writers:
            child.wait_for(1, timeout=120)
        while min(_acked(c) for c in writers) < AT_LEAST // 3:
            time.sleep(0.05)
        with own_redis.down():  # SIGKILL mid-load; the writers fail and are reaped
            for child in writers:
                child.stop()
    finally:
        for child in writers:
            child.stop()
    with spec.memory() as memory:
        _check_feed(memory, writers, threads)
