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
was current, that is the answer. Otherwise (or when a kind was never cached)
the new rows are read, the shortlist ranked again and confirmed again, as a
search that read the counters first would have. When too few of the shortlist
survive (scope changed since the rows were cached), that kind is searched
exactly, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from memorybank.stores.contract.types import SearchHit, Visibility
from memorybank.stores.vectors.exact import CachedRows, VectorCache, VectorSlot, unit_query

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["BlockRows", "CachedVectors", "VectorSource"]


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
        self, tenant: str, model_id: str, kind: str, dim: int, after: int
    ) -> CachedRows:
        """Rows of ``kind`` with ``seq > after``, in ``seq`` order (``rowids`` = ``seq``)."""
        ...

    async def _vc_check(
        self,
        tenant: str,
        model_id: str,
        kinds: Sequence[str],
        ids: Mapping[str, Sequence[tuple[str, str | None]]],
        dim: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> tuple[dict[str, tuple[int, int]], set[tuple[str, str]]]:
        """In one round trip: ``kind -> (version, generation)`` of ``kinds`` (a kind
        never written may be absent), and the ``(kind, id)`` of ``ids`` (per kind:
        (id, thread); none: nothing to confirm) the scoped exact search would consider."""
        ...

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
        import numpy as np

        return np.arange(start, stop, dtype=np.int64)

    def positions(self, rowids: NDArray[np.int64]) -> NDArray[np.int64]:
        import numpy as np

        return np.where((rowids >= 0) & (rowids < self.n), rowids, -1).astype(np.int64)

    def current(self, dim: int, stamp: tuple[int, int]) -> bool:
        """Whether the slot holds every row the counters ``stamp`` describe."""
        version, generation = stamp
        return self.dim == dim and self.generation == generation and version <= self.max_rowid

    def keep_only(self, live: Mapping[str, int]) -> None:
        """Hide the rows not stored any more: their id is absent from ``live`` (id ->
        ``seq``) or stored with another ``seq`` (a row written after the slot's highest
        ``seq`` is read next, as an added row)."""
        import numpy as np

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

    def clear(self) -> None:
        with self._lock:
            self.cache.clear()

    def stop(self) -> None:
        """Stop the slots' background ANN builders (waits for their current batch)."""
        with self._lock:
            self.cache.stop()

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

    def _shortlist(
        self,
        slots: Mapping[str, SyncedSlot],
        query: NDArray[np.float32],
        fetch: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> dict[str, list[tuple[str, str | None, float]]]:
        """Per kind, the best ``fetch`` cached rows whose cached scope matches."""
        shortlist: dict[str, list[tuple[str, str | None, float]]] = {}
        with self._lock:
            for kind, slot in slots.items():
                found = slot.find(query, fetch, thread_id, visible_to)
                shortlist[kind] = [(slot.ids[i], slot.threads[i], score) for i, score in found]
        return shortlist

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
        stamps, _ = await source._vc_check(tenant, model_id, [kind], {}, slot.dim, None, None)
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

    async def search(
        self,
        source: VectorSource,
        tenant: str,
        vector: Sequence[float],
        *,
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        """Cosine top ``k`` over the cached vectors, scope confirmed by the store."""

        prepared = unit_query(vector, kinds, k, thread_id)
        if prepared is None:
            return []
        query, wanted = prepared
        dim = int(query.shape[0])
        fetch = 2 * k + 10
        cached = {kind: self._cached(tenant, model_id, kind) for kind in wanted}
        slots = {kind: s for kind, s in cached.items() if s is not None and s.dim == dim}
        shortlist = self._shortlist(slots, query, fetch, thread_id, visible_to)
        # the counters and the confirmation of what the cache holds: one round trip
        # (of the best k per kind; the rest of the shortlist only if some of them fail)
        stamps, confirmed = await source._vc_check(
            tenant, model_id, wanted, _ids(shortlist, k), dim, thread_id, visible_to
        )
        if len(slots) < len(wanted) or not all(
            slot.current(dim, stamps.get(kind, (0, 0))) for kind, slot in slots.items()
        ):
            # the cache lagged: read what changed (as of the counters), rank and confirm again
            for kind in wanted:
                slots[kind] = await self._current(
                    source, tenant, model_id, kind, dim, stamps.get(kind, (0, 0))
                )
            shortlist = self._shortlist(slots, query, fetch, thread_id, visible_to)
            if not _ids(shortlist):
                return []
            _, confirmed = await source._vc_check(
                tenant, model_id, [], _ids(shortlist, k), dim, thread_id, visible_to
            )
        rest = {
            kind: best[k:]
            for kind, best in shortlist.items()
            if len(best) > k and any((kind, rid) not in confirmed for rid, _, _ in best[:k])
        }
        if rest:
            _, more = await source._vc_check(
                tenant, model_id, [], _ids(rest), dim, thread_id, visible_to
            )
            confirmed |= more
        hits: list[SearchHit] = []
        redo: list[str] = []
        for kind, best in shortlist.items():
            kept = [(rid, tid, score) for rid, tid, score in best if (kind, rid) in confirmed]
            if len(kept) < min(k, len(best)) and len(best) == fetch:
                redo.append(kind)  # the cached scope was stale: search this kind exactly
                continue
            hits += [SearchHit(kind, rid, score, tid) for rid, tid, score in kept[:k]]
        if redo:
            hits += await source._vc_exact(tenant, vector, model_id, redo, k, thread_id, visible_to)
        hits.sort(key=lambda h: (-h.score, h.kind, h.id))
        return hits[:k]


def _ids(
    shortlist: Mapping[str, Sequence[tuple[str, str | None, float]]], first: int | None = None
) -> dict[str, list[tuple[str, str | None]]]:
    """The shortlist's (id, thread) per kind (its ``first`` best), kinds with none left out."""
    return {
        kind: [(rid, tid) for rid, tid, _ in got[:first]] for kind, got in shortlist.items() if got
    }
