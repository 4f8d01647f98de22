"""``MemorybankHistory`` with the real Pydantic AI ``Agent``, on SQLite and PostgreSQL.

The models are Pydantic AI's own offline ones (``FunctionModel`` answering from the
test's function, ``TestModel`` calling every tool); the agent graph, tool execution
and message building are the library's. Pydantic AI ships no tests for a message
history store (its history is a list the application keeps), so the round-trip
cases below cover every part kind its ``ModelMessagesTypeAdapter`` serialises.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RequestUsage

from memorybank import (
    AsyncMemory,
    ConfigurationError,
    Conflict,
    HistoryDiverged,
    InvalidInput,
    Memory,
    ThreadForbidden,
)
from memorybank.integrations.pydantic_ai import MemorybankHistory
from memorybank.tokens import count_message_tokens
from tests.integrations import _stores

memory = _stores.memory
amemory = _stores.amemory


@pytest.fixture
def loop() -> Iterator[None]:
    """The event loop ``Agent.run_sync`` runs on, closed after the test.

    ``run_sync`` reuses the thread's current loop and creates one when there is none,
    which it leaves open (a ``ResourceWarning`` when collected); a test owns it here.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()


class WeatherModel:
    """A ``FunctionModel`` body: asks for the weather, then answers with the tool's return."""

    def __init__(self) -> None:
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(f"It is {returns[0].content}.")])
        prompt = next(p for p in last.parts if isinstance(p, UserPromptPart))
        return ModelResponse(parts=[ToolCallPart("weather", {"city": str(prompt.content)})])


def _agent(model: WeatherModel, **options: Any) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        FunctionModel(model), instructions="Answer about the weather.", **options
    )

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return agent


def _dump(messages: list[ModelMessage]) -> list[Any]:
    dumped: list[Any] = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    return dumped


def test_the_agent_over_several_turns_reads_back_every_message_exactly(
    memory: Memory, loop: None
) -> None:
    model = WeatherModel()
    agent = _agent(model)
    history = MemorybankHistory(memory.scoped(user_id="alice"), "chat-1")
    assert history.load() == []
    expected: list[ModelMessage] = []
    for city in ("Paris", "Oslo", "Lima"):
        result = agent.run_sync(city, message_history=history.load())
        assert result.output == f"It is sunny in {city}."
        history.save(result.all_messages())
        expected = result.all_messages()
        assert history.load() == expected
    # the third run's model saw both earlier turns (tool call and return included) from the store
    assert model.seen[-2][: len(expected) - 4] == expected[:-4]
    assert len(expected) == 12
    # one entry per message, readable by the rest of memorybank
    assert memory.entries.count("chat-1") == 12
    shown = memory.history("chat-1", last=4)
    assert [m["role"] for m in shown] == ["user", "assistant", "user", "assistant"]
    assert shown[0]["content"] == "Lima"
    assert shown[1]["content"] == 'weather({"city":"Lima"})'
    assert shown[3]["content"] == "It is sunny in Lima."
    assert memory.threads.require("chat-1").user_id == "alice"


async def test_the_async_agent_over_several_turns_with_append(amemory: AsyncMemory) -> None:
    model = WeatherModel()
    agent = _agent(model)
    history = MemorybankHistory(amemory.scoped(user_id="alice", agent_id="weather"), "chat-2")
    everything: list[ModelMessage] = []
    for city in ("Rome", "Kyiv", "Quito"):
        result = await agent.run(city, message_history=await history.aload())
        await history.aappend(result.new_messages())
        everything = result.all_messages()
    assert await history.aload() == everything
    assert _dump(await history.aload()) == _dump(everything)
    thread = await amemory.threads.require("chat-2")
    assert (thread.user_id, thread.agent_id) == ("alice", "weather")


async def test_test_model_calls_every_tool_and_the_history_round_trips(
    amemory: AsyncMemory,
) -> None:
    agent: Agent[None, str] = Agent(TestModel())

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @agent.tool_plain
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    history = MemorybankHistory(amemory, "chat-3")
    first = await agent.run("go", message_history=await history.aload())
    await history.asave(first.all_messages())
    second = await agent.run("again", message_history=await history.aload())
    await history.asave(second.all_messages())
    loaded = await history.aload()
    assert loaded == second.all_messages()
    calls = [p for m in loaded for p in m.parts if isinstance(p, ToolCallPart)]
    returns = [p for m in loaded for p in m.parts if isinstance(p, ToolReturnPart)]
    assert sorted(c.tool_name for c in calls) == ["add", "shout"]  # TestModel: once per run
    assert [c.tool_call_id for c in calls] == [r.tool_call_id for r in returns]


def _every_part() -> list[ModelMessage]:
    with warnings.catch_warnings():  # RetryPromptPart is deprecated, still read from old histories
        warnings.simplefilter("ignore")
        retry = RetryPromptPart("bad arguments", tool_name="lookup", tool_call_id="c2")
    return [
        ModelRequest(
            parts=[
                SystemPromptPart("You are terse."),
                UserPromptPart(
                    [
                        "what is on this picture? é 😀",
                        BinaryContent(data=b"\x89PNG\x00\x01\xff", media_type="image/png"),
                        ImageUrl(url="https://example.com/cat.png"),
                    ]
                ),
            ],
            instructions="be nice",
        ),
        ModelResponse(
            parts=[
                ThinkingPart("let me think", signature="sig-1"),
                TextPart("two lookups"),
                ToolCallPart("lookup", '{"q": "cat"}', tool_call_id="c1"),
                ToolCallPart("lookup", {"q": [1, 2.5, None, {"deep": True}]}, tool_call_id="c2"),
            ],
            usage=RequestUsage(input_tokens=12, output_tokens=7),
            model_name="scripted",
            finish_reason="tool_call",
            provider_details={"trace": ["a", 1]},
        ),
        ModelRequest(
            parts=[ToolReturnPart("lookup", {"found": True, "n": 3}, tool_call_id="c1"), retry]
        ),
        ModelResponse(parts=[TextPart("")]),  # an empty answer
        ModelRequest(parts=[UserPromptPart("thanks\n\ttabs and\x7f")]),
    ]


#: Every part kind, once (the parts' timestamps are taken when they are made).
EVERY_PART = _every_part()


def _normal(messages: list[ModelMessage]) -> list[ModelMessage]:
    """``messages`` as Pydantic AI's own serialisation round trip gives them back."""
    return ModelMessagesTypeAdapter.validate_python(_dump(messages))


def test_every_part_kind_round_trips_as_the_library_serialises_it(memory: Memory) -> None:
    messages = EVERY_PART
    history = MemorybankHistory(memory, "parts")
    history.save(messages)
    loaded = history.load()
    # exactly what Pydantic AI's own round trip gives (it normalises a BinaryContent to
    # BinaryImage and a RetryPromptPart to a retried ToolReturnPart), to the last byte
    assert loaded == _normal(messages)
    assert _dump(loaded) == _dump(_normal(messages))
    # saving what was loaded changes nothing
    history.save(loaded)
    assert memory.entries.count("parts") == len(messages)


def test_a_rewritten_history_replaces_the_stored_tail_when_asked(memory: Memory) -> None:
    history = MemorybankHistory(memory, "rewrite")
    messages = EVERY_PART
    history.save(messages)
    kept = memory.entries.list("rewrite")[:2]
    rewritten = [*messages[:2], ModelRequest(parts=[UserPromptPart("a new ending")])]
    with pytest.raises(HistoryDiverged, match=r"replace=True"):
        history.save(rewritten)
    assert history.load() == _normal(messages)  # refused: nothing written, nothing deleted
    history.save(rewritten, replace=True)
    assert history.load() == _normal(rewritten)
    assert [e.id for e in memory.entries.list("rewrite")][:2] == [e.id for e in kept]
    with pytest.raises(HistoryDiverged):
        history.save([])
    history.save([], replace=True)
    assert history.load() == []
    history.save(messages)
    history.clear()
    assert history.load() == []
    with pytest.raises(InvalidInput, match="replace"):
        history.save(messages, replace="yes")  # type: ignore[arg-type]


def test_saving_only_the_new_messages_refuses_instead_of_deleting(
    memory: Memory, loop: None
) -> None:
    """``save(result.new_messages())``, as Pydantic AI's examples pass to a store, would
    make the thread hold only the last turn: it is refused, naming what to call."""
    agent = _agent(WeatherModel())
    history = MemorybankHistory(memory, "new-only")
    first = agent.run_sync("Paris", message_history=history.load())
    history.save(first.all_messages())
    second = agent.run_sync("Oslo", message_history=history.load())
    with pytest.raises(HistoryDiverged) as refused:
        history.save(second.new_messages())
    text = str(refused.value)
    assert "append()" in text and "replace=True" in text
    assert refused.value.code == "history_diverged" and isinstance(refused.value, Conflict)
    assert (refused.value.stored, refused.value.shared) == (4, 0)
    assert history.load() == first.all_messages()  # nothing deleted, nothing written
    history.append(second.new_messages())
    assert history.load() == second.all_messages()


async def test_asave_of_the_new_messages_refuses_too(amemory: AsyncMemory) -> None:
    agent = _agent(WeatherModel())
    history = MemorybankHistory(amemory, "new-only-async")
    first = await agent.run("Paris", message_history=await history.aload())
    await history.asave(first.all_messages())
    second = await agent.run("Oslo", message_history=await history.aload())
    with pytest.raises(HistoryDiverged, match=r"append\(\)"):
        await history.asave(second.new_messages())
    assert await history.aload() == first.all_messages()
    await history.asave(second.all_messages())  # the whole history: only the new is written
    assert await history.aload() == second.all_messages()
    await history.asave(second.new_messages(), replace=True)
    assert await history.aload() == second.new_messages()


def test_bad_input_is_refused_and_writes_nothing(memory: Memory) -> None:
    history = MemorybankHistory(memory, "bad")
    history.save(EVERY_PART[:1])
    for bad in (
        [{"kind": "request", "parts": []}],
        [*EVERY_PART[:1], "hello"],
        "hello",
        None,
    ):
        with pytest.raises(InvalidInput, match="messages"):
            history.save(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="messages"):
            history.append(bad)  # type: ignore[arg-type]
    assert history.load() == _normal(EVERY_PART[:1])
    too_big = [*EVERY_PART[:1], ModelRequest(parts=[UserPromptPart("x" * 1_000_001)])]
    with pytest.raises(InvalidInput, match="content"):
        history.save(too_big)
    assert memory.entries.count("bad") == 1
    with pytest.raises(InvalidInput, match="thread_id"):
        MemorybankHistory(memory, "")


def test_a_thread_not_written_by_the_adapter_is_refused(memory: Memory) -> None:
    memory.ensure_thread("plain")
    memory.entries.add("plain", {"role": "user", "content": "hi"})
    with pytest.raises(InvalidInput, match="not written by MemorybankHistory"):
        MemorybankHistory(memory, "plain").load()


def test_the_wrong_verbs_for_the_handle_say_which_to_use(memory: Memory) -> None:
    history = MemorybankHistory(memory, "verbs")
    with pytest.raises(ConfigurationError, match="use load"):
        _ = history.aload().send(None)
    with pytest.raises(ConfigurationError, match="Memory or AsyncMemory"):
        MemorybankHistory("sqlite:///x.db", "t")  # type: ignore[arg-type]


async def test_sync_verbs_on_an_async_memory_are_refused(amemory: AsyncMemory) -> None:
    with pytest.raises(ConfigurationError, match="use aload"):
        MemorybankHistory(amemory, "verbs").load()


def test_another_users_history_is_forbidden_and_left_intact(memory: Memory) -> None:
    alice = MemorybankHistory(memory.scoped(user_id="alice"), "private")
    alice.save(EVERY_PART)
    bob = MemorybankHistory(memory.scoped(user_id="bob"), "private")
    for verb in (bob.load, bob.clear, lambda: bob.save([]), lambda: bob.append(EVERY_PART)):
        with pytest.raises(ThreadForbidden):
            verb()
    assert alice.load() == _normal(EVERY_PART)
    # another tenant does not see the thread at all
    elsewhere = MemorybankHistory(memory.tenant("other").scoped(user_id="alice"), "private")
    assert elsewhere.load() == []


def _cost(memory: Memory, messages: list[ModelMessage]) -> int:
    from memorybank.integrations.pydantic_ai import _role, _text

    tokenizer = memory._core.tokenizer
    return sum(
        count_message_tokens(tokenizer, {"role": _role(m), "content": _text(m)}) for m in messages
    )


def test_the_trimmer_keeps_the_newest_turns_and_never_splits_a_tool_call(
    memory: Memory, loop: None
) -> None:
    history = MemorybankHistory(memory, "trimmed")
    model = WeatherModel()
    budget = 60
    agent = _agent(model, capabilities=[ProcessHistory(history.trimmer(budget))])
    for city in ("Paris", "Oslo", "Lima", "Cairo", "Perth"):
        result = agent.run_sync(city, message_history=history.load())
        # the run's history is the trimmed one: keep everything by appending the new messages
        assert result.output == f"It is sunny in {city}."
        history.append(result.new_messages())
    # the store keeps everything; the model saw a window
    assert len(history.load()) == 20
    for seen in model.seen:
        first = seen[0]
        assert isinstance(first, ModelRequest)
        assert not any(isinstance(p, ToolReturnPart) for p in first.parts)
        call_ids = {p.tool_call_id for m in seen for p in m.parts if isinstance(p, ToolCallPart)}
        return_ids = {
            p.tool_call_id for m in seen for p in m.parts if isinstance(p, ToolReturnPart)
        }
        assert return_ids <= call_ids
    last = model.seen[-1]
    assert len(last) < 19  # older turns were cut
    assert _cost(memory, last) <= budget
    # the longest window that fits: one more turn would not
    everything = history.load()[:-1]  # what the last call was given
    start = len(everything) - len(last)
    assert _cost(memory, everything[start - 4 :]) > budget


def test_the_trimmer_keeps_the_newest_turn_whole_when_nothing_fits(memory: Memory) -> None:
    history = MemorybankHistory(memory, "tiny")
    trim = history.trimmer(1)
    messages = EVERY_PART
    assert trim(messages) == messages[4:]
    assert trim(messages[:3]) == messages[:3]
    with pytest.raises(InvalidInput, match="max_tokens"):
        history.trimmer(-1)
