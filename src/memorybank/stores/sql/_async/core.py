"""``SQLCore``: the store verbs SQLite, PostgreSQL and MySQL/MariaDB share whole, written
once over two primitives each engine gives (``_table``, ``_select_many``) and its
``Dialect``. An engine overrides a verb only where it truly differs, saying why.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar

from memorybank.records import Thread
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.sql.common import THREAD_COLUMNS, row_to_thread
from memorybank.stores.sql.dialect import Dialect

__all__ = ["SQLCore"]

#: A statement and its parameters.
Statement = tuple[str, Sequence[Any]]


class SQLCore(AsyncStore):
    """The verbs written once for the SQL engines."""

    #: The engine's spelling (``memorybank.stores.sql.dialect``).
    dialect: ClassVar[Dialect]

    @abc.abstractmethod
    def _table(self, name: str) -> str:
        """The store's table ``name`` as its statements name it (prefixed, quoted)."""

    @abc.abstractmethod
    async def _select_many(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """The rows of several reads, in order, as one read where the engine can (one
        snapshot on SQLite, one round trip on MySQL)."""

    async def thread_get_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """The threads by id: one read (``IN`` lists, or one array on PostgreSQL)."""
        wanted = list(dict.fromkeys(thread_ids))
        if not wanted:
            return {}
        d = self.dialect
        sql = f"SELECT {THREAD_COLUMNS} FROM {self._table('threads')} WHERE tenant_id = {d.mark}"
        rows = await self._select_many(
            [(f"{sql} AND id{cond}", (tenant, *ids)) for cond, ids in d.one_of(wanted)]
        )
        found = {thread.id: thread for thread in map(row_to_thread, rows)}
        return {tid: found[tid] for tid in wanted if tid in found}

    # -- the reads behind the in-process vector cache (``CachedVectorStore``) ----------

    async def _vc_count(self, tenant: str, model_id: str, kind: str, limit: int) -> int:
        """The key's vectors counted up to ``limit`` (a bounded range of an index)."""
        m = self.dialect.mark
        sql = (
            f"SELECT COUNT(*) FROM (SELECT 1 FROM {self._table('vectors')} WHERE tenant_id = {m}"
            f" AND model_id = {m} AND kind = {m} LIMIT {m}) c"
        )
        return int((await self._select_many([(sql, (tenant, model_id, kind, limit))]))[0][0])

    async def _vc_live(self, tenant: str, model_id: str, kind: str) -> dict[str, int]:
        """``id -> seq`` of every stored vector of the key (no vector read)."""
        m = self.dialect.mark
        sql = (
            f"SELECT id, seq FROM {self._table('vectors')} WHERE tenant_id = {m}"
            f" AND model_id = {m} AND kind = {m}"
        )
        rows = await self._select_many([(sql, (tenant, model_id, kind))])
        return {str(r[0]): int(r[1]) for r in rows}
