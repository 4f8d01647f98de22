"""Entries of the MySQL store once appended: pages and reads ("last N" in one
statement, rows as ``JSON_ARRAY``), deletes (with the vectors no branch still holds),
compaction and in-place updates; docs/mysql.md ("Reads, deletes and compaction").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

from memorybank.errors import NotFound
from memorybank.records import Entry, Thread
from memorybank.stores.contract._async.store import NewEntry
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.compat import AsyncMySQLConnection
from memorybank.stores.mysql.rows import (
    ALL,
    BEGIN,
    IN_CHUNK,
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
    after_position,
    branch_entries,
    branch_named,
    branch_of_query,
    compact_prefix_query,
    entry_position_query,
    entry_update_rows,
    ids_in,
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

    async def entry_delete(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        """Delete these entries from the branch; how many."""
        ids = list(entry_ids)
        if not ids:
            if await self.thread_get(tenant, thread_id) is None:
                raise NotFound(f"thread {thread_id!r} not found")
            return 0
        total = 0
        for start in range(0, len(ids), IN_CHUNK):
            chunk = ids[start : start + IN_CHUNK]
            total += await self._delete_where(
                tenant, thread_id, branch, ids_in(MYSQL, len(chunk)), chunk
            )
        return total

    async def entry_truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        """Delete the entries after ``entry_id`` on the branch; how many."""
        rows = await self._select(
            entry_position_query(MYSQL, self._entries, self._threads),
            (tenant, thread_id, entry_id, branch),
        )
        if not rows:
            if await self.thread_get(tenant, thread_id) is None:
                raise NotFound(f"thread {thread_id!r} not found")
            raise NotFound(f"entry {entry_id!r} not found on this branch")
        return await self._delete_where(
            tenant, thread_id, rows[0][0], after_position(MYSQL), (rows[0][1],)
        )

    async def entry_clear(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        """Delete every entry of the branch; how many."""
        return await self._delete_where(tenant, thread_id, branch, "", ())

    async def _delete_where(
        self, tenant: str, thread_id: str, branch: str | None, condition: str, extra: Sequence[Any]
    ) -> int:
        """Delete the branch's entries matching ``condition`` (on ``e``) with the vectors
        of those no other branch holds, in one transaction; ``NotFound`` without the thread.
        """
        return await self._with_retry(
            lambda conn: self._delete_entries_in(conn, tenant, thread_id, branch, condition, extra)
        )

    async def _delete_entries_in(
        self,
        conn: AsyncMySQLConnection,
        tenant: str,
        thread_id: str,
        branch: str | None,
        condition: str,
        extra: Sequence[Any],
    ) -> int:
        results = await self._run(
            conn,
            [
                (BEGIN, None),
                (branch_of_query(MYSQL, self._threads, " FOR UPDATE"), (branch, tenant, thread_id)),
                (
                    f"SELECT name FROM {self._branches} WHERE tenant_id = %s AND thread_id = %s",
                    (tenant, thread_id),
                ),
            ],
        )
        head = results[2][0]
        if not head:
            await self._one(conn, "ROLLBACK")
        name = branch_named(head, thread_id)
        where = f"FROM {self._entries} e WHERE {branch_entries(MYSQL, condition)}"
        args = (tenant, thread_id, name, *extra)
        rows, _ = await self._one(conn, f"SELECT e.id {where} FOR UPDATE", args)
        if not rows:
            await self._one(conn, "COMMIT")
            return 0
        others = [str(r[0]) for r in results[3][0] if r[0] != name]
        results = await self._run(
            conn,
            [
                (f"DELETE e {where}", args),
                # the rows just locked are the rows deleted (the thread row's lock
                # holds off appends and forks)
                (
                    f"UPDATE {self._branches} SET entry_count = entry_count - %s"
                    " WHERE tenant_id = %s AND thread_id = %s AND name = %s",
                    (len(rows), tenant, thread_id, name),
                ),
                *self._drop_entry_vectors(tenant, thread_id, [str(r[0]) for r in rows], others),
                ("COMMIT", None),
            ],
        )
        return results[0][1]

    async def entry_compact(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        through_position: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> bool:
        """Compare-and-swap the branch's prefix, under the thread row's lock (two round trips)."""
        return await self._with_retry(
            lambda conn: self._compact(
                conn, tenant, thread_id, branch, through_position, expected_ids, summary, updated_at
            )
        )

    async def _compact(
        self,
        conn: AsyncMySQLConnection,
        tenant: str,
        thread_id: str,
        branch: str,
        through: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> bool:
        prefix = (tenant, thread_id, branch, through)
        results = await self._run(
            conn,
            [
                (BEGIN, None),
                (
                    f"SELECT b.name FROM {self._threads} t LEFT JOIN {self._branches} b"
                    " ON b.tenant_id = t.tenant_id AND b.thread_id = t.id AND b.name = %s"
                    " WHERE t.tenant_id = %s AND t.id = %s FOR UPDATE",
                    (branch, tenant, thread_id),
                ),
                (
                    # FOR UPDATE: a concurrent delete of one of these waits for the swap.
                    compact_prefix_query(MYSQL, self._entries, "SELECT id")
                    + " ORDER BY position FOR UPDATE",
                    prefix,
                ),
                (
                    f"SELECT name FROM {self._branches} WHERE tenant_id = %s AND thread_id = %s",
                    (tenant, thread_id),
                ),
            ],
        )
        head = results[2][0]
        if not head:
            raise NotFound(f"thread {thread_id!r} not found")  # the pool rolls back
        if head[0][0] is None:
            raise NotFound(f"branch {branch!r} not found")
        if [row[0] for row in results[3][0]] != list(expected_ids):
            await self._one(conn, "ROLLBACK")
            return False
        others = [str(r[0]) for r in results[4][0] if r[0] != branch]
        writes: list[Statement] = [
            (compact_prefix_query(MYSQL, self._entries, "DELETE"), prefix),
            *self._drop_entry_vectors(tenant, thread_id, list(expected_ids), others),
        ]
        if summary is not None:
            writes.append(
                (
                    f"INSERT INTO {self._entries} ({INSERT_COLS})"
                    f" VALUES ({marks(MYSQL, INSERT_WIDTH)})",
                    (tenant, thread_id, branch, through, *entry_values(summary)),
                )
            )
        writes += [
            (
                # the branch row was locked with the thread's; the prefix's rows go, the
                # summary comes
                f"UPDATE {self._threads} t JOIN {self._branches} b ON b.tenant_id = t.tenant_id"
                " AND b.thread_id = t.id AND b.name = %s SET t.updated_at = %s,"
                " b.entry_count = b.entry_count + %s WHERE t.tenant_id = %s AND t.id = %s",
                (
                    branch,
                    to_us(updated_at),
                    (summary is not None) - len(results[3][0]),
                    tenant,
                    thread_id,
                ),
            ),
            ("COMMIT", None),
        ]
        await self._run(conn, writes)
        return True

    async def entry_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        """Set content, state and token count by id in one transaction (one round trip)."""
        by_id = {c[0]: c for c in changes}  # the last change of an id wins
        statements: list[Statement] = [
            (BEGIN, None),
            (
                f"SELECT id FROM {self._threads} WHERE tenant_id = %s AND id = %s FOR UPDATE",
                (tenant, thread_id),
            ),
        ]
        if by_id:
            # Counted, not the UPDATEs' rowcounts: MySQL counts only rows whose value changed.
            statements.append(
                (
                    f"SELECT COUNT(*) FROM {self._entries} WHERE tenant_id = %s AND thread_id = %s"
                    f" AND branch = %s AND id IN ({marks(MYSQL, len(by_id))})",
                    (tenant, thread_id, branch, *by_id),
                )
            )
        sql, rows = entry_update_rows(
            MYSQL, self._entries, tenant, thread_id, branch, list(by_id.values())
        )
        statements += [(sql, row) for row in rows]
        statements.append(("COMMIT", None))
        results = await self._run_retried(statements)
        if not results[2][0]:
            raise NotFound(f"thread {thread_id!r} not found")  # nothing matched, nothing written
        return int(results[3][0][0][0]) if by_id else 0
