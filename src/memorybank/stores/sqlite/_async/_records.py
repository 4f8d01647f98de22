"""The SQLite store's keyed state: working memory, snapshots, summaries, records."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank.errors import ThreadForbidden
from memorybank.records import Summary
from memorybank.stores.contract._async.store import UNSET, Unset, Visibility
from memorybank.stores.sql._async.key_reads import KeyReads
from memorybank.stores.sql.common import (
    RECORD_COLUMNS,
    any_user,
    row_to_record,
    row_to_summary,
    run_ids_sql,
)
from memorybank.stores.sql.dialect import SQLITE
from memorybank.stores.sql.statements import (
    RunStatements,
    record_list_query,
    record_page_query,
    record_upsert,
    records_by_ids_query,
    records_by_keys_query,
    records_delete_query,
    run_statements,
)
from memorybank.stores.sqlite._async._base import SQLiteStoreBase, chunks

if TYPE_CHECKING:  # loaded on first use, not with the store (cold start)
    from memorybank.stores.contract.items import Record, RecordGuard


class RecordsMixin(KeyReads, SQLiteStoreBase):
    """Working memory, snapshots, summaries and records."""

    # -- working memory ------------------------------------------------------------

    @property
    def _runs_sql(self) -> RunStatements:
        p = self.prefix
        return run_statements(SQLITE, f"{p}working", f"{p}snapshots", f"{p}summaries")

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        sql = self._runs_sql
        params = sql.working_set_params(SQLITE, tenant, run_id, key, value)
        await self._run(lambda: self._write(lambda c: c.execute(sql.working_set, params)))

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        def op(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(self._runs_sql.working_get, (tenant, run_id, key)).fetchone()
            return None if row is None else str(row[0])

        return await self._run(lambda: self._read(op))

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            return conn.execute(self._runs_sql.working_delete, (tenant, run_id, key)).rowcount > 0

        return await self._run(lambda: self._write(op))

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        def op(conn: sqlite3.Connection) -> dict[str, str]:
            rows = conn.execute(self._runs_sql.working_items, (tenant, run_id)).fetchall()
            return {str(k): str(v) for k, v in rows}

        return await self._run(lambda: self._read(op))

    async def working_clear(self, tenant: str, run_id: str) -> None:
        sql = self._runs_sql.working_clear
        await self._run(lambda: self._write(lambda c: c.execute(sql, (tenant, run_id))))

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        return await self._run_ids(f"{self.prefix}working", tenant, after, limit)

    async def _run_ids(
        self, table: str, tenant: str, after: str | None, limit: int | None
    ) -> list[str]:
        sql, params = run_ids_sql(table, tenant, after, limit, "?")

        def op(conn: sqlite3.Connection) -> list[str]:
            return [str(row[0]) for row in conn.execute(sql, params).fetchall()]

        return await self._run(lambda: self._read(op))

    # -- snapshots -------------------------------------------------------------------

    def _snapshot_owner_check(
        self, conn: sqlite3.Connection, tenant: str, run_id: str, user_id: str | None
    ) -> None:
        """Inside the write transaction: ``ThreadForbidden`` if another user owns the run."""
        row = conn.execute(
            f"SELECT user_id FROM {self.prefix}snapshots WHERE tenant_id = ? AND run_id = ?",
            (tenant, run_id),
        ).fetchone()
        if row is not None and row[0] not in (None, user_id):
            raise ThreadForbidden("snapshot access forbidden")

    async def snapshot_save(
        self,
        tenant: str,
        run_id: str,
        value: str,
        *,
        user_id: str | None,
        saved_at: datetime,
        owner_check: bool = True,
    ) -> None:
        def op(conn: sqlite3.Connection) -> None:
            if owner_check:
                self._snapshot_owner_check(conn, tenant, run_id, user_id)
            sql = self._runs_sql
            params = sql.snapshot_save_params(SQLITE, tenant, run_id, user_id, value, saved_at)
            conn.execute(sql.snapshot_save, params)

        await self._run(lambda: self._write(op))

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        def op(conn: sqlite3.Connection) -> tuple[str | None, str] | None:
            row = conn.execute(self._runs_sql.snapshot_load, (tenant, run_id)).fetchone()
            return None if row is None else (row[0], str(row[1]))

        return await self._run(lambda: self._read(op))

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            if owner_check:
                self._snapshot_owner_check(conn, tenant, run_id, user_id)
            return conn.execute(self._runs_sql.snapshot_delete, (tenant, run_id)).rowcount > 0

        return await self._run(lambda: self._write(op))

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        return await self._run_ids(f"{self.prefix}snapshots", tenant, after, limit)

    # -- summaries -------------------------------------------------------------------

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        sql = self._runs_sql
        params = sql.summary_params(SQLITE, tenant, summary)
        await self._run(lambda: self._write(lambda c: c.execute(sql.summary_add, params)))
        return summary

    async def summary_agents(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        sql, params = run_ids_sql(f"{self.prefix}summaries", tenant, after, limit, "?", "agent_id")

        def op(conn: sqlite3.Connection) -> list[str]:
            return [str(row[0]) for row in conn.execute(sql, params).fetchall()]

        return await self._run(lambda: self._read(op))

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        def op(conn: sqlite3.Connection) -> list[Summary]:
            params = (tenant, agent_id, *any_user(user_id))
            rows = conn.execute(self._runs_sql.summary_list, params).fetchall()
            return [row_to_summary(r) for r in rows]

        return await self._run(lambda: self._read(op))

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

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        def op(conn: sqlite3.Connection) -> Record | None:
            sql = records_by_ids_query(SQLITE, f"{self.prefix}records", RECORD_COLUMNS, 1)
            row = conn.execute(sql, (tenant, kind, record_id)).fetchone()
            return None if row is None else row_to_record(row)

        return await self._run(lambda: self._read(op))

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

    async def record_list(
        self,
        tenant: str,
        kind: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        key: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        sql, params = record_list_query(
            SQLITE, f"{self.prefix}records", RECORD_COLUMNS, tenant, kind, agent_id=agent_id,
            user_id=user_id, key=key, visible_to=visible_to, limit=limit,
        )  # fmt: skip

        def op(conn: sqlite3.Connection) -> list[Record]:
            return [row_to_record(r) for r in conn.execute(sql, params).fetchall()]

        return await self._run(lambda: self._read(op))

    async def record_get_many(
        self, tenant: str, kind: str, record_ids: Sequence[str]
    ) -> dict[str, Record]:
        """One read: ``IN`` lists of ``_IN_CHUNK`` ids (under SQLite's variable limit)."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        p = self.prefix

        def op(conn: sqlite3.Connection) -> dict[str, Record]:
            found: dict[str, Record] = {}
            for chunk in chunks(ids):
                query = records_by_ids_query(SQLITE, f"{p}records", RECORD_COLUMNS, len(chunk))
                for row in conn.execute(query, (tenant, kind, *chunk)):
                    found[row[1]] = row_to_record(row)
            return {i: found[i] for i in ids if i in found}

        return await self._run(lambda: self._read(op))

    async def _list_keys(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        visible_to: Visibility | None,
    ) -> list[Record]:
        """One read over the ``records_key`` index for every kind (``kind IN (...)``),
        ``_IN_CHUNK`` keys per statement."""
        wanted = list(dict.fromkeys(keys))
        if not wanted or not kinds:
            return []
        p = self.prefix

        def op(conn: sqlite3.Connection) -> list[Record]:
            rows: list[Any] = []
            for chunk in chunks(wanted):
                query, scope = records_by_keys_query(
                    SQLITE, f"{p}records", RECORD_COLUMNS, len(kinds), len(chunk), visible_to
                )
                rows += conn.execute(query, (tenant, *kinds, *chunk, *scope)).fetchall()
            rows.sort(key=lambda row: (row[6], row[1]))  # created_at (µs), id: as SQL sorts
            return [row_to_record(row) for row in rows]

        return await self._run(lambda: self._read(op))

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """A range of the ``records_created`` index from the cursor (a row-value bound)."""
        p = self.prefix
        sql, params = record_page_query(
            SQLITE, f"{p}records", f"{p}records_created", RECORD_COLUMNS, tenant, kind,
            limit=limit, after=after, visible_to=visible_to,
        )  # fmt: skip

        def op(conn: sqlite3.Connection) -> list[Record]:
            return [row_to_record(r) for r in conn.execute(sql, params).fetchall()]

        return await self._run(lambda: self._read(op))
