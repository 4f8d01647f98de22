"""Vector search with numpy (exact) and usearch (HNSW), for stores without a native index.

``top_k`` scores a list of stored vectors once. ``VectorCache`` keeps, per
``(tenant, model_id, kind)``, the matrix of every stored vector in process
memory with each row's scope (thread, agent, user as small integer codes), so
a query is one matrix-vector product plus numpy masks instead of reading every
vector from the database. Beyond ``ANN_THRESHOLD`` vectors an HNSW index
(``usearch``, extra ``memorybank[ann]``) answers instead of the exact product;
when it is not installed the search stays exact. Its keys are SQLite rowids;
the SQLite store persists it next to the database (``_vector_files``) and hands
an index of an earlier state to a reloaded slot (``inherit_ann``), which keeps
the rows whose rowid and vector are unchanged instead of rebuilding.

Keeping the cache current across processes is the store's job (see
``AsyncSQLiteStore.vector_search``): it tells the cache when the database may
have changed and what rows were added, and verifies the scope of the final
hits in SQL, so a stale cache can cost speed, never correctness of scoping.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memorybank.stores._types import Unset, Visibility, searched_kinds

__all__ = ["ANN_THRESHOLD", "CachedRows", "VectorCache", "VectorSlot", "top_k", "unit_query"]

#: Vectors of one (tenant, model, kind) from which an HNSW index answers queries
#: whose scope covers many of them. Below it search is exact (a 384-d product
#: over 50,000 rows is a few ms); the index is built on the first such query
#: (about 1-6 minutes per 100,000 vectors on 2 busy cores), kept current, and
#: persisted by the SQLite store for the next process.
ANN_THRESHOLD = 50_000
#: A scope holding at most this many vectors is always searched exactly.
EXACT_LIMIT = 20_000
_NONE = 0  # code of None (shared / no thread)
_UNKNOWN = -1  # code of a value the cache has never seen: matches no row
_FILLER_KEY = 1 << 62  # keys of placeholder vectors (beyond any SQLite rowid in use)


def top_k(query: Sequence[float], blobs: Sequence[bytes], k: int) -> list[tuple[int, float]]:
    """Indexes and cosine scores of the ``k`` stored unit vectors closest to ``query``.

    ``blobs`` are float32 unit vectors (``_sql.unit_vector_bytes``); vectors of
    another dimension than the query are skipped (a model mix-up, never scored).
    """
    if not blobs or k <= 0:
        return []
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    if norm == 0:
        return []
    q /= norm
    dim = q.shape[0] * 4
    keep = [i for i, b in enumerate(blobs) if len(b) == dim]
    if not keep:
        return []
    matrix = np.frombuffer(b"".join(blobs[i] for i in keep), dtype="<f4").reshape(len(keep), -1)
    scores = _dot(matrix, q)
    count = min(k, len(keep))
    best = np.argpartition(-scores, count - 1)[:count]
    best = best[np.argsort(-scores[best], kind="stable")]
    return [(keep[int(i)], float(scores[int(i)])) for i in best]


def unit_query(
    vector: Sequence[float], kinds: Sequence[str], k: int, thread_id: str | None
) -> tuple[NDArray[np.float32], list[str]] | None:
    """The unit query vector and the kinds to search (``searched_kinds``), or ``None``
    when nothing can match (``k <= 0``, a zero vector, no kind left)."""
    query = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    wanted = searched_kinds(kinds, thread_id)
    if k <= 0 or norm == 0 or not wanted:
        return None
    return query / norm, wanted


def _dot(matrix: NDArray[np.float32], query: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix @ query`` on one core: a threaded BLAS ``sgemv`` is memory-bound here and
    several times slower on a busy machine (20k x 384: 26 ms against 8 ms)."""
    scores: NDArray[np.float32] = np.einsum("ij,j->i", matrix, query)
    return scores


def ann_available() -> bool:
    """Whether ``usearch`` is installed."""
    try:
        return importlib.util.find_spec("usearch") is not None
    except (ImportError, ValueError):
        return False


@dataclass
class CachedRows:
    """Rows read from a store: rowid, id, thread, scope (agent, user), unit vector bytes.

    ``visible`` is False for a row whose owner (thread or record) is gone.
    """

    rowids: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    threads: list[str | None] = field(default_factory=list)
    agents: list[str | None] = field(default_factory=list)
    users: list[str | None] = field(default_factory=list)
    visible: list[bool] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)

    def add(
        self,
        rowid: int,
        rid: str,
        thread: str | None,
        agent: str | None,
        user: str | None,
        visible: bool,
        blob: bytes,
    ) -> None:
        self.rowids.append(rowid)
        self.ids.append(rid)
        self.threads.append(thread)
        self.agents.append(agent)
        self.users.append(user)
        self.visible.append(visible)
        self.blobs.append(blob)


#: Below this many vectors an HNSW batch is inserted on one thread: usearch's
#: multi-threaded insertion is not deterministic, and on a small graph it can leave
#: a stored vector unreachable from its own query (a flaky top-1). Larger batches
#: (every first build: ``ANN_THRESHOLD`` rows at least) use every core (0: usearch's
#: default), where the build time matters; the few rows a search adds are serial.
SERIAL_BUILD_BELOW = 2_000


def _build_threads(count: int) -> int:
    return 1 if count < SERIAL_BUILD_BELOW else 0


def configure_ann(index: Any) -> None:
    """Search and insertion breadth of an HNSW index (not stored in its file)."""
    index.expansion_add = 64
    index.expansion_search = 128


class VectorSlot:
    """Every vector of one (tenant, model, kind), in memory, with its scope codes."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.n = 0
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.rowids = np.zeros(0, dtype=np.int64)
        self.ids: list[str] = []
        self.threads: list[str | None] = []
        self.thread_codes = np.zeros(0, dtype=np.int32)
        self.agent_codes = np.zeros(0, dtype=np.int32)
        self.user_codes = np.zeros(0, dtype=np.int32)
        self.visible = np.zeros(0, dtype=bool)
        #: False for a row deleted since it was read (``forget``): never searched, its
        #: vector zeroed, its key out of the HNSW index. ``dead`` counts them.
        self.alive = np.zeros(0, dtype=bool)
        self.dead = 0
        #: The matrix is a persisted file's read-only mapping (see ``forget``).
        self._mapped = False
        self.codes: dict[str | None, int] = {None: _NONE}
        #: What the store last checked: (change stamp, row count, max rowid, id at max rowid).
        self.stamp: Any = None
        self.count = 0
        self.max_rowid = 0
        self.max_id: str | None = None
        #: Updates of this (tenant, model, kind) counted by the database when the
        #: rows were read (None: the database does not count them).
        self.deletes: int | None = None
        #: The database's deletion log sequence the slot has applied (None: no log).
        self.log_seq: int | None = None
        #: Rows forgotten since the persisted files were written (they hold them).
        self.dead_since_save = 0
        #: The HNSW index, keyed by rowid; it holds the rows ``[0, _ann_rows)``.
        self._ann: Any = None
        self._ann_rows = 0
        #: An index of an earlier state of the rows, with the rowids and vectors it
        #: holds, checked against the rows before use (see ``adopt_ann``).
        self._ann_pending: tuple[Any, NDArray[np.int64], NDArray[np.float32]] | None = None
        #: How the index came to be: "built", "loaded" (from a file), "adopted".
        self.ann_source: str | None = None
        #: Rows covered by the persisted index files (None: not persisted).
        self.saved_rows: int | None = None

    def _code(self, value: str | None) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.codes)
        return code

    def _codes(self, values: list[str | None]) -> NDArray[np.int32]:
        for value in dict.fromkeys(values):
            self._code(value)
        return np.fromiter(map(self.codes.__getitem__, values), np.int32, len(values))

    def code_of(self, value: str | None) -> int:
        return self.codes.get(value, _UNKNOWN)

    def append(self, rows: CachedRows, block: NDArray[np.float32] | None = None) -> None:
        """Add rows (rowids larger than every cached one); rows of another dimension are skipped.

        ``block``: the rows' vectors as a matrix, when ``rows.blobs`` is empty.
        """
        width = self.dim * 4
        every = block is not None or all(len(b) == width for b in rows.blobs)
        keep = (
            list(range(len(rows.rowids)))
            if every
            else [i for i, b in enumerate(rows.blobs) if len(b) == width]
        )

        def kept(values: list[Any]) -> list[Any]:
            return values if every else [values[i] for i in keep]

        if keep:
            if self.n == 0:
                self._mapped = block is not None
            if block is None:
                block = np.frombuffer(b"".join(kept(rows.blobs)), dtype="<f4")
                block = block.reshape(len(keep), self.dim)
            need = self.n + len(keep)
            if self.n == 0:
                self.matrix = block  # grown (copied) by the next append
            elif need > self.matrix.shape[0]:  # grow geometrically: appends stay amortised O(1)
                grown = np.zeros((max(need, 2 * self.matrix.shape[0], 1024), self.dim), np.float32)
                grown[: self.n] = self.matrix[: self.n]
                self.matrix = grown
            if self.n:
                self.matrix[self.n : need] = block
            self.rowids = np.concatenate([self.rowids, np.asarray(kept(rows.rowids), np.int64)])
            self.ids += kept(rows.ids)
            threads = kept(rows.threads)
            self.threads += threads
            self.thread_codes = np.concatenate([self.thread_codes, self._codes(threads)])
            self.agent_codes = np.concatenate([self.agent_codes, self._codes(kept(rows.agents))])
            self.user_codes = np.concatenate([self.user_codes, self._codes(kept(rows.users))])
            self.visible = np.concatenate([self.visible, np.asarray(kept(rows.visible), bool)])
            self.alive = np.concatenate([self.alive, np.ones(len(keep), bool)])
            self.n = need
        if rows.rowids:
            last = int(np.argmax(rows.rowids))
            if rows.rowids[last] > self.max_rowid:
                self.max_rowid, self.max_id = rows.rowids[last], rows.ids[last]

    # -- search ---------------------------------------------------------------------------

    def forget(self, rowids: Sequence[int]) -> int:
        """Mark the rows of these (deleted) rowids dead; how many the slot held alive.

        Their vectors are zeroed (unless mapped read-only from the persisted
        files, which the next save rewrites without them) and their keys removed
        from the HNSW index (the slots usearch frees are overwritten with a
        placeholder: no deleted vector stays in the index's memory or in its next
        persisted file).
        """
        if not rowids or not self.n:
            return 0
        at = self.positions(np.asarray(rowids, dtype=np.int64))
        at = np.unique(at[at >= 0])
        at = at[self.alive[at]]
        if not len(at):
            return 0
        self.alive[at] = False
        if not self.matrix.flags.writeable and not self._mapped:
            self.matrix = self.matrix.copy()  # rows read from the database, not yet grown
        if self.matrix.flags.writeable:
            self.matrix[at] = 0.0
        self.dead += len(at)
        self.dead_since_save += len(at)
        indexed = at[at < self._ann_rows] if self._ann is not None else at[:0]
        if len(indexed):
            self._ann.remove(self.ann_keys(0, self.n)[indexed])
            self._overwrite_freed(self._ann, len(indexed))
        return len(at)

    def _overwrite_freed(self, index: Any, count: int) -> None:
        """usearch keeps a removed vector's bytes until its slot is reused: fill ``count``
        freed slots with a placeholder and remove it again."""
        filler = np.full((count, self.dim), 1 / np.sqrt(self.dim), dtype=np.float32)
        keys = np.arange(count, dtype=np.int64) + _FILLER_KEY
        index.add(keys, filler, threads=_build_threads(count))
        index.remove(keys)

    def mask(self, thread_id: str | None, visible_to: Visibility | None) -> NDArray[np.bool_]:
        mask = self.visible & self.alive
        if thread_id is not None:
            mask &= self.thread_codes == self.code_of(thread_id)
        if visible_to is not None:
            for codes, asking in (
                (self.agent_codes, visible_to.agent_id),
                (self.user_codes, visible_to.user_id),
            ):
                if not isinstance(asking, Unset):
                    mask &= (codes == _NONE) | (codes == self.code_of(asking))
        return mask

    def search(
        self, query: NDArray[np.float32], k: int, mask: NDArray[np.bool_]
    ) -> list[tuple[int, float]]:
        """Best ``k`` (row index, cosine) among the rows of ``mask``."""
        if k <= 0 or not self.n:
            return []
        allowed = int(mask.sum())
        if not allowed:
            return []
        if self.n >= ANN_THRESHOLD and allowed > EXACT_LIMIT and ann_available():
            found = self._ann_search(query, k, mask)
            if found is not None:
                return found
        if allowed * 2 >= self.n:
            # most rows: one product over the whole matrix (no copy of the rows),
            # the others (out of scope, or deleted) scored out
            scores = _dot(self.matrix[: self.n], query)
            if allowed < self.n:
                scores = np.where(mask, scores, np.float32(-np.inf))
            rows = None
        else:
            rows = np.flatnonzero(mask)
            scores = _dot(self.matrix[rows], query)
        count = min(k, allowed)
        best = np.argpartition(-scores, count - 1)[:count]
        best = best[np.argsort(-scores[best], kind="stable")]
        index = best if rows is None else rows[best]
        return list(zip(index.tolist(), scores[best].astype(np.float64).tolist(), strict=True))

    def _ann_search(
        self, query: NDArray[np.float32], k: int, mask: NDArray[np.bool_]
    ) -> list[tuple[int, float]] | None:
        index = self._ann_index()
        share = float(mask.sum()) / self.n
        count = max(4 * k, 64, int(2 * k / max(share, 1e-9)))
        while True:
            count = min(count, self.n)
            result = index.search(query, count)
            keys = self.positions(np.asarray(result.keys, dtype=np.int64))
            dist = np.asarray(result.distances, dtype=np.float32)
            ok = keys >= 0
            ok[ok] = mask[keys[ok]]
            keys, dist = keys[ok], dist[ok]
            if len(keys) >= k or count >= self.n:
                return [
                    (int(key), 1.0 - float(d)) for key, d in zip(keys[:k], dist[:k], strict=True)
                ]
            if count >= 16 * max(4 * k, 64):
                return None  # a narrow scope: exact search over it is cheaper
            count *= 4

    def ann_keys(self, start: int, stop: int) -> NDArray[np.int64]:
        """The index keys of rows ``[start, stop)``: their rowids (``positions`` maps back)."""
        return self.rowids[start:stop]

    def positions(self, rowids: NDArray[np.int64]) -> NDArray[np.int64]:
        """Row index of each rowid, -1 for a rowid the slot does not hold."""
        at = np.searchsorted(self.rowids, rowids)
        found = at < self.n
        found[found] = self.rowids[at[found]] == rowids[found]
        return np.where(found, at, -1).astype(np.int64)

    def has_ann(self) -> bool:
        return self._ann is not None

    def ann_rows(self) -> int:
        """Rows ``[0, ann_rows)`` are in the index."""
        return self._ann_rows if self._ann is not None else 0

    def ann_index(self) -> Any:
        """The HNSW index (usearch ``Index``), if there is one; it may lag the rows."""
        return self._ann

    def set_ann(self, index: Any, rows: int, source: str) -> None:
        """Use ``index``, which holds exactly the rows ``[0, rows)`` keyed by rowid."""
        self._ann, self._ann_rows, self.ann_source = index, rows, source
        self._ann_pending = None

    def inherit_ann(
        self, index: Any, rowids: NDArray[np.int64], vectors: NDArray[np.float32]
    ) -> None:
        """Offer an index of an earlier state (its rowids and vectors); checked when used."""
        self._ann, self._ann_rows = None, 0
        self._ann_pending = (index, rowids, vectors)

    def _adopt_ann(self) -> bool:
        """Reuse the pending index for the rows whose rowid and vector it holds unchanged.

        Keys of deleted or changed rows are removed (a rowid SQLite gave again to
        another row holds another vector, so it is removed and added again); rows
        it lacks are added. Rebuilt instead when less than half of it is reusable.
        """
        index, rowids, vectors = self._ann_pending  # type: ignore[misc]
        self._ann_pending = None
        at = self.positions(rowids)
        same = at >= 0
        same[same] = self.alive[at[same]]  # a deleted row's key goes
        rows = np.flatnonzero(same)
        for start in range(0, len(rows), 65_536):  # compared in blocks: bounded memory
            part = rows[start : start + 65_536]
            same[part] = np.all(self.matrix[at[part]] == vectors[part], axis=1)
        if int(same.sum()) * 2 < max(self.n, 1) or int(same.sum()) * 2 < len(rowids):
            return False
        stale = rowids[~same]
        if len(stale):
            index.remove(stale)
        missing = self.alive[: self.n].copy()
        missing[at[same]] = False
        todo = np.flatnonzero(missing)
        if len(todo):
            index.add(self.rowids[todo], self.matrix[todo], threads=_build_threads(len(todo)))
        if len(stale) > len(todo):
            # the slots left over: so deleted vectors leave no trace in the index
            # (nor in its persisted file)
            self._overwrite_freed(index, len(stale) - len(todo))
        self.set_ann(index, self.n, "adopted")
        return True

    def _ann_index(self) -> Any:
        if self._ann is None and self._ann_pending is not None:
            self._adopt_ann()
        if self._ann is None:
            from usearch.index import Index

            self._ann = Index(ndim=self.dim, metric="cos", dtype="f16", connectivity=16)
            configure_ann(self._ann)
            self._ann_rows = 0
            self.ann_source = "built"
        if self._ann_rows < self.n:
            live = np.flatnonzero(self.alive[self._ann_rows : self.n])
            if len(live):
                self._ann.add(
                    self.ann_keys(self._ann_rows, self.n)[live],
                    self.matrix[self._ann_rows : self.n][live],
                    threads=_build_threads(len(live)),
                )
            self._ann_rows = self.n
        return self._ann


class VectorCache:
    """``VectorSlot`` per (tenant, model_id, kind); the store decides when to refresh them."""

    def __init__(self) -> None:
        self.slots: dict[tuple[str, str, str], VectorSlot] = {}

    def clear(self) -> None:
        self.slots.clear()
