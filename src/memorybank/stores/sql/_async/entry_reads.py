"""``EntryBatchReads``: ``entry_get_across`` and ``entry_windows`` in one read, written
once for SQLite and PostgreSQL (``entry_pairs_query``, ``entry_windows_query``: the
asked pairs or windows a relation of their own, a ``VALUES`` list or PostgreSQL's
arrays). MySQL keeps the contract's reads (its ``VALUES`` lists are spelled one way on
MySQL 8, another on MariaDB).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from memorybank.records import Entry
from memorybank.stores.sql._async.core import SQLCore
from memorybank.stores.sql.common import ENTRY_COLUMNS, row_to_entry
from memorybank.stores.sql.statements import entry_pairs_query, entry_windows_query, qualified

__all__ = ["EntryBatchReads"]


class EntryBatchReads(SQLCore):
    """The two cross-thread entry reads (see the module docstring)."""

    #: Entry columns on ``e`` as these reads select them (``row_to_entry``).
    _entry_reads: ClassVar[str] = qualified("e", ENTRY_COLUMNS)

    def _chunk(self, count: int, size: int) -> int:
        """Rows of a relation per statement: all with arrays, else ``size``."""
        return max(count, 1) if self.dialect.arrays else size

    async def entry_get_across(
        self, tenant: str, wanted: Mapping[str, Sequence[str]]
    ) -> dict[tuple[str, str], Entry]:
        """One read, one statement per 400 pairs (a statement per thread cost 0.2 ms a
        thread on SQLite: 30 ms for hits in 150 threads)."""
        pairs = list(dict.fromkeys((tid, eid) for tid, ids in wanted.items() for eid in ids))
        if not pairs:
            return {}
        d, t, size = self.dialect, self._table, self._chunk(len(pairs), 400)
        rows = await self._select_many(
            [
                entry_pairs_query(d, t("threads"), t("entries"), self._entry_reads, tenant, part)
                for part in (pairs[i : i + size] for i in range(0, len(pairs), size))
            ]
        )
        return {(e.thread_id, e.id): e for e in map(row_to_entry, rows)}

    async def entry_windows(
        self, tenant: str, windows: Sequence[tuple[str, int, int]]
    ) -> list[list[Entry]]:
        """One read, one statement per 200 windows (a statement per window cost a search
        ten of them on SQLite)."""
        if not windows:
            return []
        numbered = [(n, *window) for n, window in enumerate(windows)]
        d, t, size = self.dialect, self._table, self._chunk(len(numbered), 200)
        rows = await self._select_many(
            [
                entry_windows_query(d, t("threads"), t("entries"), self._entry_reads, tenant, part)
                for part in (numbered[i : i + size] for i in range(0, len(numbered), size))
            ]
        )
        out: list[list[Entry]] = [[] for _ in windows]
        for row in rows:
            out[int(row[0])].append(row_to_entry(row[1:]))
        return out
