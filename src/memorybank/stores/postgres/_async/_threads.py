"""Threads of the PostgreSQL store: a thread and its first branch created in one
statement (``SQLWrites.thread_create`` runs it; the other thread and branch verbs are
the shared core's).
"""

from __future__ import annotations

from memorybank.records import Thread
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.sql.common import dump
from memorybank.stores.sql.program import Statement


class ThreadsMixin(PostgresBase):
    """The ``_threads`` part of the store (see the module docstring)."""

    # -- threads -----------------------------------------------------------

    def _thread_create_statements(self, thread: Thread) -> list[Statement]:
        """The thread and its first branch inserted in one statement."""
        return [
            (
                self._sql.thread_create,
                (
                    thread.tenant_id, thread.id, thread.user_id, thread.agent_id, thread.title,
                    dump(thread.metadata), thread.status, thread.created_at, thread.updated_at,
                    thread.current_branch,
                ),
            )
        ]  # fmt: skip
