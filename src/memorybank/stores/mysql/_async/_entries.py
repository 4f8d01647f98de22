"""Entries of the MySQL store once appended: pages and reads ("last N" in one
statement, rows as ``JSON_ARRAY``); deletes, compaction and in-place updates are
``SQLCore``'s; docs/mysql.md ("Reads, deletes and compaction").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from memorybank.errors import NotFound
from memorybank.records import Thread
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import PAGE_COLS
from memorybank.stores.sql.common import (
    THREAD_COLUMNS,
    messages_of_rows,
    row_to_thread,
)
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import EntryPage, created_bounds


class EntriesMixin(MySQLBase):
    """Entry pages: ``entry_list``'s read and ``entry_list_recent``."""

    async def _head_and_page(
        self,
        tenant: str,
        thread_id: str,
        head: str,
        page: str,
        branch: str | None = None,
        where: str = "",
        args: Sequence[Any] = (),
        limit: int | None = None,
        offset: int = 0,
    ) -> tuple[list[Any], list[Sequence[Any]]]:
        """The thread row's ``head`` columns and a page of ``page`` columns of the branch
        (``None``: the current one) from its last position back: one statement, one
        round trip; ``NotFound`` without the thread.

        ``SELECT thread UNION ALL (SELECT page)``: one statement is one read view, so
        the page is exactly of the branch the thread row names. Each row is one
        ``JSON_ARRAY`` (docs/mysql.md). The branch is a scalar subquery, not a join:
        MySQL then walks the entries primary key backwards and stops after ``limit``
        rows (a join sorts the whole branch). The page comes in no order (``UNION ALL``
        promises none).
        """
        rows = await self._select(
            f"SELECT JSON_ARRAY({head}) FROM {self._threads} WHERE tenant_id = %s AND id = %s"
            f" UNION ALL (SELECT JSON_ARRAY({page}) FROM {self._entries} e"
            " WHERE e.tenant_id = %s AND e.thread_id = %s AND e.branch = COALESCE(%s,"
            f" (SELECT current_branch FROM {self._threads}"
            f" WHERE tenant_id = %s AND id = %s)){where}"
            " ORDER BY e.position DESC LIMIT %s OFFSET %s)",
            (tenant, thread_id, tenant, thread_id, branch, tenant, thread_id, *args,
             MYSQL.no_limit if limit is None else limit, offset),
        )  # fmt: skip
        width = len(head.split(","))
        found: list[list[Any]] = []
        paged: list[Sequence[Any]] = []
        for (text,) in rows:
            row = json.loads(text)
            (found if len(row) == width else paged).append(row)
        if not found:
            raise NotFound(f"thread {thread_id!r} not found")
        return found[0], paged

    async def _thread_and_page(
        self, tenant: str, thread_id: str, branch: str | None, page: EntryPage
    ) -> tuple[Thread, list[Sequence[Any]]]:
        """``entry_list``'s thread and page in one statement (``_head_and_page``)."""
        where, args = created_bounds(MYSQL, "e.", page)
        row, rows = await self._head_and_page(
            tenant, thread_id, THREAD_COLUMNS, PAGE_COLS, branch, where, args, page.limit,
            page.offset,
        )  # fmt: skip
        return row_to_thread(row), rows

    async def entry_list_recent(
        self, tenant: str, thread_id: str, limit: int
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """The owner and the last ``limit`` messages in one statement (only the five
        columns a message needs), rows straight to provider dicts."""
        (owner,), page = await self._head_and_page(
            tenant, thread_id, "user_id",
            "e.position, e.role, e.content, e.name, e.tool_calls, e.tool_call_id", limit=limit,
        )  # fmt: skip
        page.sort(key=itemgetter(0))  # by position
        return owner, messages_of_rows([row[1:] for row in page])
