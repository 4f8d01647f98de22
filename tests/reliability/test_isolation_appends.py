"""Isolation of concurrent appends: bob's appends to alice's thread racing her own are
refused and write nothing; the server stores' combined appends (one transaction for
many callers of a tenant) keep owners and tenants apart, async and from threads."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memorybank import Memory, ThreadForbidden
from memorybank.stores import InMemoryStore
from tests.all_stores import STORE_KINDS
from tests.reliability import _isolation
from tests.reliability._harness import StoreSpec, provide
from tests.reliability._isolation import World

world = _isolation.world  # the fixture: alice's world on every store


#: Writers per side and appends per writer in the concurrent cross-user race.
RACERS = 4
RACE_APPENDS = 8


def test_concurrent_appends_by_another_user_are_refused(world: World) -> None:
    """Bob's appends to alice's thread, racing alice's own, are all refused with
    ``ThreadForbidden`` and write nothing (no entry, on no branch), while every one
    of alice's lands once, at gap-free positions."""
    alice = world.root.scoped(user_id="alice", agent_id="bot")
    before = world.root.entries.list(world.thread)
    alt_before = world.root.entries.count(world.thread, branch="alt")
    start = threading.Barrier(2 * RACERS)

    def owner(writer: int) -> list[str]:
        start.wait()
        ids = []
        for i in range(RACE_APPENDS):
            message = {"role": "user", "content": f"alice {writer} {i}"}
            if i % 2:
                ids += [e.id for e in alice.entries.add_many(world.thread, [message, message])]
            else:
                ids.append(alice.entries.add(world.thread, message).id)
        return ids

    def intruder(writer: int) -> int:
        start.wait()
        attempts: list[Callable[[], object]] = [
            lambda: world.bob.remember(world.thread, "user", f"bob {writer}"),
            lambda: world.bob.entries.add_many(
                world.thread, [{"role": "user", "content": f"bob {writer}"}] * 2
            ),
            lambda: world.bob.entries.add(
                world.thread, {"role": "user", "content": f"bob {writer}"}, branch="alt"
            ),
        ]
        for i in range(RACE_APPENDS):
            with pytest.raises(ThreadForbidden):
                attempts[i % len(attempts)]()
        return RACE_APPENDS

    with ThreadPoolExecutor(2 * RACERS) as pool:
        owners = [pool.submit(owner, w) for w in range(RACERS)]
        intruders = [pool.submit(intruder, w) for w in range(RACERS)]
        landed = [i for f in owners for i in f.result()]
        assert sum(f.result() for f in intruders) == RACERS * RACE_APPENDS
    after = world.root.entries.list(world.thread)
    assert len(landed) == len(set(landed)) == RACERS * RACE_APPENDS * 3 // 2
    ids = [e.id for e in after]
    assert ids[: len(before)] == [e.id for e in before]
    assert sorted(ids[len(before) :]) == sorted(landed)
    contents = [e.content for e in after[len(before) :]]
    for batch in {c for c in contents if c is not None and int(c.split()[-1]) % 2}:
        first = contents.index(batch)  # a batch of two lands together
        assert contents[first + 1] == batch and contents.count(batch) == 2
    assert [e.position for e in after] == list(range(1, len(after) + 1))
    assert not any("bob" in (e.content or "") for e in after)
    assert world.root.entries.count(world.thread, branch="alt") == alt_before
    thread = world.root.threads.get(world.thread)
    assert thread is not None and thread.user_id == "alice"


#: Owners of the combined-append race (two differ from "alice" by case or a space only)
#: and appends per owner.
RACE_OWNERS = ("alice", "Alice", "alice ", "bob")
COMBINED_APPENDS = 12


@pytest.fixture(params=STORE_KINDS)
def race_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec | None]:
    """Where the combined-append race runs: a fresh spec, or ``None`` (in memory)."""
    if request.param == "memory":
        yield None
        return
    yield from provide("sqlite-full" if request.param == "sqlite" else request.param, tmp_path)


class _Recorder:
    """Wraps a store's append combiner's batch function (sync or async: the call is
    passed through): who shared each batch."""

    def __init__(self, combiner: Any) -> None:
        self.run = combiner._run
        self.batches: list[list[tuple[str, Any]]] = []
        combiner._run = self

    def __call__(self, tenant: str, items: Sequence[Any]) -> Any:
        self.batches.append([(tenant, item[2]) for item in items])
        return self.run(tenant, items)

    def check(self) -> None:
        """The race did combine different owners in one batch, and never two tenants."""
        assert any(len({owner for _, owner in b}) > 1 for b in self.batches), self.batches[:5]
        assert all(len({t for t, _ in b}) == 1 for b in self.batches)


class _Race:
    """The combined-append race: four owners (two differ from "alice" by case or a
    space) own a thread each in two tenants that differ by a trailing space, the same
    thread ids with the owners rotated; every owner appends to every thread."""

    def __init__(self) -> None:
        tenant = f"iso-{uuid.uuid4().hex[:6]}"
        self.tenants = {tenant: RACE_OWNERS, tenant + " ": RACE_OWNERS[1:] + RACE_OWNERS[:1]}
        self.threads = [f"t{n}" for n in range(len(RACE_OWNERS))]
        self.calls = [
            (name, owner, tid, i)
            for i in range(COMBINED_APPENDS)
            for name, owners in self.tenants.items()
            for owner in owners
            for tid in self.threads
        ]

    def owned(self) -> list[tuple[str, str, str]]:
        """(tenant, thread, owner) of every thread."""
        return [
            (name, tid, owner)
            for name, owners in self.tenants.items()
            for tid, owner in zip(self.threads, owners, strict=True)
        ]

    @staticmethod
    def message(name: str, owner: str, tid: str, i: int) -> dict[str, str]:
        return {"role": "user", "content": f"{name}|{owner}|{tid}|{i}"}

    def check_results(self, results: Sequence[str | None]) -> None:
        """Each owner's appends landed, every other one was refused."""
        owner_of = {(name, tid): owner for name, tid, owner in self.owned()}
        for (name, owner, tid, _), landed in zip(self.calls, results, strict=True):
            assert (landed is not None) == (owner_of[name, tid] == owner), (name, owner, tid)

    def check_thread(self, name: str, tid: str, owner: str, entries: Any, count: int) -> None:
        """The thread holds its owner's appends only, gap-free, counted."""
        assert [e.content.rsplit("|", 1)[0] for e in entries if e.content] == [
            f"{name}|{owner}|{tid}"
        ] * COMBINED_APPENDS
        assert [e.position for e in entries] == list(range(1, COMBINED_APPENDS + 1))
        assert count == COMBINED_APPENDS


async def test_combined_appends_of_many_owners_and_tenants_stay_apart(
    race_spec: StoreSpec | None,
) -> None:
    """Concurrent appends (the server stores combine them: one transaction for many
    callers of a tenant) by four owners to their own threads, and by each to every other
    owner's thread, in two tenants holding the same thread ids (``_Race``): every owner's
    append lands in its own thread of its own tenant, gap-free, counted; every other one
    is refused and writes nothing."""
    from memorybank import AsyncMemory
    from memorybank.stores.memory._async.store import AsyncInMemoryStore

    store = AsyncInMemoryStore() if race_spec is None else race_spec.open_async(pool_size=8)
    combiner = getattr(store, "_appends", None)
    recorder = None if combiner is None else _Recorder(combiner)
    race = _Race()
    try:
        async with AsyncMemory(store) as memory:
            for name, tid, owner in race.owned():
                await memory.tenant(name).threads.create(thread_id=tid, user_id=owner)

            async def append(name: str, owner: str, tid: str, i: int) -> str | None:
                handle = memory.tenant(name).scoped(user_id=owner, agent_id="bot")
                message = race.message(name, owner, tid, i)
                try:
                    if i % 3:
                        return (await handle.remember(tid, "user", message["content"])).id
                    return (await handle.entries.add_many(tid, [message]))[0].id
                except ThreadForbidden:
                    return None

            race.check_results(await asyncio.gather(*(append(*c) for c in race.calls)))
            for name, tid, owner in race.owned():
                handle = memory.tenant(name)
                entries = await handle.entries.list(tid)
                race.check_thread(name, tid, owner, entries, await handle.entries.count(tid))
    finally:
        await store.close()
    if recorder is not None:
        recorder.check()


def test_combined_appends_from_threads_stay_apart(race_spec: StoreSpec | None) -> None:
    """The same race through the sync stores, from threads (their combiner's sync twin)."""
    store = InMemoryStore() if race_spec is None else race_spec.open()
    combiner = getattr(store, "_appends", None)
    recorder = None if combiner is None else _Recorder(combiner)
    race = _Race()
    try:
        with Memory(store) as memory:
            for name, tid, owner in race.owned():
                memory.tenant(name).threads.create(thread_id=tid, user_id=owner)

            def append(name: str, owner: str, tid: str, i: int) -> str | None:
                handle = memory.tenant(name).scoped(user_id=owner, agent_id="bot")
                message = race.message(name, owner, tid, i)
                try:
                    if i % 3:
                        return handle.remember(tid, "user", message["content"]).id
                    return handle.entries.add_many(tid, [message])[0].id
                except ThreadForbidden:
                    return None

            with ThreadPoolExecutor(16) as pool:
                race.check_results(list(pool.map(lambda c: append(*c), race.calls)))
            for name, tid, owner in race.owned():
                handle = memory.tenant(name)
                entries = handle.entries.list(tid)
                race.check_thread(name, tid, owner, entries, handle.entries.count(tid))
    finally:
        store.close()
    if recorder is not None:
        recorder.check()
