"""The conformance suite: threads, tenants and ownership."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memorybank.errors import Conflict, InvalidInput, NotFound, ThreadForbidden
from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.testing._async.contract._base import ContractBase, _id, _StepClock

__all__ = ["ThreadCases"]


class ThreadCases(ContractBase):
    """Threads, tenants and ownership."""

    # -- threads -------------------------------------------------------------

    async def test_create_and_get_thread_round_trips_every_field(self, memory: AsyncMemory) -> None:
        tid = _id()
        created = await memory.threads.create(
            thread_id=tid,
            user_id="alice",
            agent_id="bot",
            title="Trip",
            metadata={"topic": "travel", "tags": ["a", "b"], "n": 1.5},
        )
        got = await memory.threads.get(tid)
        assert got == created
        assert got is not None
        assert (got.user_id, got.agent_id, got.title, got.status) == (
            "alice",
            "bot",
            "Trip",
            "active",
        )
        assert got.metadata == {"topic": "travel", "tags": ["a", "b"], "n": 1.5}
        assert got.current_branch == "main"
        assert got.created_at.tzinfo is not None and got.created_at.utcoffset() == timedelta(0)
        assert got.created_at.microsecond == 123456

    async def test_generated_thread_ids_are_unique_and_sort_by_creation(
        self, memory: AsyncMemory
    ) -> None:
        ids = [(await memory.threads.create()).id for _ in range(5)]
        assert len(set(ids)) == 5
        assert ids == sorted(ids)

    async def test_creating_an_existing_thread_id_conflicts(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        with pytest.raises(Conflict):
            await memory.threads.create(thread_id=tid)

    async def test_get_missing_thread_is_none(self, memory: AsyncMemory) -> None:
        assert await memory.threads.get(_id()) is None

    async def test_list_threads_newest_updated_first_with_filters(
        self, memory: AsyncMemory
    ) -> None:
        user = _id("u")
        a = await self._thread(memory, user_id=user, agent_id="a1")
        b = await self._thread(memory, user_id=user, agent_id="a2")
        c = await self._thread(memory, user_id=user, agent_id="a1")
        await memory.remember(a, "user", "bump a")
        assert [t.id for t in await memory.threads.list(user_id=user)] == [a, c, b]
        assert [t.id for t in await memory.threads.list(user_id=user, agent_id="a1")] == [a, c]
        assert [t.id for t in await memory.threads.list(user_id=user, limit=1)] == [a]
        await memory.threads.update(b, status="archived")
        assert [t.id for t in await memory.threads.list(user_id=user, status="archived")] == [b]

    async def test_update_thread_changes_fields_and_updated_at(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory, title="old")
        before = await memory.threads.get(tid)
        after = await memory.threads.update(
            tid, title="new", metadata={"k": "v"}, status="archived"
        )
        assert (after.title, after.metadata, after.status) == ("new", {"k": "v"}, "archived")
        assert before is not None and after.updated_at > before.updated_at
        assert await memory.threads.get(tid) == after

    async def test_update_missing_thread_raises_not_found(self, memory: AsyncMemory) -> None:
        with pytest.raises(NotFound):
            await memory.threads.update(_id(), title="x")

    async def test_update_rejects_a_bad_status(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        with pytest.raises(InvalidInput) as info:
            await memory.threads.update(tid, status="deleted")
        assert info.value.field == "status"

    async def test_delete_thread_removes_it_and_its_entries(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await self._fill(memory, tid, 3)
        assert await memory.threads.delete(tid) is True
        assert await memory.threads.get(tid) is None
        assert await memory.threads.delete(tid) is False
        with pytest.raises(NotFound):
            await memory.entries.count(tid)
        await memory.threads.create(thread_id=tid)
        assert await memory.entries.count(tid) == 0

    # -- tenants ---------------------------------------------------------------

    async def test_a_thread_of_another_tenant_behaves_as_missing(self, memory: AsyncMemory) -> None:
        acme, globex = memory.tenant(_id("acme")), memory.tenant(_id("globex"))
        tid = (await acme.threads.create(thread_id=_id(), user_id="alice")).id
        await acme.remember(tid, "user", "secret")
        assert await globex.threads.get(tid) is None
        assert await globex.threads.list() == []
        with pytest.raises(NotFound):
            await globex.remember(tid, "user", "intrusion")
        with pytest.raises(NotFound):
            await globex.history(tid)
        assert await globex.threads.delete(tid) is False
        other = await globex.threads.create(thread_id=tid)
        assert other.tenant_id == globex.tenant_id
        assert [m["content"] for m in await acme.history(tid)] == ["secret"]
        assert await globex.history(tid) == []

    # -- ownership ---------------------------------------------------------------

    async def test_ensure_thread_creates_owned_by_the_caller(self, memory: AsyncMemory) -> None:
        tid = _id()
        thread = await memory.ensure_thread(tid, user_id="alice", agent_id="bot")
        assert (thread.id, thread.user_id, thread.agent_id) == (tid, "alice", "bot")
        again = await memory.ensure_thread(tid, user_id="alice")
        assert again.id == tid

    async def test_ensure_thread_without_id_generates_one(self, memory: AsyncMemory) -> None:
        thread = await memory.ensure_thread(None, user_id="alice")
        assert thread.id and thread.user_id == "alice"

    @pytest.mark.parametrize(
        ("owner", "caller"), [("alice", "bob"), ("alice", None), (None, "bob")]
    )
    async def test_ensure_thread_fails_closed(
        self, memory: AsyncMemory, owner: str | None, caller: str | None
    ) -> None:
        tid = await self._thread(memory, user_id=owner)
        await memory.remember(tid, "user", "private")
        with pytest.raises(ThreadForbidden) as info:
            await memory.ensure_thread(tid, user_id=caller)
        assert info.value.code == "thread_forbidden"
        assert "private" not in str(info.value) and tid not in str(info.value)

    async def test_ensure_thread_without_owner_and_without_user_continues(
        self, memory: AsyncMemory
    ) -> None:
        tid = await self._thread(memory)
        assert (await memory.ensure_thread(tid, user_id=None)).id == tid

    async def test_reads_and_writes_naming_another_user_are_forbidden(
        self, memory: AsyncMemory
    ) -> None:
        tid = await self._thread(memory, user_id="alice")
        await memory.remember(tid, "user", "hi", user_id="alice")
        with pytest.raises(ThreadForbidden):
            await memory.remember(tid, "user", "hijack", user_id="bob")
        with pytest.raises(ThreadForbidden):
            await memory.history(tid, user_id="bob")
        with pytest.raises(ThreadForbidden):
            await memory.threads.get(tid, user_id="bob")
        assert await memory.entries.count(tid) == 1

    async def test_ids_compare_exactly_and_hold_255_characters(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        base = _id("x")
        # Look-alikes under padding or case folding, and the longest id (4-byte characters).
        names = [base, base + " ", base.upper(), (base + "é😀漢" * 85)[:254] + " "]
        tenant = memory.tenant_id
        for n, name in enumerate(names):
            scoped = memory.tenant(name)
            await scoped.threads.create(thread_id=name, user_id=name, agent_id=name, title=str(n))
            await scoped.remember(name, "user", str(n), user_id=name)
            await store.working_set(tenant, name, name, str(n))
            await store.snapshot_save(tenant, name, str(n), user_id=name, saved_at=_StepClock()())
            await store.record_put(tenant, [self._record("k", str(n), id=name, key=name)])
        for n, name in enumerate(names):
            scoped = memory.tenant(name)
            assert [t.title for t in await scoped.threads.list(user_id=name)] == [str(n)]
            assert [m["content"] for m in await scoped.history(name, user_id=name)] == [str(n)]
            assert await store.working_items(tenant, name) == {name: str(n)}
            assert await store.snapshot_load(tenant, name) == (name, str(n))
            record = await store.record_get(tenant, "k", name)
            assert record is not None and record.content == str(n)
            assert [r.content for r in await store.record_list(tenant, "k", key=name)] == [str(n)]
        owner = memory.tenant(base)
        for other in names[1:]:
            with pytest.raises(ThreadForbidden):  # refused, and nothing written
                await owner.remember(base, "user", "intruder", user_id=other)
        assert await owner.entries.count(base) == 1
