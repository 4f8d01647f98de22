"""The SQLite store's threads and branches."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from memorybank.errors import Conflict
from memorybank.records import Thread
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.sql.common import to_us
from memorybank.stores.sql.dialect import SQLITE
from memorybank.stores.sql.statements import (
    thread_insert,
    thread_update_query,
    updated_thread,
)
from memorybank.stores.sqlite._async._base import SQLiteStoreBase
from memorybank.stores.sqlite.schema import INSERT_COLUMNS

#: The columns a fork copies: all but the branch and ``fts_scope`` (left NULL: the
#: keyword indexer fills it, as for every row written without it).
_COPIED = INSERT_COLUMNS.replace("branch, ", "").replace(", fts_scope", "")


class ThreadsMixin(SQLiteStoreBase):
    """Threads and their branches."""

    _copied_columns = _COPIED

    # -- threads -------------------------------------------------------------------

    def _thread_source(self, user_id: str | Unset | None) -> str:
        # No index holds ``updated_at`` (schema version 8: appends set it): the tenant's
        # threads, or one user's through ``threads_owner``, are sorted here.
        if isinstance(user_id, Unset):
            return f"{self.prefix}threads"
        return f"{self.prefix}threads" + SQLITE.hint(f"{self.prefix}threads_owner")

    def _branch_count(self, branch: str) -> str:
        return (
            f"(SELECT COUNT(*) FROM {self.prefix}entries e WHERE e.tenant_id = t.tenant_id"
            f" AND e.thread_id = t.id AND e.branch = {branch})"
        )

    async def thread_create(self, thread: Thread) -> Thread:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> Thread:
            if self._get_thread(conn, thread.tenant_id, thread.id) is not None:
                raise Conflict(f"thread {thread.id!r} already exists")
            conn.execute(*thread_insert(SQLITE, f"{p}threads", thread))
            conn.execute(
                f"INSERT INTO {p}branches (tenant_id, thread_id, name, created_at)"
                " VALUES (?, ?, ?, ?)",
                (thread.tenant_id, thread.id, thread.current_branch, to_us(thread.created_at)),
            )
            return thread

        return await self._run(lambda: self._write(op))

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
        sql, params = thread_update_query(
            SQLITE, f"{self.prefix}threads", f"{self.prefix}branches", tenant, thread_id,
            updated_at=updated_at, title=title, metadata=metadata, status=status,
            current_branch=current_branch,
        )  # fmt: skip

        def op(conn: sqlite3.Connection) -> Thread:
            conn.execute(sql, params)
            return updated_thread(
                self._get_thread(conn, tenant, thread_id), thread_id, current_branch
            )

        return await self._run(lambda: self._write(op))
