"""The SQLite store's threads: their creation, its list and count reads, and the columns
a fork copies (the other thread and branch verbs are the shared core's)."""

from __future__ import annotations

import sqlite3

from memorybank.errors import Conflict
from memorybank.records import Thread
from memorybank.stores.contract._async.store import Unset
from memorybank.stores.sql.common import to_us
from memorybank.stores.sql.dialect import SQLITE
from memorybank.stores.sql.statements import thread_insert
from memorybank.stores.sqlite._async._base import SQLiteStoreBase
from memorybank.stores.sqlite.schema import INSERT_COLUMNS

#: The columns a fork copies: all but the branch and ``fts_scope`` (left NULL: the
#: keyword indexer fills it, as for every row written without it).
_COPIED = INSERT_COLUMNS.replace("branch, ", "").replace(", fts_scope", "")


class ThreadsMixin(SQLiteStoreBase):
    """Threads (see the module docstring)."""

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
