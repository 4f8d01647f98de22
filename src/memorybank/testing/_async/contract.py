"""The conformance suite every store must pass, through the public ``AsyncMemory`` API.

Use it for your own store::

    from memorybank.testing import AsyncContract

    class TestMyStore(AsyncContract):
        @pytest.fixture
        async def store(self):
            store = MyAsyncStore(...)
            yield store
            await store.close()

The sync twin ``SyncContract`` (generated from this file) takes a sync store.
Async tests need pytest-asyncio with ``asyncio_mode = "auto"``. Every test uses
fresh ids, so a store may be shared between tests.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memorybank._async.core_facts import AsyncCoreFacts
from memorybank._async.memory import AsyncMemory
from memorybank._async.stores.base import (
    UNSET,
    AsyncStore,
    NewEntry,
    Record,
    RecordGuard,
    VectorItem,
    Visibility,
)
from memorybank._concurrency import AsyncStep, arun_all
from memorybank.errors import (
    Conflict,
    InvalidInput,
    MemoryBankError,
    NotFound,
    StoreClosed,
    ThreadForbidden,
)
from memorybank.records import Message, ToolCall
from memorybank.stores._types import LAST_POSITION
from memorybank.tokens import NON_TEXT_PART_TOKENS

__all__ = ["AsyncContract"]


def _id(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def _outcome(call: AsyncStep[Any]) -> Any:
    """What ``call`` returned, or the exception it raised."""
    try:
        return await call()
    except Exception as error:
        return error


class _StepClock:
    """A deterministic clock: each call is 1 ms after the previous, microseconds kept."""

    def __init__(self) -> None:
        self._ticks = itertools.count()
        self.start = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.start + timedelta(milliseconds=next(self._ticks))


def _tool_call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }


class AsyncContract:
    """Behaviour every store must have. Subclasses provide the ``store`` fixture."""

    @pytest.fixture
    async def memory(self, store: AsyncStore) -> AsyncIterator[AsyncMemory]:
        memory = AsyncMemory(store, clock=_StepClock())
        yield memory
        await memory.close()

    async def _thread(self, memory: AsyncMemory, **kwargs: Any) -> str:
        thread = await memory.threads.create(thread_id=_id(), **kwargs)
        return thread.id

    async def _fill(self, memory: AsyncMemory, thread_id: str, n: int) -> list[str]:
        ids = []
        for i in range(n):
            role = "user" if i % 2 == 0 else "assistant"
            entry = await memory.remember(thread_id, role, f"message {i}")
            ids.append(entry.id)
        return ids

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

    # -- entries ---------------------------------------------------------------------

    async def test_remember_and_history_oldest_first_provider_shaped(
        self, memory: AsyncMemory
    ) -> None:
        tid = await self._thread(memory)
        await memory.remember(tid, "system", "be brief")
        await memory.remember(tid, "user", "hi", name="alice")
        await memory.remember(tid, "assistant", "hello")
        assert await memory.history(tid) == [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi", "name": "alice"},
            {"role": "assistant", "content": "hello"},
        ]

    async def test_remember_bumps_thread_updated_at(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        before = await memory.threads.get(tid)
        await memory.remember(tid, "user", "hi")
        after = await memory.threads.get(tid)
        assert before is not None and after is not None
        assert after.updated_at > before.updated_at

    async def test_history_last_keeps_the_newest_oldest_first(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await self._fill(memory, tid, 30)
        history = await memory.history(tid, last=5)
        assert [m["content"] for m in history] == [f"message {i}" for i in range(25, 30)]
        assert len(await memory.history(tid)) == 20
        assert await memory.history(tid, last=0) == []

    async def test_recent_messages_equal_the_entries_read(self, memory: AsyncMemory) -> None:
        """``recent_messages`` (``history()``'s read, which a store may answer its own
        way) is exactly the entries' messages, cut-off tool results dropped."""
        from memorybank._window import drop_orphan_tool_results

        store, tenant = memory.store, memory.tenant_id
        tid = await self._thread(memory, user_id="u")
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        await memory.entries.add_many(
            tid,
            [
                {"role": "user", "content": "hi", "name": "ann"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "content": "42", "tool_call_id": "c1"},
                {"role": "assistant", "content": "no", "refusal": "no"},
                {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c2", "output": "ok"},
                {"role": "user", "content": [{"type": "text", "text": "a"}]},
            ],
        )
        for limit in range(9):
            _, rows = await store.list_entries(tenant, tid, limit=limit)
            expected = [e.to_message() for e in drop_orphan_tool_results(rows)]
            assert await store.recent_messages(tenant, tid, limit) == ("u", expected), limit
        with pytest.raises(NotFound):
            await store.recent_messages(tenant, _id(), 3)
        with pytest.raises(NotFound):
            await store.recent_messages(tenant + "-other", tid, 3)

    async def test_list_pages_from_the_newest(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await self._fill(memory, tid, 10)

        async def contents(**kwargs: Any) -> list[str]:
            return [e.content or "" for e in await memory.entries.list(tid, **kwargs)]

        assert await contents() == [f"message {i}" for i in range(10)]
        assert await contents(limit=3) == ["message 7", "message 8", "message 9"]
        assert await contents(limit=3, offset=2) == ["message 5", "message 6", "message 7"]
        assert await contents(limit=3, order="desc") == ["message 9", "message 8", "message 7"]
        assert await contents(offset=8) == ["message 0", "message 1"]
        assert await contents(limit=5, offset=20) == []

    async def test_list_before_and_after_filter_on_created_at(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        base = datetime(2024, 5, 1, tzinfo=UTC)
        for day in range(5):
            await memory.entries.add(
                tid,
                {"role": "user", "content": f"day {day}"},
                created_at=base + timedelta(days=day),
            )
        after = await memory.entries.list(tid, after=base + timedelta(days=1))
        assert [e.content for e in after] == ["day 2", "day 3", "day 4"]
        before = await memory.entries.list(tid, before=base + timedelta(days=2), limit=1)
        assert [e.content for e in before] == ["day 1"]

    async def test_entries_round_trip_every_field(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        when = datetime(2023, 5, 8, 13, 56, 0, 654321, tzinfo=UTC)
        entry = await memory.entries.add(
            tid,
            Message(
                role="user",
                content="héllo 👋 你好",
                name="alice",
                metadata={"dia_id": "D1:3", "nested": {"x": [1, 2]}},
                state={"mood": "ok"},
            ),
            created_at=when,
            token_count=7,
        )
        got = await memory.entries.get(tid, entry.id)
        assert got == entry
        assert got is not None
        assert (got.role, got.content, got.name, got.token_count) == (
            "user",
            "héllo 👋 你好",
            "alice",
            7,
        )
        assert got.metadata == {"dia_id": "D1:3", "nested": {"x": [1, 2]}}
        assert got.state == {"mood": "ok"}
        assert got.created_at == when
        assert got.branch == "main" and got.thread_id == tid

    async def test_tool_calls_round_trip_provider_shaped(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await memory.entries.add(tid, {"role": "user", "content": "weather?"})
        call = await memory.entries.add(
            tid, {"role": "assistant", "content": None, "tool_calls": [_tool_call("call_1")]}
        )
        await memory.entries.add(
            tid, {"role": "tool", "content": '{"t": 21}', "tool_call_id": "call_1"}
        )
        assert call.tool_calls == (ToolCall("call_1", "get_weather", '{"city": "Paris"}'),)
        history = await memory.history(tid)
        assert history[1] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [_tool_call("call_1")],
        }
        assert history[2] == {"role": "tool", "content": '{"t": 21}', "tool_call_id": "call_1"}

    # -- messages as providers shape them ---------------------------------------

    async def test_content_parts_developer_role_and_extra_fields_round_trip(
        self, memory: AsyncMemory
    ) -> None:
        tid = await self._thread(memory)
        parts: list[dict[str, Any]] = [
            {"type": "text", "text": "what is in this picture"},
            {
                "type": "image_url",
                "image_url": {"url": "data:image/png;base64,iVBOR", "detail": "low"},
            },
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "file", "file": {"file_id": "file-abc", "filename": "a.pdf"}},
            {"type": "future_part", "payload": {"n": 1e16, "neg": -0.0, "big": 2**62}},
            {"type": "text", "text": "and this 👋"},
        ]
        messages: list[dict[str, Any]] = [
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": parts, "name": "alice"},
            # what the OpenAI SDK's ``ChatCompletionMessage.model_dump()`` gives
            {
                "content": "Une photo.",
                "refusal": None,
                "role": "assistant",
                "annotations": [{"type": "url_citation", "url_citation": {"url": "https://x"}}],
                "audio": None,
                "function_call": None,
                "tool_calls": None,
            },
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        ]
        stored = await memory.entries.add_many(tid, messages)
        assert [e.to_message() for e in stored] == messages
        assert await memory.history(tid) == messages
        got = await memory.entries.list(tid)
        assert [e.to_message() for e in got] == messages
        assert got == stored
        # ``content`` is the text; the parts are kept verbatim beside it
        assert got[0].role == "developer"
        assert got[1].content == "what is in this picture\nand this 👋"
        assert got[1].extra["content"] == parts
        assert got[2].extra["refusal"] is None and got[2].content == "Une photo."
        # text parts count as text, every other part a fixed NON_TEXT_PART_TOKENS
        texts = [p for p in parts if p["type"] == "text"]
        text_only = await memory.entries.add(
            tid, {"role": "user", "content": texts, "name": "alice"}
        )
        assert got[1].token_count == text_only.token_count + 4 * NON_TEXT_PART_TOKENS
        again = await memory.entries.get(tid, stored[1].id)
        assert again is not None and again.to_message() == messages[1]
        # returned records are copies
        again.extra["content"][0]["text"] = "changed"
        assert (await memory.history(tid))[1] == messages[1]

    async def test_responses_items_round_trip_and_keep_pairs(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        items: list[dict[str, Any]] = [
            {"role": "user", "content": "weather in Paris?"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "look it up"}],
                "encrypted_content": "gAAAA",
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
                "status": "completed",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "21C"},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": "It is 21C.", "annotations": [], "logprobs": []}
                ],
            },
        ]
        stored = await memory.entries.add_many(tid, items)
        assert await memory.history(tid) == items
        got = await memory.entries.list(tid)
        assert [e.to_message() for e in got] == items
        assert [e.role for e in got] == [
            "user",
            "user",
            "assistant",
            "assistant",
            "tool",
            "assistant",
        ]
        assert got[3].tool_calls == (ToolCall("call_1", "get_weather", '{"city":"Paris"}'),)
        assert got[3].content is None and got[4].tool_call_id == "call_1"
        assert [e.content for e in got[4:]] == ["21C", "It is 21C."]
        assert got[2].content == "look it up" and got[2].item == items[2]
        assert got == stored
        # a window never keeps an output whose call it cut off
        assert await memory.history(tid, last=2) == items[5:]
        assert await memory.history(tid, last=3) == items[3:]
        stripped = await memory.entries.list(tid, include_tool_calls=False)
        assert [e.to_message() for e in stripped] == [items[i] for i in (0, 1, 2, 5)]

    async def test_payloads_survive_branches_search_and_idempotency(
        self, memory: AsyncMemory
    ) -> None:
        tid = await self._thread(memory)
        word = f"zq{uuid.uuid4().hex[:8]}"
        hidden = f"zq{uuid.uuid4().hex[:8]}"
        message = {
            "role": "user",
            "content": [
                {"type": "text", "text": f"the {word} report"},
                {"type": "image_url", "image_url": {"url": f"https://x/{hidden}.png"}},
            ],
        }
        first = await memory.entries.add(tid, message, idempotency_key="k1")
        assert (await memory.entries.add(tid, message, idempotency_key="k1")).id == first.id
        changed = {**message, "content": [message["content"][0]]}
        with pytest.raises(Conflict):
            await memory.entries.add(tid, changed, idempotency_key="k1")
        with pytest.raises(Conflict):
            await memory.entries.add(tid, {**message, "refusal": None}, idempotency_key="k1")
        item = {"type": "function_call", "call_id": "c9", "name": "f", "arguments": "{}"}
        await memory.entries.add(tid, item, idempotency_key="k2")
        with pytest.raises(Conflict):
            await memory.entries.add(tid, {**item, "id": "fc_9"}, idempotency_key="k2")
        # keyword search indexes the text parts, not the rest of the payload
        hits = await memory.search(word, mode="keyword", thread_id=tid, kinds=("entries",))
        assert [h.id for h in hits] == [first.id]
        assert hits[0].entry is not None and hits[0].entry.to_message() == message
        assert await memory.search(hidden, mode="keyword", thread_id=tid, kinds=("entries",)) == []
        await memory.branches.create(tid, "alt")
        copied = await memory.entries.list(tid, branch="alt")
        assert [e.to_message() for e in copied] == [message, item]

    async def test_token_counts_are_computed_and_stored(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        short = await memory.remember(tid, "user", "hi")
        long = await memory.remember(tid, "user", "a much longer message " * 20)
        assert 0 < short.token_count < long.token_count
        stored = await memory.entries.get(tid, long.id)
        assert stored is not None and stored.token_count == long.token_count

    async def test_created_at_in_the_past_keeps_adding_order(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await memory.entries.add(tid, {"role": "user", "content": "first"})
        await memory.entries.add(
            tid,
            {"role": "user", "content": "imported"},
            created_at=datetime(2001, 1, 1, tzinfo=UTC),
        )
        assert [m["content"] for m in await memory.history(tid)] == ["first", "imported"]

    async def test_positions_increase_in_adding_order(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await self._fill(memory, tid, 5)
        positions = [e.position for e in await memory.entries.list(tid)]
        assert positions == sorted(positions) and len(set(positions)) == 5

    async def test_add_many_is_all_or_nothing(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        added = await memory.entries.add_many(
            tid, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        )
        assert [e.content for e in added] == ["a", "b"]
        with pytest.raises(InvalidInput):
            await memory.entries.add_many(
                tid, [{"role": "user", "content": "c"}, {"role": "wizard", "content": "d"}]
            )
        assert await memory.entries.count(tid) == 2

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
        tid = await self._thread(memory)
        when = datetime(2026, 1, 1, tzinfo=UTC)

        def new(content: str, key: str | None, fingerprint: str | None) -> NewEntry:
            return NewEntry(
                id=_id("e"),
                role="user",
                content=content,
                name=None,
                tool_calls=(),
                tool_call_id=None,
                metadata={},
                state={},
                token_count=3,
                created_at=when,
                idempotency_key=key,
                fingerprint=fingerprint,
            )

        await store.append_entries(
            memory.tenant_id, tid, [new("a", "k", "f1"), new("b", None, None)], updated_at=when
        )
        with pytest.raises(Conflict):
            await store.append_entries(
                memory.tenant_id,
                tid,
                [new("c", "fresh", "f2"), new("d", None, None), new("e", "k", "f2")],
                updated_at=when,
            )
        assert [e.content for e in await memory.entries.list(tid)] == ["a", "b"]
        # a fingerprint missing on either side is no evidence of another payload
        for old, fresh in (("f1", None), (None, "f3")):
            key = _id("k")
            [stored] = (
                await store.append_entries(
                    memory.tenant_id, tid, [new("x", key, old)], updated_at=when
                )
            ).entries
            replay = await store.append_entries(
                memory.tenant_id, tid, [new("y", key, fresh)], updated_at=when
            )
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

    async def test_max_tokens_keeps_the_newest_run_that_fits(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        for i, tokens in enumerate([50, 10, 30, 20, 40]):
            await memory.entries.add(tid, {"role": "user", "content": f"m{i}"}, token_count=tokens)
        window = await memory.entries.list(tid, max_tokens=65)
        assert [e.content for e in window] == ["m3", "m4"]
        window = await memory.entries.list(tid, max_tokens=90)
        assert [e.content for e in window] == ["m2", "m3", "m4"]
        assert await memory.entries.list(tid, max_tokens=10) == []
        both = await memory.entries.list(tid, max_tokens=1000, limit=2)
        assert [e.content for e in both] == ["m3", "m4"]

    async def test_max_tokens_scans_beyond_one_page(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await memory.entries.add_many(
            tid, [{"role": "user", "content": f"m{i}"} for i in range(150)]
        )
        per = (await memory.entries.list(tid, limit=1))[0].token_count
        window = await memory.entries.list(tid, max_tokens=per * 100)
        assert len(window) == 100 and window[-1].content == "m149"

    async def test_include_tool_calls_false_strips_tools(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await memory.entries.add_many(
            tid,
            [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": None, "tool_calls": [_tool_call("c1")]},
                {"role": "tool", "content": "21C", "tool_call_id": "c1"},
                {"role": "assistant", "content": "Checking", "tool_calls": [_tool_call("c2")]},
                {"role": "tool", "content": "22C", "tool_call_id": "c2"},
                {"role": "assistant", "content": "It is 22C"},
            ],
        )
        window = await memory.entries.list(tid, include_tool_calls=False)
        assert [(e.role, e.content, e.tool_calls) for e in window] == [
            ("user", "weather?", ()),
            ("assistant", "Checking", ()),
            ("assistant", "It is 22C", ()),
        ]
        assert [
            e.content for e in await memory.entries.list(tid, include_tool_calls=False, limit=2)
        ] == ["Checking", "It is 22C"]

    async def test_no_window_returns_a_tool_result_without_its_call(
        self, memory: AsyncMemory
    ) -> None:
        tid = await self._thread(memory)
        await memory.entries.add_many(
            tid,
            [
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_tool_call("a"), _tool_call("b")],
                },
                {"role": "tool", "content": "21C", "tool_call_id": "a"},
                {"role": "tool", "content": "rain", "tool_call_id": "b"},
                {"role": "assistant", "content": "21C and rain"},
            ],
        )
        for window in (
            await memory.entries.list(tid, limit=3),
            await memory.entries.list(tid, limit=2),
            await memory.history(tid, last=3),
        ):
            roles = [e["role"] if isinstance(e, dict) else e.role for e in window]
            assert "tool" not in roles
        per = [e.token_count for e in await memory.entries.list(tid)]
        cut = await memory.entries.list(tid, max_tokens=per[-1] + per[-2] + per[-3])
        assert [e.role for e in cut] == ["assistant"]
        full = await memory.entries.list(tid, limit=4)
        assert [e.role for e in full] == ["assistant", "tool", "tool", "assistant"]

    async def test_get_delete_clear_count(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        ids = await self._fill(memory, tid, 4)
        assert await memory.entries.count(tid) == 4
        assert await memory.entries.delete(tid, ids[1]) is True
        assert await memory.entries.delete(tid, ids[1]) is False
        assert await memory.entries.get(tid, ids[1]) is None
        assert [e.id for e in await memory.entries.list(tid)] == [ids[0], ids[2], ids[3]]
        assert await memory.entries.clear(tid) == 3
        assert await memory.entries.count(tid) == 0

    async def test_returned_records_cannot_change_stored_data(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory, metadata={"a": 1})
        entry = await memory.remember(tid, "user", "x", metadata={"k": [1]})
        entry.metadata["k"].append(2)
        thread = await memory.threads.get(tid)
        assert thread is not None
        thread.metadata["a"] = 2
        again = await memory.entries.get(tid, entry.id)
        assert again is not None and again.metadata == {"k": [1]}
        assert (await memory.threads.get(tid)).metadata == {"a": 1}  # type: ignore[union-attr]

    async def test_values_round_trip_exactly(self, memory: AsyncMemory) -> None:
        """Numbers keep their type and sign, text every character, times every microsecond."""
        numbers = {
            "float": 1e16,
            "negative_zero": -0.0,
            "tiny": 5e-324,
            "largest": 1.7976931348623157e308,
            "int_max": 2**63 - 1,
            "int_min": -(2**63),
            "nested": [0.1, {"a": [-0.0, 1.0, 1]}],
        }
        text = "é 日本 \U0001f600 \u2028 \ufeff \u200d ' \" \\ % _ \t\n" + "x" * 70_000
        when = datetime(1000, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
        tid = await self._thread(memory, metadata=numbers, title=text[:1000])
        thread = await memory.threads.get(tid)
        assert thread is not None and repr(thread.metadata) == repr(numbers)
        assert thread.title == text[:1000]
        entry = await memory.entries.add(
            tid,
            {"role": "user", "content": text, "name": "ñ", "metadata": numbers, "state": numbers},
            created_at=when,
        )
        for got in (await memory.entries.get(tid, entry.id), (await memory.entries.list(tid))[0]):
            assert got is not None and got.content == text and got.created_at == when
            assert repr((got.metadata, got.state)) == repr((numbers, numbers))
        late = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
        record = Record(
            kind="doc", id=_id("r"), agent_id=None, user_id=None, content=text,
            data=numbers, created_at=when, updated_at=late, expires_at=late,
        )  # fmt: skip
        await memory.store.record_put(memory.tenant_id, [record])
        assert await memory.store.record_get(memory.tenant_id, "doc", record.id) == record
        stored = await memory.store.record_get(memory.tenant_id, "doc", record.id)
        assert stored is not None and repr(stored.data) == repr(numbers)
        run = _id("run")
        await memory.snapshots.save(run, [numbers, text])
        assert repr(await memory.snapshots.load(run)) == repr([numbers, text])
        await memory.working(run).set("k", numbers)
        assert repr(await memory.working(run).get("k")) == repr(numbers)

    async def test_many_entries_last_twenty(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        await memory.entries.add_many(
            tid, [{"role": "user", "content": f"m{i}"} for i in range(2000)]
        )
        history = await memory.history(tid, last=20)
        assert [m["content"] for m in history] == [f"m{i}" for i in range(1980, 2000)]

    # -- bad input -----------------------------------------------------------------

    @pytest.mark.parametrize(
        ("message", "field"),
        [
            ({"role": "wizard", "content": "x"}, "role"),
            ({"role": "user"}, "content"),
            ({"role": "user", "content": None}, "content"),
            ({"role": "user", "content": 42}, "content"),
            ({"role": "assistant", "content": None, "tool_calls": []}, "content"),
            ({"role": "tool", "content": "r"}, "tool_call_id"),
            ({"role": "user", "content": "x", "metadata": {"f": object()}}, "metadata"),
            ({"role": "user", "content": "x", "metadata": {"nan": float("nan")}}, "metadata"),
            ({"role": "user", "content": "x", "metadata": ["not", "an", "object"]}, "metadata"),
            ({"role": "user", "content": "x", "state": {1: "int key"}}, "state"),
            ({"role": "user", "content": "x", "tool_calls": [_tool_call("c")]}, "tool_calls"),
            ({"role": "user", "content": "x", "bogus": "a\x00"}, "extra"),
            ({"role": "user", "content": [{"type": "text", "text": "\ud800"}]}, "content"),
            ({"role": "user", "content": [{"text": "no type"}]}, "content"),
            ({"type": "function_call", "call_id": "", "name": "f"}, "tool_calls"),
            ("just a string", "message"),
        ],
    )
    async def test_bad_messages_raise_invalid_input_and_write_nothing(
        self, memory: AsyncMemory, message: Any, field: str
    ) -> None:
        tid = await self._thread(memory)
        with pytest.raises(InvalidInput) as info:
            await memory.entries.add(tid, message)
        assert info.value.field == field
        assert info.value.code == "invalid_input"
        assert await memory.entries.count(tid) == 0

    async def test_oversize_content_is_rejected(self, store: AsyncStore) -> None:
        memory = AsyncMemory(store, max_content_chars=100)
        tid = await self._thread(memory)
        with pytest.raises(InvalidInput) as info:
            await memory.remember(tid, "user", "x" * 101)
        assert info.value.field == "content"
        assert await memory.entries.count(tid) == 0

    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            ({"limit": -1}, "limit"),
            ({"limit": "5"}, "limit"),
            ({"limit": True}, "limit"),
            ({"offset": -3}, "offset"),
            ({"max_tokens": -1}, "max_tokens"),
            ({"order": "sideways"}, "order"),
            ({"before": datetime(2024, 1, 1)}, "before"),  # noqa: DTZ001 - naive on purpose
        ],
    )
    async def test_bad_list_arguments_raise_invalid_input(
        self, memory: AsyncMemory, kwargs: dict[str, Any], field: str
    ) -> None:
        tid = await self._thread(memory)
        with pytest.raises(InvalidInput) as info:
            await memory.entries.list(tid, **kwargs)
        assert info.value.field == field

    async def test_writing_to_a_missing_thread_raises_not_found(self, memory: AsyncMemory) -> None:
        tid = _id()
        with pytest.raises(NotFound):
            await memory.remember(tid, "user", "hello?")
        with pytest.raises(NotFound):
            await memory.entries.add_many(tid, [{"role": "user", "content": "x"}])
        assert await memory.threads.get(tid) is None

    async def test_bad_thread_arguments(self, memory: AsyncMemory) -> None:
        with pytest.raises(InvalidInput) as info:
            await memory.threads.create(metadata={"x": {1, 2}})
        assert info.value.field == "metadata"
        with pytest.raises(InvalidInput):
            await memory.threads.create(thread_id="")
        with pytest.raises(InvalidInput):
            await memory.threads.create(thread_id=123)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            await memory.history(_id(), last=-1)

    # -- branches ------------------------------------------------------------------

    async def test_every_thread_starts_on_main(self, memory: AsyncMemory) -> None:
        tid = await self._thread(memory)
        assert [b.name for b in await memory.branches.list(tid)] == ["main"]

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

    async def test_runs_with_working_memory_or_a_snapshot_are_listed(
        self, memory: AsyncMemory
    ) -> None:
        store, tenant, other = memory.store, _id("ten"), _id("ten")
        if await store.working_runs(tenant) is None:
            pytest.skip("this store cannot list runs")
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
        when = datetime(2026, 1, 1, tzinfo=UTC)
        await store.snapshot_save(tenant, run, "1", user_id=None, saved_at=when)
        await store.snapshot_save(tenant, run, "2", user_id="alice", saved_at=when)  # claims it
        assert await store.snapshot_load(tenant, run) == ("alice", "2")
        for user in ("bob", None):
            with pytest.raises(ThreadForbidden):
                await store.snapshot_save(tenant, run, "3", user_id=user, saved_at=when)
            with pytest.raises(ThreadForbidden):
                await store.snapshot_delete(tenant, run, user_id=user)
        assert await store.snapshot_load(tenant, run) == ("alice", "2")
        await store.snapshot_save(tenant, run, "4", user_id="bob", saved_at=when, owner_check=False)
        assert await store.snapshot_load(tenant, run) == ("bob", "4")
        assert await store.snapshot_delete(tenant, run, owner_check=False) is True
        assert await store.snapshot_delete(tenant, run, user_id="bob") is False

    async def test_concurrent_saves_of_a_new_snapshot_have_one_owner(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        when = datetime(2026, 1, 1, tzinfo=UTC)

        async def save(run: str, user: str) -> str:
            try:
                await store.snapshot_save(tenant, run, f'"{user}"', user_id=user, saved_at=when)
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

    # -- store level: records, compaction, search ------------------------------------
    # These talk to the store directly: the Memory verbs built on them (facts,
    # documents, search, compaction) have their own tests above the stores.

    def _record(self, kind: str, content: str, **kwargs: Any) -> Record:
        when = kwargs.pop("created_at", datetime(2026, 1, 1, tzinfo=UTC))
        return Record(
            kind=kind,
            id=kwargs.pop("id", _id("r")),
            agent_id=kwargs.pop("agent_id", None),
            user_id=kwargs.pop("user_id", None),
            content=content,
            data=kwargs.pop("data", {}),
            created_at=when,
            updated_at=when,
            key=kwargs.pop("key", None),
            expires_at=kwargs.pop("expires_at", None),
        )

    async def test_records_put_get_list_delete(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        base = datetime(2026, 1, 1, tzinfo=UTC)
        a = self._record(
            "fact",
            "likes tea",
            agent_id="bot",
            user_id="alice",
            created_at=base,
            data={"confidence": 0.9, "tags": ["x"]},
            expires_at=base + timedelta(days=1),
        )
        b = self._record("fact", "shared fact", agent_id="bot", created_at=base + timedelta(1))
        c = self._record(
            "fact", "bob's", agent_id="bot", user_id="bob", created_at=base + timedelta(2)
        )
        d = self._record("fact", "other agent", agent_id="other", created_at=base + timedelta(3))
        e = self._record("core", "Alice", user_id="alice", key="name", created_at=base)
        await store.record_put(tenant, [a, b, c, d, e])
        assert await store.record_get(tenant, "fact", a.id) == a
        assert await store.record_get(tenant, "core", a.id) is None
        assert await store.record_get(_id("tenant"), "fact", a.id) is None
        listed = await store.record_list(tenant, "fact")
        assert [r.id for r in listed] == [a.id, b.id, c.id, d.id]
        visible = await store.record_list(tenant, "fact", visible_to=Visibility("bot", "alice"))
        assert [r.id for r in visible] == [a.id, b.id]
        shared = await store.record_list(tenant, "fact", visible_to=Visibility("bot", None))
        assert [r.id for r in shared] == [b.id]
        assert [r.id for r in await store.record_list(tenant, "fact", user_id=None)] == [b.id, d.id]
        assert [r.id for r in await store.record_list(tenant, "core", key="name")] == [e.id]
        assert [r.id for r in await store.record_list(tenant, "fact", limit=1)] == [a.id]
        replaced = dataclasses.replace(a, content="loves tea", data={"confidence": 1.0})
        await store.record_put(tenant, [replaced])
        assert await store.record_get(tenant, "fact", a.id) == replaced
        assert await store.record_delete(tenant, "fact", [a.id, a.id, _id()]) == 1
        assert await store.record_get(tenant, "fact", a.id) is None

    async def test_record_guard_applies_the_write_only_at_its_revision(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        first = dataclasses.replace(self._record("fact", "v1"), revision=1)
        await store.record_put(tenant, [first], guard=RecordGuard("fact", first.id, None))
        assert await store.record_get(tenant, "fact", first.id) == first
        second = dataclasses.replace(first, content="v2", revision=2)
        side = self._record("fact_version", "v1")
        await store.record_put(tenant, [second, side], guard=RecordGuard("fact", first.id, 1))
        assert await store.record_get(tenant, "fact", first.id) == second
        assert await store.record_get(tenant, "fact_version", side.id) == side

        # A stale revision, "must not exist" on an existing record, a revision on a
        # missing one: Conflict, and nothing of the batch is written.
        stale = dataclasses.replace(first, content="stale", revision=2)
        other = self._record("fact", "written with the stale one")
        for guard in (
            RecordGuard("fact", first.id, 1),
            RecordGuard("fact", first.id, None),
            RecordGuard("fact", _id("missing"), 0),
        ):
            with pytest.raises(Conflict):
                await store.record_put(tenant, [stale, other], guard=guard)
            assert await store.record_get(tenant, "fact", first.id) == second
            assert await store.record_get(tenant, "fact", other.id) is None
        # Nothing of a failed "must not exist" claim is left behind either.
        absent = _id("absent")
        with pytest.raises(Conflict):
            await store.record_put(tenant, [], guard=RecordGuard("fact", absent, 5))
        await store.record_put(tenant, [], guard=RecordGuard("fact", absent, None))
        assert await store.record_get(tenant, "fact", absent) is None
        assert [r.id for r in await store.record_list(tenant, "fact")] == [first.id]

    async def test_record_guard_on_delete(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        fact = dataclasses.replace(self._record("fact", "v"), revision=3)
        link = self._record("fact_source", "", key="e1")
        await store.record_put(tenant, [fact, link])
        with pytest.raises(Conflict):
            await store.record_delete(
                tenant, "fact_source", [link.id], guard=RecordGuard("fact", fact.id, 2)
            )
        assert await store.record_get(tenant, "fact_source", link.id) == link
        removed = await store.record_delete(
            tenant, "fact_source", [link.id], guard=RecordGuard("fact", fact.id, 3)
        )
        assert removed == 1
        assert await store.record_get(tenant, "fact_source", link.id) is None
        assert await store.record_delete(
            tenant, "fact", [fact.id], guard=RecordGuard("fact", fact.id, 3)
        )
        with pytest.raises(Conflict):
            await store.record_delete(
                tenant, "fact", [fact.id], guard=RecordGuard("fact", fact.id, 3)
            )

    async def test_concurrent_guarded_writers_exactly_one_wins(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        base = dataclasses.replace(self._record("fact", "v0"), revision=1)
        await store.record_put(tenant, [base])

        async def writer(w: int, revision: int | None, record_id: str) -> str:
            record = dataclasses.replace(base, id=record_id, content=f"w{w}", revision=2)
            try:
                await store.record_put(
                    tenant, [record], guard=RecordGuard("fact", record_id, revision)
                )
            except Conflict:
                return "lost"
            return f"w{w}"

        for revision, record_id in ((1, base.id), (None, _id("new"))):
            results = await arun_all(
                [functools.partial(writer, w, revision, record_id) for w in range(6)]
            )
            winners = [r for r in results if r != "lost"]
            assert len(winners) == 1, results
            stored = await store.record_get(tenant, "fact", record_id)
            assert stored is not None and stored.content == winners[0]

    # -- batch record reads: one round trip each (the graph traverses through them) ----

    async def test_record_get_many_returns_the_existing_ids_exactly(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        a = self._record("fact", "a", user_id="alice")
        b = self._record("fact", "b", agent_id="bot", key="k")
        x = self._record("fact", "x", id=_id("x"))
        other_kind = self._record("core", "same id, other kind", id=a.id)
        await store.record_put(tenant, [a, b, x, other_kind])
        await store.record_put(_id("tenant"), [self._record("fact", "elsewhere", id=_id("c"))])
        missing = _id("missing")
        found = await store.record_get_many(tenant, "fact", [b.id, missing, a.id, b.id, x.id])
        assert found == {b.id: b, a.id: a, x.id: x}
        # Exact ids: a trailing space or another case is another id; so is another tenant.
        assert await store.record_get_many(tenant, "fact", [x.id + " ", x.id.upper()]) == {}
        assert await store.record_get_many(_id("tenant"), "fact", [a.id, b.id]) == {}
        assert await store.record_get_many(tenant, "core", [a.id, b.id]) == {a.id: other_kind}
        assert await store.record_get_many(tenant, "fact", []) == {}

    async def test_entry_get_many_returns_the_branch_entries_of_these_ids(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tenant = memory.tenant_id
        tid, other = await self._thread(memory), await self._thread(memory)
        ids = await self._fill(memory, tid, 4)
        elsewhere = await self._fill(memory, other, 1)
        missing = _id("missing")
        found = await store.entry_get_many(tenant, tid, [ids[2], missing, ids[0], ids[2]])
        assert list(found) == [ids[2], ids[0]]
        assert found[ids[2]] == await store.get_entry(tenant, tid, ids[2])
        assert found[ids[0]].content == "message 0"
        # another thread's entry, another tenant, a missing thread, no ids: nothing
        assert await store.entry_get_many(tenant, tid, elsewhere) == {}
        assert await store.entry_get_many(_id("tenant"), tid, ids) == {}
        assert await store.entry_get_many(tenant, _id("gone"), ids) == {}
        assert await store.entry_get_many(tenant, tid, []) == {}
        # the current branch unless one is named
        await memory.branches.create(tid, "alt", from_entry=ids[1])
        await memory.branches.checkout(tid, "alt")
        assert set(await store.entry_get_many(tenant, tid, ids)) == {ids[0], ids[1]}
        main = await store.entry_get_many(tenant, tid, ids, branch="main")
        assert list(main) == ids and main[ids[3]].branch == "main"

    async def test_batch_reads_across_threads_use_each_current_branch(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tenant = memory.tenant_id
        tid, other = await self._thread(memory), await self._thread(memory, user_id="u1")
        ids = await self._fill(memory, tid, 9)
        theirs = await self._fill(memory, other, 2)
        gone, stranger = _id("gone"), _id("tenant")
        threads = await store.thread_get_many(tenant, [other, gone, tid, other])
        assert list(threads) == [other, tid]
        assert threads[other] == await store.get_thread(tenant, other)
        assert threads[other].user_id == "u1"
        assert await store.thread_get_many(stranger, [tid, other]) == {}
        assert await store.thread_get_many(tenant, []) == {}
        found = await store.entry_get_across(
            tenant, {tid: [ids[3], ids[0], theirs[0]], other: [theirs[1]], gone: ids}
        )
        assert set(found) == {(tid, ids[3]), (tid, ids[0]), (other, theirs[1])}
        assert found[(tid, ids[3])] == await store.get_entry(tenant, tid, ids[3])
        assert found[(other, theirs[1])].content == "message 1"
        assert await store.entry_get_across(stranger, {tid: ids}) == {}
        assert await store.entry_get_across(tenant, {}) == {}
        first = (await store.get_entry(tenant, tid, ids[0])).position  # type: ignore[union-attr]
        windows = await store.entry_windows(
            tenant, [(tid, first + 2, first + 4), (gone, 0, 5), (other, -10, 100), (tid, 0, -1)]
        )
        assert [[e.id for e in w] for w in windows] == [ids[2:5], [], theirs, []]
        assert windows[0][0] == await store.get_entry(tenant, tid, ids[2])
        assert await store.entry_windows(stranger, [(tid, first, first + 3)]) == [[]]
        assert await store.entry_windows(tenant, []) == []
        # whole threads (as search reads a user's threads): to LAST_POSITION
        whole = await store.entry_windows(
            tenant, [(other, 0, LAST_POSITION), (gone, 0, LAST_POSITION), (tid, 0, LAST_POSITION)]
        )
        assert [[e.id for e in w] for w in whole] == [theirs, [], ids]
        assert await store.entry_windows(stranger, [(tid, 0, LAST_POSITION)]) == [[]]
        assert await store.count_entries_many(tenant, [other, gone, tid]) == {other: 2, tid: 9}
        assert await store.count_entries_many(stranger, [tid]) == {}
        assert await store.count_entries_many(tenant, []) == {}
        # the current branch: after a checkout, the branch's entries only
        await memory.branches.create(tid, "alt", from_entry=ids[1])
        await memory.branches.checkout(tid, "alt")
        found = await store.entry_get_across(tenant, {tid: [ids[0], ids[5]]})
        assert list(found) == [(tid, ids[0])]
        assert found[(tid, ids[0])].branch == "alt"
        (window,) = await store.entry_windows(tenant, [(tid, first, first + 6)])
        assert [e.id for e in window] == ids[:2]
        assert await store.count_entries_many(tenant, [tid]) == {tid: 2}

    async def test_record_get_many_reads_long_id_lists(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        records = [self._record("fact", f"r{i}", id=f"r{i:05d}") for i in range(1200)]
        await store.record_put(tenant, records)
        asked = [f"r{i:05d}" for i in range(0, 2400, 2)]  # half exist (over every IN limit)
        found = await store.record_get_many(tenant, "fact", asked)
        assert sorted(found) == [r.id for r in records[::2]]
        assert all(found[r.id] == r for r in records[::2])

    async def test_record_list_keys_matches_keys_exactly_in_scope_and_order(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        base = datetime(2026, 1, 1, tzinfo=UTC)
        u = uuid.uuid4().hex[:8]

        def rec(name: str, key: str | None, day: int, **kwargs: Any) -> Record:
            return self._record(
                "edge", name, id=f"{u}-{name}", key=key, created_at=base + timedelta(day), **kwargs
            )

        shared = rec("s", "k1", 2)
        alice = rec("a", "k1", 1, user_id="alice", agent_id="bot")
        bob = rec("b", "k2", 0, user_id="bob")
        other_agent = rec("o", "k2", 1, agent_id="other")
        # Equal created_at: ordered by id; "k1 " and "K1" are other keys.
        tie_b = rec("t2", "k3", 1)
        tie_a = rec("t1", "k3", 1)
        spaced = rec("sp", "k1 ", 0)
        upper = rec("up", "K1", 0)
        unkeyed = rec("n", None, 0)
        elsewhere = dataclasses.replace(rec("e", "k1", 0), kind="node")
        await store.record_put(
            tenant,
            [shared, alice, bob, other_agent, tie_b, tie_a, spaced, upper, unkeyed, elsewhere],
        )
        keys = ["k1", "k2", "k3", "k1", _id("nokey")]
        everything = await store.record_list_keys(tenant, "edge", keys)
        assert everything == [bob, alice, other_agent, tie_a, tie_b, shared]
        seen = await store.record_list_keys(
            tenant, "edge", keys, visible_to=Visibility("bot", "alice")
        )
        assert [r.id for r in seen] == [alice.id, tie_a.id, tie_b.id, shared.id]
        only_shared = await store.record_list_keys(
            tenant, "edge", keys, visible_to=Visibility(None, None)
        )
        assert [r.id for r in only_shared] == [tie_a.id, tie_b.id, shared.id]
        any_agent = await store.record_list_keys(
            tenant, "edge", ["k2"], visible_to=Visibility(UNSET, "bob")
        )
        assert [r.id for r in any_agent] == [bob.id, other_agent.id]
        assert await store.record_list_keys(tenant, "edge", ["k1 "]) == [spaced]
        assert await store.record_list_keys(tenant, "edge", ["K1"]) == [upper]
        assert await store.record_list_keys(tenant, "edge", []) == []
        assert await store.record_list_keys(_id("tenant"), "edge", keys) == []
        assert await store.record_list_keys(tenant, "node", ["k1"]) == [elsewhere]

    async def test_record_list_keys_reads_long_key_lists(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        base = datetime(2026, 1, 1, tzinfo=UTC)
        records = [
            self._record(
                "edge", "", id=f"e{i:05d}", key=f"n{i % 700:04d}", created_at=base + timedelta(i)
            )
            for i in range(1400)
        ]
        await store.record_put(tenant, records)
        keys = [f"n{i:04d}" for i in range(0, 2400, 2)]  # 350 of them exist
        found = await store.record_list_keys(tenant, "edge", keys)
        assert found == [r for r in records if int(r.key[1:]) % 2 == 0]  # type: ignore[index]

    async def test_record_list_keys_by_kind_is_record_list_keys_of_each_kind(
        self, store: AsyncStore
    ) -> None:
        tenant = _id("tenant")
        base = datetime(2026, 1, 1, tzinfo=UTC)
        u = uuid.uuid4().hex[:8]

        def rec(kind: str, name: str, key: str, day: int, **kwargs: Any) -> Record:
            return self._record(
                kind, name, id=f"{u}-{name}", key=key, created_at=base + timedelta(day), **kwargs
            )

        # One id under two kinds, as a graph relation is stored once per direction.
        out_shared, in_shared = rec("out", "r1", "a", 2), rec("in", "r1", "b", 2)
        out_alice = rec("out", "r2", "b", 1, user_id="alice", agent_id="bot")
        in_alice = rec("in", "r2", "a", 1, user_id="alice", agent_id="bot")
        in_bob = rec("in", "r3", "a", 0, user_id="bob")
        out_other_agent = rec("out", "r4", "a", 3, agent_id="other")
        elsewhere = rec("node", "r5", "a", 0)
        await store.record_put(
            tenant, [out_shared, in_shared, out_alice, in_alice, in_bob, out_other_agent, elsewhere]
        )
        keys = ["a", "b", "a", _id("nokey")]
        everything = await store.record_list_keys_by_kind(tenant, ["out", "in", "out", "x"], keys)
        assert list(everything) == ["out", "in", "x"]
        assert everything == {
            "out": [out_alice, out_shared, out_other_agent],
            "in": [in_bob, in_alice, in_shared],
            "x": [],
        }
        alice = await store.record_list_keys_by_kind(
            tenant, ["out", "in"], keys, visible_to=Visibility("bot", "alice")
        )
        assert alice == {"out": [out_alice, out_shared], "in": [in_alice, in_shared]}
        for seen in (None, Visibility(None, None), Visibility(UNSET, "bob"), Visibility("x", "y")):
            got = await store.record_list_keys_by_kind(tenant, ["in", "out"], keys, visible_to=seen)
            assert got == {
                kind: await store.record_list_keys(tenant, kind, keys, visible_to=seen)
                for kind in ("in", "out")
            }
        assert await store.record_list_keys_by_kind(tenant, ["out", "in"], ["b"]) == {
            "out": [out_alice],
            "in": [in_shared],
        }
        assert await store.record_list_keys_by_kind(tenant, ["out"], []) == {"out": []}
        assert await store.record_list_keys_by_kind(tenant, [], keys) == {}
        assert await store.record_list_keys_by_kind(_id("tenant"), ["out", "in"], keys) == {
            "out": [],
            "in": [],
        }

    async def test_record_page_walks_every_record_once_in_order(self, store: AsyncStore) -> None:
        tenant = _id("tenant")
        base = datetime(2026, 1, 1, tzinfo=UTC)
        u = uuid.uuid4().hex[:8]
        same = base + timedelta(hours=1)
        last = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
        records = [
            self._record("fact", "0", id=f"{u}-m", created_at=base),
            # Equal created_at: ordered by id, "p" before "p " (exact ids, no padding).
            self._record("fact", "1", id=f"{u}-p ", created_at=same),
            self._record("fact", "2", id=f"{u}-p", created_at=same),
            self._record("fact", "3", id=f"{u}-q", created_at=same, user_id="alice"),
            self._record("fact", "4", id=f"{u}-a", created_at=same, user_id="bob"),
            self._record("fact", "5", id=f"{u}-z", created_at=same, agent_id="other"),
            self._record("fact", "6", id=f"{u}-b", created_at=same + timedelta(microseconds=1)),
            # The ends of the value range, microseconds apart.
            self._record("fact", "7", id=f"{u}-old", created_at=datetime(1000, 1, 1, tzinfo=UTC)),
            self._record("fact", "8", id=f"{u}-y", created_at=last - timedelta(microseconds=1)),
            self._record("fact", "9", id=f"{u}-x", created_at=last),
            self._record("fact", "10", id=f"{u}-w", created_at=last - timedelta(microseconds=1)),
        ]
        await store.record_put(tenant, records)
        await store.record_put(tenant, [self._record("other", "not a fact", created_at=base)])
        expected = sorted(records, key=lambda r: (r.created_at, r.id))
        assert await store.record_list(tenant, "fact") == expected

        async def walk(limit: int, visible_to: Visibility | None = None) -> list[Record]:
            out: list[Record] = []
            after: tuple[datetime, str] | None = None
            while True:
                page = await store.record_page(
                    tenant, "fact", limit=limit, after=after, visible_to=visible_to
                )
                assert len(page) <= limit
                out += page
                if len(page) < limit:
                    return out
                after = (page[-1].created_at, page[-1].id)

        for limit in (1, 2, 3, 100):
            assert await walk(limit) == expected
        scoped = Visibility(None, "alice")
        assert await walk(2, scoped) == [
            r for r in expected if r.user_id in (None, "alice") and r.agent_id is None
        ]
        assert await walk(1, Visibility(UNSET, None)) == [r for r in expected if r.user_id is None]
        # A cursor need not be a stored record: it is a position in the order.
        ghost = (same, f"{u}-p")
        rest = await store.record_page(tenant, "fact", limit=100, after=ghost)
        assert rest == [r for r in expected if (r.created_at, r.id) > ghost]
        assert rest[0].id == f"{u}-p "
        await store.record_delete(tenant, "fact", [f"{u}-p"])
        assert await store.record_page(tenant, "fact", limit=100, after=ghost) == rest
        assert await store.record_page(_id("tenant"), "fact", limit=10) == []

    async def test_compact_entries_replaces_a_prefix_only_if_unchanged(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tid = await self._thread(memory)
        ids = await self._fill(memory, tid, 5)
        entries = await memory.entries.list(tid)
        through = entries[2].position
        summary = NewEntry(
            id=_id("e"),
            role="system",
            content="[Conversation summary]\nthree turns",
            name=None,
            tool_calls=(),
            tool_call_id=None,
            metadata={"compaction": True},
            state={},
            token_count=9,
            created_at=entries[3].created_at - timedelta(milliseconds=1),
        )
        stale = await store.compact_entries(
            memory.tenant_id,
            tid,
            branch="main",
            through_position=through,
            expected_ids=ids[:2],
            summary=summary,
            updated_at=entries[-1].created_at,
        )
        assert stale is False
        assert await memory.entries.count(tid) == 5
        done = await store.compact_entries(
            memory.tenant_id,
            tid,
            branch="main",
            through_position=through,
            expected_ids=ids[:3],
            summary=summary,
            updated_at=entries[-1].created_at,
        )
        assert done is True
        after = await memory.entries.list(tid)
        assert [e.id for e in after] == [summary.id, ids[3], ids[4]]
        assert after[0].position == through and after[0].metadata == {"compaction": True}
        assert after[1:] == entries[3:]
        again = await store.compact_entries(
            memory.tenant_id,
            tid,
            branch="main",
            through_position=through,
            expected_ids=ids[:3],
            summary=summary,
            updated_at=entries[-1].created_at,
        )
        assert again is False

    async def test_update_entries_sets_content_state_and_tokens(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tid = await self._thread(memory)
        ids = await self._fill(memory, tid, 2)
        changed = await store.update_entries(
            memory.tenant_id,
            tid,
            branch="main",
            changes=[(ids[0], "[compacted]", {"original": "message 0"}, 3)],
        )
        assert changed == 1
        first = await memory.entries.get(tid, ids[0])
        assert first is not None
        assert (first.content, first.state, first.token_count) == (
            "[compacted]",
            {"original": "message 0"},
            3,
        )

    async def test_text_search_ranks_and_scopes(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        mine = await self._thread(memory, user_id="alice", agent_id="bot")
        theirs = await self._thread(memory, user_id="bob", agent_id="bot")
        shared = await self._thread(memory, agent_id="bot")
        await memory.remember(mine, "user", "I adopted a golden retriever puppy named Biscuit")
        await memory.remember(mine, "user", "The weather was rainy today")
        await memory.remember(theirs, "user", "My puppy is a golden retriever too")
        await memory.remember(shared, "user", "Retriever breeds need daily exercise")
        tenant = memory.tenant_id
        fact = self._record(
            "fact", "Alice's puppy Biscuit is a golden retriever", agent_id="bot", user_id="alice"
        )
        other = self._record(
            "fact", "Bob's retriever puppy is called Rex", agent_id="bot", user_id="bob"
        )
        await store.record_put(tenant, [fact, other])
        hits = await store.text_search(
            tenant,
            "golden retriever puppy?",
            kinds=["entry", "fact"],
            k=10,
            visible_to=Visibility("bot", "alice"),
        )
        found = {(h.kind, h.thread_id) for h in hits}
        assert ("entry", mine) in found and ("entry", shared) in found
        assert ("entry", theirs) not in found
        assert ("fact", None) in found and other.id not in {h.id for h in hits}
        assert hits == sorted(hits, key=lambda h: -h.score)
        top_entry = next(h for h in hits if h.kind == "entry")
        assert top_entry.thread_id == mine and top_entry.branch == "main"
        one = await store.text_search(
            tenant, "retriever", kinds=["entry", "fact"], k=10, thread_id=shared
        )
        assert [(h.kind, h.thread_id) for h in one] == [("entry", shared)]
        assert await store.text_search(_id("t"), "retriever", kinds=["entry"], k=10) == []
        assert await store.text_search(tenant, 'NEAR "(* -', kinds=["entry"], k=5) == []

    async def test_vector_search_by_cosine_per_model_and_scope(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        mine = await self._thread(memory, user_id="alice")
        theirs = await self._thread(memory, user_id="bob")
        e1 = await memory.remember(mine, "user", "one")
        e2 = await memory.remember(mine, "user", "two")
        e3 = await memory.remember(theirs, "user", "three")
        doc = self._record("document", "doc")
        tenant = memory.tenant_id
        await store.record_put(tenant, [doc])
        await store.vector_put(
            tenant,
            [
                VectorItem("entry", e1.id, "m1", [1.0, 0.0, 0.0], mine),
                VectorItem("entry", e2.id, "m1", [0.6, 0.8, 0.0], mine),
                VectorItem("entry", e3.id, "m1", [1.0, 0.0, 0.0], theirs),
                VectorItem("document", doc.id, "m1", [0.0, 0.0, 2.0]),
                VectorItem("entry", e2.id, "m2", [1.0, 0.0, 0.0], mine),
            ],
        )
        hits = await store.vector_search(
            tenant,
            [2.0, 0.0, 0.0],
            model_id="m1",
            kinds=["entry", "document"],
            k=3,
            visible_to=Visibility(None, "alice"),
        )
        assert [h.id for h in hits] == [e1.id, e2.id, doc.id]
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert hits[1].score == pytest.approx(0.6, abs=1e-5)
        assert hits[0].thread_id == mine
        only = await store.vector_search(
            tenant, [1.0, 0.0, 0.0], model_id="m2", kinds=["entry"], k=5
        )
        assert [h.id for h in only] == [e2.id]
        got = await store.vector_get(tenant, "entry", [e2.id, _id()], model_id="m1")
        assert list(got) == [e2.id] and got[e2.id] == pytest.approx([0.6, 0.8, 0.0], abs=1e-6)
        await memory.threads.delete(mine)
        left = await store.vector_search(
            tenant, [1.0, 0.0, 0.0], model_id="m1", kinds=["entry"], k=5
        )
        assert [h.id for h in left] == [e3.id]

    async def test_vector_put_of_several_dimensions_in_one_call(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        """One call mixing models of different dimensions, and an id written twice."""
        thread = await self._thread(memory)
        e1 = await memory.remember(thread, "user", "one")
        e2 = await memory.remember(thread, "user", "two")
        tenant = memory.tenant_id
        await store.vector_put(
            tenant,
            [
                VectorItem("entry", e1.id, "d3", [0.0, 3.0, 4.0], thread),
                VectorItem("entry", e1.id, "d2", [1.0, 0.0], thread),
                VectorItem("entry", e2.id, "d3", [1.0, 0.0, 0.0], thread),
                VectorItem("entry", e2.id, "d2", [0.0, 1.0], thread),
                VectorItem("entry", e2.id, "d2", [0.6, 0.8], thread),  # the last one wins
            ],
        )
        got = await store.vector_get(tenant, "entry", [e1.id, e2.id], model_id="d3")
        assert got[e1.id] == pytest.approx([0.0, 0.6, 0.8], abs=1e-6)
        assert got[e2.id] == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)
        got = await store.vector_get(tenant, "entry", [e1.id, e2.id], model_id="d2")
        assert got[e2.id] == pytest.approx([0.6, 0.8], abs=1e-6)
        hits = await store.vector_search(tenant, [0.0, 1.0], model_id="d2", kinds=["entry"], k=2)
        assert [h.id for h in hits] == [e2.id, e1.id]
        assert [h.score for h in hits] == pytest.approx([0.8, 0.0], abs=1e-5)

    async def _vectors_left(self, store: AsyncStore, tenant: str, ids: list[str]) -> set[str]:
        """The ids among ``ids`` whose entry vector (model ``mv``) is still stored and found."""
        got = set(await store.vector_get(tenant, "entry", ids, model_id="mv"))
        hits = await store.vector_search(
            tenant, [1.0, 0.0, 0.0], model_id="mv", kinds=["entry"], k=len(ids) + 50
        )
        found = {h.id for h in hits} & set(ids)
        assert found <= got  # a search never returns a vector that is gone
        return got

    async def test_deleting_entries_deletes_their_vectors_once_no_branch_holds_them(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        """Every path that deletes entries deletes their vectors, but only the last copy's:
        a fork copies entries with their ids (and so shares their vectors)."""
        tenant = memory.tenant_id
        tid = await self._thread(memory, user_id="alice")
        ids = await self._fill(memory, tid, 10)
        other = await self._thread(memory, user_id="bob")
        kept = await self._fill(memory, other, 2)
        elsewhere = AsyncMemory(store, tenant_id=_id("tenant"))
        foreign = await self._thread(elsewhere)
        foreign_ids = await self._fill(elsewhere, foreign, 2)

        def item(entry_id: str, thread: str) -> VectorItem:
            return VectorItem("entry", entry_id, "mv", [1.0, 0.1, 0.0], thread)

        await store.vector_put(tenant, [item(i, tid) for i in ids] + [item(i, other) for i in kept])
        await store.vector_put(elsewhere.tenant_id, [item(i, foreign) for i in foreign_ids])
        every = ids + kept
        assert await self._vectors_left(store, tenant, every) == set(every)
        await memory.branches.create(tid, "fork", from_entry=ids[7])  # copies ids[0..7]

        # delete_entries: the fork's copy keeps ids[0]'s vector; ids[8] has no copy.
        assert await store.delete_entries(tenant, tid, [ids[0], ids[8]]) == 2
        assert await self._vectors_left(store, tenant, every) == set(every) - {ids[8]}
        # ... and deleting the last copy deletes it.
        assert await store.delete_entries(tenant, tid, [ids[0]], branch="fork") == 1
        left = set(every) - {ids[0], ids[8]}
        assert await self._vectors_left(store, tenant, every) == left
        # truncate_after on the fork: ids[6], ids[7] still on main.
        assert await store.truncate_after(tenant, tid, ids[5], branch="fork") == 2
        assert await self._vectors_left(store, tenant, every) == left
        # truncate_after on main: ids[9] had no copy; ids[6], ids[7] had none left either.
        assert await store.truncate_after(tenant, tid, ids[5]) == 3
        left -= {ids[6], ids[7], ids[9]}
        assert await self._vectors_left(store, tenant, every) == left
        # compaction of main's first three (ids[1..3]; fork still holds them).
        entries = await memory.entries.list(tid)
        assert [e.id for e in entries] == ids[1:6]
        summary = NewEntry(
            id=_id("e"),
            role="system",
            content="summary",
            name=None,
            tool_calls=(),
            tool_call_id=None,
            metadata={},
            state={},
            token_count=1,
            created_at=entries[3].created_at - timedelta(milliseconds=1),
        )
        assert await store.compact_entries(
            tenant,
            tid,
            branch="main",
            through_position=entries[2].position,
            expected_ids=ids[1:4],
            summary=summary,
            updated_at=entries[-1].created_at,
        )
        assert await self._vectors_left(store, tenant, every) == left
        # delete_branch: the fork held ids[1..5]; ids[1..3] now have no copy at all.
        assert await store.delete_branch(tenant, tid, "fork") is True
        left -= {ids[1], ids[2], ids[3]}
        assert await self._vectors_left(store, tenant, every) == left
        # a second fork, then clear_entries on main and on the fork.
        await memory.branches.create(tid, "again")
        assert await store.clear_entries(tenant, tid) == 3
        assert await self._vectors_left(store, tenant, every) == left
        assert await store.clear_entries(tenant, tid, branch="again") == 3
        left -= {ids[4], ids[5]}
        assert left == set(kept)
        assert await self._vectors_left(store, tenant, every) == left
        # compaction of a whole thread without a fork.
        three = await self._fill(memory, other, 1)
        await store.vector_put(tenant, [item(three[0], other)])
        entries = await memory.entries.list(other)
        assert await store.compact_entries(
            tenant,
            other,
            branch="main",
            through_position=entries[0].position,
            expected_ids=[kept[0]],
            summary=None,
            updated_at=entries[-1].created_at,
        )
        assert await self._vectors_left(store, tenant, every + three) == {kept[1], three[0]}
        # Other tenants' vectors never moved; delete_thread takes the rest.
        got = await store.vector_get(elsewhere.tenant_id, "entry", foreign_ids, model_id="mv")
        assert set(got) == set(foreign_ids)
        assert await store.delete_thread(tenant, other) is True
        assert await self._vectors_left(store, tenant, every + three) == set()
        await elsewhere.close()

    async def test_forget_user_erases_records_and_vectors(
        self, memory: AsyncMemory, store: AsyncStore
    ) -> None:
        tenant, user = memory.tenant_id, _id("u")
        fact = self._record("fact", "secret", user_id=user)
        keep = self._record("fact", "shared")
        await store.record_put(tenant, [fact, keep])
        await store.vector_put(tenant, [VectorItem("fact", fact.id, "m", [1.0, 0.0])])
        await memory.forget_user(user)
        assert await store.record_get(tenant, "fact", fact.id) is None
        assert await store.record_get(tenant, "fact", keep.id) is not None
        assert await store.vector_get(tenant, "fact", [fact.id], model_id="m") == {}
