"""Threads of the PostgreSQL store: a thread and its first branch created in one
statement (the other thread and branch verbs are the shared core's).
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
