"""``AsyncRunStateStore``: per-run working memory, snapshots and summaries (a part of
``AsyncStore``).

"Scope", "Compare-and-swap" (snapshot owners) and "Values" (JSON text verbatim) in
``memorybank.stores.contract._async.store`` apply.
"""

from __future__ import annotations

import abc
from datetime import datetime

from memorybank.records import Summary
from memorybank.stores.contract._async.base import AsyncStoreBase
from memorybank.stores.contract.types import Unset

__all__ = ["AsyncRunStateStore"]


class AsyncRunStateStore(AsyncStoreBase):
    """Run state: working memory (per run), snapshots (durable workflows), summaries."""

    # -- working memory (per run) ----------------------------------------------

    @abc.abstractmethod
    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        """Set one key of a run's working memory (value is JSON text)."""

    @abc.abstractmethod
    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        """The JSON text stored under ``key``, or ``None``."""

    @abc.abstractmethod
    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        """Delete one key; whether it existed."""

    @abc.abstractmethod
    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        """Every key of the run's working memory."""

    @abc.abstractmethod
    async def working_clear(self, tenant: str, run_id: str) -> None:
        """Forget the run's working memory."""

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str] | None:
        """The run ids of ``tenant`` that hold working memory, in id order; ``None``: this
        store cannot list them (the default, for stores written before this method).

        ``after`` leaves out ids up to and including it; ``limit`` caps the count.
        For export (``memorybank export``); a run whose working memory was
        cleared is not listed.
        """
        return None

    # -- snapshots (durable workflows) -----------------------------------------

    @abc.abstractmethod
    async def snapshot_save(
        self,
        tenant: str,
        run_id: str,
        value: str,
        *,
        user_id: str | None,
        saved_at: datetime,
        owner_check: bool = True,
    ) -> None:
        """Save (replace) a run's snapshot, with ``user_id`` as its owner.

        With ``owner_check`` the save applies only if the run has no snapshot or
        its owner is ``None`` or ``user_id``; otherwise ``ThreadForbidden`` and
        nothing is written. The check and the write are one atomic step: of two
        users saving the same new run at once, exactly one owns it.
        """

    @abc.abstractmethod
    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        """``(owner user_id, JSON text)`` or ``None``."""

    @abc.abstractmethod
    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        """Delete a run's snapshot; whether it existed.

        With ``owner_check``, a snapshot owned by someone other than ``user_id``
        is not deleted: ``ThreadForbidden``, in the same atomic step as the delete.
        """

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str] | None:
        """The run ids of ``tenant`` that have a snapshot, in id order; ``None``: this store
        cannot list them (the default). ``after`` and ``limit`` as in :meth:`working_runs`."""
        return None

    # -- summaries -------------------------------------------------------------

    @abc.abstractmethod
    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        """Store a summary."""

    @abc.abstractmethod
    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        """The agent's summaries for ``user_id`` plus the shared ones (no user), oldest first.

        ``UNSET``: every summary of the agent.
        """

    async def summary_agents(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str] | None:
        """The agent ids of ``tenant`` that have a summary, in id order; ``None``: this
        store cannot list them (the default, for stores written before this method).

        ``after`` and ``limit`` as in :meth:`working_runs`. For export
        (``memorybank export``), which reads each agent's summaries with
        :meth:`summary_list`.
        """
        return None
