"""Search in the MySQL store: keyword search (InnoDB FULLTEXT) and vectors (stored
as blobs, ranked in process by ``_vector_cache``).

Keyword search (``text_search``): InnoDB FULLTEXT, ``MATCH (content) AGAINST
(... IN NATURAL LANGUAGE MODE)`` over ``entries.content`` (joined to threads for
the ``Visibility`` scope; every branch, hits carry thread and branch) and
``records.content``; best first, ties by kind, id, branch. Only the query's
words are sent (runs of word characters, lower-cased): no operator or quote of user text
reaches the parser. InnoDB quirks, none of them memorybank's choice:

- Matching follows the column's collation, and a binary collation makes it
  case-sensitive, so searched ``content`` columns are ``utf8mb4_unicode_ci``
  (case- and accent-insensitive); ids keep the binary collation, and the text
  round-trips byte for byte either way.
- Words shorter than ``innodb_ft_min_token_size`` (default 3) or longer than
  ``innodb_ft_max_token_size`` (84) are not indexed, and InnoDB's stopword list
  ("the", "in", "it", ...) is left out: "ox" or "in it" find nothing. Changing
  either needs a server setting and an index rebuild.
- No stemming ("puppies" does not find "puppy"), and the built-in parser splits
  on spaces and punctuation, so CJK text without spaces is one long token
  (MySQL's ``ngram`` parser is not available on MariaDB, so it is not used).
- Scores are InnoDB's TF-IDF-like relevance computed over the whole table (all
  tenants), so they only compare within one query; a word in every row scores
  (nearly) zero but still matches. The 50% threshold of natural language mode
  is MyISAM-only: InnoDB returns common words.
- The index is updated at COMMIT: an entry is searchable once its append
  returned, never before.
- The full-text match runs before the tenant filter: a word common across all
  tenants costs a scan of its matches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memorybank.stores.contract._async.store import SearchHit, VectorItem, Visibility
from memorybank.stores.contract.types import names_user
from memorybank.stores.mysql._async._base import MySQLBase
from memorybank.stores.mysql.rows import Statement
from memorybank.stores.sql.common import scope_sql, search_words, unit_vector_bytes, vector_array
from memorybank.stores.sql.dialect import MYSQL
from memorybank.stores.sql.statements import marks

if TYPE_CHECKING:  # numpy loads with the first vector search, not with the store
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.stores.vectors.exact import CachedRows


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

        Scores are InnoDB's relevance (see the module docstring for its quirks).
        """
        words = search_words(query)
        if not words or k <= 0:
            return []
        match = "MATCH ({}content) AGAINST (%s IN NATURAL LANGUAGE MODE)"
        statements: list[Statement] = []
        if "entry" in kinds:
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
            sql += scope
            args += scope_args
            statements.append((f"{sql} ORDER BY 3 DESC, e.id, e.branch LIMIT %s", [*args, k]))
        record_kinds = [kind for kind in kinds if kind != "entry"]
        if record_kinds and thread_id is None:
            sql = (
                f"SELECT r.kind, r.id, {match.format('r.')}, NULL, NULL FROM {self._records} r"
                f" WHERE {match.format('r.')} AND r.tenant_id = %s"
                f" AND r.kind IN ({marks(MYSQL, len(record_kinds))})"
            )
            args = [words, words, tenant, *record_kinds]
            scope, scope_args = scope_sql("r.", visible_to, "%s")
            sql += scope
            args += scope_args
            statements.append((f"{sql} ORDER BY 3 DESC, r.kind, r.id LIMIT %s", [*args, k]))
        if not statements:
            return []
        async with self._connection() as conn:
            results = await self._run(conn, statements)
        hits = [
            SearchHit(row[0], row[1], float(row[2]), row[3], row[4])
            for rows, _ in results
            for row in rows
        ]
        hits.sort(key=lambda h: (-h.score, h.kind, h.id, h.branch or ""))
        return hits[:k]

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        """Upsert embeddings (float32 unit vectors) in one transaction.

        Per (model, kind), in that order, the version in ``vector_stamps`` is bumped
        first (its row lock orders the writers) and stamped on the rows as ``seq``.
        """
        latest = {(i.model_id, i.kind, i.id): i for i in items}
        statements: list[Statement] = []
        for model_id, kind in sorted({(m, k) for m, k, _ in latest}):
            group = (tenant, model_id, kind)
            statements.append(
                (
                    f"INSERT INTO {self._stamps} (tenant_id, model_id, kind, version)"
                    " VALUES (%s, %s, %s, 1) ON DUPLICATE KEY UPDATE version = version + 1",
                    group,
                )
            )
            seq = (
                f"(SELECT version FROM {self._stamps} WHERE tenant_id = %s AND model_id = %s"
                " AND kind = %s)"
            )
            for (m, kd, _), item in latest.items():
                if (m, kd) != (model_id, kind):
                    continue
                # Hex text: aiomysql cannot escape bytes.
                blob = unit_vector_bytes(item.vector).hex()
                statements.append(
                    (
                        f"INSERT INTO {self._vectors}"
                        " (tenant_id, kind, id, model_id, thread_id, vector, seq)"
                        f" VALUES (%s, %s, %s, %s, %s, UNHEX(%s), {seq})"
                        " ON DUPLICATE KEY UPDATE thread_id = VALUES(thread_id),"
                        " vector = VALUES(vector), seq = VALUES(seq)",
                        (tenant, kind, item.id, model_id, item.thread_id, blob, *group),
                    )
                )
        if statements:
            await self._transaction(statements)

    def _vector_statements(
        self,
        tenant: str,
        model_id: str,
        kinds: Sequence[str],
        thread_id: str | None,
        visible_to: Visibility | None,
        column: str,
        ids: Mapping[str, Sequence[str]] | None = None,
        *,
        by_owner: bool = False,
    ) -> list[Statement]:
        """The scoped vector reads (entries, records), selecting ``column`` after
        (kind, id, thread); with ``ids``, only those ids of each kind. ``by_owner``: the
        owners in scope (threads, records) are read first, then their vectors by index
        (``STRAIGHT_JOIN``): a user's vectors, not a walk of the tenant's."""
        statements: list[Statement] = []
        straight = "STRAIGHT_JOIN " if by_owner else ""
        if "entry" in kinds:
            sql = (
                f"SELECT {straight}'entry', v.id, v.thread_id{column} FROM {self._threads} t"
                f" JOIN {self._vectors} v ON v.tenant_id = t.tenant_id AND v.thread_id = t.id"
                " WHERE v.tenant_id = %s AND v.model_id = %s AND v.kind = 'entry'"
            )
            args: list[Any] = [tenant, model_id]
            if thread_id is not None:
                sql += " AND v.thread_id = %s"
                args.append(thread_id)
            if ids is not None:
                wanted = list(ids.get("entry", ()))
                sql += f" AND v.id IN ({marks(MYSQL, len(wanted))})"
                args += wanted
            scope, scope_args = scope_sql("t.", visible_to, "%s")
            sql += scope
            args += scope_args
            statements.append((sql, args))
        record_kinds = [kind for kind in kinds if kind != "entry"]
        if record_kinds and thread_id is None:
            sql = (
                f"SELECT {straight}v.kind, v.id, NULL{column} FROM {self._records} r"
                f" JOIN {self._vectors} v ON v.tenant_id = r.tenant_id AND v.kind = r.kind"
                " AND v.id = r.id WHERE v.tenant_id = %s AND v.model_id = %s"
                f" AND v.kind IN ({marks(MYSQL, len(record_kinds))})"
            )
            args = [tenant, model_id, *record_kinds]
            if ids is not None:
                wanted = sorted({rid for kind in record_kinds for rid in ids.get(kind, ())})
                sql += f" AND v.id IN ({marks(MYSQL, len(wanted))})"
                args += wanted
            scope, scope_args = scope_sql("r.", visible_to, "%s")
            sql += scope
            args += scope_args
            statements.append((sql, args))
        return statements

    async def _vc_rows(
        self, tenant: str, model_id: str, kind: str, dim: int, after: int, limit: int | None = None
    ) -> CachedRows:
        from memorybank.stores.vectors.exact import CachedRows

        if kind == "entry":
            sql = (
                "SELECT v.seq, v.id, v.thread_id, t.agent_id, t.user_id, t.id IS NOT NULL,"
                f" v.vector FROM {self._vectors} v LEFT JOIN {self._threads} t"
                " ON t.tenant_id = v.tenant_id AND t.id = v.thread_id"
            )
        else:
            sql = (
                "SELECT v.seq, v.id, NULL, r.agent_id, r.user_id, r.id IS NOT NULL,"
                f" v.vector FROM {self._vectors} v LEFT JOIN {self._records} r"
                " ON r.tenant_id = v.tenant_id AND r.kind = v.kind AND r.id = v.id"
            )
        sql += " WHERE v.tenant_id = %s AND v.model_id = %s AND v.kind = %s AND v.seq > %s"
        key = (tenant, model_id, kind, after)
        args: tuple[Any, ...] = key
        if limit is not None:  # whole seq groups: up to the seq of the limit-th row
            sql += (
                f" AND v.seq <= COALESCE((SELECT s.seq FROM {self._vectors} s"
                " WHERE s.tenant_id = %s AND s.model_id = %s AND s.kind = %s AND s.seq > %s"
                " ORDER BY s.seq LIMIT 1 OFFSET %s), 9223372036854775807)"
            )
            args = (*key, *key, max(limit, 1) - 1)
        found = CachedRows()
        for seq, rid, tid, agent, user, alive, blob in await self._select_many(
            [(sql + " ORDER BY v.seq", args)]
        ):
            found.add(int(seq), rid, tid, agent, user, bool(alive), bytes(blob))
        return found

    async def _vc_check(
        self,
        tenant: str,
        model_id: str,
        kinds: Sequence[str],
        shortlist: Mapping[str, Sequence[tuple[str, str | None]]],
        dim: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> tuple[dict[str, tuple[int, int]], set[tuple[str, str]]]:
        statements: list[Statement] = []
        if kinds:  # the counters first; their rows have 4 columns, the confirmed ones 3
            statements.append(
                (
                    f"SELECT kind, version, generation, 0 FROM {self._stamps}"
                    " WHERE tenant_id = %s AND model_id = %s"
                    f" AND kind IN ({marks(MYSQL, len(kinds))})",
                    (tenant, model_id, *kinds),
                )
            )
        ids = {kind: [rid for rid, _ in pairs] for kind, pairs in shortlist.items()}
        # No thread filter in SQL (checked below): the ids are primary-key lookups.
        wanted = list(ids) if thread_id is None else [kind for kind in ids if kind == "entry"]
        statements += self._vector_statements(tenant, model_id, wanted, None, visible_to, "", ids)
        stamps: dict[str, tuple[int, int]] = {}
        confirmed: set[tuple[str, str]] = set()
        for row in await self._select_many(statements) if statements else []:
            if len(row) == 4:
                stamps[str(row[0])] = (int(row[1]), int(row[2]))
            elif thread_id is None or row[2] == thread_id:
                confirmed.add((str(row[0]), str(row[1])))
        return stamps, confirmed

    async def _vc_exact(
        self,
        tenant: str,
        vector: Sequence[float],
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> list[SearchHit]:
        """Exact cosine top ``k`` (numpy) over every scoped vector of ``model_id``."""
        from memorybank.stores.vectors.exact import top_k

        # a user's scope (while the key loads in process: ``_cold``)
        by_owner = thread_id is None and names_user(visible_to)
        statements = self._vector_statements(
            tenant, model_id, kinds, thread_id, visible_to, ", v.vector", by_owner=by_owner
        )
        if not statements or k <= 0:
            return []
        rows = await self._select_many(statements)
        best = top_k(vector, [bytes(row[3]) for row in rows], k)
        return [SearchHit(rows[i][0], rows[i][1], score, rows[i][2]) for i, score in best]

    async def vector_get_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        """The same as float32 arrays: from this process's cache when it holds them,
        else straight from the stored bytes."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        cached, wanted = await self._cached_arrays(tenant, kind, wanted, model_id)
        if not wanted:
            return cached
        statements: list[Statement] = [
            (
                f"SELECT id, vector FROM {self._vectors} WHERE tenant_id = %s AND kind = %s"
                f" AND model_id = %s AND id IN ({marks(MYSQL, len(chunk))})",
                (tenant, kind, model_id, *chunk),
            )
            for chunk in (wanted[i : i + 1000] for i in range(0, len(wanted), 1000))
        ]
        async with self._connection() as conn:
            results = await self._run(conn, statements)
        found = {row[0]: vector_array(bytes(row[1])) for rows, _ in results for row in rows}
        found |= cached
        return {vid: found[vid] for vid in dict.fromkeys(ids) if vid in found}
