"""The conformance suite: entry ids are unique on a branch, whatever the store.

``entry_append`` refuses, with ``Conflict`` and nothing written, a batch that holds an
id twice or an id the branch already holds (entries skipped as idempotent replays are
not written, so their ids are not checked). Branch copies share their source's ids;
uniqueness is per branch.
"""

from __future__ import annotations

import pytest

from memorybank.errors import Conflict
from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores.contract._async.store import AsyncStore, NewEntry
from memorybank.testing._async.contract._base import ContractBase, _id, _new_entry

__all__ = ["EntryIdCases"]


def _new(entry_id: str, content: str, key: str | None = None) -> NewEntry:
    return _new_entry(entry_id, content, key=key, fingerprint=None if key is None else f"f-{key}")


class EntryIdCases(ContractBase):
    """Entry ids: unique on a branch, refused with ``Conflict`` and nothing written."""

    async def _seeded(self, memory: AsyncMemory, store: AsyncStore) -> tuple[str, str]:
        tid = await self._thread(memory)
        taken = _id("e")
        await self._append(store, memory.tenant_id, tid, [_new(taken, "first")])
        return tid, taken

    async def _contents(
        self, memory: AsyncMemory, tid: str, branch: str | None = None
    ) -> list[str | None]:
        return [e.content for e in await memory.entries.list(tid, branch=branch)]

    async def test_an_id_the_branch_holds_is_refused(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tid, taken = await self._seeded(memory, store)
        before = await memory.threads.get(tid)
        assert before is not None
        with pytest.raises(Conflict, match="already"):
            await self._append(store, memory.tenant_id, tid, [_new(taken, "again")])
        batch = [_new(_id("e"), "new"), _new(taken, "again"), _new(_id("e"), "newer")]
        with pytest.raises(Conflict, match="already"):
            await self._append(store, memory.tenant_id, tid, batch)
        assert await self._contents(memory, tid) == ["first"]
        after = await memory.threads.get(tid)
        assert after is not None and after.updated_at == before.updated_at
        got = await store.entry_get(memory.tenant_id, tid, taken)
        assert got is not None and got.content == "first" and got.position == 1

    async def test_an_id_repeated_in_one_batch_is_refused(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tid, _ = await self._seeded(memory, store)
        twice = _id("e")
        for batch in (
            [_new(twice, "a"), _new(twice, "b")],
            [_new(_id("e"), "a"), _new(twice, "b"), _new(twice, "c")],
            [_new(twice, "a", key=_id("k")), _new(twice, "b")],
        ):
            with pytest.raises(Conflict, match="twice"):
                await self._append(store, memory.tenant_id, tid, batch)
        assert await self._contents(memory, tid) == ["first"]
        assert await memory.entries.count(tid) == 1

    async def test_a_replayed_key_is_not_an_id_clash(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tid = await self._thread(memory)
        key, entry_id = _id("k"), _id("e")
        tenant = memory.tenant_id
        [stored] = (await self._append(store, tenant, tid, [_new(entry_id, "once", key)])).entries
        replay = await self._append(store, tenant, tid, [_new(entry_id, "once", key)])
        assert replay.entries == [stored]
        assert await memory.entries.count(tid) == 1

    async def test_ids_are_unique_per_branch(self, memory: AsyncMemory, store: AsyncStore) -> None:
        tid, taken = await self._seeded(memory, store)
        later = _id("e")
        await self._append(store, memory.tenant_id, tid, [_new(later, "main only")])
        await memory.branches.create(tid, "side", from_entry=taken)
        with pytest.raises(Conflict, match="already"):
            await self._append(store, memory.tenant_id, tid, [_new(taken, "copy")], branch="side")
        # an id held only by another branch is free on this one
        await self._append(store, memory.tenant_id, tid, [_new(later, "side's own")], branch="side")
        assert await self._contents(memory, tid, branch="side") == ["first", "side's own"]
        assert await self._contents(memory, tid, branch="main") == ["first", "main only"]
