"""The reference service's routes, as it names them: ``/cortex/agents/{name}/memory``.

"Agent ``name``'s memory" is one thread of the caller's tenant whose id is
derived from the name: ``agent:{name}``, or ``agent:{name}:user:{U}`` (each part with
``%`` and ``:`` escaped as ``%25`` and ``%3A``, see ``agent_thread_id``) when the
request names an end user with ``X-User-Id`` (that user then owns it, and the
library's fail-closed ownership keeps other users out). The thread's
``agent_id`` is ``name``. It is an ordinary thread: ``/v1/threads/agent:{name}``
reaches the same data.
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Query, Response

from memorybank.errors import NotFound
from memorybank.rules.ids import compound_id
from memorybank.server.deps import CallerDep, MemoryDep
from memorybank.server.models import EntriesIn, MessageOut

__all__ = ["agent_thread_id", "messages_json", "page_json", "router"]


def _part(value: str) -> str:
    """``value`` with ``%`` and ``:`` escaped, so joined parts split back one way only."""
    return value.replace("%", "%25").replace(":", "%3A")


def agent_thread_id(name: str, user_id: str | None = None) -> str:
    """The thread holding agent ``name``'s conversation (for ``user_id``, if any).

    Injective: each part has its ``%`` and ``:`` escaped (``%25``, ``%3A``), so user
    ``c`` of agent ``a:user:b`` and user ``b:user:c`` of agent ``a`` get two threads;
    names without either character keep the ids they always had."""
    agent = _part(name)
    readable = f"agent:{agent}" if user_id is None else f"agent:{agent}:user:{_part(user_id)}"
    return compound_id(readable)


def messages_json(messages: list[dict[str, Any]]) -> bytes:
    """``history``'s messages as JSON, unchanged (what ``MessageOut`` documents):
    the library hands back JSON values, so no model round trip can add or drop a
    field (and none costs time on the hottest route)."""
    return orjson.dumps(messages)


def page_json(messages: list[dict[str, Any]]) -> bytes:
    """``messages_json``, as the one page of a list (``{"items", "next_cursor": null}``)."""
    return orjson.dumps({"items": messages, "next_cursor": None})


def router() -> APIRouter:
    """The routes of this module."""
    api = APIRouter(prefix="/cortex/agents/{name}/memory", tags=["cortex"])

    @api.get(
        "",
        summary="Load an agent's conversation history",
        response_model=list[MessageOut],
    )
    async def load_conversation(
        name: str,
        memory: MemoryDep,
        who: CallerDep,
        limit: Annotated[int, Query(ge=0, le=10_000, description="Newest N messages.")] = 20,
    ) -> Response:
        """The newest ``limit`` messages, oldest first (``[]`` before the first save)."""
        try:
            messages = await memory.history(agent_thread_id(name, who.user_id), last=limit)
        except NotFound:
            messages = []
        return Response(messages_json(messages), media_type="application/json")

    @api.post("", status_code=204, summary="Save messages to an agent's conversation")
    async def save_conversation(
        name: str, body: EntriesIn, memory: MemoryDep, who: CallerDep
    ) -> Response:
        """Appends ``messages`` atomically (the thread is created on first use)."""
        thread = await memory.ensure_thread(agent_thread_id(name, who.user_id), agent_id=name)
        await memory.entries.add_many(thread.id, **body.arguments())
        return Response(status_code=204)

    @api.delete("", status_code=204, summary="Clear an agent's conversation history")
    async def clear_conversation(name: str, memory: MemoryDep, who: CallerDep) -> Response:
        """Deletes the agent's thread (entries and branches); idempotent."""
        await memory.threads.delete(agent_thread_id(name, who.user_id))
        return Response(status_code=204)

    return api
