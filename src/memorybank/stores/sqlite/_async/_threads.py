"""The SQLite store's threads and branches."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from memorybank.errors import Conflict
from memorybank.records import Branch, Thread
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.sql.common import to_us
from memorybank.stores.sql.dialect import SQLITE
from memorybank.stores.sql.statements import (
    branch_copy_query,
    branch_deletable,
    branch_fork_query,
    branch_of_query,
    fork_point,
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

    # -- branches ------------------------------------------------------------------

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
        p = self.prefix

        def op(conn: sqlite3.Connection) -> Branch:
            sql = branch_fork_query(SQLITE, f"{p}threads", f"{p}branches", f"{p}entries")
            rows = conn.execute(sql, (from_entry, from_branch, name, tenant, thread_id)).fetchall()
            upto = fork_point(rows, thread_id, name, from_branch, from_entry)
            conn.execute(
                f"INSERT INTO {p}branches (tenant_id, thread_id, name, created_at, from_branch,"
                " from_entry) VALUES (?, ?, ?, ?, ?, ?)",
                (tenant, thread_id, name, to_us(created_at), from_branch, from_entry),
            )
            copy = branch_copy_query(SQLITE, f"{p}entries", _COPIED)
            upto = 2**62 if upto is None else upto
            conn.execute(copy, (name, tenant, thread_id, from_branch, upto))
            return Branch(name, thread_id, created_at, from_branch, from_entry)

        return await self._run(lambda: self._write(op))

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        p = self.prefix

        def op(conn: sqlite3.Connection) -> bool:
            rows = conn.execute(branch_of_query(SQLITE, f"{p}threads"), (None, tenant, thread_id))
            branch_deletable(rows.fetchall(), thread_id, name)
            cursor = conn.execute(
                f"DELETE FROM {p}branches WHERE tenant_id = ? AND thread_id = ? AND name = ?",
                (tenant, thread_id, name),
            )
            self._delete_entries(conn, tenant, thread_id, name)
            return cursor.rowcount > 0

        return await self._run(lambda: self._write(op))
