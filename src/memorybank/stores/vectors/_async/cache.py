"""Vectors kept in process for the server stores' exact search (no vector extension).

PostgreSQL without pgvector, MySQL/MariaDB and Redis store vectors as float32
bytes and rank them with numpy on the client. Reading every vector in scope
on every query made a search cost linear in the tenant's vectors (seconds at
100k). ``CachedVectors`` keeps them in a ``memorybank.stores.vectors.exact.VectorSlot``
per ``(tenant, model, kind)``, as the SQLite store does, and is kept current
across processes by two counters the store keeps per ``(tenant, model, kind)``:

- ``version``: bumped by every vector write, in the same statement or
  transaction as the write, and stamped on the written rows (``seq``). The
  counter's row lock orders the writers, so once a reader sees a row of
  ``seq`` s it sees every row of a smaller ``seq``: the rows to read are those
  with ``seq`` above the largest one cached. A replaced vector comes back with
  a new ``seq``; its older copy in the cache is hidden.
- ``generation``: bumped in the same transaction as any delete of vectors.
  A changed generation makes the cache read the ``(id, seq)`` of every stored
  vector of the key (``_vc_live``: no vector is read, a few ms at 60k) and
  hide the cached rows no longer stored with their ``seq``, then read the rows
  above its highest ``seq``, instead of reloading every vector; it reloads
  when half of its rows are hidden (or the store has no ``_vc_live``).

A query ranks the cached rows whose cached scope matches and sends ONE round
trip (``_vc_check``): the counters of its kinds and the store's confirmation of
the shortlist's ids, with the same scoped SQL as the exact search (the cache is
a shortlist, never trusted for scope). When the counters show that the cache
was current (as the rows were when ranked: another task may have added rows to
the slot meanwhile, which the shortlist never saw), that is the answer.
Otherwise (or when a kind was never cached) the new rows are read, the
shortlist ranked again and confirmed again, as a search that read the counters
first would have. When too few of the shortlist survive (scope changed since
the rows were cached), that kind is searched exactly, as before.

A key's first search in a process used to load every vector of the key before it
answered (3 s at 200k vectors on PostgreSQL, tens of seconds at 1M, for a user
with 500 entries). From ``BACKGROUND_LOAD_ROWS`` vectors a NARROWED search (a
thread, or a visibility with a user: not ``UNSET``) answers from the store's scoped
exact search (``_vc_exact``: only the scope's vectors are read) while the slot
loads in the background (``_SlotLoad``); a tenant-wide search waits for that load
rather than read every row a second time. The next search after the load adopts
the slot (``_adopt``) and catches it up as after another process's writes: the
rows above its highest ``seq``, and ``_vc_live`` if the generation moved (a delete
during the load). A failed load is logged and the next search loads inline.

- The key's size: ``_vc_count`` counts its rows up to ``BACKGROUND_LOAD_ROWS`` (a
  bounded index range, an O(1) ``ZCARD`` on Redis), once per key and process: on
  the first narrowed search that finds neither a slot nor a load. The ``version``
  counter would cost nothing but is no bound either way: a ``vector_put`` of 1,000
  vectors bumps it once (a bulk-loaded key of 200k vectors has version 200).
- The load reads ``LOAD_CHUNK_ROWS`` rows at a time (``_vc_rows`` with ``limit``:
  whole ``seq`` groups, so that the next chunk starts above the last ``seq``): no
  read or merge holds the event loop for long, and a store's ``close`` stops the
  load between two chunks (``close``).
- Async stores load in a task of the running loop (``AsyncBackgroundCall``); the
  sync stores, generated from this code, on a daemon thread (``BackgroundCall``):
  their connection pools (or clients) are shared by threads already.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from memorybank.runtime.concurrency import AsyncBackgroundCall, aoffload, asleep
from memorybank.runtime.log import logger
from memorybank.stores.contract.types import SearchHit, Visibility, best_hits, names_user
from memorybank.stores.vectors.exact import (
    CachedRows,
    Checked,
    Shortlist,
    VectorCache,
    VectorQuery,
    VectorScope,
    VectorSlot,
    unit_query,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from memorybank.runtime.np import np

__all__ = [
    "BACKGROUND_LOAD_ROWS",
    "LOAD_CHUNK_ROWS",
    "OFFLOAD_ROWS",
    "BlockRows",
    "CachedVectors",
    "VectorSource",
]

#: Vectors of one (tenant, model, kind) from which a narrowed first search does not wait
#: for them all to load (the slot loads in the background meanwhile).
BACKGROUND_LOAD_ROWS = 50_000

#: Rows per read of a background load (384-d: 30 MB of vectors).
LOAD_CHUNK_ROWS = 20_000

#: A shortlist scanning at least this many cached rows is ranked on a worker thread,
#: not on the event loop (384-d: about 3 ms of numpy, which releases the GIL).
OFFLOAD_ROWS = 20_000


@dataclass
class BlockRows(CachedRows):
    """Rows whose vectors come as one matrix (``block``, a row per row, no ``blobs``).

    Rows of another dimension are left out by the store; ``last`` is the largest
    ``seq`` it read counting them (so the slot does not read them again).
    """

    block: NDArray[np.float32] | None = None
    last: int = -1


class VectorSource(Protocol):
    """What a store provides to ``CachedVectors`` (each one round trip)."""

    async def _vc_rows(
        self, tenant: str, model_id: str, kind: str, dim: int, after: int, limit: int | None = None
    ) -> CachedRows:
        """Rows of ``kind`` with ``seq > after``, in ``seq`` order (``rowids`` = ``seq``);
        with ``limit``, those of the first ``seq`` values holding ``limit`` rows (whole
        ``seq`` groups: every row of the last ``seq`` read is in)."""
        ...

    async def _vc_count(self, tenant: str, model_id: str, kind: str, limit: int) -> int:
        """The key's stored vectors, counted up to ``limit`` (any dimension)."""
        ...

    async def _vc_check(
        self, scope: VectorScope, kinds: Sequence[str], ids: Shortlist, dim: int
    ) -> Checked:
        """In one round trip: ``kind -> (version, generation)`` of ``kinds`` (a kind
        never written may be absent), and the ``(kind, id)`` of ``ids`` (none: nothing
        to confirm) the exact search in ``scope`` would consider."""
        ...

    async def _vc_exact(self, query: VectorQuery) -> list[SearchHit]:
        """The uncached exact search."""
        ...


class SyncedSlot(VectorSlot):
    """A ``VectorSlot`` whose re-written ids hide their older rows."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.where: dict[str, int] = {}
        self.generation = 0

    def ann_keys(self, start: int, stop: int) -> NDArray[np.int64]:
        """Row positions: several rows share a ``seq`` (one write), and rows are only
        ever appended (an older copy is hidden, not removed), so positions stay keys."""
        return np.arange(start, stop, dtype=np.int64)

    def positions(self, rowids: NDArray[np.int64]) -> NDArray[np.int64]:
        return np.where((rowids >= 0) & (rowids < self.n), rowids, -1).astype(np.int64)

    def held(self) -> tuple[int, int]:
        """``(highest seq, generation)``: the counters the slot's rows are current for
        (read under the cache's lock, with the rows it describes)."""
        return self.max_rowid, self.generation

    def current(self, dim: int, stamp: tuple[int, int]) -> bool:
        """Whether the slot holds every row the counters ``stamp`` describe."""
        return self.dim == dim and _covers(self.held(), stamp)

    def keep_only(self, live: Mapping[str, int]) -> None:
        """Hide the rows not stored any more: their id is absent from ``live`` (id ->
        ``seq``) or stored with another ``seq`` (a row written after the slot's highest
        ``seq`` is read next, as an added row)."""
        stored = np.fromiter((live.get(i, -1) for i in self.ids), np.int64, self.n)
        self.visible &= stored == self.rowids[: self.n]

    def merge(self, rows: CachedRows, floor: int | None = None) -> None:
        """Append ``rows`` (only those with ``seq > floor`` when given)."""
        block = rows.block if isinstance(rows, BlockRows) else None
        last = rows.last if isinstance(rows, BlockRows) else -1
        if floor is not None and any(seq <= floor for seq in rows.rowids):
            keep = [i for i, seq in enumerate(rows.rowids) if seq > floor]
            newer = CachedRows()
            for name in ("rowids", "ids", "threads", "agents", "users", "visible", "blobs"):
                values = getattr(rows, name)
                setattr(newer, name, [values[i] for i in keep] if values else [])
            rows = newer
            if block is not None:
                block = block[keep]
        start = self.n
        self.append(rows, block)
        self.max_rowid = max(self.max_rowid, last)
        for i in range(start, self.n):
            old = self.where.get(self.ids[i])
            if old is not None:
                self.visible[old] = False
            self.where[self.ids[i]] = i


class CachedVectors:
    """The vector slots of one store object (shared by its threads and tasks)."""

    def __init__(self) -> None:
        self.cache = VectorCache()
        self._lock = threading.Lock()
        self._loads: dict[tuple[str, str, str], _SlotLoad] = {}
        self._closing = False

    def clear(self) -> None:
        with self._lock:
            self.cache.clear()

    def stop(self) -> None:
        """Stop the slots' background ANN builders (waits for their current batch)."""
        with self._lock:
            self.cache.stop()

    async def close(self) -> None:
        """Stop the background loads (each ends before its next chunk), then ``stop``;
        called by the store's ``close``."""
        self._closing = True
        with self._lock:
            loads = list(self._loads.values())
            self._loads.clear()
        for load in loads:
            await load.call.cancel()
        self.stop()

    async def _cold(
        self,
        source: VectorSource,
        tenant: str,
        model_id: str,
        kind: str,
        dim: int,
        generation: int,
    ) -> bool:
        """Whether a narrowed search of ``kind``, which has no slot, is answered by the
        scoped exact search: the key's slot is loading (started here when the key holds
        ``BACKGROUND_LOAD_ROWS`` vectors). False: load it, or adopt a finished load."""
        key = (tenant, model_id, kind)
        with self._lock:
            load = self._loads.get(key)
        if load is not None:
            return load.dim == dim and not load.call.done()
        if self._closing:
            return False
        if await source._vc_count(tenant, model_id, kind, BACKGROUND_LOAD_ROWS) < (
            BACKGROUND_LOAD_ROWS
        ):
            return False
        with self._lock:
            if key in self.cache.slots:
                return False  # loaded meanwhile (a concurrent search)
            load = self._loads.get(key)
            if load is None:
                load = self._loads[key] = _SlotLoad(self, source, key, dim, generation)
        return load.dim == dim and not load.call.done()

    async def _load(
        self, source: VectorSource, key: tuple[str, str, str], dim: int, generation: int
    ) -> SyncedSlot | None:
        """Every row of ``key`` read in chunks of ``LOAD_CHUNK_ROWS`` (each one a snapshot
        of its own: what changes meanwhile is caught up when the slot is adopted, from
        ``generation``, the counter as of before the first chunk). None: failed (logged)
        or stopped."""
        tenant, model_id, kind = key
        try:
            fresh = SyncedSlot(dim)
            fresh.generation = generation
            after = -1
            while not self._closing:
                rows = await source._vc_rows(tenant, model_id, kind, dim, after, LOAD_CHUNK_ROWS)
                await _grow(fresh, fresh.n + len(rows.rowids))
                fresh.merge(rows)  # no one else holds the slot yet
                if fresh.max_rowid <= after:
                    return fresh  # nothing above ``after``: every row is in
                after = fresh.max_rowid
            return None
        except Exception:
            if not self._closing:  # else the store closed under it
                logger.warning("loading cached vectors of %s failed", key, exc_info=True)
            return None

    async def _adopt(self, key: tuple[str, str, str], dim: int) -> SyncedSlot | None:
        """The slot of ``key``'s background load (waited for), registered; None when there
        is none, it failed, or it holds another dimension (then loaded inline)."""
        with self._lock:
            load = self._loads.get(key)
        if load is None:
            return None
        try:
            fresh = await load.call.wait()
        except Exception:  # started on another event loop, or closed meanwhile
            fresh = None
        with self._lock:
            if self._loads.get(key) is load:
                del self._loads[key]
            held = self.cache.slots.get(key)
            if isinstance(held, SyncedSlot) and held.dim == dim:
                return held  # a concurrent search adopted it (or loaded the key) first
            if fresh is None or fresh.dim != dim:
                return None
            self.cache.slots[key] = fresh
            return fresh

    def _cached(self, tenant: str, model_id: str, kind: str) -> SyncedSlot | None:
        with self._lock:
            found = self.cache.slots.get((tenant, model_id, kind))
        return found if isinstance(found, SyncedSlot) else None

    async def _current(
        self,
        source: VectorSource,
        tenant: str,
        model_id: str,
        kind: str,
        dim: int,
        stamp: tuple[int, int],
    ) -> SyncedSlot:
        slot = self._cached(tenant, model_id, kind)
        if slot is None or slot.dim != dim:
            # a background load (``_cold``): waited for (a wider search needs every row
            # rather than read them twice) and caught up below, as after another
            # process's writes
            slot = await self._adopt((tenant, model_id, kind), dim) or slot
        if slot is not None and slot.current(dim, stamp):
            return slot
        if slot is not None and slot.dim == dim and slot.generation != stamp[1]:
            live_of = getattr(source, "_vc_live", None)
            if live_of is not None and int((~slot.visible).sum()) * 2 < max(slot.n, 1):
                live = await live_of(tenant, model_id, kind)
                with self._lock:
                    slot.keep_only(live)
                    slot.generation = stamp[1]
        if slot is None or slot.dim != dim or slot.generation != stamp[1]:
            fresh = SyncedSlot(dim)
            fresh.generation = stamp[1]
            fresh.merge(await source._vc_rows(tenant, model_id, kind, dim, -1))
            with self._lock:
                self.cache.slots[(tenant, model_id, kind)] = fresh
            return fresh
        added = await source._vc_rows(tenant, model_id, kind, dim, slot.max_rowid)
        with self._lock:
            slot.merge(added, floor=slot.max_rowid)
        return slot

    async def _shortlist(
        self,
        slots: Mapping[str, SyncedSlot],
        query: NDArray[np.float32],
        fetch: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> tuple[dict[str, list[tuple[str, str | None, float]]], dict[str, tuple[int, int]]]:
        """Per kind, the best ``fetch`` cached rows whose cached scope matches, and what
        the slot held when they were ranked (``SyncedSlot.held``, read under the same
        lock: the slot may grow before the caller reads the counters); ranked on a
        worker thread when that scans ``OFFLOAD_ROWS`` rows or more (a wide scope, a
        large slot), so the event loop serves other requests meanwhile."""

        def rank() -> tuple[
            dict[str, list[tuple[str, str | None, float]]], dict[str, tuple[int, int]]
        ]:
            shortlist: dict[str, list[tuple[str, str | None, float]]] = {}
            held: dict[str, tuple[int, int]] = {}
            with self._lock:
                for kind, slot in slots.items():
                    held[kind] = slot.held()
                    found = slot.find(query, fetch, thread_id, visible_to)
                    shortlist[kind] = [(slot.ids[i], slot.threads[i], score) for i, score in found]
            return shortlist, held

        with self._lock:
            rows = sum(slot.scope_rows(thread_id, visible_to) for slot in slots.values())
        return await aoffload(rank) if rows >= OFFLOAD_ROWS else rank()

    async def get(
        self, source: VectorSource, tenant: str, model_id: str, kind: str, ids: Sequence[str]
    ) -> dict[str, NDArray[np.float32]] | None:
        """The stored vectors of ``ids`` from the cached slot (float32 arrays, copies), or
        ``None`` when this process caches no vector of ``(tenant, model_id, kind)`` (the
        store reads them).

        One round trip, the counters (``_vc_check`` with no id), instead of reading the
        vectors: when they show the slot current, it holds every stored vector of the
        key as of that statement; when it lagged, the rows written since are read first
        (as a search does). An id the slot does not hold is left out: the caller reads
        those from the table (a vector of another dimension is stored but not cached).
        """
        slot = self._cached(tenant, model_id, kind)
        if slot is None:
            return None
        stamps, _ = await source._vc_check(VectorScope(tenant, model_id), [kind], {}, slot.dim)
        stamp = stamps.get(kind, (0, 0))
        if not slot.current(slot.dim, stamp):
            slot = await self._current(source, tenant, model_id, kind, slot.dim, stamp)
        with self._lock:
            held: list[str] = []
            at: list[int] = []
            for rid in ids:
                row = slot.where.get(rid)
                if row is not None and slot.visible[row]:
                    held.append(rid)
                    at.append(row)
            rows = slot.matrix[at]  # one copy: later writes to the slot do not show through
        return dict(zip(held, rows, strict=True))

    async def search(self, source: VectorSource, q: VectorQuery) -> list[SearchHit]:
        """Cosine top ``k`` over the cached vectors, scope confirmed by the store."""
        tenant, model_id, k = q.tenant, q.model_id, q.k
        thread_id, visible_to = q.thread_id, q.visible_to
        prepared = unit_query(q.vector, q.kinds, k, thread_id)
        if prepared is None:
            return []
        query, wanted, dim, fetch = prepared
        cached = {kind: self._cached(tenant, model_id, kind) for kind in wanted}
        slots = {kind: s for kind, s in cached.items() if s is not None and s.dim == dim}
        shortlist, ranked = await self._shortlist(slots, query, fetch, thread_id, visible_to)
        early: list[SearchHit] = []  # hits of kinds searched in the store (``_cold``)
        # the counters and the confirmation of what the cache holds: one round trip
        # (of the best k per kind; the rest of the shortlist only if some of them fail)
        stamps, confirmed = await source._vc_check(q, wanted, _ids(shortlist, k), dim)
        # Read your writes: the counters are read after the rows were ranked, so a write
        # acknowledged before this search is among them when the rows RANKED cover the
        # counters. Not the slot as it is now: while this task awaited the counters,
        # another one may have merged rows into it (this task's own write among them)
        # that the shortlist never saw; then rank again (the slot is current already).
        if len(slots) < len(wanted) or not all(
            _covers(ranked[kind], stamps.get(kind, (0, 0))) for kind in slots
        ):
            # the cache lagged: read what changed (as of the counters), rank and confirm again
            narrowed = thread_id is not None or names_user(visible_to)
            cold: list[str] = []
            for kind in wanted:
                stamp = stamps.get(kind, (0, 0))
                if (
                    narrowed
                    and kind not in slots
                    and await self._cold(source, tenant, model_id, kind, dim, stamp[1])
                ):
                    cold.append(kind)  # its slot loads meanwhile: the scope read from the store
                    continue
                slots[kind] = await self._current(source, tenant, model_id, kind, dim, stamp)
            if cold:
                early = await source._vc_exact(replace(q, kinds=cold))
            # ``_current`` returned each slot current for ``stamps``; a slot only gains
            # rows (or hides deleted ones) after that, so ranking it now is as current
            shortlist, _ = await self._shortlist(slots, query, fetch, thread_id, visible_to)
            if not _ids(shortlist):
                return best_hits(early, k)
            _, confirmed = await source._vc_check(q, [], _ids(shortlist, k), dim)
        rest = {
            kind: best[k:]
            for kind, best in shortlist.items()
            if len(best) > k and any((kind, rid) not in confirmed for rid, _, _ in best[:k])
        }
        if rest:
            _, more = await source._vc_check(q, [], _ids(rest), dim)
            confirmed |= more
        hits = early
        redo: list[str] = []
        for kind, best in shortlist.items():
            kept = [(rid, tid, score) for rid, tid, score in best if (kind, rid) in confirmed]
            if len(kept) < min(k, len(best)) and len(best) == fetch:
                redo.append(kind)  # the cached scope was stale: search this kind exactly
                continue
            hits += [SearchHit(kind, rid, score, tid) for rid, tid, score in kept[:k]]
        if redo:
            hits += await source._vc_exact(replace(q, kinds=redo))
        return best_hits(hits, k)


def _covers(held: tuple[int, int], stamp: tuple[int, int]) -> bool:
    """Whether rows ``held`` (``SyncedSlot.held``) include every row the counters
    ``stamp`` (``(version, generation)``) describe."""
    version, generation = stamp
    return held[1] == generation and version <= held[0]


async def _grow(slot: SyncedSlot, need: int) -> None:
    """Room for ``need`` rows in ``slot``'s matrix, its rows copied 4,096 at a time,
    letting other tasks run in between: one copy of 180k 384-d rows into new memory
    held the event loop for 0.7 s (``VectorSlot.append`` grows it at once)."""
    if slot.n == 0 or need <= slot.matrix.shape[0]:
        return
    grown = np.zeros((max(need, 2 * slot.matrix.shape[0]), slot.dim), np.float32)
    for start in range(0, slot.n, 4096):
        stop = min(start + 4096, slot.n)
        grown[start:stop] = slot.matrix[start:stop]
        await asleep(0)
    slot.reserve(grown)


class _SlotLoad:
    """A background load of one key's slot (``CachedVectors._load``); ``dim``: its
    vectors' dimension."""

    def __init__(
        self,
        owner: CachedVectors,
        source: VectorSource,
        key: tuple[str, str, str],
        dim: int,
        generation: int,
    ) -> None:
        self.dim = dim

        async def run() -> SyncedSlot | None:
            return await owner._load(source, key, dim, generation)

        self.call = AsyncBackgroundCall("memorybank-vector-load", run)


def _ids(
    shortlist: Mapping[str, Sequence[tuple[str, str | None, float]]], first: int | None = None
) -> dict[str, list[tuple[str, str | None]]]:
    """The shortlist's (id, thread) per kind (its ``first`` best), kinds with none left out."""
    return {
        kind: [(rid, tid) for rid, tid, _ in got[:first]] for kind, got in shortlist.items() if got
    }
