"""Vectors of the PostgreSQL store: storage, exact search in SQL with pgvector
(and HNSW indexes), else the reads behind the in-process cache (``_vector_cache``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.rows import tuple_row

from memorybank.errors import InvalidInput
from memorybank.stores.contract._async.store import SearchHit, VectorItem, Visibility
from memorybank.stores.contract.types import best_hits, names_user, searched_kinds
from memorybank.stores.postgres._async._base import PostgresBase
from memorybank.stores.postgres.pgvector import Vector, VectorParams, Vectors, register, registered
from memorybank.stores.postgres.rows import (
    INT2,
    INT4,
    N_ENTRY,
    N_THREAD,
    VectorRows,
    is_disconnect,
)
from memorybank.stores.postgres.statements import (
    E_READ,
    nulls,
    record_at,
    row_check,
    scope_filter,
)
from memorybank.stores.sql.common import (
    THREAD_COLUMNS,
    row_to_entry,
    row_to_thread,
    unit_vector_bytes,
    vector_array,
    vector_array_from_text,
)
from memorybank.stores.sql.dialect import POSTGRES
from memorybank.stores.sql.statements import entry_pairs_query, entry_windows_query
from memorybank.stores.vectors._async.cache import BlockRows
from memorybank.stores.vectors.exact import CachedRows, VectorQuery, exact_hits

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.records import Entry, Thread
    from memorybank.stores.contract._async.search_store import Windows, WindowsFound
    from memorybank.stores.vectors.exact import Checked, Shortlist, VectorScope
else:  # NumPy loads with the first vector read, not with the store
    from memorybank.runtime.np import np


HNSW_EF_CONSTRUCTION = 128
"""``create_vector_index`` builds with ``m = 16, ef_construction = 128`` (pgvector's
default is 64): at 1M clustered 384-d vectors the build took 626 s against 453 s
(2 cores, loaded) and recall@10 at ``ef_search`` 100 rose from 0.877 to 0.985."""

HNSW_EF_SEARCH = 100
"""The least ``hnsw.ef_search`` a search runs with (at least ``2 * k``, at most 1,000)."""

EXACT_SCOPE = 1_000
"""With an HNSW index, a scope (a thread, a user, an agent...) holding fewer vectors is
always searched exactly (more when the index is large: ``_small_scopes``)."""

LARGE_SCOPE_SECONDS = 30.0
"""How long a scope found too large for the exact search goes straight to the HNSW
index, without its size taken again (``_indexed``)."""

EXACT_COST = {"entry": 32, "record": 2}
"""The HNSW scan's cost per candidate over the exact search's per vector in scope, for
entries (read by an index range per thread) and records (a primary-key lookup each):
``_small_scopes``."""

# The exact search's select and tail: the query vector parsed once (a scalar
# subquery), not once per row.
_EXACT = (", v.embedding <=> (SELECT %(q)s::vector) AS d", " ORDER BY d, v.id LIMIT %(k)s)")


class VectorsMixin(PostgresBase):
    """The ``_vectors`` part of the store (see the module docstring)."""

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        """Upsert unit vectors (pgvector or float32 bytea) in one statement.

        The vectors go as one binary parameter (pgvector's binary ``vector[]``,
        or ``bytea[]``): no float is turned into text on either side.
        """
        if not items:
            return
        await self._ensure_ready()
        latest = {(i.kind, i.id, i.model_id): i for i in items}.values()
        blobs = [unit_vector_bytes(item.vector) for item in latest]
        columns: dict[str, list[Any]] = {
            "kinds": [item.kind for item in latest],
            "ids": [item.id for item in latest],
            "models": [item.model_id for item in latest],
            "threads": [item.thread_id for item in latest],
            "dims": [len(blob) // 4 for blob in blobs],
            "embeddings": blobs,
        }
        if self._native:
            params = VectorParams(tenant=tenant, **columns)
            params["embeddings"] = Vectors(columns["embeddings"], self._vector_oid)
            await self._fetch(self._sql.vector_put, params)
        else:
            await self._fetch(self._sql.vector_put_stamped, {"tenant": tenant, **columns})

    async def vector_search(
        self,
        tenant: str,
        vector: Sequence[float],
        *,
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        """Cosine top ``k``: in SQL with pgvector (``<=>``), else numpy over cached vectors.

        Without pgvector the vectors are kept in process (``_vector_cache``), kept
        current through the ``vector_stamps`` counters, and the hits' scope is
        confirmed in SQL.
        """
        await self._ensure_ready()
        if not self._native:
            return await super().vector_search(
                tenant, vector, model_id=model_id, kinds=kinds, k=k, thread_id=thread_id,
                visible_to=visible_to,
            )  # fmt: skip
        q = VectorQuery(tenant, model_id, thread_id, visible_to, vector=vector, kinds=kinds, k=k)
        return await self._vc_exact(q)

    async def _vc_rows(
        self, tenant: str, model_id: str, kind: str, dim: int, after: int, limit: int | None = None
    ) -> CachedRows:
        # Vectors, then their owners' scope: two single-table reads, joined here (a join
        # in SQL can become a nested loop over every record before the tables have
        # statistics, minutes at 20k rows). The vectors come by COPY in binary, appended
        # to one buffer: no object per vector, half the bytes of bytea's hex text.
        key = (tenant, model_id, kind, after)
        if limit is None:
            rows = await self._copy_vectors(self._sql.vector_rows, key, dim)
        else:
            chunk = (*key, *key, max(limit, 1) - 1)
            rows = await self._copy_vectors(self._sql.vector_rows_chunk, chunk, dim)
        block = np.frombuffer(rows.vectors, dtype="<f4").reshape(len(rows.ids), dim)
        found = BlockRows(block=block, last=rows.last)
        if not rows.ids:
            return found
        if kind == "entry":
            owners = sorted({t for t in rows.threads if t is not None})
            scope = await self._fetch(self._sql.vector_owner_threads, (tenant, owners), retry=True)
        elif after < 0 and limit is None:  # every record of the kind: one primary key range
            scope = await self._fetch(self._sql.vector_owner_kind, (tenant, kind), retry=True)
        else:
            wanted = sorted(set(rows.ids))
            scope = await self._fetch(
                self._sql.vector_owner_records, (tenant, kind, wanted), retry=True
            )
        owner: dict[str | None, tuple[Any, Any]] = {str(r[0]): (r[1], r[2]) for r in scope}
        keys: list[str] | list[str | None] = rows.threads if kind == "entry" else rows.ids
        scopes = [owner.get(key) for key in keys]
        found.rowids, found.ids, found.threads = rows.seqs, rows.ids, rows.threads
        found.agents = [None if s is None else s[0] for s in scopes]
        found.users = [None if s is None else s[1] for s in scopes]
        found.visible = [s is not None for s in scopes]
        return found

    async def _copy_vectors(self, query: str, params: Sequence[Any], dim: int) -> VectorRows:
        """``query`` (``vector_rows``) by ``COPY ... TO STDOUT`` in binary, each row (the
        header and trailer left out) parsed by ``VectorRows``; retried once on a lost
        connection."""
        statement = f"COPY ({query}) TO STDOUT (FORMAT binary)"
        for attempt in (1, 2):
            into = VectorRows(dim)
            try:
                async with self._connection() as conn:
                    async with conn.cursor().copy(statement, params) as stream:
                        first = True
                        async for data in stream:
                            view = memoryview(data)
                            if first:  # the header comes with the first row
                                view = view[19 + INT4(view, 15)[0] :]
                                first = False
                            if len(view) >= 2 and INT2(view, 0)[0] != -1:
                                into.add(view)
                return into
            except psycopg.Error as error:
                failure = await self._failed(error)
                if attempt == 2 or self._closed or not is_disconnect(error):
                    raise failure from error
        raise AssertionError("unreachable")

    async def _vc_check(
        self, scope: VectorScope, kinds: Sequence[str], shortlist: Shortlist, dim: int
    ) -> Checked:
        thread_id, visible_to = scope.thread_id, scope.visible_to
        ids = {kind: [rid for rid, _ in pairs] for kind, pairs in shortlist.items()}
        pairs = [
            (kind, rid)
            for kind, got in ids.items()
            if kind == "entry" or thread_id is None
            for rid in dict.fromkeys(got)
        ]
        p = self.prefix
        params: dict[str, Any] = {"tenant": scope.tenant, "model": scope.model_id, "dim": dim}
        # One statement (one snapshot): the counters, then the confirmation of the ids.
        parts: list[str] = []
        if kinds:
            params["kinds"] = list(kinds)
            parts.append(
                "SELECT 's'::text, kind, NULL::text, NULL::text, version, generation"
                f" FROM {p}vector_stamps WHERE tenant_id = %(tenant)s"
                " AND model_id = %(model)s AND kind = ANY(%(kinds)s::text[])"
            )
        # Driven by the ids (primary-key lookups, whatever the statistics say), with the
        # owner's scope as in the exact search; the thread is checked below. LIMIT 1
        # keeps each subquery per id (not flattened into a scan of every vector), and
        # "model_id || ''" keeps the planner on the primary key (tenant, kind, id) even
        # before the table has statistics (else the model index looks as cheap). A
        # record is read by a descent of its primary key (``record_at``), then scoped.
        vector = (
            "v.tenant_id = %(tenant)s AND v.kind = x.kind AND v.id = x.id"
            " AND v.model_id || '' = %(model)s AND v.dim = %(dim)s"
        )
        entries = [rid for kind, rid in pairs if kind == "entry"]
        records = [(kind, rid) for kind, rid in pairs if kind != "entry"]
        if entries:
            params["eids"] = entries
            parts.append(
                "SELECT 'c', 'entry', x.id, o.thread_id, NULL::bigint, NULL::bigint"
                " FROM unnest(%(eids)s::text[]) AS x(id),"
                f" LATERAL (SELECT v.thread_id FROM {p}vectors v"
                f" WHERE {vector.replace('x.kind', chr(39) + 'entry' + chr(39))} LIMIT 1) o,"
                f" LATERAL (SELECT 1 FROM {p}threads t WHERE t.tenant_id = %(tenant)s"
                f" AND t.id = o.thread_id{scope_filter('t', visible_to, params)} LIMIT 1) th"
            )
        if records:
            params["rkinds"] = [kind for kind, _ in records]
            params["rids"] = [rid for _, rid in records]
            parts.append(
                "SELECT 'c', x.kind, x.id, NULL, NULL::bigint, NULL::bigint"
                " FROM unnest(%(rkinds)s::text[], %(rids)s::text[])"
                f" AS x(kind, id), LATERAL (SELECT 1 FROM {p}vectors v WHERE {vector} LIMIT 1) o,"
                f" LATERAL {record_at(p, 'x.kind', 'x.id')} r"
                " WHERE r.tenant_id = %(tenant)s AND r.kind = x.kind AND r.id = x.id"
                f"{scope_filter('r', visible_to, params)}"
            )
        stamps: dict[str, tuple[int, int]] = {}
        confirmed: set[tuple[str, str]] = set()
        if not parts:
            return stamps, confirmed
        for row in await self._fetch(" UNION ALL ".join(parts), params, retry=True):
            if row[0] == "s":
                stamps[str(row[1])] = (int(row[4]), int(row[5]))
            elif thread_id is None or row[3] == thread_id:
                confirmed.add((str(row[1]), str(row[2])))
        return stamps, confirmed

    async def _vc_exact(self, q: VectorQuery) -> list[SearchHit]:
        """Exact (or HNSW) search in SQL with pgvector; without it, numpy over every row."""
        tenant, vector, model_id, k = q.tenant, q.vector, q.model_id, q.k
        thread_id, visible_to = q.thread_id, q.visible_to
        unit = np.frombuffer(unit_vector_bytes(vector), dtype="<f4")  # norm in float64
        wanted = searched_kinds(q.kinds, thread_id)
        record_kinds = [kind for kind in wanted if kind != "entry"]
        want_entries = "entry" in wanted
        if not unit.any() or k <= 0 or not (want_entries or record_kinds):
            return []
        await self._ensure_ready()
        dim = int(unit.shape[0])
        index = self._hnsw_name(model_id, dim) if self._native else None
        if index is not None and index not in self._hnsw:
            index = None
        if index is not None:
            found = await self._indexed(
                tenant, Vector(unit), model_id, dim, want_entries, record_kinds, k,
                thread_id, visible_to, index,
            )  # fmt: skip
        else:  # every vector in scope: distances in SQL, else numpy here
            select, tail = _EXACT if self._native else (", v.embedding", ")")
            # a user's scope (no thread): read by its owners (without pgvector, while the
            # key's vectors load in process, ``CachedVectors._cold``)
            by_owner = not self._native and thread_id is None and names_user(visible_to)
            query, params = self._vector_query(
                tenant, model_id, dim, want_entries, record_kinds, thread_id, visible_to,
                select, tail, None, by_owner=by_owner,
            )  # fmt: skip
            params["k"] = k
            if not self._native:
                return exact_hits(vector, await self._fetch(query, params, retry=True), k)
            found = await self._fetch(query, VectorParams(params, q=Vector(unit)), retry=True)
        return best_hits((SearchHit(r[0], r[1], 1.0 - float(r[3]), r[2]) for r in found), k)

    async def _indexed(
        self,
        tenant: str,
        q: Vector,
        model_id: str,
        dim: int,
        want_entries: bool,
        record_kinds: list[str],
        k: int,
        thread_id: str | None,
        visible_to: Visibility | None,
        index: str,
    ) -> list[tuple[Any, ...]]:
        """The rows of a search with the HNSW ``index``: a part whose scope is small (a
        thread, a user, an agent...) exactly, without the index (``_small_scopes``);
        the others through the index."""
        params = VectorParams(tenant=tenant, model=model_id, dim=dim, q=q, k=k)
        if thread_id is not None:
            params["thread"] = thread_id
        # A scope found large a moment ago is large still: its size is not taken again
        # for a while (counting up to the bound costs about as much as the HNSW search).
        # Were it small by now, the search still finds every hit (the exact retry).
        now = time.monotonic()
        large = self._large_scopes
        who = None if visible_to is None else (visible_to.agent_id, visible_to.user_id)
        scope = (tenant, model_id, dim, k, thread_id, who)
        keys = {"entry": (*scope, "entry"), "record": (*scope, *record_kinds)}
        sized = {
            "entry": want_entries and large.get(keys["entry"], 0.0) <= now,
            "record": bool(record_kinds) and large.get(keys["record"], 0.0) <= now,
        }
        found: list[tuple[Any, ...]] = []
        if sized["entry"] or sized["record"]:
            found, small = await self._small_scopes(
                params, sized["entry"], record_kinds if sized["record"] else [], thread_id,
                visible_to, index,
            )  # fmt: skip
            if len(large) >= 4096:
                large.clear()
            for part in ("entry", "record"):
                if sized[part] and part not in small:
                    large[keys[part]] = now + LARGE_SCOPE_SECONDS
            want_entries = want_entries and "entry" not in small
            record_kinds = [] if "record" in small else record_kinds
        if not (want_entries or record_kinds):
            return found
        # the ORDER BY is the indexed expression (the typed cast), nothing else
        distance = f"v.embedding::vector({dim}) <=> %(q)s::vector({dim})"
        query, scoped = self._vector_query(
            tenant, model_id, dim, want_entries, record_kinds, thread_id, visible_to,
            f", {distance} AS d", f" ORDER BY {distance} LIMIT %(k)s)", index,
        )  # fmt: skip
        approx = await self._hnsw_search(query, VectorParams(scoped, k=k, q=q), k)
        entries = sum(1 for r in approx if r[0] == "entry")
        short_entries = want_entries and entries < k
        short_records = bool(record_kinds) and len(approx) - entries < k
        if short_entries or short_records:
            # A part ran out before k: the iterative scan gave up (hnsw.max_scan_tuples),
            # or rows went since the size was taken. That part again, exactly over its
            # scope: every hit found.
            query, scoped = self._vector_query(
                tenant, model_id, dim, short_entries, record_kinds if short_records else [],
                thread_id, visible_to, *_EXACT, None,
            )  # fmt: skip
            short = {"entry": short_entries}  # every other kind: a record
            approx = [r for r in approx if not short.get(r[0], short_records)]
            approx += await self._fetch(query, VectorParams(scoped, k=k, q=q), retry=True)
            for part, ran_out in (("entry", short_entries), ("record", short_records)):
                if ran_out:  # maybe small by now: sized again next time
                    large.pop(keys[part], None)
        return found + approx

    def _vector_query(
        self,
        tenant: str,
        model_id: str,
        dim: int,
        want_entries: bool,
        record_kinds: list[str],
        thread_id: str | None,
        visible_to: Visibility | None,
        select: str,
        tail: str,
        index: str | None,
        *,
        by_owner: bool = False,
    ) -> tuple[str, dict[str, Any]]:
        """The scoped vector query (entries and records parts).

        ``by_owner`` (exact, no thread): the owners in scope first (the threads, the
        records), then each one's vectors by an index range (``vectors_thread``) or a
        primary-key lookup, whatever the statistics say: a user's vectors are read, not
        the tenant's. (The "|| ''" keep the planner off ``vectors_seq`` and
        ``vectors_model``: before the table had statistics, a user's 500 vectors were
        found by a walk of the key's 200k in ``vectors_seq``, 190 ms.)
        """
        p = self.prefix
        params: dict[str, Any] = {"tenant": tenant, "model": model_id, "dim": dim}
        parts: list[str] = []
        if want_entries:
            where = ""
            if thread_id is not None:
                where += " AND v.thread_id = %(thread)s"
                params["thread"] = thread_id
            scope = scope_filter("t", visible_to, params)
            owner = "t.tenant_id = v.tenant_id AND t.id = v.thread_id"
            if thread_id is not None:  # one thread: checked once, not per vector
                owner = "t.tenant_id = %(tenant)s AND t.id = %(thread)s"
            listed = by_owner and (
                f"(SELECT t.id FROM {p}threads t WHERE t.tenant_id = %(tenant)s{scope}"
                " OFFSET 0) t, LATERAL (SELECT v.id, v.thread_id, v.embedding, v.tenant_id,"
                f" v.model_id, v.dim, v.kind FROM {p}vectors v WHERE v.tenant_id = %(tenant)s"
                " AND v.thread_id = t.id AND v.thread_id IS NOT NULL"
                " AND v.model_id || '' = %(model)s AND v.kind || '' = 'entry' OFFSET 0) v"
            )
            source = self._vector_source(f"{p}threads t", owner, scope, listed, index)
            parts.append(
                f"(SELECT 'entry', v.id, v.thread_id{select} FROM {source[0]}"
                " WHERE v.tenant_id = %(tenant)s AND v.model_id = %(model)s"
                f" AND v.dim = %(dim)s AND v.kind = 'entry'{where}{source[1]}{tail}"
            )
        if record_kinds:
            params["kinds"] = record_kinds
            scope = scope_filter("r", visible_to, params)
            owner = "r.tenant_id = v.tenant_id AND r.kind = v.kind AND r.id = v.id"
            listed = by_owner and (
                f"(SELECT r.kind, r.id FROM {p}records r WHERE r.tenant_id = %(tenant)s"
                f" AND r.kind = ANY(%(kinds)s::text[]){scope} OFFSET 0) r,"
                " LATERAL (SELECT v.kind, v.id, v.embedding, v.tenant_id, v.model_id, v.dim"
                f" FROM {p}vectors v WHERE v.tenant_id = %(tenant)s AND v.kind = r.kind"
                " AND v.id = r.id AND v.model_id || '' = %(model)s OFFSET 0) v"
            )
            source = self._vector_source(f"{p}records r", owner, scope, listed, index)
            parts.append(
                f"(SELECT v.kind, v.id, NULL{select} FROM {source[0]}"
                " WHERE v.tenant_id = %(tenant)s AND v.model_id = %(model)s"
                f" AND v.dim = %(dim)s AND v.kind = ANY(%(kinds)s::text[]){source[1]}{tail}"
            )
        return " UNION ALL ".join(parts), params

    def _vector_source(
        self, owners: str, owner: str, scope: str, listed: str | bool, index: str | None
    ) -> tuple[str, str]:
        """A ``_vector_query`` part's source and the check of its rows' owner (``owners``,
        joined by ``owner``, in ``scope``): ``listed`` (by owner: in scope already), a hash
        join over every vector in scope (exact), or a per-candidate check the HNSW index
        scan's rows go through."""
        if listed:
            return str(listed), ""
        if index is None:
            return f"{self.prefix}vectors v JOIN {owners} ON {owner}", scope
        return f"{self.prefix}vectors v", f" AND {row_check(owners, owner + scope)}"

    async def _small_scopes(
        self,
        params: VectorParams,
        want_entries: bool,
        record_kinds: list[str],
        thread_id: str | None,
        visible_to: Visibility | None,
        index: str,
    ) -> tuple[list[tuple[Any, ...]], set[str]]:
        """The exact top ``k`` of each part (entries, records) whose scope is small
        enough for that to beat the HNSW ``index``, and which parts those were
        (``"entry"``, ``"record"``). ``params``: ``tenant``, ``model``, ``dim``, ``q``,
        ``k`` (and ``thread`` with ``thread_id``).

        An exact search reads each vector in scope (S of them) and computes its
        distance; the iterative HNSW scan reads about k·N/S candidates to find ``k``
        in scope among the index's N, each costing c times an exact one (its
        neighbours' distances, the scope check). So the exact search is the cheaper
        up to S = sqrt(c·k·N), at least ``EXACT_SCOPE``. For entries c = 2·m = 32
        (pgvector's default m = 16; at 110k vectors, k = 128 a thread of 10k took
        44 ms exact, 250 ms HNSW; at k = 30 and 100k 384-d vectors, 2 cores at load
        4, exact 3.8 ms at S = 4k against 10 ms HNSW, 18 against 8 at 8k: HNSW is
        the worse mistake). For records c = 2: each vector is read by a primary-key
        lookup, so at k = 20 exact took 39 ms at S = 2k against 37 ms HNSW, 128
        against 12 at 8k. Below the bound, HNSW took 90-340 ms at S = 500-1k (the
        scan walks much of the graph), then the exact retry of the short part.

        One statement. Each part's size is counted first, up to that bound, from
        the scope's owners (the threads, or the records, in scope, by their own
        indexes) and never past it: for entries, a thread with no vector counts as
        one, so that neither many empty threads nor many vectors make it long; for
        records, the records in scope (at most one vector each for a model). Then,
        for a part under the bound only, the distances of its vectors, read per
        owner (an index range per thread, a primary-key lookup per record),
        whatever the statistics say. A part over the bound returns no rows here.
        """
        p = self.prefix
        bound = VectorParams(params, floor=EXACT_SCOPE, index=index)
        bound.update(ce=EXACT_COST["entry"], cr=EXACT_COST["record"])
        size = (  # N: the index's row count as of its build or last ANALYZE
            "(SELECT greatest(c.reltuples, 0) FROM pg_class c"
            " WHERE c.oid = to_regclass(quote_ident(%(index)s)))"
        )
        distance = "v.embedding <=> (SELECT %(q)s::vector) AS d"
        owners = [f"s AS (SELECT %(k)s * {size} AS s)"]
        owners.append(
            "b AS (SELECT greatest(%(floor)s, sqrt(%(ce)s * s))::bigint AS entry,"
            " greatest(%(floor)s, sqrt(%(cr)s * s))::bigint AS record FROM s)"
        )
        flags = {"entry": "false", "record": "false"}
        parts: list[str] = []
        if want_entries:
            where = " AND t.id = %(thread)s" if thread_id is not None else ""
            owners.append(
                f"te AS MATERIALIZED (SELECT t.id FROM {p}threads t"
                f" WHERE t.tenant_id = %(tenant)s{where}{scope_filter('t', visible_to, bound)}"
                " LIMIT (SELECT entry FROM b))"
            )
            vectors = (
                f"{p}vectors v WHERE v.tenant_id = %(tenant)s AND v.model_id = %(model)s"
                " AND v.kind = 'entry' AND v.thread_id = t.id"
            )
            # the count reads the model index alone (an index-only scan once vacuumed):
            # any dimension, which only ever makes the bound reached sooner
            cap = "(SELECT entry FROM b)"
            flags["entry"] = (
                f"(SELECT count(*) FROM (SELECT 1 FROM te t LEFT JOIN LATERAL"
                f" (SELECT 1 FROM {vectors} LIMIT {cap}) v ON true LIMIT {cap}) c) < {cap}"
            )
            parts.append(
                f"(SELECT 'entry', v.id, v.thread_id, {distance} FROM te t,"
                f" LATERAL (SELECT v.id, v.thread_id, v.embedding FROM {vectors}"
                " AND v.dim = %(dim)s OFFSET 0) v"
                " WHERE (SELECT entry FROM n) ORDER BY d, v.id LIMIT %(k)s)"
            )
        if record_kinds:
            bound["kinds"] = record_kinds
            owners.append(
                f"re AS MATERIALIZED (SELECT r.kind, r.id FROM {p}records r"
                " WHERE r.tenant_id = %(tenant)s AND r.kind = ANY(%(kinds)s::text[])"
                f"{scope_filter('r', visible_to, bound)} LIMIT (SELECT record FROM b))"
            )
            flags["record"] = "(SELECT count(*) FROM re) < (SELECT record FROM b)"
            # "model_id || ''": the primary key (tenant, kind, id, model), not the model
            # index, even before the table has statistics
            parts.append(
                f"(SELECT v.kind, v.id, NULL, {distance} FROM re r,"
                f" LATERAL (SELECT v.kind, v.id, v.embedding FROM {p}vectors v"
                " WHERE v.tenant_id = %(tenant)s AND v.kind = r.kind AND v.id = r.id"
                " AND v.model_id || '' = %(model)s AND v.dim = %(dim)s OFFSET 0) v"
                " WHERE (SELECT record FROM n) ORDER BY d, v.id LIMIT %(k)s)"
            )
        owners.append(f"n AS (SELECT {flags['entry']} AS entry, {flags['record']} AS record)")
        query = (
            f"WITH {', '.join(owners)} SELECT n.entry, n.record, h.*"
            f" FROM n LEFT JOIN ({' UNION ALL '.join(parts)}) h ON true"
        )
        rows = await self._fetch(query, bound, retry=True)
        small = {part for part, flag in (("entry", rows[0][0]), ("record", rows[0][1])) if flag}
        return [r[2:] for r in rows if r[3] is not None], small

    async def _hnsw_search(
        self,
        query: str,
        params: VectorParams,
        k: int,
        *,
        settings: Mapping[str, str] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Run ``query`` with pgvector's iterative index scan on, in one round trip.

        The settings and the query go out as one pipeline (extended protocol,
        one Sync): one implicit transaction, so the transaction-local settings
        (``set_config(..., true)``) apply to the query and never outlive it. The
        query is prepared by psycopg once it repeats; the query vector is bound
        in binary. ``settings``: more transaction-local settings (tests force plans).
        """
        if not self._ready or self._closed:
            await self._ensure_ready()
        # ef_search: candidates kept while walking the graph. With the index built at
        # ef_construction 128 (``create_vector_index``), 100 gives recall@10 0.985 at 1M
        # clustered 384-d vectors (200: 0.995), 5 ms p50; pgvector's default 40 gave 0.79
        # on an index built at its default 64 (``bench vectors``, docs/search.md).
        ef = max(HNSW_EF_SEARCH, min(1000, 2 * k))
        # enable_sort off: the index order is the only plan without a sort, whatever the
        # statistics say (before ANALYZE the scope filters look selective, and the planner
        # sorted every vector in scope: 1.3 s at 100k documents, not 1 ms).
        local = {
            "hnsw.iterative_scan": "strict_order",
            "hnsw.ef_search": str(ef),
            "enable_sort": "off",
        }
        local.update(settings or {})
        apply = "SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(local))
        try:
            async with self._connection() as conn:
                if not registered(conn.adapters):
                    register(conn.adapters)
                # The partial index's predicate as constants, so that the plan psycopg
                # prepares (and the server may cache) can use the index.
                for name in ("model", "dim"):
                    constant = sql.Literal(params[name]).as_string(conn).replace("%", "%%")
                    query = query.replace(f"%({name})s", constant)
                cur = conn.cursor(row_factory=tuple_row)
                async with conn.pipeline():  # results are read at its end (the Sync)
                    await conn.execute(apply, [v for pair in local.items() for v in pair])
                    await cur.execute(query, params)
                rows = await cur.fetchall()
                await cur.close()
                return rows
        except psycopg.Error as error:
            raise await self._failed(error) from error

    def _hnsw_name(self, model_id: str, dimensions: int) -> str:
        digest = hashlib.sha1(model_id.encode()).hexdigest()[:10]  # a name, not security
        return f"{self.prefix}vhnsw_{dimensions}_{digest}"

    async def create_vector_index(
        self, model_id: str, dimensions: int, *, concurrently: bool = False
    ) -> bool:
        """Create (if missing) an HNSW index for ``model_id``'s ``dimensions``-d vectors.

        pgvector only: a partial expression index ``(embedding::vector(n))
        vector_cosine_ops WHERE model_id = ... AND dim = n``. Searches of this
        store for that model then use it (approximate, with pgvector's iterative
        scan so filters still fill ``k``); other stores notice it when they
        connect. ``concurrently`` builds it without blocking writes (slower).
        Returns ``False`` without pgvector.
        """
        await self._ensure_ready()
        if not self._native:
            return False
        if (
            isinstance(dimensions, bool)
            or not isinstance(dimensions, int)
            or not (0 < dimensions <= 2000)
        ):
            raise InvalidInput("HNSW indexes take 1 to 2000 dimensions", field="dimensions")
        name = self._hnsw_name(model_id, dimensions)
        try:
            async with self._connection() as conn:
                statement = sql.SQL(
                    "CREATE INDEX {how} IF NOT EXISTS {name} ON {table} USING hnsw"
                    " ((embedding::vector({dim})) vector_cosine_ops)"
                    " WITH (m = 16, ef_construction = {build})"
                    " WHERE model_id = {model} AND dim = {dim}"
                ).format(
                    how=sql.SQL("CONCURRENTLY" if concurrently else ""),
                    name=sql.Identifier(name),
                    table=sql.Identifier(f"{self.prefix}vectors"),
                    dim=sql.Literal(dimensions),
                    model=sql.Literal(model_id),
                    build=sql.Literal(HNSW_EF_CONSTRUCTION),
                )
                await conn.execute(statement)
        except psycopg.Error as error:
            raise await self._failed(error) from error
        self._hnsw.add(name)
        return True

    # -- a search's reads, fused: one round trip each ----------------------------------

    def _vector_value(self, value: Any) -> NDArray[np.float32]:
        return vector_array_from_text(value) if self._native else vector_array(bytes(value))

    async def search_entries(
        self, tenant: str, wanted: Mapping[str, Sequence[str]], *, model_id: str | None = None
    ) -> tuple[dict[str, Thread], dict[tuple[str, str], Entry], dict[str, NDArray[np.float32]]]:
        """The threads (each one row, its entry columns NULL), then the entries of the
        pairs (``entry_pairs_query``, their thread columns NULL) with their vectors, in one
        statement (``AsyncStore.search_entries``; without pgvector, once this process
        caches the model's vectors, none: the caller's one ``vector_get_arrays`` reads them)."""
        thread_ids = list(dict.fromkeys(wanted))
        if not thread_ids:
            return {}, {}, {}
        await self._ensure_ready()
        pairs = list(dict.fromkeys((tid, eid) for tid, ids in wanted.items() for eid in ids))
        vector, args = self._vector_read(model_id)
        t = self._table
        entries_sql, pair_args = entry_pairs_query(
            POSTGRES, t("threads"), t("entries"), f"{nulls(N_THREAD)}, {E_READ}, {vector}", tenant,
            pairs,
        )  # fmt: skip
        query = (
            f"SELECT {THREAD_COLUMNS}, {nulls(N_ENTRY + 1)} FROM {t('threads')}"
            f" WHERE tenant_id = %s AND id = ANY(%s::text[]) UNION ALL {entries_sql}"
        )
        found: dict[str, Thread] = {}
        entries: dict[tuple[str, str], Entry] = {}
        vectors: dict[str, NDArray[np.float32]] = {}
        params = [tenant, thread_ids, *args, *pair_args]
        for row in await self._fetch(query, params, retry=True):
            if row[0] is not None:  # a thread's row
                found[row[0]] = row_to_thread(row[:N_THREAD])
                continue
            entry = row_to_entry(row[N_THREAD:-1])
            entries[(entry.thread_id, entry.id)] = entry
            if row[-1] is not None:
                vectors.setdefault(entry.id, self._vector_value(row[-1]))
        return {tid: found[tid] for tid in thread_ids if tid in found}, entries, vectors

    async def _search_windows(
        self, tenant: str, windows: Windows, model: str | None, known: Collection[str], rows: bool
    ) -> WindowsFound:
        """The windows (``entry_windows_query``) and their entries' vectors but those of
        ``known`` in one statement (``AsyncStore.search_windows``; the vectors as
        ``search_entries`` reads them); whole entries, ``rows`` or not."""
        if not windows:
            return [], {}
        await self._ensure_ready()
        vector, args = self._vector_read(model)
        if args:
            vector = f"CASE WHEN e.id = ANY(%s::text[]) THEN NULL ELSE {vector} END"
            args = [list(known), *args]
        numbered = [(n, *window) for n, window in enumerate(windows)]
        query, window_args = entry_windows_query(
            POSTGRES, self._table("threads"), self._table("entries"), f"{E_READ}, {vector}",
            tenant, numbered,
        )  # fmt: skip
        out: list[list[Entry]] = [[] for _ in windows]
        vectors: dict[str, NDArray[np.float32]] = {}
        for row in await self._fetch(query, [*args, *window_args], retry=True):
            entry = row_to_entry(row[1:-1])
            out[int(row[0])].append(entry)
            if row[-1] is not None:
                vectors.setdefault(entry.id, self._vector_value(row[-1]))
        return out, vectors

    def _vector_read(self, model: str | None) -> tuple[str, list[Any]]:
        """The select-list expression of an entry ``e``'s vector of ``model`` (pgvector's
        as text) and its parameters. A subquery per row: a lookup of the primary key
        (tenant, kind, id; "model_id || ''" as ``vector_get``), whatever the statistics say
        (a join may hash the whole table). ``NULL`` (none) without a model, or without
        pgvector once this process caches the model's vectors: the caller's
        ``vector_get_arrays`` reads them (one counters read there for all of a search's
        candidates, not 1.5 kB a vector)."""
        if model is None or (not self._native and "_cached_vectors" in self.__dict__):
            return "NULL", []
        return (
            f"(SELECT v.embedding{'::text' if self._native else ''} FROM {self._table('vectors')}"
            " v WHERE v.tenant_id = e.tenant_id AND v.kind = 'entry' AND v.id = e.id"
            " AND v.model_id || '' = %s)",
            [model],
        )

    async def _vc_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        """The stored vectors the cache does not hold (``vector_get_arrays``), read as
        pgvector's text (``vector_send`` would need the extension's binary type on every
        connection) or as the float32 bytes of the fallback table."""
        await self._ensure_ready()
        query = self._sql.vector_get.format(text="::text" if self._native else "")
        rows = await self._fetch(query, (tenant, kind, model_id, list(ids)), retry=True)
        return {str(vid): self._vector_value(value) for vid, value in rows}
