"""An OpenAI Agents SDK agent whose session lives in memorybank (SQLite), with a scripted
model standing in for OpenAI's, so it runs offline.

    pip install 'memorybank[openai-agents]'
    python examples/openai_agents_agent.py [path/to/agent.db]

The runner calls the weather tool, answers, and on the next turn the model sees the
whole conversation again, read back from the session. Every item is one memorybank
entry: `memory.history` shows the same thread a model would get.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Runner, function_tool
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.tracing import set_tracing_disabled
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from memorybank import AsyncMemory
from memorybank.integrations.openai_agents import MemorybankSession


def say(text: str, number: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{number}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptedModel(Model):
    """A real `agents.Model` that answers from a script (yours would call an LLM)."""

    def __init__(self) -> None:
        call = ResponseFunctionToolCall(
            id="fc_1",
            call_id="call_weather_1",
            type="function_call",
            name="get_weather",
            arguments='{"city": "Lisbon"}',
            status="completed",
        )
        self.script: list[list[Any]] = [
            [call],
            [say("It is sunny in Lisbon, 24C.", 1)],
            [say("You asked about Lisbon: sunny, 24C.", 2)],
        ]
        self.seen: list[int] = []  # how many input items each model call received

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        given: str | list[TResponseInputItem] = args[1] if len(args) > 1 else kwargs["input"]
        self.seen.append(1 if isinstance(given, str) else len(given))
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("this example does not stream")


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny, 24C in {city}"


async def main(path: str) -> None:
    set_tracing_disabled(True)
    model = ScriptedModel()
    agent = Agent(
        name="atlas", instructions="Answer about the weather.", model=model, tools=[get_weather]
    )
    async with AsyncMemory(f"sqlite:///{path}") as memory:
        session = MemorybankSession("trip-ana", memory, user_id="ana", agent_id="atlas")
        await session.clear_session()  # a fresh conversation on every run of the example
        first = await Runner.run(agent, "Weather in Lisbon?", session=session)
        print(f"turn 1: {first.final_output}")
        second = await Runner.run(agent, "What did I ask about?", session=session)
        print(f"turn 2: {second.final_output}")
        print(f"items the model saw per call: {model.seen}")
        # Responses items come back as stored: a message has a role, a call or output a type
        window = await memory.history("trip-ana", user_id="ana")
        print(f"history: {[m.get('type') or m['role'] for m in window]}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "agent.db"))
