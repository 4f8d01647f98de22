"""``AsyncThreadStore``: threads and their branches (a part of ``AsyncStore``).

"Scope", "Ids" and "Branches" in ``memorybank.stores.contract._async.store`` apply.
"""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Any

from memorybank.records import Branch, Thread
from memorybank.stores.contract._async.base import AsyncStoreBase
from memorybank.stores.contract.types import UNSET, Unset

__all__ = ["AsyncThreadStore"]


class AsyncThreadStore(AsyncStoreBase):
    """Threads and branches: create, read, list, update, delete."""

    # -- threads ---------------------------------------------------------------

    @abc.abstractmethod
    async def thread_create(self, thread: Thread) -> Thread:
        """Insert ``thread`` and its ``"main"`` branch. ``Conflict`` if the id exists."""

    @abc.abstractmethod
    async def thread_get(self, tenant: str, thread_id: str) -> Thread | None:
        """The thread, or ``None``."""

    @abc.abstractmethod
    async def thread_list(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        """Threads, most recently updated first (ties: id descending).

        ``user_id``/``agent_id`` filter when given (``None`` matches threads without one).
        """

    @abc.abstractmethod
    async def thread_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        updated_at: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        status: str | Unset = UNSET,
        current_branch: str | Unset = UNSET,
    ) -> Thread:
        """Change the given fields and ``updated_at``; ``NotFound`` if absent.

        ``current_branch`` must name an existing branch (``NotFound`` otherwise).
        """

    @abc.abstractmethod
    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        """Delete the thread with its entries and branches. ``False`` if absent."""

    # -- branches --------------------------------------------------------------

    @abc.abstractmethod
    async def branch_create(
        self,
        tenant: str,
        thread_id: str,
        name: str,
        *,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Branch:
        """Create ``name`` holding ``from_branch``'s entries up to ``from_entry`` (all if None).

        ``Conflict`` if the name exists; ``NotFound`` for a missing thread, source
        branch or entry.
        """

    @abc.abstractmethod
    async def branch_list(self, tenant: str, thread_id: str) -> list[Branch]:
        """The thread's branches, oldest first."""

    @abc.abstractmethod
    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        """Delete a branch and its entries (never the current one: ``Conflict``)."""
