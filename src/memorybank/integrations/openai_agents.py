"""OpenAI Agents SDK: a ``Session`` backed by any memorybank store.

``pip install 'memorybank[openai-agents]'``::

    from agents import Agent, Runner
    from memorybank import AsyncMemory
    from memorybank.integrations.openai_agents import MemorybankSession

    memory = AsyncMemory("postgresql://...")
    session = MemorybankSession("conversation-42", memory, user_id="alice")
    await Runner.run(agent, "Hello", session=session)

One session is one memorybank thread (``thread_id == session_id``), created on
first use and owned by ``user_id`` (fail closed: a thread of another owner
raises ``ThreadForbidden``). Every item the SDK adds is one entry, stored and
returned exactly (Responses items are kept whole, see docs/concepts.md, "Responses
API items"), so the thread is also visible to ``history()``, search and the
context builder.

Run context. Every method also takes the SDK's ``wrapper=`` (its run context
wrapper); when the run's ``context`` carries ``tenant_id`` and/or ``user_id``
(as mapping keys or attributes) the call acts in that tenant and for that
user, through ``memory.tenant(...)`` and ``memory.scoped(user_id=...)``: a
context user other than the session's ``user_id`` raises ``InvalidInput``
(a scoped handle never widens). The context is the application's trusted
state (the model never writes it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from memorybank.integrations._common import needs_extra
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Entry
from memorybank.rules import validate as v

try:
    from agents.memory.session_settings import (
        SessionSettings,
        coerce_session_settings,
        resolve_session_limit,
    )
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise needs_extra(__name__, "the OpenAI Agents SDK", "openai-agents") from error

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.run_context import RunContextWrapper

__all__ = ["MemorybankSession"]


def _context_value(context: Any, key: str) -> str | None:
    value = context.get(key) if isinstance(context, Mapping) else getattr(context, key, None)
    return None if value is None else v.check_id(value, key)


class MemorybankSession:
    """The Agents SDK ``Session`` protocol on an ``AsyncMemory``.

    Args:
        session_id: the session, and the id of its thread (1 to 255 printable characters).
        memory: any ``AsyncMemory`` handle (a tenant or scoped handle works too).
        user_id: owner of the thread; every call checks it (fail closed).
        agent_id: the agent recorded on a thread this session creates.
        session_settings: the SDK's ``SessionSettings`` (its ``limit`` is the
            default of ``get_items``).

    ``get_items(limit)`` returns the newest ``limit`` items oldest first, except
    that a tool output (``function_call_output`` and the like) whose call falls
    outside the window is left out: a window never hands the model an output
    without its call, so it may hold fewer than ``limit`` items. ``pop_item``
    removes the newest item whatever it is. ``add_items`` is all-or-nothing.
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        memory: AsyncMemory,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.session_id = v.check_id(session_id, "session_id")
        self.user_id = v.check_optional_id(user_id, "user_id")
        self.agent_id = v.check_optional_id(agent_id, "agent_id")
        self._memory = memory
        # as the SDK's own sessions: an empty ``SessionSettings`` when none is given
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )

    def _handle(self, wrapper: RunContextWrapper[Any] | None) -> AsyncMemory:
        memory = self._memory
        context = None if wrapper is None else wrapper.context
        tenant = None if context is None else _context_value(context, "tenant_id")
        user = None if context is None else _context_value(context, "user_id")
        if tenant is not None:
            memory = memory.tenant(tenant)
        if self.user_id is not None:
            memory = memory.scoped(user_id=self.user_id)
        if user is not None:
            memory = memory.scoped(user_id=user)
        return memory

    async def _thread(self, memory: AsyncMemory) -> str:
        thread = await memory.ensure_thread(self.session_id, agent_id=self.agent_id)
        return thread.id

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """The newest ``limit`` items (default: the settings' limit, else all), oldest first.

        A limit of 0 or below returns nothing, as the SDK's Redis, MongoDB and
        Dapr sessions do (and its SQLite session since it stopped reading a
        negative limit as "everything").
        """
        memory = self._handle(wrapper)
        thread_id = await self._thread(memory)
        resolved = resolve_session_limit(limit, self.session_settings)
        if resolved is not None and resolved <= 0:
            return []
        entries = await memory.entries.list(thread_id, limit=resolved)
        return cast("list[TResponseInputItem]", [e.to_message() for e in entries])

    async def add_items(
        self, items: list[TResponseInputItem], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Append ``items`` in order, in one all-or-nothing write."""
        if not items:
            return
        memory = self._handle(wrapper)
        thread_id = await self._thread(memory)
        await memory.entries.add_many(thread_id, [dict(item) for item in items])

    async def _newest(self, memory: AsyncMemory, thread_id: str) -> Entry | None:
        # Straight from the store: a window would drop a tool output whose call it
        # cut off, and the newest item must be popped whatever it is. The owner was
        # checked by ``_thread`` (fail closed) just before.
        _, rows = await memory._core.store.entry_list(
            memory.tenant_id, thread_id, limit=1, newest_first=True
        )
        return rows[0] if rows else None

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Remove and return the newest item, or ``None`` when the session is empty."""
        memory = self._handle(wrapper)
        thread_id = await self._thread(memory)
        while True:
            newest = await self._newest(memory, thread_id)
            if newest is None:
                return None
            if await memory.entries.delete(thread_id, newest.id):
                return cast("TResponseInputItem", newest.to_message())
            # popped concurrently by another caller: take the next newest

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Remove every item of the session (the thread itself stays)."""
        memory = self._handle(wrapper)
        thread_id = await self._thread(memory)
        await memory.entries.clear(thread_id)
