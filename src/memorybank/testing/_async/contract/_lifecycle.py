"""The conformance suite: erasure, concurrency and the store's lifecycle."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from memorybank.errors import MemoryBankError, NotFound, StoreClosed, ThreadForbidden
from memorybank.memory._async.core_facts import AsyncCoreFacts
from memorybank.memory._async.memory import AsyncMemory
from memorybank.runtime.concurrency import AsyncStep, arun_all
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.testing._async.contract._base import ContractBase, _id, _outcome

__all__ = ["LifecycleCases"]


class LifecycleCases(ContractBase):
    """Erasure, concurrency and the store's lifecycle."""

    # -- erasure, concurrency, lifecycle ------------------------------------------------

    async def test_forget_user_erases_everything_of_that_user(self, memory: AsyncMemory) -> None:
        user, other = _id("u"), _id("u")
        mine = await self._thread(memory, user_id=user)
        theirs = await self._thread(memory, user_id=other)
        await memory.remember(mine, "user", "mine")
        await memory.remember(theirs, "user", "theirs")
        run = _id("run")
        await memory.snapshots.save(run, 1, user_id=user)
        agent = _id("agent")
        await memory.summaries.add(agent_id=agent, user_id=user, content="about me")
        assert await memory.forget_user(user) >= 4
        assert await memory.threads.get(mine) is None
        assert await memory.snapshots.load(run, user_id=user) is None
        assert await memory.summaries.list(agent_id=agent, user_id=user) == []
        assert [m["content"] for m in await memory.history(theirs)] == ["theirs"]

    async def test_reclaim_space_keeps_every_read(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        for i in range(3):
            await memory.remember(tid, "user", f"m{i}")
        first = (await memory.entries.list(tid))[0]
        await memory.entries.delete(tid, first.id)
        before = await memory.entries.list(tid)
        await memory.store.reclaim_space()
        assert await memory.entries.list(tid) == before
        assert [e.content for e in before] == ["m1", "m2"]

    async def test_concurrent_appends_lose_and_duplicate_nothing(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)

        async def writer(w: int) -> None:
            for i in range(10):
                await memory.remember(tid, "user", f"w{w}-{i}")

        await arun_all([functools.partial(writer, w) for w in range(5)])
        entries = await memory.entries.list(tid)
        assert sorted(e.content or "" for e in entries) == sorted(
            f"w{w}-{i}" for w in range(5) for i in range(10)
        )
        assert len({e.position for e in entries}) == 50
        for w in range(5):
            mine = [e.content for e in entries if (e.content or "").startswith(f"w{w}-")]
            assert mine == [f"w{w}-{i}" for i in range(10)]

    async def test_32_concurrent_appenders_of_one_thread_get_their_own_gap_free_positions(
        self, memory: AsyncMemory
    ) -> None:
        # Server stores combine concurrent appends to one thread into one statement:
        # each caller must still get back its own entry at its stored position.
        tid = await self._thread(memory)
        returned: dict[str, int] = {}

        async def writer(w: int) -> None:
            for i in range(4):
                entry = await memory.entries.add(tid, {"role": "user", "content": f"w{w}-{i}"})
                assert entry.content == f"w{w}-{i}"
                returned[entry.id] = entry.position

        await arun_all([functools.partial(writer, w) for w in range(32)])
        entries = await memory.entries.list(tid)
        assert [e.position for e in entries] == list(range(1, 129))
        assert {e.id: e.position for e in entries} == returned
        assert await memory.entries.count(tid) == 128  # a kept count follows combining
        for w in range(32):
            mine = [e.content for e in entries if (e.content or "").startswith(f"w{w}-")]
            assert mine == [f"w{w}-{i}" for i in range(4)]
        # a refused append is refused for every caller, and writes nothing
        other = await self._thread(memory, user_id="owner")
        calls = [
            functools.partial(memory.remember, other, "user", f"x{i}", user_id="someone else")
            for i in range(8)
        ]
        results = await arun_all([functools.partial(_outcome, call) for call in calls])
        assert all(isinstance(r, ThreadForbidden) for r in results)
        assert await memory.entries.list(other) == []

    async def test_concurrent_appends_to_many_threads_each_get_their_own_outcome(
        self, memory: AsyncMemory
    ) -> None:
        # Server stores may run concurrent appends of a tenant as one statement: a
        # refused one (other owner, no thread, no branch) fails alone, writing nothing.
        tids = [await self._thread(memory, user_id="u") for _ in range(6)]
        calls: list[AsyncStep[Any]] = []
        for i, tid in enumerate(tids):
            calls.append(functools.partial(memory.remember, tid, "user", f"ok{i}", user_id="u"))
            calls.append(functools.partial(memory.remember, tid, "user", f"no{i}", user_id="x"))
        calls.append(functools.partial(memory.remember, _id(), "user", "no thread"))
        calls.append(
            functools.partial(
                memory.entries.add, tids[0], {"role": "user", "content": "b"}, branch="nope"
            )
        )
        calls.append(
            functools.partial(
                memory.entries.add_many,
                tids[1],
                [{"role": "user", "content": "m0"}, {"role": "user", "content": "m1"}],
            )
        )
        results = await arun_all([functools.partial(_outcome, call) for call in calls])
        for i, tid in enumerate(tids):
            ok, refused = results[2 * i], results[2 * i + 1]
            assert isinstance(refused, ThreadForbidden)
            assert not isinstance(ok, Exception) and ok.content == f"ok{i}"
            stored = await memory.entries.list(tid)
            assert [e.id for e in stored if e.content == f"ok{i}"] == [ok.id]
            assert all((e.content or "").startswith(("ok", "m")) for e in stored)
            assert [e.position for e in stored] == list(range(1, len(stored) + 1))
            assert await memory.entries.count(tid) == len(stored)
        assert isinstance(results[-3], NotFound) and isinstance(results[-2], NotFound)
        many = results[-1]
        assert isinstance(many, list) and [e.content for e in many] == ["m0", "m1"]
        assert many[1].position == many[0].position + 1

    async def test_concurrent_fact_updates_lose_no_version(self, memory: AsyncMemory) -> None:
        fact = await memory.facts.add(agent_id="bot", content="v0", metadata={"n": -1})

        async def superseder(w: int) -> None:
            for i in range(5):
                await memory.facts.supersede(fact.id, f"w{w}-{i}")

        async def corrector() -> None:
            for i in range(5):
                await memory.facts.update(fact.id, metadata={"n": i})

        writers: list[AsyncStep[None]] = [functools.partial(superseder, w) for w in range(3)]
        await arun_all([*writers, corrector])
        history = await memory.facts.history(fact.id)
        assert [f.version for f in history] == list(range(1, 17))
        assert sorted(f.content for f in history[1:]) == sorted(
            f"w{w}-{i}" for w in range(3) for i in range(5)
        )
        assert history[-1].metadata == {"n": 4}

    async def test_concurrent_core_fact_sets_all_reach_the_history(
        self, memory: AsyncMemory
    ) -> None:
        facts = AsyncCoreFacts(memory=memory, user_id=_id("u"))

        async def writer(w: int) -> None:
            for i in range(5):
                await facts.set("city", f"w{w}-{i}")

        await arun_all([functools.partial(writer, w) for w in range(3)])
        history = [value for value, _ in await facts.history("city")]
        assert sorted(history) == sorted(f"w{w}-{i}" for w in range(3) for i in range(5))
        assert await facts.get("city") == history[-1]

    async def test_generate_title_names_an_untitled_thread(self, store: AsyncStore) -> None:
        seen: list[str] = []

        def title(first: str) -> str:
            seen.append(first)
            return first[:10]

        memory = AsyncMemory(store, generate_title=title)
        tid = await self._thread(memory)
        await memory.remember(tid, "system", "you are a bot")
        await memory.remember(tid, "user", "Plan my trip to Lisbon")
        await memory.remember(tid, "user", "second")
        thread = await memory.threads.get(tid)
        assert thread is not None and thread.title == "Plan my tr"
        assert seen == ["Plan my trip to Lisbon"]

    async def test_errors_form_one_tree(self, memory: AsyncMemory) -> None:
        with pytest.raises(MemoryBankError):
            await memory.threads.update(_id(), title="x")

    async def test_closed_store_raises_store_closed(self, store: AsyncStore) -> None:
        tid = _id()
        memory = AsyncMemory(store)
        await memory.threads.create(thread_id=tid)
        await store.close()
        with pytest.raises(StoreClosed):
            await memory.threads.get(tid)
        with pytest.raises(StoreClosed):
            await memory.remember(tid, "user", "late")
