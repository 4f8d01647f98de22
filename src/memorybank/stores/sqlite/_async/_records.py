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
    dump,
    row_to_record,
    row_to_summary,
    run_ids_sql,
    scope_sql,
    to_us,
)
from memorybank.stores.sql.dialect import SQLITE
from memorybank.stores.sql.statements import record_list_query
from memorybank.stores.sqlite._async._base import SQLiteStoreBase, chunks

if TYPE_CHECKING:  # loaded on first use, not with the store (cold start)
    from memorybank.stores.contract.items import Record, RecordGuard


class RecordsMixin(KeyReads, SQLiteStoreBase):
    """Working memory, snapshots, summaries and records."""

    # -- working memory ------------------------------------------------------------

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT INTO {self.prefix}working (tenant_id, run_id, key, value)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id, run_id, key)"
                " DO UPDATE SET value = excluded.value",
                (tenant, run_id, key, value),
            )

        await self._run(lambda: self._write(op))

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        def op(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                f"SELECT value FROM {self.prefix}working"
                " WHERE tenant_id = ? AND run_id = ? AND key = ?",
                (tenant, run_id, key),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._run(lambda: self._read(op))

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                f"DELETE FROM {self.prefix}working WHERE tenant_id = ? AND run_id = ? AND key = ?",
                (tenant, run_id, key),
            )
            return cursor.rowcount > 0

        return await self._run(lambda: self._write(op))

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        def op(conn: sqlite3.Connection) -> dict[str, str]:
            rows = conn.execute(
                f"SELECT key, value FROM {self.prefix}working WHERE tenant_id = ? AND run_id = ?",
                (tenant, run_id),
            ).fetchall()
            return {str(k): str(v) for k, v in rows}

        return await self._run(lambda: self._read(op))

    async def working_clear(self, tenant: str, run_id: str) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"DELETE FROM {self.prefix}working WHERE tenant_id = ? AND run_id = ?",
                (tenant, run_id),
            )

        await self._run(lambda: self._write(op))

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
            conn.execute(
                f"INSERT INTO {self.prefix}snapshots (tenant_id, run_id, user_id, value, saved_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, run_id) DO UPDATE SET"
                " user_id = excluded.user_id, value = excluded.value, saved_at = excluded.saved_at",
                (tenant, run_id, user_id, value, to_us(saved_at)),
            )

        await self._run(lambda: self._write(op))

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        def op(conn: sqlite3.Connection) -> tuple[str | None, str] | None:
            row = conn.execute(
                f"SELECT user_id, value FROM {self.prefix}snapshots"
                " WHERE tenant_id = ? AND run_id = ?",
                (tenant, run_id),
            ).fetchone()
            return None if row is None else (row[0], str(row[1]))

        return await self._run(lambda: self._read(op))

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            if owner_check:
                self._snapshot_owner_check(conn, tenant, run_id, user_id)
            cursor = conn.execute(
                f"DELETE FROM {self.prefix}snapshots WHERE tenant_id = ? AND run_id = ?",
                (tenant, run_id),
            )
            return cursor.rowcount > 0

        return await self._run(lambda: self._write(op))

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        return await self._run_ids(f"{self.prefix}snapshots", tenant, after, limit)

    # -- summaries -------------------------------------------------------------------

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        def op(conn: sqlite3.Connection) -> Summary:
            conn.execute(
                f"INSERT INTO {self.prefix}summaries"
                " (tenant_id, id, agent_id, user_id, content, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    tenant,
                    summary.id,
                    summary.agent_id,
                    summary.user_id,
                    summary.content,
                    to_us(summary.created_at),
                ),
            )
            return summary

        return await self._run(lambda: self._write(op))

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
            rows = conn.execute(
                f"SELECT id, agent_id, user_id, content, created_at FROM {self.prefix}summaries"
                " WHERE tenant_id = ? AND agent_id = ?"
                " AND (? OR user_id IS NULL OR user_id = ?) ORDER BY created_at, id",
                (tenant, agent_id, *any_user(user_id)),
            ).fetchall()
            return [row_to_summary(r) for r in rows]

        return await self._run(lambda: self._read(op))

    # -- records ---------------------------------------------------------------------------

    def _check_guard(
        self, conn: sqlite3.Connection, tenant: str, guard: RecordGuard | None
    ) -> None:
        """Inside the write transaction (``BEGIN IMMEDIATE``: no other writer meanwhile)."""
        if guard is None:
            return
        row = conn.execute(
            f"SELECT revision FROM {self.prefix}records"
            " WHERE tenant_id = ? AND kind = ? AND id = ?",
            (tenant, guard.kind, guard.id),
        ).fetchone()
        if (None if row is None else row[0]) != guard.revision:
            raise guard.failed()

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        rows = [
            (
                tenant,
                r.kind,
                r.id,
                r.agent_id,
                r.user_id,
                r.key,
                r.content,
                dump(r.data),
                to_us(r.created_at),
                to_us(r.updated_at),
                None if r.expires_at is None else to_us(r.expires_at),
                r.revision,
            )
            for r in records
        ]

        def op(conn: sqlite3.Connection) -> None:
            self._check_guard(conn, tenant, guard)
            conn.executemany(
                f"INSERT INTO {self.prefix}records (tenant_id, kind, id, agent_id, user_id, key,"
                " content, data, created_at, updated_at, expires_at, revision)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (tenant_id, kind, id) DO UPDATE SET agent_id = excluded.agent_id,"
                " user_id = excluded.user_id, key = excluded.key, content = excluded.content,"
                " data = excluded.data, created_at = excluded.created_at,"
                " updated_at = excluded.updated_at, expires_at = excluded.expires_at,"
                " revision = excluded.revision",
                rows,
            )

        await self._run(lambda: self._write(op))

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        def op(conn: sqlite3.Connection) -> Record | None:
            row = conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM {self.prefix}records"
                " WHERE tenant_id = ? AND kind = ? AND id = ?",
                (tenant, kind, record_id),
            ).fetchone()
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
            marks = ", ".join("?" * len(ids))
            conn.execute(
                f"DELETE FROM {self.prefix}vectors WHERE tenant_id = ? AND kind = ?"
                f" AND id IN ({marks})",
                (tenant, kind, *ids),
            )
            return conn.execute(
                f"DELETE FROM {self.prefix}records WHERE tenant_id = ? AND kind = ?"
                f" AND id IN ({marks})",
                (tenant, kind, *ids),
            ).rowcount

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
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM {self.prefix}records"
            " WHERE tenant_id = ? AND kind = ? AND id IN ({marks})"
        )

        def op(conn: sqlite3.Connection) -> dict[str, Record]:
            found: dict[str, Record] = {}
            for chunk in chunks(ids):
                query = sql.format(marks=", ".join("?" * len(chunk)))
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
        scope, scope_params = scope_sql("", visible_to, "?")
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM {self.prefix}records WHERE tenant_id = ?"
            f" AND kind IN ({', '.join('?' * len(kinds))}) AND key IN ({{marks}})" + scope
        )

        def op(conn: sqlite3.Connection) -> list[Record]:
            rows: list[Any] = []
            for chunk in chunks(wanted):
                query = sql.format(marks=", ".join("?" * len(chunk)))
                rows += conn.execute(query, (tenant, *kinds, *chunk, *scope_params)).fetchall()
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
        scope, scope_params = scope_sql("", visible_to, "?")
        params: list[Any] = [tenant, kind]
        where = "tenant_id = ? AND kind = ?"
        if after is not None:
            where += " AND (created_at, id) > (?, ?)"
            params += [to_us(after[0]), after[1]]
        sql = (
            f"SELECT {RECORD_COLUMNS} FROM {self.prefix}records INDEXED BY"
            f" {self.prefix}records_created WHERE {where}{scope} ORDER BY created_at, id LIMIT ?"
        )
        params += [*scope_params, limit]

        def op(conn: sqlite3.Connection) -> list[Record]:
            return [row_to_record(r) for r in conn.execute(sql, params).fetchall()]

        return await self._run(lambda: self._read(op))
