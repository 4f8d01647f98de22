"""The conformance suite: idempotency keys: retries store once, reuse conflicts."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest

from memorybank.errors import Conflict, InvalidInput
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Message, ToolCall
from memorybank.runtime.concurrency import arun_all
from memorybank.stores.contract._async.store import AsyncStore, NewEntry
from memorybank.testing._async.contract._base import ContractBase, _id, _new_entry, _tool_call

__all__ = ["IdempotencyCases"]


class IdempotencyCases(ContractBase):
    """Idempotency keys: retries store once, reuse conflicts."""

    async def test_idempotency_key_does_not_duplicate(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        first = await memory.entries.add(
            tid, {"role": "user", "content": "pay"}, idempotency_key="k1"
        )
        retry = await memory.entries.add(
            tid, {"role": "user", "content": "pay"}, idempotency_key="k1"
        )
        assert retry.id == first.id
        assert await memory.entries.count(tid) == 1
        batch = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
        one = await memory.entries.add_many(tid, batch, idempotency_key="b1")
        two = await memory.entries.add_many(tid, batch, idempotency_key="b1")
        assert [e.id for e in one] == [e.id for e in two]
        assert await memory.entries.count(tid) == 3

    async def test_idempotent_retry_returns_the_stored_entries(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        call = {"role": "assistant", "content": None, "tool_calls": [_tool_call("c1")]}
        first = await memory.entries.add(tid, call, idempotency_key="turn-1")
        # The same payload as a Message (and with another token count) is the same request.
        again = await memory.entries.add(
            tid,
            Message(
                role="assistant", tool_calls=(ToolCall("c1", "get_weather", '{"city": "Paris"}'),)
            ),
            idempotency_key="turn-1",
            token_count=999,
        )
        assert again == first
        batch: list[dict[str, Any]] = [
            {"role": "user", "content": "x", "metadata": {"n": 1}},
            {"role": "tool", "content": "y", "tool_call_id": "c1"},
        ]
        one = await memory.entries.add_many(tid, batch, idempotency_key="turn-2")
        two = await memory.entries.add_many(tid, batch, idempotency_key="turn-2")
        assert two == one
        assert await memory.entries.count(tid) == 3
        assert [e.content for e in await memory.entries.list(tid)] == [None, "x", "y"]

    async def test_a_key_reused_with_another_payload_conflicts(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        message = {"role": "user", "content": "pay 10", "metadata": {"a": 1}, "state": {"s": 1}}
        stored = await memory.entries.add(tid, message, idempotency_key="k")
        for change in (
            {"content": "pay 11"},
            {"role": "assistant"},
            {"metadata": {"a": 2}},
            {"metadata": {"a": 1.0}},
            {"state": {"s": 2}},
            {"name": "bob"},
        ):
            with pytest.raises(Conflict):
                await memory.entries.add(tid, {**message, **change}, idempotency_key="k")
        # One key names one request, whichever verb made it.
        with pytest.raises(Conflict):
            await memory.entries.add_many(
                tid, [message, {"role": "user", "content": "more"}], idempotency_key="k"
            )
        assert await memory.entries.list(tid) == [stored]
        assert await memory.entries.add_many(tid, [message], idempotency_key="k") == [stored]

    async def test_a_retried_batch_that_differs_conflicts_and_writes_nothing(
        self, memory: AsyncMemory
    ) -> None:
        tid = await self._thread(memory)
        batch = [{"role": "user", "content": f"m{i}"} for i in range(3)]
        stored = await memory.entries.add_many(tid, batch, idempotency_key="b")
        for other in (
            [*batch, {"role": "user", "content": "m3"}],
            batch[:2],
            batch[:1],
            [batch[0], {"role": "user", "content": "changed"}, batch[2]],
            list(reversed(batch)),
        ):
            with pytest.raises(Conflict):
                await memory.entries.add_many(tid, other, idempotency_key="b")
        with pytest.raises(Conflict):
            await memory.entries.add(tid, batch[0], idempotency_key="b")
        assert await memory.entries.list(tid) == stored
        assert await memory.entries.add_many(tid, batch, idempotency_key="b") == stored

    async def test_batch_keys_never_collide_with_keys_given_to_add(
        self, memory: AsyncMemory
    ) -> None:
        tid = await self._thread(memory)
        batch = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        stored = await memory.entries.add_many(tid, batch, idempotency_key="k")
        assert stored[0].idempotency_key == "k"
        assert stored[1].idempotency_key == "k\x1f1"
        mine = await memory.entries.add(tid, batch[1], idempotency_key="k:1")
        assert mine.id not in {e.id for e in stored}
        assert mine.idempotency_key == "k:1"
        # and a batch whose key looks like another batch's member key is its own request
        theirs = await memory.entries.add_many(tid, batch, idempotency_key="k:1x")
        assert {e.id for e in theirs}.isdisjoint(e.id for e in stored)
        assert await memory.entries.count(tid) == 5
        with pytest.raises(InvalidInput) as caught:
            await memory.entries.add(tid, batch[1], idempotency_key="k\x1f1")
        assert caught.value.field == "idempotency_key"
        # the longest key a caller may give still names a batch (its members' keys are longer)
        longest = "k" * 255
        many = [{"role": "user", "content": str(i)} for i in range(12)]
        first = await memory.entries.add_many(tid, many, idempotency_key=longest)
        assert await memory.entries.add_many(tid, many, idempotency_key=longest) == first
        assert await memory.entries.count(tid) == 17

    async def test_the_key_of_another_branch_or_thread_is_another_key(
        self, memory: AsyncMemory
    ) -> None:
        tid, other = await self._thread(memory), await self._thread(memory)
        first = await memory.entries.add(tid, {"role": "user", "content": "a"}, idempotency_key="k")
        await memory.branches.create(tid, "alt", from_entry=first.id)
        # the branch copied the entry with its key and fingerprint
        assert await memory.entries.add(
            tid, {"role": "user", "content": "a"}, idempotency_key="k", branch="alt"
        ) == dataclasses.replace(first, branch="alt")
        with pytest.raises(Conflict):
            await memory.entries.add(
                tid, {"role": "user", "content": "b"}, idempotency_key="k", branch="alt"
            )
        elsewhere = await memory.entries.add(
            other, {"role": "user", "content": "b"}, idempotency_key="k"
        )
        assert elsewhere.content == "b"

    async def test_store_refuses_a_reused_key_before_writing_any_of_the_batch(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tid, tenant = await self._thread(memory), memory.tenant_id

        def new(content: str, key: str | None, fingerprint: str | None) -> NewEntry:
            return _new_entry(_id("e"), content, key=key, fingerprint=fingerprint)

        await self._append(store, tenant, tid, [new("a", "k", "f1"), new("b", None, None)])
        with pytest.raises(Conflict):
            await self._append(
                store,
                tenant,
                tid,
                [new("c", "fresh", "f2"), new("d", None, None), new("e", "k", "f2")],
            )
        assert [e.content for e in await memory.entries.list(tid)] == ["a", "b"]
        # a fingerprint missing on either side is no evidence of another payload
        for old, fresh in (("f1", None), (None, "f3")):
            key = _id("k")
            [stored] = (await self._append(store, tenant, tid, [new("x", key, old)])).entries
            replay = await self._append(store, tenant, tid, [new("y", key, fresh)])
            assert replay.entries == [stored]
        assert await memory.entries.count(tid) == 4

    async def test_concurrent_adds_of_one_key_store_one_payload(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        outcomes: list[str] = []

        async def writer(w: int) -> None:
            try:
                entry = await memory.entries.add(
                    tid, {"role": "user", "content": f"w{w}"}, idempotency_key="race"
                )
                outcomes.append(entry.content or "")
            except Conflict:
                outcomes.append("conflict")

        await arun_all([functools.partial(writer, w) for w in range(6)])
        entries = await memory.entries.list(tid)
        assert len(entries) == 1
        assert sorted(outcomes) == sorted([entries[0].content or "", *["conflict"] * 5])
