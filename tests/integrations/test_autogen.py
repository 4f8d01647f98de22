"""``MemorybankMemory`` and ``MemorybankChatCompletionContext`` with the real AutoGen.

An ``AssistantAgent`` (autogen-agentchat) runs on AutoGen's own offline model,
``ReplayChatCompletionClient`` (autogen-ext), which records every request it is
sent. AutoGen's own tests of the interfaces are ported: of
``autogen-core/tests/memory/test_memory.py``, the six ``ListMemory`` cases and the
protocol check (the two component-config cases load and dump a ``ListMemory``
from declarative config, which a memorybank handle is not); of
``test_model_context.py``, the buffered and unbounded contexts' cases (the
head-and-tail and token-limited ones test other strategies). Where
``ListMemory`` returns every memory for any query, a search returns the
matching ones: those cases query with words of the memories. SQLite and
PostgreSQL each.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")
pytest.importorskip("autogen_ext.models.replay")

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent, TextMessage
from autogen_core import FunctionCall, Image
from autogen_core.memory import Memory as AutogenMemory
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext, ChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from autogen_ext.models.replay import ReplayChatCompletionClient

from memorybank import AsyncMemory, ConfigurationError, InvalidInput, Memory, ThreadForbidden
from memorybank.integrations.autogen import MemorybankChatCompletionContext, MemorybankMemory
from tests.integrations import _stores

memory = _stores.memory
amemory = _stores.amemory


def _plain(result: Any) -> list[Any]:
    """Query results without the score search adds to each one's metadata."""
    out = []
    for item in result.results:
        metadata = {k: x for k, x in (item.metadata or {}).items() if k != "score"} or None
        out.append((item.content, item.mime_type, metadata))
    return out


# -- AutoGen's test_memory.py, ported -------------------------------------------


def test_memory_protocol_attributes(amemory: AsyncMemory) -> None:
    store = MemorybankMemory(amemory.scoped(user_id="alice"))
    assert isinstance(store, AutogenMemory)
    for verb in ("update_context", "query", "add", "clear", "close"):
        assert callable(getattr(store, verb))


async def test_list_memory_empty(amemory: AsyncMemory) -> None:
    store = MemorybankMemory(amemory.scoped(user_id="alice"), name="test_memory")
    context = BufferedChatCompletionContext(buffer_size=3)
    results = await store.update_context(context)
    assert len(results.memories.results) == 0
    assert len(await context.get_messages()) == 0
    found = await store.query(MemoryContent(content="test", mime_type=MemoryMimeType.TEXT))
    assert len(found.results) == 0


async def test_list_memory_add_and_query(amemory: AsyncMemory) -> None:
    store = MemorybankMemory(amemory.scoped(user_id="alice"))
    await store.add(MemoryContent(content="test1 value", mime_type=MemoryMimeType.TEXT))
    await store.add(MemoryContent(content={"key": "value"}, mime_type=MemoryMimeType.JSON))
    results = await store.query(MemoryContent(content="value", mime_type=MemoryMimeType.TEXT))
    assert len(results.results) == 2
    assert sorted(map(str, (r.content for r in results.results))) == [
        "test1 value",
        "{'key': 'value'}",
    ]
    # the empty query: the newest memories, oldest first, as ListMemory lists them
    newest = await store.query("")
    assert [r.content for r in newest.results] == ["test1 value", {"key": "value"}]


async def test_list_memory_max_memories(amemory: AsyncMemory) -> None:
    store = MemorybankMemory(amemory.scoped(user_id="alice"))
    for i in range(5):
        await store.add(MemoryContent(content=f"test{i} query", mime_type=MemoryMimeType.TEXT))
    results = await store.query(MemoryContent(content="query", mime_type=MemoryMimeType.TEXT))
    assert len(results.results) == 5
    assert len((await store.query("query", k=3)).results) == 3


async def test_list_memory_update_context(amemory: AsyncMemory) -> None:
    store = MemorybankMemory(amemory.scoped(user_id="alice"))
    context = BufferedChatCompletionContext(buffer_size=3)
    await store.add(MemoryContent(content="test1", mime_type=MemoryMimeType.TEXT))
    await store.add(MemoryContent(content="test2", mime_type=MemoryMimeType.TEXT))
    results = await store.update_context(context)
    messages = await context.get_messages()
    assert len(results.memories.results) == 2
    assert len(messages) == 1
    assert "test1" in messages[0].content
    assert "test2" in messages[0].content


async def test_list_memory_clear(amemory: AsyncMemory) -> None:
    store = MemorybankMemory(amemory.scoped(user_id="alice"))
    await store.add(MemoryContent(content="test query", mime_type=MemoryMimeType.TEXT))
    await store.clear()
    results = await store.query(MemoryContent(content="query", mime_type=MemoryMimeType.TEXT))
    assert len(results.results) == 0


async def test_list_memory_content_types(amemory: AsyncMemory) -> None:
    store = MemorybankMemory(amemory.scoped(user_id="alice"))
    text_content = MemoryContent(content="text", mime_type=MemoryMimeType.TEXT)
    json_content = MemoryContent(content={"key": "value"}, mime_type=MemoryMimeType.JSON)
    binary_content = MemoryContent(content=b"binary", mime_type=MemoryMimeType.BINARY)
    await store.add(text_content)
    await store.add(json_content)
    await store.add(binary_content)
    results = await store.query("")
    assert len(results.results) == 3
    assert isinstance(results.results[0].content, str)
    assert isinstance(results.results[1].content, dict)
    assert isinstance(results.results[2].content, bytes)


# -- AutoGen's test_model_context.py, ported ------------------------------------

SEATTLE: list[LLMMessage] = [
    UserMessage(content="Hello!", source="user"),
    AssistantMessage(content="What can I do for you?", source="assistant"),
    UserMessage(content="Tell what are some fun things to do in seattle.", source="user"),
]


async def test_buffered_model_context(amemory: AsyncMemory) -> None:
    context = MemorybankChatCompletionContext(amemory.scoped(user_id="alice"), "t", buffer_size=2)
    messages = SEATTLE
    for message in messages:
        await context.add_message(message)
    retrieved = await context.get_messages()
    assert len(retrieved) == 2
    assert retrieved[0] == messages[1]
    assert retrieved[1] == messages[2]
    await context.clear()
    assert len(await context.get_messages()) == 0
    await context.add_message(messages[0])
    await context.add_message(messages[1])
    state = await context.save_state()
    await context.clear()
    await context.load_state(state)
    retrieved = await context.get_messages()
    assert retrieved == messages[:2]


async def test_unbounded_model_context(amemory: AsyncMemory) -> None:
    context = MemorybankChatCompletionContext(amemory.scoped(user_id="alice"), "t")
    messages = SEATTLE
    for message in messages:
        await context.add_message(message)
    assert await context.get_messages() == messages
    await context.clear()
    assert len(await context.get_messages()) == 0
    for message in messages:
        await context.add_message(message)
    state = await context.save_state()
    await context.clear()
    await context.load_state(state)
    assert await context.get_messages() == messages


# -- the AssistantAgent over several turns --------------------------------------


async def test_an_assistant_agent_recalls_memories_and_keeps_its_conversation(
    amemory: AsyncMemory,
) -> None:
    alice = amemory.scoped(user_id="alice")
    facts = MemorybankMemory(alice)
    await facts.add(MemoryContent(content="Alice drinks green tea", mime_type=MemoryMimeType.TEXT))
    await facts.add(MemoryContent(content="Alice lives in Oslo", mime_type=MemoryMimeType.TEXT))
    client = ReplayChatCompletionClient(["You drink green tea.", "It is in Oslo."])

    def agent() -> AssistantAgent:
        return AssistantAgent(
            "assistant",
            model_client=client,
            memory=[facts],
            model_context=MemorybankChatCompletionContext(alice, "chat-1"),
        )

    first = await agent().run(task="Which tea do I drink?")
    answer = first.messages[-1]
    assert isinstance(answer, TextMessage) and answer.content == "You drink green tea."
    (event,) = [m for m in first.messages if isinstance(m, MemoryQueryEvent)]
    assert [m.content for m in event.content] == ["Alice drinks green tea"]
    sent = client.create_calls[0]["messages"]
    system = [m for m in sent if isinstance(m, SystemMessage)]
    assert any("Alice drinks green tea" in m.content for m in system)
    assert not any("Oslo" in m.content for m in system)

    # a new agent on the same thread (a restarted process) carries on the conversation
    second = await agent().run(task="Where do I live, in which city?")
    answer = second.messages[-1]
    assert isinstance(answer, TextMessage) and answer.content == "It is in Oslo."
    sent = client.create_calls[1]["messages"]
    texts = [m.content for m in sent if isinstance(m.content, str)]
    assert "Which tea do I drink?" in texts and "You drink green tea." in texts
    assert any("Alice lives in Oslo" in t for t in texts)
    # AutoGen adds the memories after the task: the last two are the task and them
    assert texts[-2] == "Where do I live, in which city?" and "Oslo" in texts[-1]
    # the thread is memorybank's: history, search and the context builder see it
    shown = await alice.history("chat-1")
    assert {"role": "user", "content": "Where do I live, in which city?"} in shown


async def test_every_message_kind_round_trips_exactly(amemory: AsyncMemory) -> None:
    context = MemorybankChatCompletionContext(amemory.scoped(user_id="alice"), "kinds")
    image = Image.from_base64(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    messages: list[LLMMessage] = [
        SystemMessage(content="Be brief."),
        UserMessage(content=["Look at this", image], source="alice"),
        AssistantMessage(
            content=[FunctionCall(id="c1", name="lookup", arguments='{"q": "tea"}')],
            thought="I should look it up",
            source="assistant",
        ),
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(content="green", call_id="c1", name="lookup")]
        ),
        AssistantMessage(content="Green tea.", source="assistant"),
        FunctionExecutionResultMessage(content=[]),
    ]
    for message in messages:
        await context.add_message(message)

    def dumped(items: list[LLMMessage]) -> list[Any]:
        return [m.model_dump(mode="json") for m in items]  # Image compares by identity

    back = await context.get_messages()
    assert dumped(back) == dumped(messages)
    assert [type(m) for m in back] == [type(m) for m in messages]
    entries = await amemory.entries.list("kinds")
    assert [e.role for e in entries] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert entries[2].content == 'lookup({"q": "tea"})' and entries[3].content == "green"
    # a window never starts at a function result
    tail = MemorybankChatCompletionContext(amemory.scoped(user_id="alice"), "kinds", buffer_size=3)
    assert dumped(await tail.get_messages()) == dumped(messages[4:])


async def test_every_content_type_round_trips_with_its_metadata(amemory: AsyncMemory) -> None:
    store = MemorybankMemory(amemory.scoped(user_id="alice"))
    image = Image.from_base64(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    added = [
        MemoryContent(content="# Notes", mime_type=MemoryMimeType.MARKDOWN, metadata={"a": 1}),
        MemoryContent(content={"n": [1, 2]}, mime_type="application/json"),
        MemoryContent(content=b"\x00\xff raw", mime_type=MemoryMimeType.BINARY),
        MemoryContent(content=image, mime_type=MemoryMimeType.IMAGE, metadata={"alt": "dot"}),
    ]
    for item in added:
        await store.add(item)
    back = (await store.query("")).results
    assert [
        (b.content if not isinstance(b.content, Image) else b.content.to_base64()) for b in back
    ] == [
        "# Notes",
        {"n": [1, 2]},
        b"\x00\xff raw",
        image.to_base64(),
    ]
    assert [b.metadata for b in back] == [{"a": 1}, None, None, {"alt": "dot"}]
    (hit,) = (await store.query("Notes")).results
    assert hit.metadata is not None and hit.metadata["a"] == 1 and hit.metadata["score"] > 0


async def test_two_named_memories_of_one_user_stay_apart(amemory: AsyncMemory) -> None:
    alice = amemory.scoped(user_id="alice")
    work, home = MemorybankMemory(alice, name="work"), MemorybankMemory(alice, name="home")
    await work.add(MemoryContent(content="standup at nine", mime_type=MemoryMimeType.TEXT))
    await home.add(MemoryContent(content="water the plants at nine", mime_type=MemoryMimeType.TEXT))
    assert _plain(await work.query("nine")) == [("standup at nine", "text/plain", None)]
    await work.clear()
    assert (await work.query("")).results == []
    assert len((await home.query("nine")).results) == 1


def test_a_sync_memory_works_through_worker_threads(memory: Memory) -> None:
    import asyncio

    async def run() -> None:
        alice = memory.scoped(user_id="alice")
        store = MemorybankMemory(alice)
        await store.add(MemoryContent(content="sync tea", mime_type=MemoryMimeType.TEXT))
        assert _plain(await store.query("tea")) == [("sync tea", "text/plain", None)]
        context = MemorybankChatCompletionContext(alice, "sync")
        await context.add_message(SEATTLE[0])
        assert await context.get_messages() == SEATTLE[:1]
        await store.clear()
        await context.clear()
        assert await context.get_messages() == []

    asyncio.run(run())


# -- bad input ------------------------------------------------------------------


async def test_bad_input_is_refused_and_writes_nothing(amemory: AsyncMemory) -> None:
    alice = amemory.scoped(user_id="alice")
    store = MemorybankMemory(alice)
    with pytest.raises(InvalidInput, match="MemoryContent"):
        await store.add("plain string")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="content"):
        await store.add(MemoryContent(content="   ", mime_type=MemoryMimeType.TEXT))
    with pytest.raises(InvalidInput):
        await store.add(
            MemoryContent(content="x", mime_type=MemoryMimeType.TEXT, metadata={"f": {1, 2}})
        )
    with pytest.raises(InvalidInput, match="query"):
        await store.query(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="k"):
        await store.query("x", k=-1)
    assert (await store.query("", k=0)).results == []
    assert await alice.documents.list() == []
    context = MemorybankChatCompletionContext(alice, "bad")
    with pytest.raises(InvalidInput, match="LLMMessage"):
        await context.add_message("hello")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="state"):
        await context.load_state({"messages": [{"type": "Nope"}]})
    assert await alice.threads.get("bad") is None
    for bad in (object(), None, "sqlite:///x.db"):
        with pytest.raises(ConfigurationError):
            MemorybankMemory(bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError):
            MemorybankChatCompletionContext(bad, "t")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="mode"):
        MemorybankMemory(alice, mode="fuzzy")
    with pytest.raises(InvalidInput):
        MemorybankChatCompletionContext(alice, "")


async def test_another_users_thread_fails_closed(amemory: AsyncMemory) -> None:
    alice = MemorybankChatCompletionContext(amemory.scoped(user_id="alice"), "shared-name")
    await alice.add_message(SEATTLE[0])
    bob = MemorybankChatCompletionContext(amemory.scoped(user_id="bob"), "shared-name")
    for verb in (bob.get_messages, bob.clear, lambda: bob.add_message(SEATTLE[1])):
        with pytest.raises(ThreadForbidden):
            await verb()
    assert await alice.get_messages() == SEATTLE[:1]


def test_the_context_is_an_autogen_chat_completion_context(amemory: AsyncMemory) -> None:
    assert isinstance(
        MemorybankChatCompletionContext(amemory.scoped(user_id="a"), "t"), ChatCompletionContext
    )
