"""Threads and branches of the PostgreSQL store: create, read, list, update and
delete threads; fork, list and delete branches (a fork copies the entries it keeps).
"""

from __future__ import annotations

from memorybank.records import Thread
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.sql.common import dump


class ThreadsMixin(PostgresBase):
    """The ``_threads`` part of the store (see the module docstring)."""

    # -- threads -----------------------------------------------------------

    async def thread_create(self, thread: Thread) -> Thread:
        """Insert the thread and its first branch in one statement."""
        await self._fetch(
            self._sql.thread_create,
            {
                "tenant": thread.tenant_id,
                "id": thread.id,
                "user": thread.user_id,
                "agent": thread.agent_id,
                "title": thread.title,
                "metadata": dump(thread.metadata),
                "status": thread.status,
                "created": thread.created_at,
                "updated": thread.updated_at,
                "branch": thread.current_branch,
            },
        )
        return thread

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        """Lock the thread row, then delete it with its branches and entries."""
        async with self._transaction() as conn:
            if not await self._rows(conn, self._sql.lock_thread, (tenant, thread_id)):
                return False
            await self._rows(conn, self._sql.thread_delete, {"tenant": tenant, "id": thread_id})
            return True
