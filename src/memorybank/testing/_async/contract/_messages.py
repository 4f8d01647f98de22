"""The conformance suite: messages as providers shape them round-trip exactly."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memorybank.errors import Conflict
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import ToolCall
from memorybank.testing._async.contract._base import ContractBase
from memorybank.tokens import NON_TEXT_PART_TOKENS

__all__ = ["MessageCases"]


class MessageCases(ContractBase):
    """Messages as providers shape them round-trip exactly."""

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
