"""Records of the MySQL store (facts, documents, core facts): guarded upserts and
deletes, and the batch reads of the ``records`` table and its indexes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memorybank.stores.contract._async.store import UNSET, Record, RecordGuard, Unset, Visibility
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import R_COLS, Statement, chunks, placeholders
from memorybank.stores.sql._async.key_reads import KeyReads
from memorybank.stores.sql.common import row_to_record
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import (
    record_list_query,
    record_page_query,
    record_upsert,
    records_by_ids_query,
    records_by_keys_query,
    records_delete_query,
)


class RecordsMixin(KeyReads, MySQLBase):
    """Record verbs."""

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        """Upsert every record (by kind and id) in one transaction (guard: ``_check_guard``)."""
        sql, rows = record_upsert(MYSQL, self._records, tenant, records)
        statements: list[Statement] = [(sql, row) for row in rows]
        if statements or guard is not None:
            await self._transaction(statements, tenant=tenant, guard=guard)

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        """One record, or ``None``."""
        sql = records_by_ids_query(MYSQL, self._records, R_COLS, 1)
        rows = await self._query(sql, (tenant, kind, record_id))
        return row_to_record(rows[0]) if rows else None

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        """Delete records (and their vectors) by id, in one transaction; how many existed."""
        ids = list(dict.fromkeys(record_ids))
        if not ids and guard is None:
            return 0
        statements: list[Statement] = []
        for start in range(0, len(ids), 1000):
            chunk = ids[start : start + 1000]
            marks = placeholders(len(chunk))
            args = (tenant, kind, *chunk)
            statements += [
                self._bump(tenant, f"v.kind = %s AND v.id IN ({marks})", (kind, *chunk)),
                (records_delete_query(MYSQL, self._vectors, len(chunk)), args),
                (records_delete_query(MYSQL, self._records, len(chunk)), args),
            ]
        counts = await self._transaction(statements, tenant=tenant, guard=guard)
        return sum(counts[2::3])

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
        """Records of ``kind``, oldest first (``created_at``, id), filtered."""
        sql, args = record_list_query(
            MYSQL, self._records, R_COLS, tenant, kind, agent_id=agent_id, user_id=user_id,
            key=key, visible_to=visible_to, limit=limit,
        )  # fmt: skip
        rows = await self._query(sql, args)
        return [row_to_record(row) for row in rows]

    async def record_get_many(
        self, tenant: str, kind: str, record_ids: Sequence[str]
    ) -> dict[str, Record]:
        """Primary-key reads, ``IN_CHUNK`` ids per statement, in one round trip."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        rows = await self._select_many(
            [
                (
                    records_by_ids_query(MYSQL, self._records, R_COLS, len(chunk)),
                    (tenant, kind, *chunk),
                )
                for chunk in chunks(ids)
            ]
        )
        found = {row[1]: row_to_record(row) for row in rows}
        return {i: found[i] for i in ids if i in found}

    async def _list_keys(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        visible_to: Visibility | None,
    ) -> list[Record]:
        """Reads of the ``records_key`` index for every kind at once (``kind IN (...)``),
        ``IN_CHUNK`` keys per statement, in one round trip."""
        wanted = list(dict.fromkeys(keys))
        if not wanted or not kinds:
            return []
        statements: list[Statement] = []
        for chunk in chunks(wanted):
            sql, scope = records_by_keys_query(
                MYSQL, self._records, R_COLS, len(kinds), len(chunk), visible_to
            )
            statements.append((sql, (tenant, *kinds, *chunk, *scope)))
        rows = await self._select_many(statements)
        rows.sort(key=lambda row: (row[6], row[1]))  # created_at (µs), id: binary order
        return [row_to_record(row) for row in rows]

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One range of ``records_list`` (tenant_id, kind, created_at + the primary key's
        id, which InnoDB appends to every secondary index) from the cursor."""
        sql, args = record_page_query(
            MYSQL, self._records, f"{self.prefix}records_list", R_COLS, tenant, kind,
            limit=limit, after=after, visible_to=visible_to,
        )  # fmt: skip
        rows = await self._query(sql, args)
        return [row_to_record(row) for row in rows]
