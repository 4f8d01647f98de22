"""No adapter deletes stored turns on a save the caller did not mean as a replace
(issue 42's "a save that deletes", checked on each framework's own save path).

Pydantic AI's ``MemorybankHistory.save`` refuses (``test_pydantic_ai.py``). The others
only append on their hosts' save paths, tested here with the real frameworks: a second
writer (another process, a fresh buffer or session object on the same thread) adds its
turns to what the first stored. Their deletes are their hosts' explicit verbs
(LlamaIndex ``set_messages``/``reset``, the Agents SDK ``pop_item``/``clear_session``,
ADK ``delete_session``; ADK's appends from a stale session object are kept:
``test_adk.py::test_stale_session_appends_are_kept_not_rejected``).
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("agents")

from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory.chat_memory_buffer import ChatMemoryBuffer

from memorybank import AsyncMemory, Memory
from memorybank.integrations.llama_index import MemorybankChatStore
from memorybank.integrations.openai_agents import MemorybankSession
from tests.integrations import _stores

memory = _stores.memory
amemory = _stores.amemory


def test_a_second_llama_index_buffer_adds_to_the_stored_turns(memory: Memory) -> None:
    store = MemorybankChatStore(memory.scoped(user_id="alice"))
    first = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="k", token_limit=500)
    first.put(ChatMessage(role=MessageRole.USER, content="hello"))
    first.put(ChatMessage(role=MessageRole.ASSISTANT, content="hi there"))
    # another process: a new buffer on the same key, as a restarted app builds it
    again = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="k", token_limit=500)
    again.put(ChatMessage(role=MessageRole.USER, content="still there?"))
    assert [m.content for m in again.get_all()] == ["hello", "hi there", "still there?"]
    assert memory.entries.count("k") == 3


async def test_a_second_agents_session_adds_to_the_stored_items(amemory: AsyncMemory) -> None:
    first = MemorybankSession("chat", amemory, user_id="alice")
    await first.add_items([{"role": "user", "content": "hello"}])
    await first.add_items([{"role": "assistant", "content": "hi there"}])
    again = MemorybankSession("chat", amemory, user_id="alice")  # the next run's session
    await again.add_items([{"role": "user", "content": "still there?"}])
    items = await again.get_items()
    assert [item["content"] for item in items] == ["hello", "hi there", "still there?"]  # type: ignore[typeddict-item]
