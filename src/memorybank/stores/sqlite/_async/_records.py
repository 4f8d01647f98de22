"""The SQLite store's record writes, their guard checked inside their transaction.
Working memory, snapshots, summaries and record reads are the shared core's (``SQLCore``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorybank.stores.sql.dialect import SQLITE
from memorybank.stores.sql.statements import (
    record_upsert,
    records_by_ids_query,
    records_delete_query,
)
from memorybank.stores.sqlite._async._base import SQLiteStoreBase

if TYPE_CHECKING:  # loaded on first use, not with the store (cold start)
    from memorybank.stores.contract.items import Record, RecordGuard


class RecordsMixin(SQLiteStoreBase):
    """Records, each write checked in its ``BEGIN IMMEDIATE`` transaction."""

    # -- records ---------------------------------------------------------------------------

    def _check_guard(
        self, conn: sqlite3.Connection, tenant: str, guard: RecordGuard | None
    ) -> None:
        """Inside the write transaction (``BEGIN IMMEDIATE``: no other writer meanwhile)."""
        if guard is None:
            return
        sql = records_by_ids_query(SQLITE, f"{self.prefix}records", "revision", 1)
        row = conn.execute(sql, (tenant, guard.kind, guard.id)).fetchone()
        if (None if row is None else row[0]) != guard.revision:
            raise guard.failed()

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        sql, rows = record_upsert(SQLITE, f"{self.prefix}records", tenant, records)

        def op(conn: sqlite3.Connection) -> None:
            self._check_guard(conn, tenant, guard)
            conn.executemany(sql, rows)

        await self._run(lambda: self._write(op))

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        ids = list(dict.fromkeys(record_ids))

        def op(conn: sqlite3.Connection) -> int:
            self._check_guard(conn, tenant, guard)
            if not ids:
                return 0
            p = self.prefix
            conn.execute(
                records_delete_query(SQLITE, f"{p}vectors", len(ids)), (tenant, kind, *ids)
            )
            sql = records_delete_query(SQLITE, f"{p}records", len(ids))
            return conn.execute(sql, (tenant, kind, *ids)).rowcount

        return await self._run(lambda: self._write(op))
