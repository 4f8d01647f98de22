"""The conformance suite: entries: append, read, token windows, exact values, bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memorybank.errors import InvalidInput, NotFound
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Message, ToolCall
from memorybank.rules.window import drop_orphan_tool_results
from memorybank.stores.contract._async.store import AsyncStore, Record
from memorybank.testing._async.contract._base import ContractBase, _id, _tool_call

__all__ = ["EntryCases"]


class EntryCases(ContractBase):
    """Entries: append, read, token windows, exact values, bad input."""

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
        """``entry_list_recent`` (``history()``'s read, which a store may answer its own
        way) is exactly the entries' messages, cut-off tool results dropped."""
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
            _, rows = await store.entry_list(tenant, tid, limit=limit)
            expected = [e.to_message() for e in drop_orphan_tool_results(rows)]
            assert await store.entry_list_recent(tenant, tid, limit) == ("u", expected), limit
        with pytest.raises(NotFound):
            await store.entry_list_recent(tenant, _id(), 3)
        with pytest.raises(NotFound):
            await store.entry_list_recent(tenant + "-other", tid, 3)

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
