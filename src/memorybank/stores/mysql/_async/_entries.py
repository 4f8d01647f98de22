"""Entries of the MySQL store once appended: pages and reads ("last N" in one
statement, rows as ``JSON_ARRAY``), deletes (with the vectors no branch still holds),
compaction and in-place updates; docs/mysql.md ("Reads, deletes and compaction").
"""

from __future__ import annotations

import json
from datetime import datetime
from operator import itemgetter
from typing import Any

from memorybank.errors import NotFound
from memorybank.records import Entry, Thread
from memorybank.stores.contract._async.store import NewEntry
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import (
    ALL,
    INSERT_COLS,
    INSERT_WIDTH,
    PAGE_COLS,
    THREAD_WIDTH,
    Statement,
    entry_values,
)
from memorybank.stores.sql.common import (
    THREAD_COLUMNS,
    messages_of_rows,
    page_row_to_entry,
    row_to_thread,
    to_us,
)
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import (
    marks,
)


class EntriesMixin(MySQLBase):
    """Entry reads, deletes, compaction and updates."""

    async def entry_list(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        newest_first: bool = False,
    ) -> tuple[Thread, list[Entry]]:
        """The thread and a page of entries: one statement, one round trip.

        ``SELECT thread UNION ALL (SELECT page)``: one statement is one read view,
        so the page is exactly of the branch the thread row names. Each row is
        one ``JSON_ARRAY`` (docs/mysql.md). The branch is a scalar
        subquery, not a join: MySQL then walks the entries primary key backwards
        and stops after ``limit`` rows (a join sorts the whole branch).
        """
        where = ""
        args: list[Any] = [tenant, thread_id, tenant, thread_id, branch, tenant, thread_id]
        if before is not None:
            where += " AND e.created_at < %s"
            args.append(to_us(before))
        if after is not None:
            where += " AND e.created_at > %s"
            args.append(to_us(after))
        args += [ALL if limit is None else limit, offset]
        async with self._connection() as conn:
            rows, _ = await self._one(
                conn,
                f"SELECT JSON_ARRAY({THREAD_COLUMNS}) FROM {self._threads}"
                " WHERE tenant_id = %s AND id = %s"
                f" UNION ALL (SELECT JSON_ARRAY({PAGE_COLS}) FROM {self._entries} e"
                " WHERE e.tenant_id = %s AND e.thread_id = %s AND e.branch = COALESCE(%s,"
                f" (SELECT current_branch FROM {self._threads}"
                f" WHERE tenant_id = %s AND id = %s)){where}"
                " ORDER BY e.position DESC LIMIT %s OFFSET %s)",
                args,
            )
        thread: Thread | None = None
        values: list[list[Any]] = []
        for (text,) in rows:
            row = json.loads(text)
            if len(row) == THREAD_WIDTH:
                thread = row_to_thread(row)
            else:
                values.append(row)
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        name = thread.current_branch if branch is None else branch
        values.sort(key=itemgetter(1), reverse=newest_first)  # UNION ALL promises no order
        return thread, [page_row_to_entry(row, thread_id, name) for row in values]

    async def entry_list_recent(
        self, tenant: str, thread_id: str, limit: int
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """The owner and the last ``limit`` messages in one statement (``entry_list``'s
        shape, only the five columns a message needs), rows straight to provider dicts."""
        async with self._connection() as conn:
            rows, _ = await self._one(
                conn,
                f"SELECT JSON_ARRAY(user_id) FROM {self._threads} WHERE tenant_id = %s AND id = %s"
                " UNION ALL (SELECT JSON_ARRAY(e.position, e.role, e.content, e.name,"
                f" e.tool_calls, e.tool_call_id) FROM {self._entries} e"
                " WHERE e.tenant_id = %s AND e.thread_id = %s AND e.branch ="
                f" (SELECT current_branch FROM {self._threads} WHERE tenant_id = %s AND id = %s)"
                " ORDER BY e.position DESC LIMIT %s)",
                (tenant, thread_id, tenant, thread_id, tenant, thread_id, limit),
            )
        owner: list[Any] | None = None
        page: list[list[Any]] = []
        for (text,) in rows:
            row = json.loads(text)
            if len(row) == 1:
                owner = row
            else:
                page.append(row)
        if owner is None:
            raise NotFound(f"thread {thread_id!r} not found")
        page.sort(key=itemgetter(0))  # UNION ALL promises no order
        return owner[0], messages_of_rows([row[1:] for row in page])

    def _entry_insert(
        self, tenant: str, thread_id: str, branch: str, position: int, entry: NewEntry
    ) -> Statement:
        return (
            f"INSERT INTO {self._entries} ({INSERT_COLS}) VALUES ({marks(MYSQL, INSERT_WIDTH)})",
            (tenant, thread_id, branch, position, *entry_values(entry)),
        )
