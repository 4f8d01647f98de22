"""``EntryBatchReads``: ``entry_get_across`` and ``entry_windows`` in one read, written
once for SQLite and PostgreSQL (``entry_pairs_query``, ``entry_windows_query``: the
asked pairs or windows a relation of their own, a ``VALUES`` list or PostgreSQL's
arrays). MySQL keeps the contract's reads (its ``VALUES`` lists are spelled one way on
MySQL 8, another on MariaDB).

The statements (``_pairs_reads``, ``_windows_reads``) and what makes their rows into
entries (``pairs_found``, ``windows_found``) are apart, so that an engine runs them
inside a larger read of its own (SQLite's fused search reads, in one snapshot), of
``Entry``s or of ``EntryRow``s (``_entry_row_reads``, ``row_to_entry_row``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from memorybank.records import Entry
from memorybank.stores.sql._async.core import SQLCore
from memorybank.stores.sql.common import ENTRY_COLUMNS, ENTRY_ROW_COLUMNS, EntryKeys, row_to_entry
from memorybank.stores.sql.program import Statement
from memorybank.stores.sql.statements import entry_pairs_query, entry_windows_query, qualified

__all__ = ["EntryBatchReads", "pairs_found", "windows_found"]

#: An entry as a read makes it (``Entry``, or ``EntryRow`` for ranking).
E = TypeVar("E", bound=EntryKeys)


def pairs_found(
    rows: Iterable[Sequence[Any]], convert: Callable[[Sequence[Any]], E]
) -> dict[tuple[str, str], E]:
    """The entries of ``_pairs_reads``'s rows by ``(thread id, entry id)``."""
    return {(e.thread_id, e.id): e for e in map(convert, rows)}


def windows_found(
    rows: Iterable[Sequence[Any]], count: int, convert: Callable[[Sequence[Any]], E]
) -> list[list[E]]:
    """The ``count`` windows of ``_windows_reads``'s rows, each oldest first."""
    out: list[list[E]] = [[] for _ in range(count)]
    for row in rows:
        out[int(row[0])].append(convert(row[1:]))
    return out


class EntryBatchReads(SQLCore):
    """The two cross-thread entry reads (see the module docstring)."""

    #: Entry columns on ``e`` as these reads select them (``row_to_entry``).
    _entry_reads: ClassVar[str] = qualified("e", ENTRY_COLUMNS)
    #: What a search ranks of an entry on ``e`` (``row_to_entry_row``).
    _entry_row_reads: ClassVar[str] = qualified("e", ENTRY_ROW_COLUMNS)

    def _chunk(self, count: int, size: int) -> int:
        """Rows of a relation per statement: all with arrays, else ``size``."""
        return max(count, 1) if self.dialect.arrays else size

    def _pairs_reads(
        self, tenant: str, pairs: Sequence[tuple[str, str]], columns: str
    ) -> list[Statement]:
        """``columns`` of the entry of each distinct ``(thread id, entry id)`` on its
        thread's current branch: one statement per 400 pairs (a statement per thread
        cost 0.2 ms a thread on SQLite: 30 ms for hits in 150 threads)."""
        d, t, size = self.dialect, self._table, self._chunk(len(pairs), 400)
        return [
            entry_pairs_query(d, t("threads"), t("entries"), columns, tenant, part)
            for part in (pairs[i : i + size] for i in range(0, len(pairs), size))
        ]

    def _windows_reads(
        self, tenant: str, windows: Sequence[tuple[str, int, int]], columns: str
    ) -> list[Statement]:
        """For each ``(thread id, first, last)``, numbered: ``columns`` of the entries of
        the thread's current branch within those positions, one statement per 200
        windows (a statement per window cost a search ten of them on SQLite)."""
        numbered = [(n, *window) for n, window in enumerate(windows)]
        d, t, size = self.dialect, self._table, self._chunk(len(numbered), 200)
        return [
            entry_windows_query(d, t("threads"), t("entries"), columns, tenant, part)
            for part in (numbered[i : i + size] for i in range(0, len(numbered), size))
        ]

    async def entry_get_across(
        self, tenant: str, wanted: Mapping[str, Sequence[str]]
    ) -> dict[tuple[str, str], Entry]:
        """One read (``_pairs_reads``)."""
        pairs = list(dict.fromkeys((tid, eid) for tid, ids in wanted.items() for eid in ids))
        if not pairs:
            return {}
        rows = await self._select_many(self._pairs_reads(tenant, pairs, self._entry_reads))
        return pairs_found(rows, row_to_entry)

    async def entry_windows(
        self, tenant: str, windows: Sequence[tuple[str, int, int]]
    ) -> list[list[Entry]]:
        """One read (``_windows_reads``)."""
        if not windows:
            return []
        rows = await self._select_many(self._windows_reads(tenant, windows, self._entry_reads))
        return windows_found(rows, len(windows), row_to_entry)
