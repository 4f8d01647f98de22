"""``SQLWrites``: a thread's creation and the record writes (guarded or not), written
once for the SQL engines over ``SQLCore``'s primitives. An engine gives the statements
where its own are fewer (PostgreSQL's one-statement batches: ``_record_put_statements``,
``_record_delete_statements``, its ``thread_create``).

A guard (``RecordGuard``) is checked in the write's transaction: the record's row read
under its lock (``Dialect.lock_row``) and compared. An absent row cannot be locked, so
where the engine locks rows its key is claimed first with a placeholder row (revision
-1, never committed: the write replaces it or the release drops it), on which a
concurrent claimer's insert waits; SQLite needs none, its writer holding the whole file.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memorybank.errors import Conflict
from memorybank.stores.sql._async.core import SQLCore
from memorybank.stores.sql.program import Program, Statement
from memorybank.stores.sql.statements import marks, record_upsert, thread_insert

if TYPE_CHECKING:  # loaded on first use, not with the store (cold start)
    from memorybank.records import Thread
    from memorybank.stores.contract.items import Record, RecordGuard

__all__ = ["SQLWrites"]

#: The times of a guard's placeholder row (never committed, never read).
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class SQLWrites(SQLCore):
    """``thread_create``, ``record_put`` and ``record_delete`` (see the module docstring)."""

    def _table(self, name: str) -> str:
        return self.dialect.table(self.prefix, name)

    def _thread_create_statements(self, thread: Thread) -> list[Statement]:
        """The thread's row and its first branch's (with its counters where kept)."""
        d, t = self.dialect, self._table
        columns, values = ("", "") if not self._kept_counts else (", last_position", ", 0")
        return [
            thread_insert(d, t("threads"), thread),
            (
                f"INSERT INTO {t('branches')} (tenant_id, thread_id, name, created_at{columns})"
                f" VALUES ({marks(d, 4)}{values})",
                (thread.tenant_id, thread.id, thread.current_branch, d.time(thread.created_at)),
            ),
        ]

    async def thread_create(self, thread: Thread) -> Thread:
        """Insert the thread and its first branch in one transaction; ``Conflict`` if the
        thread exists (its key taken)."""
        try:
            await self._write_all(self._thread_create_statements(thread))
        except Conflict as error:
            raise Conflict(f"thread {thread.id!r} already exists") from error
        return thread

    def _record_put_statements(self, tenant: str, records: Sequence[Record]) -> list[Statement]:
        """The upsert of each record by (kind, id), in order (the last copy of an id wins)."""
        sql, rows = record_upsert(self.dialect, self._table("records"), tenant, records)
        return [(sql, row) for row in rows]

    def _record_delete_statements(
        self, tenant: str, kind: str, ids: Sequence[str]
    ) -> tuple[list[Statement], list[int]]:
        """The deletes of these records with their vectors, and which of the statements
        count the records deleted."""
        d, m = self.dialect, self.dialect.mark
        statements: list[Statement] = []
        counted: list[int] = []
        for cond, part in d.one_of(ids):
            delete = f" WHERE tenant_id = {m} AND kind = {m} AND id{cond}"
            args = (tenant, kind, *part)
            statements += [
                *self._vectors_deleting(tenant, f"v.kind = {m} AND v.id{cond}", (kind, *part)),
                (f"DELETE FROM {self._table('vectors')}{delete}", args),
                (f"DELETE FROM {self._table('records')}{delete}", args),
            ]
            counted.append(len(statements) - 1)
        return statements, counted

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        """Upsert the records in one transaction (guarded: see the module docstring)."""
        statements = self._record_put_statements(tenant, records) if records else []
        if statements or guard is not None:
            await self._record_write(tenant, guard, statements)

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        """Delete records and their vectors by id in one transaction; how many existed."""
        ids = list(dict.fromkeys(record_ids))
        if not ids and guard is None:
            return 0
        statements, counted = self._record_delete_statements(tenant, kind, ids) if ids else ([], [])
        counts = await self._record_write(tenant, guard, statements)
        return sum(counts[i] for i in counted)

    async def _record_write(
        self, tenant: str, guard: RecordGuard | None, statements: Sequence[Statement]
    ) -> list[int]:
        """``statements`` in one transaction (``_write_all``), after ``guard``'s check in
        it; the rows each changed."""
        if guard is not None:
            return await self._transact(lambda: self._guarded(tenant, guard, statements))
        return await self._write_all(statements)

    async def _write_all(self, statements: Sequence[Statement]) -> list[int]:
        """``_write_many``, or ``_write_one`` of one statement (in autocommit where the
        engine has it: one round trip, no ``BEGIN``/``COMMIT``)."""
        if len(statements) == 1:
            sql, params = statements[0]
            return [await self._write_one(sql, params or ())]
        return await self._write_many(statements)

    def _guarded(
        self, tenant: str, guard: RecordGuard, statements: Sequence[Statement]
    ) -> Program[list[int]]:
        d, m, records = self.dialect, self.dialect.mark, self._table("records")
        key = (tenant, guard.kind, guard.id)
        where = f" WHERE tenant_id = {m} AND kind = {m} AND id = {m}"
        claim = guard.revision is None and bool(d.lock_row)  # see the module docstring
        check: list[Statement] = [(f"SELECT revision FROM {records}{where}{d.lock_row}", key)]
        release: list[Statement] = []
        if claim:
            zero = d.time(_EPOCH)
            check.insert(
                0,
                (
                    f"INSERT INTO {records} (tenant_id, kind, id, content, data, created_at,"
                    f" updated_at, revision) VALUES ({marks(d, 3)}, '', '{{}}', {m}, {m}, -1)"
                    + d.if_absent("tenant_id, kind, id"),
                    (*key, zero, zero),
                ),
            )
            release.append((f"DELETE FROM {records}{where} AND revision = -1", key))
        *_, (rows, _) = yield check
        if (int(rows[0][0]) if rows else None) != (-1 if claim else guard.revision):
            raise guard.failed()
        done = yield [*statements, *release]
        return [count for _, count in done[: len(statements)]]
