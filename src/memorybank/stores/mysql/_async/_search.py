"""Search in the MySQL store: keyword search (InnoDB FULLTEXT) and vector writes
(blobs under the ``vector_stamps`` counters). The vectors are ranked in process
(``CachedVectorStore``) over the reads shared by the SQL engines (``SQLCore._vc_*``).

Keyword search (``text_search``): InnoDB FULLTEXT in natural language mode over
entries and records; its quirks (collations, token sizes, stopwords, scores over the
whole table, the index updated at COMMIT) are in docs/mysql.md ("Keyword search").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memorybank.stores.contract._async.store import SearchHit, VectorItem, Visibility
from memorybank.stores.contract.types import best_hits, searched_kinds
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import Statement
from memorybank.stores.sql.common import scope_sql, search_words, unit_vector_bytes
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import marks


class SearchMixin(MySQLBase):
    """Keyword and vector search, vector writes and reads."""

    async def text_search(
        self,
        tenant: str,
        query: str,
        *,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        """FULLTEXT natural-language matches of entries and records, best first (one round trip).

        Scores are InnoDB's relevance (docs/mysql.md names its quirks).
        """
        words = search_words(query)
        wanted = searched_kinds(kinds, thread_id)
        record_kinds = [kind for kind in wanted if kind != "entry"]
        if not words or k <= 0 or not wanted:
            return []
        match = "MATCH ({}content) AGAINST (%s IN NATURAL LANGUAGE MODE)"
        statements: list[Statement] = []
        if "entry" in wanted:
            sql = (
                f"SELECT 'entry', e.id, {match.format('e.')}, e.thread_id, e.branch"
                f" FROM {self._entries} e"
            )
            args: list[Any] = [words]
            if visible_to is not None:
                sql += (
                    f" JOIN {self._threads} t ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
                )
            sql += f" WHERE {match.format('e.')} AND e.tenant_id = %s"
            args += [words, tenant]
            if thread_id is not None:
                sql += " AND e.thread_id = %s"
                args.append(thread_id)
            scope, scope_args = scope_sql("t.", visible_to, "%s")
            sql += f"{scope} ORDER BY 3 DESC, e.id, e.branch LIMIT %s"
            statements.append((sql, [*args, *scope_args, k]))
        if record_kinds:
            scope, scope_args = scope_sql("r.", visible_to, "%s")
            sql = (
                f"SELECT r.kind, r.id, {match.format('r.')}, NULL, NULL"
                f" FROM {self._table('records')} r"
                f" WHERE {match.format('r.')} AND r.tenant_id = %s"
                f" AND r.kind IN ({marks(MYSQL, len(record_kinds))}){scope}"
                " ORDER BY 3 DESC, r.kind, r.id LIMIT %s"
            )
            statements.append((sql, [words, words, tenant, *record_kinds, *scope_args, k]))
        rows = await self._select_many(statements)
        return best_hits((SearchHit(r[0], r[1], float(r[2]), r[3], r[4]) for r in rows), k)

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        """Upsert embeddings (float32 unit vectors) in one transaction.

        Per (model, kind), in that order, the version in ``vector_stamps`` is bumped
        first (its row lock orders the writers) and stamped on the rows as ``seq``.
        """
        latest = {(i.model_id, i.kind, i.id): i for i in items}
        statements: list[Statement] = []
        last: tuple[str, str, str] | None = None
        for (model_id, kind, _), item in sorted(latest.items(), key=lambda pair: pair[0][:2]):
            group = (tenant, model_id, kind)
            if group != last:
                last = group
                statements.append(
                    (
                        f"INSERT INTO {self._stamps} (tenant_id, model_id, kind, version)"
                        " VALUES (%s, %s, %s, 1) ON DUPLICATE KEY UPDATE version = version + 1",
                        group,
                    )
                )
            # Hex text: aiomysql cannot escape bytes.
            blob = unit_vector_bytes(item.vector).hex()
            statements.append(
                (
                    f"INSERT INTO {self._table('vectors')}"
                    " (tenant_id, kind, id, model_id, thread_id, vector, seq)"
                    f" VALUES (%s, %s, %s, %s, %s, UNHEX(%s), (SELECT version FROM {self._stamps}"
                    " WHERE tenant_id = %s AND model_id = %s AND kind = %s))"
                    " ON DUPLICATE KEY UPDATE thread_id = VALUES(thread_id),"
                    " vector = VALUES(vector), seq = VALUES(seq)",
                    (tenant, kind, item.id, model_id, item.thread_id, blob, *group),
                )
            )
        if statements:
            await self._write_many(statements)
