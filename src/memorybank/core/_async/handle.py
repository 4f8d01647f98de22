"""What the services under the facade use of a memory handle, as a Protocol.

The context builder, the agent turn and the vector index's ``reindex`` act on an
``AsyncMemory`` handle (a root one or a ``scoped`` one) but are imported by it: typing
them against ``AsyncMemory`` itself made the facade and its services one import cycle.
They type against :class:`AsyncMemoryHandle` instead, which sits below the facade and
names only what they read. ``AsyncMemory`` satisfies it structurally (mypy checks it
wherever a handle is passed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memorybank.core._async.core import MessageLike, _Core
    from memorybank.core._async.facts import AsyncFacts
    from memorybank.core._async.threads import AsyncThreads
    from memorybank.embeddings.base import Embedder
    from memorybank.records import Entry, Thread
    from memorybank.rules.scope import Scope
    from memorybank.stores.contract._async.store import AsyncStore, Unset

__all__ = ["AsyncEntriesHandle", "AsyncMemoryHandle"]


class AsyncEntriesHandle(Protocol):
    """What the services use of ``memory.entries`` (``AsyncEntries`` is one)."""

    async def add_many(
        self,
        thread_id: str,
        messages: Sequence[MessageLike],
        *,
        user_id: str | Unset | None = ...,
    ) -> list[Entry]: ...

    async def count(
        self, thread_id: str, *, branch: str | None = ..., user_id: str | Unset | None = ...
    ) -> int: ...


class AsyncMemoryHandle(Protocol):
    """A memory handle as its services see it (``AsyncMemory`` is one)."""

    _core: _Core

    @property
    def entries(self) -> AsyncEntriesHandle: ...

    @property
    def threads(self) -> AsyncThreads: ...

    @property
    def scope(self) -> Scope: ...

    @property
    def tenant_id(self) -> str: ...

    @property
    def store(self) -> AsyncStore: ...

    @property
    def embedder(self) -> Embedder | None: ...

    @property
    def facts(self) -> AsyncFacts: ...

    async def ensure_thread(
        self,
        thread_id: str | None,
        *,
        user_id: str | Unset | None = ...,
        agent_id: str | Unset | None = ...,
        metadata: dict[str, Any] | None = ...,
    ) -> Thread: ...

    async def _context_principal(
        self, thread_id: str, agent_id: object, user_id: object
    ) -> tuple[str, str | None]: ...
