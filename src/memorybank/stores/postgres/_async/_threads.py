"""Threads and branches of the PostgreSQL store: create, read, list, update and
delete threads; fork, list and delete branches (a fork copies the entries it keeps).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memorybank.errors import Conflict, NotFound
from memorybank.records import Branch, Thread
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.sql.common import dump
from memorybank.stores.sql.statements import (
    fork_point,
)


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

    # -- branches ----------------------------------------------------------

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
        """Check under a key-share lock of the thread, then copy the source's entries."""
        params: dict[str, Any] = {
            "tenant": tenant,
            "thread": thread_id,
            "name": name,
            "from": from_branch,
            "entry": from_entry,
            "created": created_at,
        }
        async with self._transaction() as conn:
            check = (from_entry, from_branch, name, tenant, thread_id)
            rows = await self._rows(conn, self._sql.branch_check, check)
            upto = fork_point(rows, thread_id, name, from_branch, from_entry)
            params["upto"] = rows[0][4] if upto is None else upto  # None: the source's last
            await self._rows(conn, self._sql.branch_copy, params)
        return Branch(
            name=name,
            thread_id=thread_id,
            created_at=created_at,
            from_branch=from_branch,
            from_entry=from_entry,
        )

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        """Lock the thread row, refuse the current branch, delete the branch and its entries."""
        async with self._transaction() as conn:
            rows = await self._rows(conn, self._sql.lock_thread_branch, (tenant, thread_id))
            if not rows:
                raise NotFound(f"thread {thread_id!r} not found")
            if rows[0][0] == name:
                raise Conflict(f"cannot delete the current branch {name!r}")
            done = await self._rows(
                conn, self._sql.branch_delete, {"tenant": tenant, "thread": thread_id, "name": name}
            )
            return bool(done[0][0])
