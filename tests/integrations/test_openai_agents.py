"""``MemorybankSession`` driven by the real OpenAI Agents SDK ``Runner``, on SQLite and PostgreSQL.

The model is a real ``agents.Model`` subclass that answers from a script (the
SDK's own ``FakeModel`` lives in its test tree, not in the wheel), so the runs
are offline; everything else (the runner, tool execution, how the runner reads
and writes the session) is the SDK's.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, ModelSettings, RunContextWrapper, Runner, function_tool
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.memory.session import Session, SessionABC
from agents.models.interface import Model
from agents.tracing import set_tracing_disabled
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from memorybank import AsyncMemory, InvalidInput, ThreadForbidden
from memorybank.integrations.openai_agents import MemorybankSession
from memorybank.stores.postgres._async import AsyncPostgresStore
from memorybank.stores.sqlite._async import AsyncSQLiteStore
from tests.stores.test_contract_postgres import URL, drop_tables, require_postgres

set_tracing_disabled(True)


def _message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{uuid.uuid4().hex[:8]}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def _call(name: str, arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{uuid.uuid4().hex[:8]}",
        call_id=f"call_{uuid.uuid4().hex[:8]}",
        type="function_call",
        name=name,
        arguments=arguments,
        status="completed",
    )


class ScriptedModel(Model):
    """Answers each call with the next scripted output; records every input it saw."""

    def __init__(self, script: list[list[Any]]) -> None:
        self.script = list(script)
        self.inputs: list[list[TResponseInputItem]] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        given = args[1] if len(args) > 1 else kwargs["input"]
        self.inputs.append(
            [{"role": "user", "content": given}] if isinstance(given, str) else list(given)
        )
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the tests run without streaming")


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"21C in {city}"


@pytest.fixture(params=["sqlite", "postgres"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncMemory]:
    if request.param == "sqlite":
        store: Any = AsyncSQLiteStore(tmp_path / "agents.db")
        prefix = None
    else:
        require_postgres()
        prefix = f"oa{uuid.uuid4().hex[:10]}_"
        store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=2, timeout=5)
    memory = AsyncMemory(store)
    try:
        yield memory
    finally:
        await store.close()
        if prefix is not None:
            drop_tables(URL, prefix)


def _agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(
        name="weather",
        instructions="Answer about the weather.",
        model=model,
        model_settings=ModelSettings(),
        tools=[get_weather],
    )


def _plain(items: list[Any]) -> list[dict[str, Any]]:
    return [dict(item) for item in items]


async def test_the_runner_over_several_turns_reads_back_every_item_exactly(
    memory: AsyncMemory,
) -> None:
    first_call = _call("get_weather", '{"city":"Paris"}')
    second_call = _call("get_weather", '{"city":"Oslo"}')
    model = ScriptedModel(
        [
            [first_call],
            [_message("It is 21C in Paris.")],
            [_message("You asked about Paris.")],
            [second_call],
            [_message("Oslo is 21C too.")],
        ]
    )
    agent = _agent(model)
    session = MemorybankSession("chat-1", memory, user_id="alice", agent_id="weather")
    assert isinstance(session, Session)
    assert session.session_settings is not None and session.session_settings.limit is None

    one = await Runner.run(agent, "Weather in Paris?", session=session)
    assert one.final_output == "It is 21C in Paris."
    after_one = await session.get_items()
    assert [i.get("type", "message") for i in after_one] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert after_one[0] == {"content": "Weather in Paris?", "role": "user"}
    # what the runner stored, as the model produced it (the SDK's ``to_input_item``)
    assert after_one[1] == first_call.model_dump(exclude_unset=True)
    assert after_one[2] == {
        "call_id": first_call.call_id,
        "output": "21C in Paris",
        "type": "function_call_output",
    }

    two = await Runner.run(agent, "Which city did I ask about?", session=session)
    assert two.final_output == "You asked about Paris."
    # the second turn's model input is the stored history, exactly, then the new message
    assert model.inputs[2][:4] == after_one
    assert model.inputs[2][4] == {"content": "Which city did I ask about?", "role": "user"}

    three = await Runner.run(agent, "And Oslo?", session=session)
    assert three.final_output == "Oslo is 21C too."
    items = await session.get_items()
    assert len(items) == 10
    assert model.inputs[-1] == items[:-1]  # the last model call saw everything but its answer
    # the items are the thread's entries: history() gives the same dicts
    assert await memory.scoped(user_id="alice").history("chat-1") == items
    thread = await memory.threads.get("chat-1")
    assert thread is not None and (thread.user_id, thread.agent_id) == ("alice", "weather")


async def test_limit_never_splits_a_call_from_its_output(memory: AsyncMemory) -> None:
    call = _call("get_weather", '{"city":"Rome"}')
    model = ScriptedModel([[call], [_message("21C in Rome.")]])
    session = MemorybankSession("chat-2", memory)
    await Runner.run(_agent(model), "Rome?", session=session)
    items = await session.get_items()
    assert [i.get("type", "message") for i in items] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    # the window of 2 would start at the output: the output is left out, never orphaned
    assert await session.get_items(limit=2) == items[3:]
    assert await session.get_items(limit=3) == items[1:]
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == []
    limited = MemorybankSession("chat-2", memory, session_settings={"limit": 3})
    assert await limited.get_items() == items[1:]


async def test_pop_clear_and_ownership(memory: AsyncMemory) -> None:
    session = MemorybankSession("chat-3", memory, user_id="alice")
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    user = {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    await session.add_items([user, call, output])  # type: ignore[list-item]
    await session.add_items([])
    assert await session.pop_item() == output  # the newest, even an output
    assert await session.get_items() == [user, call]
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None
    stranger = MemorybankSession("chat-3", memory, user_id="mallory")
    with pytest.raises(ThreadForbidden):
        await stranger.get_items()
    with pytest.raises(InvalidInput):
        await session.add_items([{"role": "user", "content": "a\x00"}])


async def test_the_run_context_carries_tenant_and_user(memory: AsyncMemory) -> None:
    session = MemorybankSession("chat-4", memory)
    model = ScriptedModel([[_message("hello bob")]])
    context = {"tenant_id": "acme", "user_id": "bob"}
    await Runner.run(_agent(model), "hi", session=session, context=context)
    wrapper = RunContextWrapper(context=context)
    items = await session.get_items(wrapper=wrapper)
    assert [i.get("role") for i in items] == ["user", "assistant"]
    # stored in the context's tenant, owned by its user; nothing in the default tenant
    assert await memory.threads.get("chat-4") is None
    thread = await memory.tenant("acme").threads.get("chat-4")
    assert thread is not None and thread.user_id == "bob"
    other = RunContextWrapper(context={"tenant_id": "acme", "user_id": "eve"})
    with pytest.raises(ThreadForbidden):
        await session.get_items(wrapper=other)
    owned = MemorybankSession("chat-4", memory.tenant("acme"), user_id="bob")
    assert await owned.get_items() == items
    with pytest.raises(InvalidInput):  # a scoped session never widens to another user
        await owned.get_items(wrapper=other)


def test_the_session_satisfies_the_sdk_protocol_with_wrapper() -> None:
    from agents.memory.session import _session_accepts_wrapper

    assert _session_accepts_wrapper(MemorybankSession("s", AsyncMemory("memory://")))
    assert not issubclass(MemorybankSession, SessionABC)  # the protocol, as the SDK advises
