"""RedisSearch: keyword (BM25) and vector search, ranked in the client, and vector storage."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from memorybank.stores.contract._async.search_store import rank_texts
from memorybank.stores.contract._async.store import SearchHit, VectorItem, Visibility
from memorybank.stores.contract.types import visible
from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import CHUNK, as_str, chunks, esc, opt_str
from memorybank.stores.redis.lua_tenant import S_RECORD_VECTORS, S_VECTOR_LOG
from memorybank.stores.redis.lua_threads import S_PUT_VECTORS
from memorybank.stores.sql.common import unit_vector_bytes, vector_array
from memorybank.stores.vectors.exact import CachedRows, VectorQuery, exact_hits

if TYPE_CHECKING:  # numpy loads with the first vector search, not with the store
    import numpy as np
    from numpy.typing import NDArray

    from memorybank.stores.vectors.exact import Checked, Shortlist, VectorScope

#: An owned vector read: kind, thread (None: a record), id, owner (None: gone), agent, user,
#: vector bytes (None: none).
_Owned = tuple[str, str | None, str, Any, str | None, str | None, bytes | None]


class RedisSearch(RedisBase):
    """Search and vectors of ``AsyncRedisStore``."""

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
        """BM25 (``memorybank.stores.keyword.bm25``) over the scope's texts, read from Redis.

        Costs a read of every text in scope: see "Search" in docs/redis.md.
        """
        rows = await self._in_scope(tenant, kinds if k > 0 else (), thread_id, visible_to, "")
        return rank_texts(query, ((SearchHit(*r[:2], 0.0, r[2], r[4]), r[3]) for r in rows), k)

    async def _in_scope(
        self,
        tenant: str,
        kinds: Sequence[str],
        thread_id: str | None,
        visible_to: Visibility | None,
        model_id: str,
    ) -> list[tuple[str, str, str | None, Any, str | None]]:
        """``(kind, id, thread, text or vector, branch)`` of the visible entries and records
        of ``kinds`` in scope: their texts (``model_id`` "": entries without one left out)
        or their vectors of ``model_id`` (items without one left out; no branch)."""
        found: list[tuple[str, str, str | None, Any, str | None]] = []
        record_kinds = [kind for kind in kinds if kind != "entry"]
        async with self._io():
            if "entry" in kinds:
                for tid, reply in await self._threads_in_scope(
                    tenant, thread_id, visible_to, model_id
                ):
                    if model_id:
                        pairs = reply[1]
                        for i in range(0, len(pairs), 2):
                            found.append(("entry", as_str(pairs[i]), tid, pairs[i + 1], None))
                        continue
                    for i in range(1, len(reply), 2):
                        name = as_str(reply[i])
                        for member in reply[i + 1]:
                            data = json.loads(member)
                            if data[4]:
                                found.append(("entry", data[2], tid, data[4], name))
            if record_kinds and thread_id is None:
                for kind, rid, data, blob in await self._records_in_scope(
                    tenant, record_kinds, visible_to=visible_to, model_id=model_id
                ):
                    if visible(visible_to, data[0], data[1]):
                        found.append((kind, rid, None, blob if model_id else data[3], None))
        return found

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        """Entry vectors: one script per thread and model (skipped for a deleted thread);
        record vectors: one script over the tenant slot."""
        by_thread: dict[tuple[str, str], list[Any]] = {}
        records: list[Any] = []
        for item in items:
            blob = unit_vector_bytes(item.vector)
            if item.kind == "entry":
                if item.thread_id is not None:
                    by_thread.setdefault((item.thread_id, item.model_id), []).extend(
                        (item.id, blob)
                    )
            else:
                records += [item.kind, item.id, item.model_id, blob]
        async with self._io():
            calls, owners = [], []
            for (tid, model), pairs in by_thread.items():
                for part in chunks(pairs, 2 * CHUNK):
                    calls.append(self._thread_call(tenant, tid, model, tid, *part))
                    owners.append((model, tid, *part[0::2]))
            stored = await self._eval_many(S_PUT_VECTORS, calls)
            for args, ok in zip(owners, stored, strict=True):
                if ok and self._cluster:  # indexed and logged in the tenant slot
                    await self._tenant_eval(S_VECTOR_LOG, tenant, *args)
            for part in chunks(records, 4 * CHUNK):
                await self._tenant_eval(S_RECORD_VECTORS, tenant, *part)

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
        """Cosine top-k with numpy over the vectors kept in process (``_vector_cache``),
        kept current through the ``vs:``/``vl:`` stamps and logs; the hits' scope is
        confirmed in Redis."""
        async with self._io():
            return await super().vector_search(
                tenant, vector, model_id=model_id, kinds=kinds, k=k, thread_id=thread_id,
                visible_to=visible_to,
            )  # fmt: skip

    # The reads behind the in-process cache (``VectorSource``) are Redis's own: the
    # vectors' seq log is a sorted set (``vl:``), their owners hashes (no SQL to share).

    def _vlog(self, tenant: str, model_id: str, kind: str) -> str:
        """The key's vector log: a sorted set of its vectors' ids by seq."""
        return self._idx(tenant) + f"vl:{esc(kind)}:{esc(model_id)}"

    async def _vc_live(self, tenant: str, model_id: str, kind: str) -> dict[str, int]:
        """``id -> seq`` of every logged vector of the key (the ``vl:`` log: no vector read)."""
        log = self._vlog(tenant, model_id, kind)
        logged = cast(
            "list[tuple[bytes, float]]", await self._client.zrange(log, 0, -1, withscores=True)
        )
        if kind == "entry":
            return {as_str(m).partition("\0")[2]: int(score) for m, score in logged}
        return {as_str(m): int(score) for m, score in logged}

    async def _vc_count(self, tenant: str, model_id: str, kind: str, limit: int) -> int:
        """The key's logged vectors (``ZCARD`` of the ``vl:`` log), at most ``limit``."""
        log = self._vlog(tenant, model_id, kind)
        return min(int(await self._client.zcard(log)), limit)

    async def _vc_rows(
        self, tenant: str, model_id: str, kind: str, dim: int, after: int, limit: int | None = None
    ) -> CachedRows:
        low = "-inf" if after < 0 else f"({after}"
        log = self._vlog(tenant, model_id, kind)
        logged = cast(
            "list[tuple[bytes, float]]",
            await self._client.zrangebyscore(
                log, low, "+inf", withscores=True, start=0 if limit else None, num=limit
            ),
        )
        if limit is not None and len(logged) >= limit:  # the rest of the last seq group
            top = logged[-1][1]
            rest = cast(
                "list[tuple[bytes, float]]",
                await self._client.zrangebyscore(log, top, top, withscores=True),
            )
            logged = [pair for pair in logged if pair[1] < top] + rest
        found = CachedRows()
        reads: defaultdict[str | None, tuple[list[str], list[int]]]  # thread or None: ids, seqs
        reads = defaultdict(lambda: ([], []))
        for member, score in logged:
            head, _, rid = as_str(member).rpartition("\0")  # entries: "thread NUL id"
            ids, seqs = reads[head or None]
            ids.append(rid)
            seqs.append(int(score))
        parts = [(kind, tid, ids) for tid, (ids, _) in reads.items()]
        owned = (await self._owned_vectors(tenant, model_id, parts))[1]
        order = [seq for _, seqs in reads.values() for seq in seqs]
        for seq, (_, tid, rid, alive, agent, user, blob) in sorted(
            zip(order, owned, strict=True), key=lambda row: row[0]
        ):
            # a vector gone meanwhile (an expired thread) still moves the high-water mark
            ok = alive is not None and blob is not None
            found.add(seq, rid, tid, agent, user, ok, blob if ok and blob else b"")
        return found

    async def _owned_vectors(
        self,
        tenant: str,
        model_id: str,
        reads: Sequence[tuple[str, str | None, list[str]]],
        stamps: Sequence[str] = (),
    ) -> tuple[list[Any], list[_Owned]]:
        """In one pipeline: the ``vs:`` counters (``[v, g]``) of the ``stamps`` kinds, and per
        read ``(kind, thread id or None for records, ids)`` every id's ``(kind, thread, id,
        owner, agent, user, vector)`` (owner: the thread's id or the record's JSON, None:
        gone)."""
        idx, model = self._idx(tenant), esc(model_id)
        async with self._client.pipeline(transaction=False) as pipe:
            for kind in stamps:
                pipe.hmget(idx + f"vs:{esc(kind)}:{model}", ["v", "g"])
            for kind, tid, ids in reads:
                if tid is None:
                    pipe.hmget(idx + "r:" + esc(kind), ids)
                    pipe.hmget(idx + f"rv:{esc(kind)}:{model}", ids)
                else:
                    base = self._base(tenant, tid)
                    pipe.hmget(base + "t", ["id", "a", "u"])
                    pipe.hmget(base + "v:" + model, ids)
            replies = await pipe.execute()
        owned: list[_Owned] = []
        for n, (kind, tid, ids) in enumerate(reads):
            owners, blobs = replies[len(stamps) + 2 * n : len(stamps) + 2 * n + 2]
            if tid is None:  # a record's owner: its JSON (agent, user first)
                for rid, packed, blob in zip(ids, owners, blobs, strict=True):
                    agent, user = (None, None) if packed is None else json.loads(packed)[:2]
                    owned.append((kind, tid, rid, packed, agent, user, blob))
            else:
                alive, agent, user = opt_str(owners[0]), opt_str(owners[1]), opt_str(owners[2])
                owned += [
                    (kind, tid, r, alive, agent, user, b) for r, b in zip(ids, blobs, strict=True)
                ]
        return replies[: len(stamps)], owned

    async def _vc_check(
        self, scope: VectorScope, kinds: Sequence[str], shortlist: Shortlist, dim: int
    ) -> Checked:
        thread_id = scope.thread_id
        reads: list[tuple[str, str | None, list[str]]] = []  # kind, thread, ids
        for kind, pairs in shortlist.items():
            if kind == "entry":
                by_thread: dict[str, list[str]] = {}
                for eid, tid in pairs:
                    if tid is not None and (thread_id is None or tid == thread_id):
                        by_thread.setdefault(tid, []).append(eid)
                reads += [("entry", tid, eids) for tid, eids in by_thread.items()]
            elif thread_id is None:
                reads.append((kind, None, [rid for rid, _ in pairs]))
        if not reads and not kinds:
            return {}, set()
        counters, owned = await self._owned_vectors(scope.tenant, scope.model_id, reads, kinds)
        confirmed = {
            (kind, rid)
            for kind, _, rid, alive, agent, user, blob in owned
            if alive is not None and blob is not None and len(blob) == 4 * dim
            if visible(scope.visible_to, agent, user)
        }
        stamps = {
            kind: (int(v or 0), int(g or 0)) for kind, (v, g) in zip(kinds, counters, strict=True)
        }
        return stamps, confirmed

    async def _vc_exact(self, q: VectorQuery) -> list[SearchHit]:
        """Exact cosine top-k with numpy over the scope's vectors, read from Redis."""
        kinds = q.kinds if q.k > 0 else ()
        found = await self._in_scope(q.tenant, kinds, q.thread_id, q.visible_to, q.model_id)
        return exact_hits(q.vector, found, q.k)  # rows (kind, id, thread, vector, _)

    async def vector_get_arrays(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, NDArray[np.float32]]:
        """Records: one ``HMGET``. Entries: the ``ev:`` index locates each entry's thread.
        Float32 arrays straight from the stored bytes."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, NDArray[np.float32]] = {}
        idx = self._idx(tenant)
        model = esc(model_id)
        async with self._io():
            if not wanted:
                return found
            if kind != "entry":
                blobs = cast(
                    "list[bytes | None]",
                    await self._client.hmget(idx + f"rv:{esc(kind)}:{model}", wanted),
                )
                for vid, blob in zip(wanted, blobs, strict=True):
                    if blob is not None:
                        found[vid] = vector_array(blob)
                return found
            threads = await self._client.hmget(idx + "ev:" + model, wanted)
            by_thread: dict[str, list[str]] = {}
            for vid, tid in zip(wanted, threads, strict=True):
                if tid is not None:
                    by_thread.setdefault(as_str(tid), []).append(vid)
            if not by_thread:
                return found
            reads = [("entry", tid, vids) for tid, vids in by_thread.items()]
            owned = (await self._owned_vectors(tenant, model_id, reads))[1]
            stale = [vid for _, _, vid, alive, *_ in owned if alive is None]  # expired threads
            for _, _, vid, alive, _, _, blob in owned:
                if alive is not None and blob is not None:
                    found[vid] = vector_array(blob)
            if stale:
                await self._client.hdel(idx + "ev:" + model, *stale)
        return found
