"""Entries of the PostgreSQL store: reads ("last N", by id), compaction's insert and
updates (reads across threads and windows: ``EntryBatchReads``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memorybank.errors import NotFound
from memorybank.records import Entry, Thread
from memorybank.stores.contract._async.store import NewEntry
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.postgres.rows import new_entry_json
from memorybank.stores.sql.common import (
    dump,
    messages_of_rows,
    row_to_entry,
    row_to_thread,
)
from memorybank.stores.sql.program import Statement
from memorybank.stores.sql.statements import EntryPage


class EntriesMixin(PostgresBase):
    """The ``_entries`` part of the store (see the module docstring)."""

    async def _thread_and_page(
        self, tenant: str, thread_id: str, branch: str | None, page: EntryPage
    ) -> tuple[Thread, list[Sequence[Any]]]:
        """``entry_list``'s thread row and page (backward index scan) in one query."""
        query = self._sql.entry_list[(page.before is not None, page.after is not None)]
        params = {"tenant": tenant, "thread": thread_id, "branch": branch, **page._asdict()}
        rows = await self._fetch(query, params, retry=True)
        thread: Thread | None = None
        for row in rows:
            if row[0] is not None:
                thread = row_to_thread(row)
                break
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        # a page row: the thread's columns NULL, then ``PAGE_COLUMNS`` (UNION ALL: no order)
        return thread, [r[10:] for r in rows if r[0] is None]

    async def entry_list_recent(
        self, tenant: str, thread_id: str, limit: int
    ) -> tuple[str | None, list[dict[str, Any]]]:
        """One statement, tuple rows straight to provider dicts (no ``Entry`` objects)."""
        rows = await self._fetch(
            self._sql.entry_list_recent, (limit, tenant, thread_id), retry=True
        )
        if not rows:
            raise NotFound(f"thread {thread_id!r} not found")
        if rows[0][1] is None:  # no entry (role is never NULL)
            return rows[0][0], []
        return rows[0][0], messages_of_rows([r[1:] for r in rows])

    async def entry_get_many(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> dict[str, Entry]:
        """Entries by ids on the branch (current when ``None``), in one statement."""
        wanted = list(dict.fromkeys(entry_ids))
        if not wanted:
            return {}
        rows = await self._fetch(
            self._sql.entry_get_many,
            {"tenant": tenant, "thread": thread_id, "branch": branch, "ids": wanted},
            retry=True,
        )
        found = {entry.id: entry for entry in map(row_to_entry, rows)}
        return {eid: found[eid] for eid in wanted if eid in found}

    def _entry_insert(
        self, tenant: str, thread_id: str, branch: str, position: int, entry: NewEntry
    ) -> Statement:
        return self._sql.entry_insert, (
            tenant,
            thread_id,
            branch,
            position,
            dump([new_entry_json(entry)]),
        )

    async def entry_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        """One statement: every change of the batch (the last one per id wins), where the
        core's runs one a change."""
        by_id = {c[0]: c for c in changes}
        batch = dump(
            [
                {"id": i, "content": content, "state": state, "token_count": tokens}
                for i, content, state, tokens in by_id.values()
            ]
        )
        rows = await self._fetch(
            self._sql.entry_update,
            {"tenant": tenant, "thread": thread_id, "branch": branch, "changes": batch},
        )
        if not rows[0][0]:
            raise NotFound(f"thread {thread_id!r} not found")
        return int(rows[0][1])
