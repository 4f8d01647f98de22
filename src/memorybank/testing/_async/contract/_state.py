"""The conformance suite: branches, working memory, snapshots and summaries."""

from __future__ import annotations

import functools
from datetime import timedelta

import pytest

from memorybank.errors import Conflict, InvalidInput, NotFound, StoreError, ThreadForbidden
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Thread
from memorybank.runtime.concurrency import arun_all
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.contract.capabilities import OVERRIDES, Capability
from memorybank.testing._async.contract._base import _WHEN, ContractBase, _id, _StepClock, requires


def _defines(store: object, name: str) -> bool:
    """Whether ``store``'s class answers ``name`` itself, not with the contract's default."""
    for klass in type(store).__mro__:
        if name in vars(klass):
            return not klass.__module__.startswith("memorybank.stores.contract.")
    return False


__all__ = ["StateCases"]


class StateCases(ContractBase):
    """Branches, working memory, snapshots and summaries."""

    # -- branches ------------------------------------------------------------------

    async def test_every_thread_starts_on_main(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        assert [b.name for b in await memory.branches.list(tid)] == ["main"]

    async def test_counts_follow_every_write_of_a_branch(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        """``entry_count`` (and ``entry_count_many``) equal the entries listed after
        every verb that adds or removes a branch's entries: a store may keep the count
        (the PostgreSQL store does, on the branch row) instead of counting."""
        tenant = memory.tenant_id
        tid = await self._thread(memory)

        async def check(branch: str | None = None) -> int:
            thread, listed = await store.entry_list(tenant, tid, branch=branch)
            assert await store.entry_count(tenant, tid, branch=branch) == len(listed)
            if branch in (None, thread.current_branch):
                assert await store.entry_count_many(tenant, [tid]) == {tid: len(listed)}
            return len(listed)

        ids = await self._fill(memory, tid, 6)
        assert await check() == 6
        more = [{"role": "user", "content": f"batch {i}"} for i in range(3)]
        await memory.entries.add_many(tid, more)
        assert await check() == 9
        for _ in range(2):  # the repeat is the stored entry: no new row, no count
            await memory.entries.add(tid, {"role": "user", "content": "k"}, idempotency_key="k1")
        assert await check() == 10
        await memory.branches.create(tid, "alt", from_entry=ids[2])
        await memory.branches.create(tid, "whole")
        assert (await check("alt"), await check("whole"), await check("main")) == (3, 10, 10)
        assert await store.entry_delete(tenant, tid, [ids[0], _id("missing")]) == 1
        assert await store.entry_delete(tenant, tid, [ids[0]]) == 0
        assert (await check(), await check("whole")) == (9, 10)
        assert await store.entry_truncate_after(tenant, tid, ids[4]) == 5
        assert (await check(), await check("alt")) == (4, 3)
        entries = (await store.entry_list(tenant, tid))[1]
        summary = self._summary(entries[2].created_at - timedelta(milliseconds=1), 3)
        done = await self._compact(
            store, tenant, tid, entries, 1, [e.id for e in entries[:2]], summary
        )
        assert done is True
        assert await check() == 3  # two replaced by one
        await memory.branches.checkout(tid, "alt")
        await memory.remember(tid, "user", "on alt")
        assert (await check(), await check("main")) == (4, 3)
        assert await store.entry_clear(tenant, tid, branch="main") == 3
        assert (await check("main"), await check("alt"), await check("whole")) == (0, 4, 10)
        await memory.branches.delete(tid, "whole")
        assert await store.entry_count_many(tenant, [tid]) == {tid: 4}

    async def test_branch_from_an_entry_then_diverge(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        ids = await self._fill(memory, tid, 4)
        branch = await memory.branches.create(tid, "alt", from_entry=ids[1])
        assert (branch.name, branch.from_branch, branch.from_entry) == ("alt", "main", ids[1])
        thread = await memory.branches.checkout(tid, "alt")
        assert thread.current_branch == "alt"
        await memory.remember(tid, "assistant", "alternative")
        assert [m["content"] for m in await memory.history(tid)] == [
            "message 0",
            "message 1",
            "alternative",
        ]
        main = await memory.entries.list(tid, branch="main")
        assert [e.content for e in main] == [f"message {i}" for i in range(4)]
        await memory.branches.checkout(tid, "main")
        assert len(await memory.history(tid)) == 4
        assert [b.name for b in await memory.branches.list(tid)] == ["main", "alt"]

    async def test_branch_without_entry_copies_the_whole_branch(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await self._fill(memory, tid, 3)
        await memory.branches.create(tid, "copy")
        assert await memory.entries.count(tid, branch="copy") == 3

    async def test_rewind_removes_later_entries_on_the_current_branch(
        self, memory: AsyncMemory
    ) -> None:
        tid = await self._thread(memory)
        ids = await self._fill(memory, tid, 4)
        await memory.branches.create(tid, "keep")
        assert await memory.branches.rewind(tid, ids[1]) == 2
        assert [e.id for e in await memory.entries.list(tid)] == ids[:2]
        assert await memory.entries.count(tid, branch="keep") == 4
        again = await memory.remember(tid, "user", "after rewind")
        assert again.position > (await memory.entries.list(tid))[0].position

    async def test_branch_errors(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await self._fill(memory, tid, 1)
        await memory.branches.create(tid, "x")
        with pytest.raises(Conflict):
            await memory.branches.create(tid, "x")
        with pytest.raises(NotFound):
            await memory.branches.checkout(tid, "nope")
        with pytest.raises(NotFound):
            await memory.branches.create(tid, "y", from_entry=_id())
        with pytest.raises(NotFound):
            await memory.branches.rewind(tid, _id())
        with pytest.raises(NotFound):
            await memory.entries.list(tid, branch="nope")
        with pytest.raises(NotFound):
            await memory.branches.create(_id(), "z")

    async def test_delete_branch(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await self._fill(memory, tid, 2)
        await memory.branches.create(tid, "tmp")
        with pytest.raises(Conflict):
            await memory.branches.delete(tid, "main")
        assert await memory.branches.delete(tid, "tmp") is True
        assert [b.name for b in await memory.branches.list(tid)] == ["main"]
        assert await memory.entries.count(tid) == 2

    # -- working memory, snapshots, summaries ----------------------------------------

    async def test_working_memory_is_cleared_when_the_block_exits(
        self, memory: AsyncMemory
    ) -> None:
        run = _id("run")
        async with memory.working(run) as wm:
            await wm.set("plan", {"steps": [1, 2]})
            await wm.set("n", 3)
            assert await wm.get("plan") == {"steps": [1, 2]}
            assert await wm.items() == {"n": 3, "plan": {"steps": [1, 2]}}
            assert await wm.delete("n") is True
            assert await wm.delete("n") is False
            assert await wm.get("n", "gone") == "gone"
            assert await memory.tenant(_id("other")).working(run).items() == {}
        assert await memory.working(run).items() == {}

    async def test_working_memory_is_cleared_on_error(self, memory: AsyncMemory) -> None:
        run = _id("run")
        with pytest.raises(RuntimeError):
            async with memory.working(run) as wm:
                await wm.set("k", "v")
                raise RuntimeError("boom")
        assert await memory.working(run).get("k") is None

    async def test_working_memory_rejects_non_json(self, memory: AsyncMemory) -> None:
        async with memory.working(_id("run")) as wm:
            with pytest.raises(InvalidInput):
                await wm.set("k", object())

    async def test_override_capabilities_are_what_the_store_does(self, memory: AsyncMemory) -> None:
        """A store claims an override capability (``OVERRIDES``: ``RUN_STATE``,
        ``TEXT_SEARCH``, ``VECTOR_SEARCH``) exactly when it defines that group's methods
        itself, all of them: a group's methods share one representation, so a store
        answering half of them from its own tables and half from derived records would
        lose data between them. A store that claims none runs the derived paths."""
        store = memory.store
        for capability, methods in OVERRIDES.items():
            own = [m for m in methods if _defines(store, m)]
            claimed = capability in store.capabilities
            assert own == (list(methods) if claimed else []), (capability, own)
        # ``atomic`` likewise: a store answers it exactly when it claims ``ATOMIC``
        assert _defines(store, "atomic") == (Capability.ATOMIC in store.capabilities)
        assert not {Capability.DURABLE, Capability.VOLATILE} <= store.capabilities

    async def test_snapshot_capability_is_what_the_store_does(self, memory: AsyncMemory) -> None:
        """A store claims ``Capability.SNAPSHOT`` only when it defines ``snapshot`` itself:
        the contract's default gives no point in time, and ``memorybank.dump`` trusts the
        claim (it then reads once, not until stable). A wrapper may define it without the
        claim (forwarding to a store without one)."""
        store = memory.store
        if Capability.SNAPSHOT in store.capabilities:
            assert _defines(store, "snapshot")

    @requires(Capability.SNAPSHOT)
    async def test_a_snapshot_reads_one_point_in_time(self, memory: AsyncMemory) -> None:
        """Every read of a snapshot's view sees the store as it was when it began, while
        the store's writers go on; the view refuses writes; the store then sees all."""
        store, tenant = memory.store, memory.tenant_id
        thread = await memory.threads.create()
        first = await memory.entries.add(thread.id, {"role": "user", "content": "one"})
        async with store.snapshot(tenant) as view:
            await memory.entries.add(thread.id, {"role": "user", "content": "two"})
            await memory.branches.create(thread.id, "later", from_entry=first.id)
            other = await memory.threads.create()
            _, seen = await view.entry_list(tenant, thread.id)
            assert [e.id for e in seen] == [first.id]
            assert [b.name for b in await view.branch_list(tenant, thread.id)] == ["main"]
            assert await view.thread_get(tenant, other.id) is None
            assert await view.entry_count(tenant, thread.id) == 1
            with pytest.raises(StoreError):
                await view.thread_delete(tenant, thread.id)
        assert await store.entry_count(tenant, thread.id) == 2
        assert await store.thread_get(tenant, other.id) is not None

    @requires(Capability.ATOMIC)
    async def test_atomic_writes_commit_together_or_not_at_all(self, store: AsyncStore) -> None:
        """``atomic(tenant)``: the view reads its own writes; a block that raises leaves
        the tenant as it was; one that ends makes every write visible. A write the view
        refuses (``Conflict``) undoes only itself: the block goes on and commits."""
        tenant, run = _id("ten"), _id("run")

        def thread(thread_id: str) -> Thread:
            return Thread(
                id=thread_id, tenant_id=tenant, user_id=None, agent_id=None, title=None,
                metadata={}, status="active", created_at=_WHEN, updated_at=_WHEN,
                current_branch="main",
            )  # fmt: skip

        kept, undone, done = _id(), _id(), _id()
        await store.thread_create(thread(kept))
        with pytest.raises(RuntimeError, match="stop"):
            async with store.atomic(tenant) as view:
                await view.thread_create(thread(undone))
                await view.working_set(tenant, run, "k", "1")
                assert await view.thread_get(tenant, undone) is not None
                assert await view.working_items(tenant, run) == {"k": "1"}
                raise RuntimeError("stop")
        assert await store.thread_get(tenant, undone) is None
        assert await store.working_items(tenant, run) == {}
        assert await store.thread_get(tenant, kept) is not None
        async with store.atomic(tenant) as view:
            with pytest.raises(Conflict):
                await view.thread_create(thread(kept))
            await view.thread_create(thread(done))
            await view.working_set(tenant, run, "k", "2")
        assert await store.thread_get(tenant, done) is not None
        assert await store.working_items(tenant, run) == {"k": "2"}
        assert {t.id for t in await store.thread_list(tenant)} == {kept, done}

    async def test_runs_with_working_memory_or_a_snapshot_are_listed(
        self, memory: AsyncMemory
    ) -> None:
        store, tenant, other = memory.store, _id("ten"), _id("ten")
        odd = ["r:{1}", "r%3A", "r*[x]?", "r-ü"]  # characters that stores escape
        for run in odd:
            await store.working_set(tenant, run, "k", "1")
        await store.working_set(tenant, "r-cleared", "k", "1")
        await store.working_clear(tenant, "r-cleared")
        await store.working_set(tenant, "r-emptied", "k", "1")
        await store.working_delete(tenant, "r-emptied", "k")
        await store.working_set(other, "r-other", "k", "1")
        assert await store.working_runs(tenant) == sorted(odd)
        assert await store.working_runs(tenant, after=sorted(odd)[1]) == sorted(odd)[2:]
        assert await store.working_runs(tenant, limit=2) == sorted(odd)[:2]
        assert await store.working_runs(_id("ten")) == []
        saved_at = _StepClock()()
        for run in ["s-b", "s:{a}", "s-a"]:
            await store.snapshot_save(tenant, run, "{}", user_id=None, saved_at=saved_at)
        await store.snapshot_save(tenant, "s-owned", "{}", user_id="alice", saved_at=saved_at)
        await store.snapshot_save(tenant, "s-gone", "{}", user_id=None, saved_at=saved_at)
        await store.snapshot_delete(tenant, "s-gone")
        await store.snapshot_save(other, "s-other", "{}", user_id=None, saved_at=saved_at)
        expected = sorted(["s-b", "s:{a}", "s-a", "s-owned"])
        assert await store.snapshot_runs(tenant) == expected
        assert await store.snapshot_runs(tenant, after="s-a", limit=2) == expected[1:3]
        assert await store.snapshot_runs(other) == ["s-other"]

    async def test_agents_with_summaries_are_listed(self, memory: AsyncMemory) -> None:
        store, tenant, other = memory.store, _id("ten"), _id("ten")
        odd = ["a:{1}", "a%3A", "a*[x]?", "a-ü"]  # characters that stores escape
        for i, agent in enumerate(odd):
            await memory.tenant(tenant).summaries.add(
                content=f"s{i}", agent_id=agent, user_id="alice" if i % 2 else None
            )
        await memory.tenant(other).summaries.add(content="x", agent_id="a-other", user_id=None)
        assert await store.summary_agents(tenant) == sorted(odd)
        assert await store.summary_agents(tenant, after=sorted(odd)[1]) == sorted(odd)[2:]
        assert await store.summary_agents(tenant, limit=2) == sorted(odd)[:2]
        assert await store.summary_agents(other) == ["a-other"]
        await memory.tenant(tenant).forget_user("alice")
        assert await store.summary_agents(tenant) == sorted(odd[0::2])

    async def test_snapshots_save_load_delete(self, memory: AsyncMemory) -> None:
        run = _id("run")
        assert await memory.snapshots.load(run) is None
        await memory.snapshots.save(run, {"step": 1})
        await memory.snapshots.save(run, {"step": 2, "data": ["ü"]})
        assert await memory.snapshots.load(run) == {"step": 2, "data": ["ü"]}
        assert await memory.snapshots.delete(run) is True
        assert await memory.snapshots.load(run) is None
        assert await memory.snapshots.delete(run) is False

    async def test_snapshots_with_an_owner_fail_closed(self, memory: AsyncMemory) -> None:
        run = _id("run")
        await memory.snapshots.save(run, {"secret": 1}, user_id="alice")
        assert await memory.snapshots.load(run, user_id="alice") == {"secret": 1}
        with pytest.raises(ThreadForbidden):
            await memory.snapshots.load(run, user_id="bob")
        with pytest.raises(ThreadForbidden):
            await memory.snapshots.load(run, user_id=None)
        with pytest.raises(ThreadForbidden):
            await memory.scoped(user_id="bob").snapshots.load(run)
        assert await memory.snapshots.load(run) == {"secret": 1}  # the trusted root call
        with pytest.raises(ThreadForbidden):
            await memory.snapshots.save(run, {"x": 1}, user_id="bob")
        with pytest.raises(ThreadForbidden):
            await memory.snapshots.delete(run, user_id="bob")
        assert await memory.snapshots.load(run, user_id="alice") == {"secret": 1}
        assert await memory.tenant(_id("t")).snapshots.load(run) is None
        assert await memory.snapshots.delete(run, user_id="alice") is True

    async def test_snapshot_owner_check_is_part_of_the_write(self, store: AsyncStore) -> None:
        tenant, run = _id("tenant"), _id("run")
        await store.snapshot_save(tenant, run, "1", user_id=None, saved_at=_WHEN)
        await store.snapshot_save(tenant, run, "2", user_id="alice", saved_at=_WHEN)  # claims it
        assert await store.snapshot_load(tenant, run) == ("alice", "2")
        for user in ("bob", None):
            with pytest.raises(ThreadForbidden):
                await store.snapshot_save(tenant, run, "3", user_id=user, saved_at=_WHEN)
            with pytest.raises(ThreadForbidden):
                await store.snapshot_delete(tenant, run, user_id=user)
        assert await store.snapshot_load(tenant, run) == ("alice", "2")
        await store.snapshot_save(
            tenant, run, "4", user_id="bob", saved_at=_WHEN, owner_check=False
        )
        assert await store.snapshot_load(tenant, run) == ("bob", "4")
        assert await store.snapshot_delete(tenant, run, owner_check=False) is True
        assert await store.snapshot_delete(tenant, run, user_id="bob") is False

    async def test_concurrent_saves_of_a_new_snapshot_have_one_owner(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")

        async def save(run: str, user: str) -> str:
            try:
                await store.snapshot_save(tenant, run, f'"{user}"', user_id=user, saved_at=_WHEN)
            except ThreadForbidden:
                return "forbidden"
            return user

        for _ in range(5):
            run = _id("run")
            results = await arun_all([functools.partial(save, run, u) for u in ("alice", "bob")])
            assert sorted(results) in (["alice", "forbidden"], ["bob", "forbidden"]), results
            winner = next(r for r in results if r != "forbidden")
            assert await store.snapshot_load(tenant, run) == (winner, f'"{winner}"')

    async def test_summaries_oldest_first_scoped_by_user(self, memory: AsyncMemory) -> None:
        agent = _id("agent")
        await memory.summaries.add(agent_id=agent, content="shared 1")
        await memory.summaries.add(agent_id=agent, user_id="alice", content="alice 1")
        await memory.summaries.add(agent_id=agent, user_id="bob", content="bob 1")
        await memory.summaries.add(agent_id=agent, content="shared 2")
        alice = await memory.summaries.list(agent_id=agent, user_id="alice")
        assert [s.content for s in alice] == ["shared 1", "alice 1", "shared 2"]
        shared = await memory.summaries.list(agent_id=agent, user_id=None)
        assert [s.content for s in shared] == ["shared 1", "shared 2"]
        every = await memory.summaries.list(agent_id=agent)  # the trusted root call
        assert [s.content for s in every] == ["shared 1", "alice 1", "bob 1", "shared 2"]
        scoped = memory.scoped(user_id="bob", agent_id=agent)
        assert [s.content for s in await scoped.summaries.list()] == [
            "shared 1",
            "bob 1",
            "shared 2",
        ]
        assert await memory.summaries.list(agent_id=_id("agent")) == []
