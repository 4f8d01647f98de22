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

A search never waits for the index: while there is none (or it lags the rows
by more than ``EXACT_LIMIT``) the answer is exact, and a daemon thread per slot
(one at most) builds, adopts or extends it in batches, then hands it to the
slot's ``persist`` hook. Rows the index does not hold yet are searched exactly
beside it, and its candidates are re-scored in float32, so an answer never
depends on how far a build got beyond the ANN approximation itself. Replacing
or dropping a slot in a ``VectorCache``, ``VectorCache.stop`` and interpreter
exit stop its builder (after the current batch).

Keeping the cache current across processes is the store's job (see
``AsyncSQLiteStore.vector_search``): it tells the cache when the database may
have changed and what rows were added, and verifies the scope of the final
hits in SQL, so a stale cache can cost speed, never correctness of scoping.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from memorybank.runtime.np import np

from memorybank.runtime.log import logger as _log
from memorybank.runtime.native import usearch_index
from memorybank.stores.contract.types import SearchHit, Unset, Visibility, searched_kinds
from memorybank.stores.vectors.groups import Blocks, RowGroups

__all__ = [
    "ANN_THRESHOLD",
    "CachedRows",
    "Checked",
    "ScopedRows",
    "Shortlist",
    "UnitQuery",
    "VectorCache",
    "VectorQuery",
    "VectorScope",
    "VectorSlot",
    "exact_hits",
    "top_k",
    "unit_query",
]

#: Vectors of one (tenant, model, kind) from which an HNSW index answers queries
#: whose scope covers many of them. Below it search is exact (a 384-d product
#: over 50,000 rows is a few ms). The index is built in a background thread
#: started by the first such query (about 1,500 vectors/s on 2 busy cores);
#: until it is ready searches are exact (1M x 384: about 0.2 s). It is kept
#: current the same way and persisted by the SQLite store for the next process.
ANN_THRESHOLD = 50_000
#: Vectors of one (tenant, model, kind) from which a SQLite store on a file saves them
#: (without an index below ``ANN_THRESHOLD``) for the processes of the host to map one
#: copy (``AsyncSQLiteStore._vector_share``); below, each process reads its own.
SHARE_MIN_ROWS = 4096
#: A scope holding at most this many vectors is always searched exactly; an index
#: lagging the rows by more than this is not used (the rows after it are searched
#: exactly when it lags less).
EXACT_LIMIT = 20_000
#: Build in a background thread (False: the search that needs the index builds it
#: and waits, as tests and index benchmarks want).
BACKGROUND_BUILD = True
#: Rows after the index from which a search starts a builder to extend it.
EXTEND_AFTER = 1_000
#: Rows per ``Index.add`` of a builder extending an index in use (it holds the lock
#: searches take meanwhile); an index not in use yet takes twice as many per call.
BUILD_BATCH = 1_024
#: The builder thread's nice increment (Linux: per thread).
BUILD_NICE = 10
#: HNSW parameters, measured on clustered 384-d vectors (``bench.bench_vectors``), 2
#: busy cores, 256 candidates re-scored: expansion_add 64 gives recall@10 0.999 at 100k
#: (build 877 vectors/s), 32 only 0.970 (1,011/s) and 0.71 at 1M; i8 or M=12 lose
#: 6-12 points more. The build runs in the background, so recall wins.
CONNECTIVITY = 16
EXPANSION_ADD = 64
EXPANSION_SEARCH = 256
#: Candidates asked of the index per search (at least; more for a narrow scope),
#: re-scored exactly in float32. Below ``LARGE_INDEX`` rows 256 keep recall@10 at
#: 0.999 (100k) and 0.996 (300k) with expansion_add 64; from it on 512 (1M: 0.949
#: with 256, 0.952 with 512, 4.7 ms per query for the index), since twice the
#: candidates cost an index of 100k, as build_context's document search, twice the time.
CANDIDATES = 256
LARGE_CANDIDATES = 512
LARGE_INDEX = 500_000
#: A search narrowed to one thread, or to one user's rows and the shared ones, scores
#: those rows exactly up to this many (from contiguous copies of large scopes: 50,000
#: x 384 in about 6 ms), instead of masking every row and asking the index for
#: ``2 k / share`` candidates (a user holding 5% of a million rows: 8,400 of them).
SCOPED_EXACT_LIMIT = 100_000
#: Rows of contiguous scope copies a slot keeps (``groups.Blocks``): a quarter of its
#: rows, and at least this many.
BLOCK_BUDGET = 100_000
#: Threads whose id -> row map ``VectorSlot.vectors_of`` keeps (dropped all at once past it).
THREAD_ID_MAPS = 4_096
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
    best = _best(scores, count)
    return [(keep[int(i)], float(scores[int(i)])) for i in best]


def exact_hits(query: Sequence[float], rows: Sequence[Sequence[Any]], k: int) -> list[SearchHit]:
    """The uncached exact search's hits: ``top_k`` over rows ``(kind, id, thread id,
    vector bytes)`` read by a store."""
    best = top_k(query, [bytes(row[3]) for row in rows], k)
    return [SearchHit(rows[i][0], rows[i][1], score, rows[i][2]) for i, score in best]


#: Per kind, the ``(id, thread)`` of shortlisted rows whose scope a store confirms.
Shortlist: TypeAlias = Mapping[str, Sequence[tuple[str, str | None]]]

#: A store's confirmation (``VectorSource._vc_check``): ``kind -> (version,
#: generation)``, and the confirmed ``(kind, id)``.
Checked: TypeAlias = tuple[dict[str, tuple[int, int]], set[tuple[str, str]]]


@dataclass(slots=True)
class VectorScope:
    """Whose stored vectors a read behind a vector search sees (``VectorSource``):
    ``tenant``'s of ``model_id``, in ``thread_id`` (``None``: every thread) and those
    ``visible_to`` may see (``None``: every one)."""

    tenant: str
    model_id: str
    thread_id: str | None = None
    visible_to: Visibility | None = None


@dataclass(slots=True, kw_only=True)
class VectorQuery(VectorScope):
    """One vector search in its ``VectorScope``: ``AsyncStore.vector_search``'s
    arguments, passed whole to the reads behind it."""

    vector: Sequence[float] = field(repr=False)
    kinds: Sequence[str]
    k: int


class UnitQuery(NamedTuple):
    """A search's unit query vector, the kinds to search (``searched_kinds``), its
    dimension, and how many cached rows it ranks per kind before the store confirms
    their scope (``fetch``: twice ``k`` and ten; those past the ``k`` best stand in for
    the ones the store does not confirm)."""

    unit: NDArray[np.float32]
    kinds: list[str]
    dim: int
    fetch: int


def unit_query(
    vector: Sequence[float], kinds: Sequence[str], k: int, thread_id: str | None
) -> UnitQuery | None:
    """The search's ``UnitQuery``, or ``None`` when nothing can match (``k <= 0``, a
    zero vector, no kind left)."""
    query = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    wanted = searched_kinds(kinds, thread_id)
    if k <= 0 or norm == 0 or not wanted:
        return None
    return UnitQuery(query / norm, wanted, int(query.shape[0]), 2 * k + 10)


def _best(scores: NDArray[np.float32], count: int) -> NDArray[np.intp]:
    """Positions of the ``count`` (>= 1) highest ``scores``, best first."""
    best = np.argpartition(-scores, count - 1)[:count]
    return best[np.argsort(-scores[best], kind="stable")]


def _dot(matrix: NDArray[np.float32], query: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix @ query`` on one core: a threaded BLAS ``sgemv`` is memory-bound here and
    several times slower on a busy machine (20k x 384: 26 ms against 8 ms)."""
    scores: NDArray[np.float32] = np.einsum("ij,j->i", matrix, query)
    return scores


def ann_available() -> bool:
    """Whether ``usearch`` is installed."""
    import importlib.util  # here: a store imports this module, most never ask

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


@dataclass
class ScopedRows:
    """Rows' rowids (ascending) and scope, by group: row ``i`` has the scope
    ``groups[group_of[i]]``, a (thread, agent, user, visible) tuple."""

    rowids: NDArray[np.int64]
    group_of: NDArray[np.intp]
    groups: list[tuple[str | None, str | None, str | None, bool]]


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
    index.expansion_add = EXPANSION_ADD
    index.expansion_search = EXPANSION_SEARCH


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
        #: The matrix is a persisted file's copy-on-write mapping with room for appends,
        #: which other processes map too (``share``); False once it grew out of it.
        self.shared = False
        self.codes: dict[str | None, int] = {None: _NONE}
        #: Row positions per thread code and per user code, and contiguous copies of
        #: large scopes' rows (``find``).
        self.by_thread = RowGroups()
        self.by_user = RowGroups()
        self.blocks = Blocks()
        #: Per thread code, its rows' ids -> rows (the last row of an id) and how many
        #: rows of the thread that map covers (``vectors_of``).
        self._thread_ids: dict[int, tuple[int, dict[str, int]]] = {}
        #: Whether a code array names any owner, by ``id`` of the array (kept with it).
        self._owners: dict[int, tuple[NDArray[np.int32], bool]] = {}
        #: What the store last checked the slot against (its change counters; the SQLite
        #: store's: per connection), None when nothing has been checked.
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
        #: Called by the builder with the slot when it has built or extended the index
        #: (the SQLite store persists it).
        self.persist: Callable[[VectorSlot], None] | None = None
        #: Seconds the last build or extension took, and the rows it holds so far.
        self.build_seconds: float | None = None
        self.build_progress = 0
        self._lock = threading.Lock()
        self._builder: threading.Thread | None = None
        self._cancel = threading.Event()

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

    def vectors_of(self, pairs: Iterable[tuple[str, str]]) -> dict[str, NDArray[np.float32]]:
        """The vectors the slot holds alive of these ``(thread id, id)`` rows, by id (one
        gather of the matrix); the ids it does not hold are left out, for the caller to
        read. An id is found among its thread's rows (a map per thread, kept while the
        thread has no new row): a search asks for its candidates' vectors, which are
        rows of the threads its hits fall in. (The caller holds the cache's lock.)"""
        ids: list[str] = []
        rows: list[int] = []
        # each thread's map looked up once (a search's candidates fall in a few threads)
        seen: dict[str, dict[str, int] | None] = {}
        for thread_id, rid in pairs:
            if thread_id in seen:
                found = seen[thread_id]
            else:
                found = seen[thread_id] = self._ids_of_thread(thread_id)
            if found is None:
                continue
            row = found.get(rid)
            if row is not None:
                ids.append(rid)
                rows.append(row)
        if not rows:
            return {}
        at = np.asarray(rows, dtype=np.intp)
        live = self.alive[at]
        block = self.matrix[at[live]]  # a copy: a row forgotten later is zeroed in place
        kept = [i for i, keep in zip(ids, live.tolist(), strict=True) if keep]
        return dict(zip(kept, block, strict=True))

    def _ids_of_thread(self, thread_id: str) -> dict[str, int] | None:
        """Row position by id of a thread's rows (``vectors_of``), or None without rows."""
        code = self.codes.get(thread_id)
        if code is None:
            return None
        maps = self._thread_ids
        memo = maps.get(code)
        held = self.by_thread.rows(code)
        if memo is None or memo[0] != len(held):
            positions = held.tolist()
            ids_of = [self.ids[r] for r in positions]
            memo = (len(positions), dict(zip(ids_of, positions, strict=True)))
            if len(maps) >= THREAD_ID_MAPS:
                maps.clear()
            maps[code] = memo
        return memo[1]

    def reserve(self, matrix: NDArray[np.float32]) -> None:
        """Keep the rows in ``matrix`` (writable, its first ``n`` rows the slot's), with
        room for appends: a background load grows the matrix itself, in pieces, rather
        than have ``append`` copy every row at once."""
        assert matrix.shape[0] >= self.n and matrix.shape[1] == self.dim
        self.matrix, self._mapped = matrix, False

    def share(
        self, rowids: NDArray[np.int64], vectors: NDArray[np.float32], room: NDArray[np.float32]
    ) -> bool:
        """Use ``room`` (a mapping other processes share, writable copy-on-write, its
        first rows ``vectors``) as the matrix if its rows are exactly the slot's: the
        same rowids, bit for bit the same vectors, none deleted; whether it did. The
        caller holds the cache's lock (or owns the slot alone)."""
        n = self.n
        if (
            self.dead
            or room.shape[1] != self.dim
            or room.shape[0] < n
            or not room.flags.writeable
            or len(rowids) != n
            or not np.array_equal(rowids, self.rowids[:n])
            or not np.array_equal(vectors, self.matrix[:n])
        ):
            return False
        # (a builder reading rows meanwhile reads the same values from either matrix)
        self.matrix, self._mapped, self.shared = room, False, True
        return True

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
                self.matrix, self.shared = grown, False
            if self.n:
                self.matrix[self.n : need] = block
            self.rowids = np.concatenate([self.rowids, np.asarray(kept(rows.rowids), np.int64)])
            self.ids += kept(rows.ids)
            threads = kept(rows.threads)
            self.threads += threads
            thread_codes, user_codes = self._codes(threads), self._codes(kept(rows.users))
            self.by_thread.add(thread_codes, self.n)
            self.by_user.add(user_codes, self.n)
            self.thread_codes = np.concatenate([self.thread_codes, thread_codes])
            self.agent_codes = _frozen(
                np.concatenate([self.agent_codes, self._codes(kept(rows.agents))])
            )
            self.user_codes = _frozen(np.concatenate([self.user_codes, user_codes]))
            self.visible = np.concatenate([self.visible, np.asarray(kept(rows.visible), bool)])
            self.alive = np.concatenate([self.alive, np.ones(len(keep), bool)])
            self.n = need
        if rows.rowids:
            last = int(np.argmax(rows.rowids))
            if rows.rowids[last] > self.max_rowid:
                self.max_rowid, self.max_id = rows.rowids[last], rows.ids[last]

    def append_scoped(self, rows: ScopedRows, ids: list[str], block: NDArray[np.float32]) -> None:
        """Fill an empty slot with ``block``'s vectors (kept as they are: a mapped file's
        rows), of these ``ids`` and ``rows``: per row codes from per group ones, no
        Python object made per row but the id and thread lists."""
        assert self.n == 0 and block.shape == (len(ids), self.dim) == (len(rows.rowids), self.dim)
        if not len(ids):
            return
        threads, agents, users, visible = (list(c) for c in zip(*rows.groups, strict=True))
        at = rows.group_of
        self.matrix, self._mapped = block, True
        self.rowids = np.asarray(rows.rowids, dtype=np.int64)
        self.ids = list(ids)
        self.threads = np.asarray(threads, dtype=object)[at].tolist()
        self.thread_codes = self._codes(threads)[at]
        self.agent_codes = _frozen(self._codes(agents)[at])
        self.user_codes = _frozen(self._codes(users)[at])
        self.by_thread.add(self.thread_codes, 0)
        self.by_user.add(self.user_codes, 0)
        self.visible = np.asarray(visible, dtype=bool)[at]
        self.alive = np.ones(len(ids), dtype=bool)
        self.n = len(ids)
        self.max_rowid, self.max_id = int(self.rowids[-1]), ids[-1]

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
        self.stop_build()  # the builder reads the rows without a lock: none runs now
        at = self.positions(np.asarray(rowids, dtype=np.int64))
        at = np.unique(at[at >= 0])
        at = at[self.alive[at]]
        if not len(at):
            return 0
        self.alive[at] = False
        self.blocks.forget(at.astype(np.intp))
        if not self.matrix.flags.writeable and not self._mapped:
            self.matrix = self.matrix.copy()  # rows read from the database, not yet grown
        if self.matrix.flags.writeable:
            self.matrix[at] = 0.0
        self.dead += len(at)
        self.dead_since_save += len(at)
        index = self._ann
        indexed = at[at < self._ann_rows] if index is not None else at[:0]
        if len(indexed):
            index = self.drop_keys(index, self.ann_keys(0, self.n)[indexed])
            with self._lock:
                self._ann = index
        return len(at)

    def drop_keys(self, index: Any, keys: NDArray[np.int64]) -> Any:
        """``index`` without ``keys`` (all in it), their freed slots overwritten: the
        index itself, or an edited copy when it is a read-only view (``editable``)."""
        index = editable(index)
        index.remove(keys)
        self._overwrite_freed(index, len(keys))
        return index

    def _overwrite_freed(self, index: Any, count: int) -> None:
        """usearch keeps a removed vector's bytes until its slot is reused: fill ``count``
        freed slots with a placeholder and remove it again."""
        filler = np.full((count, self.dim), 1 / np.sqrt(self.dim), dtype=np.float32)
        keys = np.arange(count, dtype=np.int64) + _FILLER_KEY
        index.add(keys, filler, threads=_build_threads(count))
        index.remove(keys)

    def mask(
        self,
        thread_id: str | None,
        visible_to: Visibility | None,
        rows: NDArray[np.intp] | None = None,
    ) -> NDArray[np.bool_]:
        """Which rows are in scope (alive, visible, of the thread, of the owners), of
        every row or of the positions ``rows`` only."""

        def at(values: NDArray[Any]) -> NDArray[Any]:
            return values if rows is None else values[rows]

        mask: NDArray[np.bool_] = at(self.visible) & at(self.alive)
        if thread_id is not None:
            mask &= at(self.thread_codes) == self.code_of(thread_id)
        if visible_to is not None:
            for every, asking in (
                (self.agent_codes, visible_to.agent_id),
                (self.user_codes, visible_to.user_id),
            ):
                if isinstance(asking, Unset) or not self._has_owner(every):
                    continue  # (every row shared on this axis: all pass)
                codes = at(every)
                allowed = codes == _NONE
                code = self.code_of(asking)
                if code != _UNKNOWN:  # (a value no row has matches none)
                    allowed |= codes == code
                mask &= allowed
        return mask

    def _has_owner(self, codes: NDArray[np.int32]) -> bool:
        """Whether any row of ``codes`` (agent or user codes) names an owner. Remembered
        with the array itself: code arrays are replaced by ``append``, never changed."""
        known = self._owners.get(id(codes))
        if known is None or known[0] is not codes:
            known = self._owners[id(codes)] = (codes, bool(np.count_nonzero(codes != _NONE)))
            if len(self._owners) > 4:  # arrays replaced since: let them go
                live = (id(self.agent_codes), id(self.user_codes))
                self._owners = {k: v for k, v in self._owners.items() if k in live}
        return known[1]

    def find(
        self,
        query: NDArray[np.float32],
        k: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> list[tuple[int, float]]:
        """Best ``k`` (row index, cosine) in the scope of ``thread_id`` and ``visible_to``.

        A scope narrowed by a thread, or by a user (her rows and the shared
        ones), of at most ``SCOPED_EXACT_LIMIT`` rows is scored exactly from
        its rows alone (``RowGroups``, ``Blocks``): its cost follows the scope,
        not the slot. A wider or unnarrowed scope is masked over every row and
        searched by ``search`` (exact, or the HNSW index).
        """
        parts = self._scope_parts(thread_id, visible_to)
        if parts is None:
            return self.search(query, k, self.mask(thread_id, visible_to))
        if k <= 0:
            return []
        budget = max(BLOCK_BUDGET, self.n // 4)
        found_rows: list[NDArray[np.intp]] = []
        found_scores: list[NDArray[np.float32]] = []
        for key, rows in parts:
            keep = self.mask(thread_id, visible_to, rows)
            if not keep.any():
                continue
            block = self.blocks.get(key, rows, self.matrix, budget)
            if block is None:
                rows = rows[keep]
                scores = _dot(self.matrix[rows], query)
            else:  # the block, and by gathering them the rows added since it was copied
                scores = _dot(block.matrix, query)
                if len(block.rows) < len(rows):
                    tail = _dot(self.matrix[rows[len(block.rows) :]], query)
                    scores = np.concatenate([scores, tail])
                scores = np.where(keep, scores, np.float32(-np.inf))
            found_rows.append(rows)
            found_scores.append(scores)
        if not found_rows:
            return []
        rows = np.concatenate(found_rows) if len(found_rows) > 1 else found_rows[0]
        scores = np.concatenate(found_scores) if len(found_scores) > 1 else found_scores[0]
        if len(found_rows) > 1:  # ascending rows, as a mask's: ties break the same way
            order = np.argsort(rows, kind="stable")
            rows, scores = rows[order], scores[order]
        allowed = int(np.count_nonzero(scores > -np.inf))
        count = min(k, allowed)
        if not count:
            return []
        best = _best(scores, count)
        return list(zip(rows[best].tolist(), scores[best].astype(np.float64).tolist(), strict=True))

    def scope_rows(self, thread_id: str | None, visible_to: Visibility | None) -> int:
        """How many rows ``find`` scans for this scope (what it costs): the scope's own
        when it is narrowed, else every row."""
        parts = self._scope_parts(thread_id, visible_to)
        return self.n if parts is None else sum(len(rows) for _, rows in parts)

    def _scope_parts(
        self, thread_id: str | None, visible_to: Visibility | None
    ) -> list[tuple[tuple[str, int], NDArray[np.intp]]] | None:
        """The rows a narrowed scope can hold, per group (block key, positions), or None
        when the scope is not narrowed by a thread or a user, or holds too many rows."""
        if thread_id is not None:
            code = self.code_of(thread_id)
            parts = [(("thread", code), self.by_thread.rows(code))]
        elif (
            visible_to is not None
            and not isinstance(visible_to.user_id, Unset)
            and self._has_owner(self.user_codes)
        ):
            codes = [_NONE]
            code = self.code_of(visible_to.user_id)
            if visible_to.user_id is not None and code != _UNKNOWN:
                codes.append(code)
            parts = [(("user", c), self.by_user.rows(c)) for c in codes]
        else:
            return None
        parts = [(key, rows) for key, rows in parts if len(rows)]
        if sum(len(rows) for _, rows in parts) > SCOPED_EXACT_LIMIT:
            return None
        return parts

    def search(
        self, query: NDArray[np.float32], k: int, mask: NDArray[np.bool_]
    ) -> list[tuple[int, float]]:
        """Best ``k`` (row index, cosine) among the rows of ``mask``.

        Never waits for an index build: without a usable index (none yet, or
        one more than ``EXACT_LIMIT`` rows behind) the answer is exact and a
        build starts in the background (``_start_build``).
        """
        if k <= 0 or not self.n:
            return []
        allowed = int(np.count_nonzero(mask))  # (a bool array's sum is several times slower)
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
        best = _best(scores, count)
        index = best if rows is None else rows[best]
        return list(zip(index.tolist(), scores[best].astype(np.float64).tolist(), strict=True))

    def _ann_search(
        self, query: NDArray[np.float32], k: int, mask: NDArray[np.bool_]
    ) -> list[tuple[int, float]] | None:
        """Candidates from the index for its rows, every row after them exactly, all
        re-scored in float32 (the index holds float16); None: no usable index."""
        n = self.n
        if not BACKGROUND_BUILD:
            self._start_build()
            self.wait_ann()
        # read without the lock: published together, and an index holding more rows
        # than ``done`` says only has its extra keys ignored
        index, done = self._ann, self._ann_rows
        if index is None or not done or n - done > EXACT_LIMIT:
            self._start_build()
            return None
        if n - done >= EXTEND_AFTER:
            self._start_build()
        share = float(np.count_nonzero(mask[:done])) / max(done, 1)
        floor = max(4 * k, LARGE_CANDIDATES if done >= LARGE_INDEX else CANDIDATES)
        count = max(floor, int(2 * k / max(share, 1e-9)))
        tail = np.flatnonzero(mask[done:n]) + done
        while True:
            count = min(count, done)
            if _is_view(index):  # read-only: a builder extends a copy
                result = index.search(query, count)
            else:
                with self._lock:  # the builder may be adding to it
                    result = index.search(query, count)
            keys = self.positions(np.asarray(result.keys, dtype=np.int64))
            keys = keys[(keys >= 0) & (keys < done)]
            keys = keys[mask[keys]]
            if len(keys) + len(tail) >= k or count >= done:
                break
            if count >= 16 * floor:
                return None  # a narrow scope: exact search over it is cheaper
            count *= 4
        rows = np.concatenate([keys, tail]) if len(tail) else keys
        if not len(rows):
            return []
        scores = _dot(self.matrix[rows], query)
        take = min(k, len(rows))
        best = _best(scores, take)
        return [(int(rows[i]), float(scores[i])) for i in best]

    def ann_keys(self, start: int, stop: int) -> NDArray[np.int64]:
        """The index keys of rows ``[start, stop)``: their rowids (``positions`` maps back)."""
        return self.rowids[start:stop]

    def positions(self, rowids: NDArray[np.int64]) -> NDArray[np.int64]:
        """Row index of each rowid, -1 for a rowid the slot does not hold."""
        at = np.searchsorted(self.rowids[: self.n], rowids)
        found = at < self.n
        found[found] = self.rowids[at[found]] == rowids[found]
        return np.where(found, at, -1).astype(np.int64)

    # -- the index's lifecycle --------------------------------------------------------------
    #
    # One builder thread at most per slot (daemon, niced) creates, adopts or extends
    # the index; it is the only writer of the index and of its files, so searches
    # only read it (under ``_lock``, held by the builder while it adds a batch to
    # an index searches use). Rows are append-only and a row below ``n`` is never
    # rewritten (``append`` replaces the arrays with grown copies), so the builder
    # reads ``n`` first and then the arrays without locking the store.

    def has_ann(self) -> bool:
        return self._ann is not None

    def ann_pending(self) -> bool:
        """Whether an index of an earlier state waits to be checked (``inherit_ann``)."""
        return self._ann_pending is not None

    def ann_rows(self) -> int:
        """Rows ``[0, ann_rows)`` are in the index."""
        return self._ann_rows if self._ann is not None else 0

    def ann_index(self) -> Any:
        """The HNSW index (usearch ``Index``), if there is one; it may lag the rows.

        Stops a running build first (unless called by the builder): the index
        handed out is no longer written to.
        """
        self.stop_build()
        return self._ann

    def set_ann(self, index: Any, rows: int, source: str) -> None:
        """Use ``index``, which holds exactly the rows ``[0, rows)`` keyed by rowid."""
        with self._lock:
            self._ann, self._ann_rows, self.ann_source = index, rows, source
            self._ann_pending = None

    def inherit_ann(
        self, index: Any, rowids: NDArray[np.int64], vectors: NDArray[np.float32]
    ) -> None:
        """Offer an index of an earlier state (its rowids and vectors); checked by the
        builder before use (``_adopt_ann``)."""
        self._ann, self._ann_rows = None, 0
        self._ann_pending = (index, rowids, vectors)

    def building(self) -> bool:
        """Whether a builder thread is running."""
        builder = self._builder
        return builder is not None and builder.is_alive()

    def wait_ann(self, timeout: float | None = None) -> bool:
        """Wait for a running build; True when none is running (any more)."""
        builder = self._builder
        if builder is not None and builder is not threading.current_thread():
            builder.join(timeout)
        return not self.building()

    def stop_build(self) -> None:
        """Ask a running builder to stop after its current batch, and wait for it.

        What it added so far stays usable (published with the rows it holds).
        """
        builder = self._builder
        if builder is None or builder is threading.current_thread():
            return
        self._cancel.set()
        builder.join()
        self._cancel.clear()

    def _start_build(self) -> None:
        """Start the builder unless one runs (or it would have nothing to do)."""
        if self.building() or not ann_available():
            return
        if self._ann is not None and self._ann_rows >= self.n:
            return
        self._cancel.clear()
        if not BACKGROUND_BUILD:  # inline (tests, benchmarks of the index itself)
            self._build()
            return
        builder = threading.Thread(target=self._build, name="memorybank-ann-build", daemon=True)
        self._builder = builder
        _BUILDERS.add(self)
        builder.start()

    def _build(self) -> None:
        if BACKGROUND_BUILD:
            with contextlib.suppress(OSError, AttributeError):
                # the request path first: usearch's worker threads inherit this
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BUILD_NICE)
        try:
            self._build_rows()
            persist = self.persist
            if persist is not None and self._ann is not None and not self._cancel.is_set():
                persist(self)
        except Exception:  # a failed build leaves exact search: never an error to callers
            _log.exception("building the ANN index failed; searches stay exact")
        finally:
            _BUILDERS.discard(self)

    def _build_rows(self) -> None:
        """Bring an index up to the rows (in batches, checking ``_cancel`` between)."""
        index = self._ann
        published = index is not None
        done = self._ann_rows if published else 0
        source = self.ann_source or "built"
        if published and _is_view(index):
            # a read-only view of the persisted file: extended as a copy, searched meanwhile
            index = index.copy()
            configure_ann(index)
            published = False
        if index is None and self._ann_pending is not None:
            adopted = self._adopt_ann()
            if adopted is not None:
                index, done = adopted
                source = "adopted"
        if index is None:
            index = usearch_index()(
                ndim=self.dim, metric="cos", dtype="f16", connectivity=CONNECTIVITY
            )
            configure_ann(index)
            source = "built"
        began = time.perf_counter()
        while not self._cancel.is_set():
            n = self.n  # first: the arrays read next hold at least these rows
            if done >= n:
                break
            stop = min(n, done + (BUILD_BATCH if published else 2 * BUILD_BATCH))
            keys, block = self.ann_keys(done, stop), self.matrix[done:stop]
            live = self.alive[done:stop]
            if not live.all():  # deleted rows stay out of the index
                keys, block = keys[live], block[live]
            threads = _build_threads(len(keys))
            if published:
                with self._lock:
                    if len(keys):
                        index.add(keys, block, threads=threads)
                    self._ann_rows = done = stop
            else:
                if len(keys):
                    index.add(keys, block, threads=threads)
                done = stop
                if n - done <= EXACT_LIMIT // 2 or self._cancel.is_set():
                    self.set_ann(index, done, source)  # searched from now on
                    published = True
            self.build_progress = done
        if not published and done:  # (stopped before its first batch: nothing to use)
            self.set_ann(index, done, source)
        self.build_seconds = time.perf_counter() - began

    def _adopt_ann(self) -> tuple[Any, int] | None:
        """The pending index, reused for the rows whose rowid and vector it holds unchanged.

        Keys of deleted or changed rows are removed (a rowid SQLite gave again to
        another row holds another vector, so it is removed and added again); rows
        it lacks up to the first one it lacks are added (the caller adds the rest).
        None (rebuild) when less than half of it is reusable. Runs in the builder.
        """
        index, rowids, vectors = self._ann_pending  # type: ignore[misc]
        self._ann_pending = None
        if _is_view(index):
            index = index.copy()
            configure_ann(index)
        n = self.n
        at = self.positions(rowids)
        same = at >= 0
        same[same] = self.alive[at[same]]  # a deleted row's key goes
        rows = np.flatnonzero(same)
        for start in range(0, len(rows), 65_536):  # compared in blocks: bounded memory
            part = rows[start : start + 65_536]
            same[part] = np.all(self.matrix[at[part]] == vectors[part], axis=1)
        if int(same.sum()) * 2 < max(n, 1) or int(same.sum()) * 2 < len(rowids):
            return None
        stale = rowids[~same]
        if len(stale):
            index.remove(stale)
        missing = self.alive[:n].copy()
        missing[at[same]] = False
        todo = np.flatnonzero(missing)
        # rows it lacks below its last row: added here; the rest by the caller, in order
        first_new = int(at[same].max()) + 1 if same.any() else 0
        gaps = todo[todo < first_new]
        if len(gaps):
            index.add(
                self.ann_keys(0, n)[gaps], self.matrix[gaps], threads=_build_threads(len(gaps))
            )
        if len(stale) > len(gaps):
            # the slots left over: so deleted vectors leave no trace in the index
            # (nor in its persisted file)
            self._overwrite_freed(index, len(stale) - len(gaps))
        return index, first_new


def _frozen(codes: NDArray[np.int32]) -> NDArray[np.int32]:
    """``codes``, read-only (``VectorSlot._has_owner`` remembers facts about the array)."""
    codes.setflags(write=False)
    return codes


def _is_view(index: Any) -> bool:
    """Whether ``index`` is a read-only view of a persisted file (``_vector_files.load``)."""
    return getattr(index, "memorybank_mapped", None) is not None


def editable(index: Any) -> Any:
    """``index``, or a configured copy of it when it is a read-only view (which usearch
    cannot change: a ``remove`` on a view crashes the process)."""
    if _is_view(index):
        index = index.copy()
        configure_ann(index)
    return index


class _Slots(dict[tuple[str, str, str], "VectorSlot"]):
    """The slots of a cache: a slot replaced or dropped has its builder stopped."""

    def __setitem__(self, key: tuple[str, str, str], slot: VectorSlot) -> None:
        old = self.get(key)
        if old is not None and old is not slot:
            old.stop_build()
        super().__setitem__(key, slot)

    def __delitem__(self, key: tuple[str, str, str]) -> None:
        self[key].stop_build()
        super().__delitem__(key)

    def clear(self) -> None:
        for slot in self.values():
            slot.stop_build()
        super().clear()


class VectorCache:
    """``VectorSlot`` per (tenant, model_id, kind); the store decides when to refresh them."""

    def __init__(self) -> None:
        self.slots: dict[tuple[str, str, str], VectorSlot] = _Slots()
        #: Held by a store's thread while it brings slots up to date or searches them
        #: (an async SQLite store searches on several read connections at once).
        self.lock = threading.Lock()

    def clear(self) -> None:
        """Drop every slot (their builders stopped)."""
        self.slots.clear()

    def stop(self) -> None:
        """Stop every slot's builder (what they built stays usable)."""
        for slot in list(self.slots.values()):
            slot.stop_build()


#: Slots whose builder runs: stopped when the interpreter exits.
_BUILDERS: weakref.WeakSet[VectorSlot] = weakref.WeakSet()


@atexit.register
def _stop_builders() -> None:
    for slot in list(_BUILDERS):
        slot.stop_build()
