"""Records of the MySQL store (facts, documents, core facts): guarded upserts and
deletes, and the batch reads of the ``records`` table and its indexes.
"""

from __future__ import annotations

from collections.abc import Sequence

from memorybank.stores.contract._async.store import Record, RecordGuard
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import R_COLS, Statement
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import (
    marks,
    record_upsert,
    records_delete_query,
)


class RecordsMixin(MySQLBase):
    """Record verbs."""

    _record_columns = R_COLS
    #: InnoDB appends the primary key's id to every secondary index.
    _records_by_time = "records_list"

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        """Upsert every record (by kind and id) in one transaction (guard: ``_check_guard``)."""
        sql, rows = record_upsert(MYSQL, self._records, tenant, records)
        statements: list[Statement] = [(sql, row) for row in rows]
        if statements or guard is not None:
            await self._transaction(statements, tenant=tenant, guard=guard)

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
            args = (tenant, kind, *chunk)
            statements += [
                *self._vectors_deleting(
                    tenant, f"v.kind = %s AND v.id IN ({marks(MYSQL, len(chunk))})", (kind, *chunk)
                ),
                (records_delete_query(MYSQL, self._vectors, len(chunk)), args),
                (records_delete_query(MYSQL, self._records, len(chunk)), args),
            ]
        counts = await self._transaction(statements, tenant=tenant, guard=guard)
        return sum(counts[2::3])
