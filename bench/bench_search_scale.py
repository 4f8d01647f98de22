"""Recall at service scale: a search's cost follows its candidates, not the user's history.

X1  User-scope hybrid search (``AsyncMemory.search(q, user_id=, agent_id=, k=10)``) on a
    store of 50 users x 20 threads x 100 messages (2,000 entries each), from 1, 8 and 32
    concurrent clients in one process, each search for a random user: searches/s and
    p50/p99, the first search of every user in a new process (cold) and after (hot).
    Thread-scoped search and ``build_context`` the same way: ``strategy="hybrid"`` in a
    600-token budget (the thread's 100 messages do not fit, so older turns are picked by
    similarity), with the user's 10 facts and the semantic context of her 5 documents.
X2  The raw equivalent in the same run, taking turns with memorybank: one full-text
    query over the user's threads (30 rows), a numpy top-30 over the user's vectors
    held in memory, one SELECT of the 30 best rows, fused by reciprocal rank; from 1, 8
    and 32 threads, each with its own connection.
X3  Scope size: p50 of the same search for a user with 500 entries and one with
    ``--big`` entries (default 50,000) in a store of ``--scale`` entries (default
    1,000,000, the issue's figure; built in about 2 minutes), the two users' searches
    interleaved, and the ratio of the two; after each user's first search in the process
    and one tenant-wide search (both reported in the notes), so the table is a warm process.
X5  Worker processes (SQLite): the same user-scope search from 2 processes (``--workers``)
    x 16 clients, each process its own ``AsyncMemory`` over the same file (as ``memorybank
    serve --workers 2``), searches/s summed over the processes, once with the vectors shared
    (each slot mapped from one file, ``stores.vectors.files``) and once with a copy each;
    beside the in-process search at 1 and 32 clients and the floor at 32 threads, all in
    turns; the memory of each worker (RSS, its private part, its proportional share).
    The gated rows let at most ``X5_GATES`` searches of a process run at once (the bench's
    own semaphore, the wait counted in the latency): 32 searches interleaved in one process
    hand the GIL back and forth between the event loop and the read threads on every row
    SQLite steps, which on a loaded machine costs more than it overlaps.
X4  Over HTTP (SQLite): the same user-scope search through ``POST /v1/search`` of a
    ``memorybank`` server process (one uvicorn worker, the same embedder), from 1, 8 and
    32 clients (the lean HTTP/1.1 client ``bench._http``), against the in-process
    ``AsyncMemory`` search of the same run.

The floor (X1/X2, beside the raw query): the owner in the full-text index (SQLite: the
``fts_scope`` column, ``content : (terms) AND fts_scope : (her token)``, ranked by the
index alone; PostgreSQL: ``ARRAY[thread_id] && <her threads>``, which ``entries_scoped``
covers), her vectors and row keys in memory for a numpy top-30, one read of the fused
rows by key. Each cell runs memorybank, raw and floor in ``ROUNDS`` turns; X1 runs at
each ``--sizes`` entries per user (default 500 and 2,000), one store each. BLAS runs
one thread (``threadpoolctl``, when installed) for every side.

Vectors are precomputed 384-d (``bench_search.dataset``: clustered, as sentence
embeddings are), so no model runs; texts are 12 words of a 5,000-word vocabulary.
Databases are built through the public API (``entries.add_many``, vectors with
``store.vector_put``) in a temporary directory (SQLite) or under a fresh table prefix
(PostgreSQL, dropped afterwards).

Run: ``python -m bench search-scale`` or ``python -m bench.bench_search_scale [--quick]
[--stores sqlite,postgres] [--scale N] [--big N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import sqlite3
import statistics
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench._util import percentile, table
from bench.bench_search import MODEL, dataset
from bench.bench_user_scope import Lookup
from memorybank import AsyncMemory, Memory
from memorybank.stores.contract._sync.store import VectorItem
from memorybank.stores.sql.common import fts_query

AGENT = "agent"
FACTS = 10  # per user
DOCUMENTS = 5  # per user
FETCH = 30
CLIENTS = (1, 8, 32)
PG_URL = os.environ.get("MEMORYBANK_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


class Known(Lookup):
    """The questions' precomputed vectors; any other text (a fact the context builder
    ranks) a fixed pseudo-random unit vector of its hash."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for text in texts:
            vector = self.fixed.get(text)
            if vector is None:
                rng = np.random.default_rng(zlib.crc32(text.encode()))
                vector = rng.standard_normal(self.dimensions).astype(np.float32)
                vector /= np.linalg.norm(vector)
            out.append(vector.tolist())
        return out


def queries(n: int, seed: int) -> tuple[list[str], NDArray[np.float32]]:
    """Four words of the vocabulary each (what a question shares with the turns), and
    vectors near the entries' clusters."""
    texts, vectors = dataset(n, seed=seed)
    return [" ".join(t.split()[1:5]) + f" q{i}" for i, t in enumerate(texts)], vectors


# -- building ---------------------------------------------------------------------------


def load(memory: Memory, owners: Sequence[tuple[str, int, int]], seed: int) -> dict[str, Any]:
    """``owners``: (user, threads, entries per thread). The user -> (thread ids, matrix)."""
    store = memory.store
    out: dict[str, Any] = {}
    for n, (user, threads, per) in enumerate(owners):
        texts, vectors = dataset(threads * per, seed=seed + n)
        ids: list[str] = []
        thread_ids: list[str] = []
        for t in range(threads):
            thread = memory.threads.create(user_id=user, agent_id=AGENT)
            thread_ids.append(thread.id)
            chunk = slice(t * per, (t + 1) * per)
            for start in range(chunk.start, chunk.stop, 1000):
                stop = min(start + 1000, chunk.stop)
                entries = memory.entries.add_many(
                    thread.id, [{"role": "user", "content": x} for x in texts[start:stop]]
                )
                store.vector_put(
                    memory.tenant_id,
                    [
                        VectorItem("entry", e.id, MODEL, vec, thread.id)
                        for e, vec in zip(entries, vectors[start:stop], strict=True)
                    ],
                )
                ids.extend(e.id for e in entries)
        if threads * per <= 2_000:  # the X1 users: what build_context also reads
            scoped = memory.scoped(user_id=user, agent_id=AGENT)
            for i in range(FACTS):
                scoped.facts.add(content=texts[i])
            docs = [
                scoped.documents.add(texts[-1 - i], metadata={"n": i}) for i in range(DOCUMENTS)
            ]
            store.vector_put(
                memory.tenant_id,
                [VectorItem("document", d.id, MODEL, vectors[-1 - i]) for i, d in enumerate(docs)],
            )
        out[user] = (thread_ids, ids, vectors)
    return out


# -- the raw equivalent -----------------------------------------------------------------


def _top(matrix: NDArray[np.float32], qvec: NDArray[np.float32]) -> NDArray[np.intp]:
    """The rows of the best ``FETCH`` scores of ``matrix @ qvec``, best first."""
    scores = matrix @ qvec
    best = np.argpartition(-scores, FETCH)[:FETCH]
    return best[np.argsort(-scores[best])]


def _fuse(text_ids: Sequence[Any], vector_ids: Sequence[Any]) -> list[Any]:
    score: dict[Any, float] = {}
    for ranked in (text_ids, vector_ids):
        for rank, rid in enumerate(ranked):
            score[rid] = score.get(rid, 0.0) + 1.0 / (60 + rank)
    return sorted(score, key=lambda r: -score[r])[:FETCH]


class RawSQLite:
    """FTS5 over the user's threads, numpy over the user's vectors, one SELECT of rows."""

    def __init__(self, path: str, users: dict[str, Any]) -> None:
        self.path = path
        self.users = users
        self.local = threading.local()
        p = "memorybank_"
        self.text_sql = (
            f"SELECT e.id FROM {p}entries_fts JOIN {p}entries e ON e.rowid = {p}entries_fts.rowid"
            f" JOIN {p}threads t ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
            f" WHERE {p}entries_fts MATCH ? AND e.tenant_id = 'default'"
            " AND t.agent_id = ? AND t.user_id = ? ORDER BY bm25(" + p + "entries_fts) LIMIT ?"
        )
        self.rows_sql = (
            f"SELECT id, thread_id, content, created_at FROM {p}entries"
            " WHERE tenant_id = 'default' AND id IN (" + ",".join("?" * FETCH) + ")"
        )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = sqlite3.connect(self.path, check_same_thread=False)
        return conn

    def __call__(self, user: str, text: str, qvec: NDArray[np.float32], thread: str | None) -> int:
        conn = self._conn()
        _, ids, matrix = self.users[user]
        text_ids = [
            r[0] for r in conn.execute(self.text_sql, (fts_query(text), AGENT, user, FETCH))
        ]
        vector_ids = [ids[i] for i in _top(matrix, qvec)]
        fused = _fuse(text_ids, vector_ids)
        fused += [""] * (FETCH - len(fused))
        return len(conn.execute(self.rows_sql, fused).fetchall())


class RawPostgres:
    """tsvector over the user's threads, numpy over the user's vectors, one SELECT of rows."""

    def __init__(self, url: str, prefix: str, users: dict[str, Any]) -> None:
        import psycopg

        from memorybank.stores.postgres._sync import tsquery

        self.tsquery = tsquery
        self.psycopg = psycopg
        self.url = url
        self.users = users
        self.local = threading.local()
        p = prefix
        self.text_sql = (
            f"SELECT e.id FROM {p}entries e JOIN {p}threads t ON t.tenant_id = e.tenant_id"
            " AND t.id = e.thread_id WHERE e.search @@ to_tsquery('english', %(q)s)"
            " AND e.tenant_id = 'default' AND t.agent_id = %(agent)s AND t.user_id = %(user)s"
            " ORDER BY ts_rank_cd(e.search, to_tsquery('english', %(q)s)) DESC LIMIT %(k)s"
        )
        self.rows_sql = (
            f"SELECT id, thread_id, content, created_at FROM {p}entries"
            " WHERE tenant_id = 'default' AND id = ANY(%s)"
        )

    def _conn(self) -> Any:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = self.psycopg.connect(self.url, autocommit=True)
        return conn

    def __call__(self, user: str, text: str, qvec: NDArray[np.float32], thread: str | None) -> int:
        conn = self._conn()
        _, ids, matrix = self.users[user]
        params = {"q": self.tsquery(text), "agent": AGENT, "user": user, "k": FETCH}
        text_ids = [r[0] for r in conn.execute(self.text_sql, params)]
        vector_ids = [ids[i] for i in _top(matrix, qvec)]
        return len(conn.execute(self.rows_sql, (_fuse(text_ids, vector_ids),)).fetchall())


class FloorSQLite(RawSQLite):
    """The floor: the owner in the full-text index (the ``fts_scope`` column, one token
    per owner: ``content : (terms) AND fts_scope : ("<her token>" OR "<shared>")``, ranked
    by the index alone, no join), her vectors and their rowids in memory for a numpy
    top-30, and one ``SELECT ... WHERE rowid IN (...)`` of the fused 30 rows."""

    def __init__(self, path: str, users: dict[str, Any]) -> None:
        from memorybank.stores.sqlite.schema import SHARED_TOKEN, scope_token

        super().__init__(path, users)
        p = "memorybank_"
        with sqlite3.connect(path) as conn:
            rowid_of = dict(
                conn.execute(f"SELECT id, rowid FROM {p}entries WHERE tenant_id = 'default'")
            )
        self.floor_users = {
            user: (
                np.asarray([rowid_of[i] for i in ids], dtype=np.int64),
                matrix,
                f'"{scope_token("default", user)}" OR "{SHARED_TOKEN}"',
            )
            for user, (_, ids, matrix) in users.items()
        }
        self.text_sql = (
            f"SELECT rowid FROM {p}entries_fts WHERE {p}entries_fts MATCH ?"
            f" ORDER BY bm25({p}entries_fts, 1.0, 0.0) LIMIT {FETCH}"
        )
        self.rows_sql = (
            f"SELECT id, thread_id, content, created_at FROM {p}entries"
            " WHERE rowid IN (" + ",".join("?" * FETCH) + ")"
        )

    def __call__(self, user: str, text: str, qvec: NDArray[np.float32], thread: str | None) -> int:
        conn = self._conn()
        rowids, matrix, owners = self.floor_users[user]
        match = f"content : ({fts_query(text)}) AND fts_scope : ({owners})"
        text_ids = [r[0] for r in conn.execute(self.text_sql, (match,))]
        vector_ids = rowids[_top(matrix, qvec)].tolist()
        fused: list[Any] = _fuse(text_ids, vector_ids)
        fused += [-1] * (FETCH - len(fused))
        return len(conn.execute(self.rows_sql, fused).fetchall())


class FloorPostgres(RawPostgres):
    """The floor: the owner as a predicate the GIN index covers (``entries_scoped`` is
    ``gin (search, (ARRAY[thread_id]))``: ``ARRAY[thread_id] && <her threads>``), her
    vectors in memory for a numpy top-30, and one read of the fused 30 rows by their
    keys (``(thread_id, id)`` pairs: 30 probes of ``entries_id``)."""

    def __init__(self, url: str, prefix: str, users: dict[str, Any]) -> None:
        super().__init__(url, prefix, users)
        self.floor_users: dict[str, Any] = {}
        for user, (threads, ids, matrix) in users.items():
            per = len(ids) // len(threads)
            self.floor_users[user] = (
                threads,
                ids,
                [threads[i // per] for i in range(len(ids))],
                matrix,
            )
        p = prefix
        self.text_sql = (
            f"SELECT thread_id, id FROM {p}entries WHERE search @@ to_tsquery('english', %(q)s)"
            " AND ARRAY[thread_id] && %(threads)s::text[] AND tenant_id = 'default'"
            " ORDER BY ts_rank_cd(search, to_tsquery('english', %(q)s)) DESC LIMIT %(k)s"
        )
        self.rows_sql = (
            f"SELECT e.id, e.thread_id, e.content, e.created_at FROM {p}entries e"
            " JOIN unnest(%s::text[], %s::text[]) AS k(thread_id, id)"
            " ON e.thread_id = k.thread_id AND e.id = k.id"
            " WHERE e.tenant_id = 'default' AND e.branch = 'main'"
        )

    def __call__(self, user: str, text: str, qvec: NDArray[np.float32], thread: str | None) -> int:
        conn = self._conn()
        threads, ids, owners, matrix = self.floor_users[user]
        params = {"q": self.tsquery(text), "threads": threads, "k": FETCH}
        text_keys = [(r[0], r[1]) for r in conn.execute(self.text_sql, params)]
        vector_keys = [(owners[i], ids[i]) for i in _top(matrix, qvec)]
        fused = _fuse(text_keys, vector_keys)
        return len(
            conn.execute(self.rows_sql, ([t for t, _ in fused], [i for _, i in fused])).fetchall()
        )


# -- running ----------------------------------------------------------------------------


ROUNDS = 4  # each cell's searches in this many turns of memorybank, raw, floor


def _stats(samples: list[float], wall: float) -> tuple[float, float, float]:
    return len(samples) / wall, statistics.median(samples) * 1000, percentile(samples, 0.99) * 1000


async def _clients_async(
    call: Callable[[int], Awaitable[object]], clients: int, indexes: range
) -> tuple[list[float], float]:
    counter = iter(indexes)
    samples: list[float] = []

    async def client() -> None:
        for i in counter:
            start = time.perf_counter()
            await call(i)
            samples.append(time.perf_counter() - start)

    wall = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return samples, time.perf_counter() - wall


def _clients_threads(
    call: Callable[[int], object], clients: int, indexes: range
) -> tuple[list[float], float]:
    lock = threading.Lock()
    counter = iter(indexes)
    samples: list[float] = []

    def client() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            start = time.perf_counter()
            call(i)
            with lock:
                samples.append(time.perf_counter() - start)

    wall = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(client) for _ in range(clients)]:
            future.result()
    return samples, time.perf_counter() - wall


async def interleaved(
    mine: Callable[[int], Awaitable[object]],
    others: Sequence[Callable[[int], object]],
    clients: int,
    total: int,
) -> list[tuple[float, float, float]]:
    """``total`` calls of ``mine`` and of each of ``others`` from ``clients`` clients, in
    ``ROUNDS`` turns (the same indexes for each): (calls/s, p50 ms, p99 ms) of each."""
    got: list[tuple[list[float], float]] = [([], 0.0) for _ in range(1 + len(others))]
    step = -(-total // ROUNDS)
    for begin in range(0, total, step):
        indexes = range(begin, min(total, begin + step))
        runs = [await _clients_async(mine, clients, indexes)]
        runs += [_clients_threads(other, clients, indexes) for other in others]
        got = [(a + b, wa + wb) for (a, wa), (b, wb) in zip(got, runs, strict=True)]
    return [_stats(samples, wall) for samples, wall in got]


def _load_avg() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


Raw = Callable[[str, str, NDArray[np.float32], str | None], int]


def _ms(cell: tuple[float, float, float]) -> str:
    return f"{cell[1]:.1f} / {cell[2]:.1f}"


async def run_x1(
    name: str,
    size: str,
    open_memory: Callable[[Lookup], AsyncMemory],
    raw: Raw,
    floor: Raw,
    users: dict[str, Any],
    total: int,
    out: list[list[Any]],
    notes: list[str],
) -> None:
    qtexts, qvecs = queries(512, seed=99)
    lookup = Known()
    lookup.fixed = dict(zip(qtexts, qvecs, strict=True))
    names = sorted(users)
    rng = np.random.default_rng(5)
    picks = [
        (names[int(rng.integers(len(names)))], int(rng.integers(len(qtexts)))) for _ in range(10**5)
    ]
    memory = open_memory(lookup)
    try:
        # cold: the first search of every user in this process (and of this memory),
        # each user's three searches in turn
        cold: list[list[float]] = [[], [], []]
        for n, user in enumerate(names):
            start = time.perf_counter()
            await memory.search(qtexts[n], user_id=user, agent_id=AGENT, k=10)
            cold[0].append(time.perf_counter() - start)
            for got, fn in zip(cold[1:], (raw, floor), strict=True):
                start = time.perf_counter()
                fn(user, qtexts[n], qvecs[n], None)
                got.append(time.perf_counter() - start)
        mb_p50, raw_p50, floor_p50 = (statistics.median(c) * 1000 for c in cold)
        out.append(
            [
                name,
                size,
                "user, cold",
                1,
                "-",
                "-",
                "-",
                "-",
                "-",
                f"{mb_p50:.1f} / -",
                f"{raw_p50:.1f} / -",
                f"{floor_p50:.2f} / -",
                f"{mb_p50 / floor_p50:.1f}x",
            ]
        )

        async def user_search(i: int) -> object:
            user, q = picks[i]
            return await memory.search(qtexts[q], user_id=user, agent_id=AGENT, k=10)

        def raw_user(i: int) -> object:
            user, q = picks[i]
            return raw(user, qtexts[q], qvecs[q], None)

        def floor_user(i: int) -> object:
            user, q = picks[i]
            return floor(user, qtexts[q], qvecs[q], None)

        threads = {u: users[u][0] for u in names}

        async def thread_search(i: int) -> object:
            user, q = picks[i]
            tid = threads[user][i % len(threads[user])]
            return await memory.search(qtexts[q], thread_id=tid, k=10)

        async def context(i: int) -> object:
            user, q = picks[i]
            tid = threads[user][i % len(threads[user])]
            scoped = memory.scoped(user_id=user, agent_id=AGENT)
            return await scoped.build_context(
                tid,
                max_tokens=600,
                strategy="hybrid",
                current_input=qtexts[q],
                include_semantic_context=True,
                include_facts=True,
            )

        for label, mine in (
            ("user, hot", user_search),
            ("thread", thread_search),
            ("build_context", context),
        ):
            for clients in CLIENTS:
                n = total if clients == 1 else total * 2
                mb, rw, fl = await interleaved(mine, (raw_user, floor_user), clients, n)
                out.append(
                    [
                        name,
                        size,
                        label,
                        clients,
                        f"{mb[0]:.0f}",
                        f"{rw[0]:.0f}",
                        f"{fl[0]:.0f}",
                        f"{mb[0] / rw[0]:.2f}",
                        f"{mb[0] / fl[0]:.3f}",
                        _ms(mb),
                        _ms(rw),
                        f"{fl[1]:.2f} / {fl[2]:.2f}",
                        f"{mb[1] / fl[1]:.1f}x",
                    ]
                )
        notes.append(f"{name} X1 ({size}/user): {_load_avg()} at the end")
    finally:
        await memory.close()


async def run_x3(
    name: str,
    open_memory: Callable[[Lookup], AsyncMemory],
    users: dict[str, Any],
    repeat: int,
    out: list[list[Any]],
    notes: list[str],
) -> None:
    qtexts, qvecs = queries(repeat + 1, seed=123)
    lookup = Lookup()
    lookup.fixed = dict(zip(qtexts, qvecs, strict=True))
    memory = open_memory(lookup)
    try:
        # The first search of each user in the new process, while its vectors are not in
        # memory (SQLite reads her scope's from the table and loads the rest on a thread
        # of its own), then one tenant-wide search, which waits for them: the table is a
        # process that has been up for a while.
        for user in ("small", "big"):
            start = time.perf_counter()
            await memory.search(qtexts[-1], user_id=user, agent_id=AGENT, k=10)
            notes.append(
                f"{name} X3: first search of the {user} user in the process"
                f" {(time.perf_counter() - start) * 1000:,.0f} ms"
            )
        start = time.perf_counter()
        await memory.search(qtexts[-1], k=10)
        notes.append(
            f"{name} X3: then a tenant-wide search (every vector in memory)"
            f" {(time.perf_counter() - start) * 1000:,.0f} ms"
        )
        # interleaved, small then big for each question, so a change of the machine's
        # load weighs on both users alike (the ratio is what X3 reports)
        samples: dict[str, list[float]] = {"small": [], "big": []}
        for i in range(repeat):
            for user, got in samples.items():
                start = time.perf_counter()
                await memory.search(qtexts[i], user_id=user, agent_id=AGENT, k=10)
                got.append(time.perf_counter() - start)
        p50 = {user: statistics.median(got) for user, got in samples.items()}
        for user, got in samples.items():
            out.append(
                [
                    name,
                    f"{len(users[user][1]):,}",
                    f"{p50[user] * 1000:.1f}",
                    f"{percentile(got, 0.99) * 1000:.1f}",
                    f"{p50[user] / p50['small']:.2f}x",
                ]
            )
    finally:
        await memory.close()


_SERVE = """
import sys, uvicorn
from bench.bench_search_scale import Known, queries
from memorybank.server.app import create_app
lookup = Known()
texts, vectors = queries(512, seed=99)
lookup.fixed = dict(zip(texts, vectors, strict=True))
uvicorn.run(create_app(sys.argv[1], embedder=lookup, mcp=False), host="127.0.0.1",
            port=int(sys.argv[2]), log_level="warning", access_log=False, ws="none")
"""


async def _http_clients(
    lean: Sequence[Any], body: Callable[[int], object], clients: int, total: int
) -> tuple[float, float, float]:
    """``total`` searches over ``clients`` keep-alive connections, one per client task."""
    counter = iter(range(total))
    samples: list[float] = []

    async def client(conn: Any) -> None:
        for i in counter:
            start = time.perf_counter()
            await conn.request("POST", "/v1/search", body(i))
            samples.append(time.perf_counter() - start)

    wall = time.perf_counter()
    await asyncio.gather(*(client(lean[c]) for c in range(clients)))
    return _stats(samples, time.perf_counter() - wall)


async def _x4_load(url: str, key: str, port: int, names: list[str], total: int) -> list[list[Any]]:
    from bench._http import Connection

    qtexts, qvecs = queries(512, seed=99)
    lookup = Known()
    lookup.fixed = dict(zip(qtexts, qvecs, strict=True))
    rng = np.random.default_rng(7)
    picks = [(names[int(rng.integers(len(names)))], int(rng.integers(512))) for _ in range(10**5)]
    lean = [Connection(port, {"Authorization": f"Bearer {key}"}) for _ in range(max(CLIENTS))]
    for _ in range(600):
        try:
            await lean[0].request("GET", "/healthz")
            break
        except OSError:
            await asyncio.sleep(0.05)

    def body(i: int) -> dict[str, Any]:
        user, q = picks[i]
        return {"query": qtexts[q], "user_id": user, "agent_id": AGENT, "k": 10}

    rows: list[list[Any]] = []
    async with AsyncMemory(url, embedder=lookup) as memory:

        async def local(i: int) -> object:
            user, q = picks[i]
            return await memory.search(qtexts[q], user_id=user, agent_id=AGENT, k=10)

        await local(0)
        for clients in CLIENTS:
            n = total if clients == 1 else total * 2
            web = await _http_clients(lean, body, clients, n)
            mine = _stats(*await _clients_async(local, clients, range(n)))
            rows.append(
                [
                    clients,
                    f"{web[0]:.0f}",
                    f"{mine[0]:.0f}",
                    f"{web[0] / mine[0]:.2f}",
                    f"{web[1]:.1f} / {web[2]:.1f}",
                    f"{mine[1]:.1f} / {mine[2]:.1f}",
                    f"{web[1] - mine[1]:+.1f}",
                ]
            )
    for conn in lean:
        await conn.close()
    return rows


def run_x4(url: str, users: dict[str, Any], total: int, out: list[list[Any]]) -> None:
    """User-scope search over HTTP against in-process, the same searches in turns."""
    import subprocess
    import sys

    from bench.bench_remote import _free_port
    from memorybank.server.keys import KeyRing

    async def new_key() -> str:
        async with AsyncMemory(url) as memory:
            return (await KeyRing(memory.store).create(memory.tenant_id))[1]

    key = asyncio.run(new_key())
    port = _free_port()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVE, url, str(port)],
        env={**os.environ, "PYTHONPATH": path},
        stdout=subprocess.DEVNULL,
    )
    try:
        out += asyncio.run(_x4_load(url, key, port, sorted(users), total))
    finally:
        server.terminate()
        server.wait(10)


def _memory_mb() -> dict[str, float]:
    """This process's RSS, its private part (anonymous pages) and its proportional share
    of every page (PSS: a page mapped by two processes counts half in each), in MB."""
    out: dict[str, float] = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "RssAnon"):
                out[name] = int(value.split()[0]) / 1024
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss:"):
                out["Pss"] = int(line.split()[1]) / 1024
    return out


#: Searches in flight per process in X5's gated rows (the others let every client's in).
X5_GATES = (1, 2)


def _gated(
    call: Callable[[int], Awaitable[object]], inflight: int | None
) -> Callable[[int], Awaitable[object]]:
    """``call`` with at most ``inflight`` calls running at once (None: no limit); a
    caller's wait for its turn counts in its latency."""
    if inflight is None:
        return call
    gate = asyncio.Semaphore(inflight)

    async def gated(i: int) -> object:
        async with gate:
            return await call(i)

    return gated


def _x5_worker(path: str, shared: bool, inflight: int | None, clients: int, conn: Any) -> None:
    """One worker process of X5: its own ``AsyncMemory`` over ``path``; each message
    (a range of indexes) from the parent runs those searches from ``clients`` tasks,
    at most ``inflight`` at once, and answers (samples, start, end, memory); ``None``
    ends it."""
    from memorybank.stores.vectors import exact

    _one_blas_thread()
    if not shared:
        exact.SHARE_MIN_ROWS = 1 << 62  # every process reads its own copy
    qtexts, qvecs = queries(512, seed=99)
    lookup = Known()
    lookup.fixed = dict(zip(qtexts, qvecs, strict=True))

    async def serve() -> None:
        async with AsyncMemory(f"sqlite:///{path}", embedder=lookup) as memory:
            names, picks = conn.recv()
            for n, user in enumerate(names):  # warm: every user's first search
                await memory.search(qtexts[n], user_id=user, agent_id=AGENT, k=10)
            conn.send(_memory_mb())

            async def one(i: int) -> object:
                user, q = picks[i]
                return await memory.search(qtexts[q], user_id=user, agent_id=AGENT, k=10)

            call = _gated(one, inflight)
            while (indexes := conn.recv()) is not None:
                start = time.monotonic()
                samples, _ = await _clients_async(call, clients, indexes)
                conn.send((samples, start, time.monotonic(), _memory_mb()))

    asyncio.run(serve())


def run_x5(
    path: str,
    users: dict[str, Any],
    floor: Raw,
    workers: int,
    total: int,
    out: list[list[Any]],
    notes: list[str],
) -> None:
    """X5: worker processes sharing the vectors or not, against in-process and the floor."""
    import multiprocessing

    qtexts, qvecs = queries(512, seed=99)
    names = sorted(users)
    rng = np.random.default_rng(11)
    picks = [(names[int(rng.integers(len(names)))], int(rng.integers(512))) for _ in range(10**5)]
    clients = max(1, max(CLIENTS) // workers)
    context = multiprocessing.get_context("spawn")
    # (shared vectors, searches in flight per process) of each set of workers; the
    # first set starts alone and saves the files, the own set reads the table
    kinds: dict[str, tuple[bool, int | None]] = {"shared": (True, None), "own": (False, None)}
    kinds |= {f"gated {g}": (True, g) for g in X5_GATES}
    sets: dict[str, list[tuple[Any, Any]]] = {}
    warm: dict[str, list[dict[str, float]]] = {}
    try:
        for kind, (shared, inflight) in kinds.items():
            started = []
            for _ in range(workers):
                ours, theirs = context.Pipe()
                proc = context.Process(
                    target=_x5_worker,
                    args=(path, shared, inflight, clients, theirs),
                    daemon=True,
                )
                proc.start()
                theirs.close()  # (a worker that dies then ends our reads with EOFError)
                ours.send((names, picks))
                started.append((proc, ours))
            warm[kind] = [conn.recv() for _, conn in started]
            sets[kind] = started

        def in_workers(kind: str, indexes: range) -> tuple[list[float], float]:
            parts = [indexes[w::workers] for w in range(workers)]
            for (_, conn), part in zip(sets[kind], parts, strict=True):
                conn.send(part)
            got = [conn.recv() for _, conn in sets[kind]]
            samples = [x for g in got for x in g[0]]
            return samples, max(g[2] for g in got) - min(g[1] for g in got)

        def floor_call(i: int) -> object:
            user, q = picks[i]
            return floor(user, qtexts[q], qvecs[q], None)

        async def measure() -> dict[str, tuple[float, float, float]]:
            lookup = Known()
            lookup.fixed = dict(zip(qtexts, qvecs, strict=True))
            async with AsyncMemory(f"sqlite:///{path}", embedder=lookup) as memory:

                async def one(i: int) -> object:
                    user, q = picks[i]
                    return await memory.search(qtexts[q], user_id=user, agent_id=AGENT, k=10)

                gated = {g: _gated(one, g) for g in X5_GATES}
                for n, user in enumerate(names):  # warm, as the workers
                    await memory.search(qtexts[n], user_id=user, agent_id=AGENT, k=10)
                got: dict[str, tuple[list[float], float]] = {}
                n = total * 2
                step = -(-n // ROUNDS)
                for begin in range(0, n, step):
                    indexes = range(begin, min(n, begin + step))
                    one_client = range(begin, begin + max(1, len(indexes) // 4))
                    runs = {
                        "1": await _clients_async(one, 1, one_client),
                        "32": await _clients_async(one, max(CLIENTS), indexes),
                        **{
                            f"32 gated {g}": await _clients_async(call, max(CLIENTS), indexes)
                            for g, call in gated.items()
                        },
                        **{kind: in_workers(kind, indexes) for kind in kinds},
                        "floor": _clients_threads(floor_call, max(CLIENTS), indexes),
                    }
                    for cell, (samples, wall) in runs.items():
                        before = got.get(cell, ([], 0.0))
                        got[cell] = (before[0] + samples, before[1] + wall)
                return {cell: _stats(*got[cell]) for cell in got}

        cells = asyncio.run(measure())
        ends: dict[str, list[dict[str, float]]] = {}
        for kind, started in sets.items():
            for _, conn in started:
                conn.send(range(0))
            ends[kind] = [conn.recv()[3] for _, conn in started]
    finally:
        for started in sets.values():
            for proc, conn in started:
                with contextlib.suppress(OSError):
                    conn.send(None)
                proc.join(30)
                if proc.is_alive():
                    proc.terminate()
    one_rate = cells["1"][0]
    fl = cells["floor"]

    def mb(memory: list[dict[str, float]]) -> str:
        return ", ".join(f"{m['VmRSS']:.0f} / {m['RssAnon']:.0f} / {m['Pss']:.0f}" for m in memory)

    procs = f"{workers} processes x {clients}"
    rows: list[tuple[str, str, list[dict[str, float]] | None]] = [
        ("in-process, 1 client", "1", None),
        ("in-process, 32 clients", "32", None),
        *((f"in-process, 32 clients, {g} in flight", f"32 gated {g}", None) for g in X5_GATES),
        (f"{procs}, shared vectors", "shared", ends["shared"]),
        (f"{procs}, own vectors", "own", ends["own"]),
        *(
            (f"{procs}, shared vectors, {g} in flight each", f"gated {g}", ends[f"gated {g}"])
            for g in X5_GATES
        ),
    ]
    for label, cell, memory in rows:
        mine = cells[cell]
        out.append(
            [
                label,
                f"{mine[0]:.0f}",
                f"{fl[0]:.0f}",
                f"{mine[0] / fl[0]:.3f}",
                f"{mine[0] / one_rate:.2f}",
                _ms(mine),
                f"{fl[1]:.2f} / {fl[2]:.2f}",
                "-" if memory is None else mb(memory),
            ]
        )
    notes.append(
        "sqlite X5: workers after warming (RSS / private / PSS MB): "
        + "; ".join(f"{kind} {mb(warm[kind])}" for kind in kinds)
        + f"; {_load_avg()} at the end"
    )


def owners_x1(quick: bool, per_user: int) -> list[tuple[str, int, int]]:
    """Users of ``per_user`` entries each: 20 threads when that makes 100 a thread or
    fewer, else threads of 100."""
    threads = max(20, -(-per_user // 100))
    return [(f"user-{n:02d}", threads, per_user // threads) for n in range(10 if quick else 50)]


def owners_x3(scale: int, big: int) -> list[tuple[str, int, int]]:
    rest = max(0, scale - big - 500)
    fillers = [(f"filler-{n}", 20, 100) for n in range(rest // 2000)]
    return [("small", 5, 100), ("big", big // 100, 100), *fillers]


def sqlite_part(
    args: argparse.Namespace,
    x1: list[list[Any]],
    x3: list[list[Any]],
    notes: list[str],
    x4: list[list[Any]] | None = None,
    x5: list[list[Any]] | None = None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for n, size in enumerate([] if args.only_x3 else args.sizes):
            path = os.path.join(tmp, f"scale{size}.db")
            start = time.perf_counter()
            with Memory(f"sqlite:///{path}") as plain:
                users = load(plain, owners_x1(args.quick, size), seed=1000)
            notes.append(
                f"sqlite X1 store ({size:,}/user) built in {time.perf_counter() - start:.0f} s"
            )
            asyncio.run(
                run_x1(
                    "sqlite",
                    f"{size:,}",
                    functools.partial(_sqlite_memory, path),
                    RawSQLite(path, users),
                    FloorSQLite(path, users),
                    users,
                    args.total,
                    x1,
                    notes,
                )
            )
            if x5 is not None and n == len(args.sizes) - 1:
                floor = FloorSQLite(path, users)
                run_x5(path, users, floor, args.workers, args.total, x5, notes)
            if x4 is not None and n == len(args.sizes) - 1:
                run_x4(f"sqlite:///{path}", users, args.total, x4)
                notes.append(f"sqlite X4: {_load_avg()} at the end")
        if args.no_x3:
            return
        path3 = os.path.join(tmp, "scale3.db")
        start = time.perf_counter()
        with Memory(f"sqlite:///{path3}") as plain:
            users3 = load(plain, owners_x3(args.scale, args.big), seed=5000)
        notes.append(
            f"sqlite X3 store ({args.scale:,} entries) built in {time.perf_counter() - start:.0f} s"
        )
        asyncio.run(
            run_x3(
                "sqlite",
                lambda e: AsyncMemory(f"sqlite:///{path3}", embedder=e),
                users3,
                50,
                x3,
                notes,
            )
        )


def postgres_part(
    args: argparse.Namespace, x1: list[list[Any]], x3: list[list[Any]], notes: list[str]
) -> None:
    try:
        import psycopg

        from memorybank.stores import PostgresStore
    except ImportError:
        notes.append("postgres: psycopg not installed, skipped")
        return
    try:
        psycopg.connect(PG_URL, connect_timeout=3).close()
    except Exception as error:
        notes.append(f"postgres: unreachable ({type(error).__name__}), skipped")
        return
    for size in args.sizes:
        prefix = f"bss{uuid.uuid4().hex[:6]}_"
        try:
            start = time.perf_counter()
            with Memory(PostgresStore.from_url(PG_URL, prefix=prefix)) as plain:
                users = load(plain, owners_x1(args.quick, size), seed=1000)
            with psycopg.connect(PG_URL, autocommit=True) as conn:
                conn.execute(f"ANALYZE {prefix}entries")
                conn.execute(f"ANALYZE {prefix}threads")
            notes.append(
                f"postgresql X1 store ({size:,}/user) built in {time.perf_counter() - start:.0f} s"
            )
            asyncio.run(
                run_x1(
                    "postgresql",
                    f"{size:,}",
                    functools.partial(_postgres_memory, prefix),
                    RawPostgres(PG_URL, prefix, users),
                    FloorPostgres(PG_URL, prefix, users),
                    users,
                    args.total,
                    x1,
                    notes,
                )
            )
        finally:
            with psycopg.connect(PG_URL, autocommit=True) as conn:
                like = prefix.replace("_", "\\_") + "%"
                for (table_name,) in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE tablename LIKE %s", (like,)
                ).fetchall():
                    conn.execute(f'DROP TABLE IF EXISTS "{table_name}" CASCADE')


def _sqlite_memory(path: str, embedder: Lookup) -> AsyncMemory:
    return AsyncMemory(f"sqlite:///{path}", embedder=embedder)


def _postgres_memory(prefix: str, embedder: Lookup) -> AsyncMemory:
    from memorybank.stores import AsyncPostgresStore

    return AsyncMemory(AsyncPostgresStore.from_url(PG_URL, prefix=prefix), embedder=embedder)


def _one_blas_thread() -> None:
    """One BLAS thread for memorybank and the raw clients alike: the clients are the
    parallelism here. OpenBLAS threads a product of 2,000 x 384 or more, and on a
    loaded 2-core machine that one product took 8.5 ms instead of 0.58 ms."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1, user_api="blas")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 users, small scale store")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--scale", type=int, default=1_000_000, help="entries in the X3 store")
    parser.add_argument("--big", type=int, default=50_000, help="the big user's entries (X3)")
    parser.add_argument("--total", type=int, default=200, help="searches per 1-client cell")
    parser.add_argument(
        "--sizes", default="500,2000", help="entries per user of the X1 stores (one store each)"
    )
    parser.add_argument("--no-http", action="store_true", help="skip X4 (the HTTP table)")
    parser.add_argument("--no-x3", action="store_true", help="skip X3 (the scope-size table)")
    parser.add_argument(
        "--workers", type=int, default=2, help="worker processes of X5 (0: skip X5)"
    )
    parser.add_argument("--only-x3", action="store_true", help="X3 alone (no X1, X2, X4)")
    args = parser.parse_args(argv)
    _one_blas_thread()
    if args.quick:
        args.scale, args.big, args.total = min(args.scale, 30_000), min(args.big, 10_000), 60
    args.sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    x1: list[list[Any]] = []
    x3: list[list[Any]] = []
    x4: list[list[Any]] = []
    x5: list[list[Any]] = []
    notes: list[str] = []
    if "sqlite" in stores:
        sqlite_part(
            args, x1, x3, notes, None if args.no_http else x4, x5 if args.workers > 0 else None
        )
    if "postgres" in stores and not args.only_x3:
        postgres_part(args, x1, x3, notes)
    print("### X1/X2: hybrid search, memorybank against the raw query and the floor\n")
    headers = [
        "store",
        "entries/user",
        "search",
        "clients",
        "mb/s",
        "raw/s",
        "floor/s",
        "mb/raw",
        "mb/floor",
        "mb p50 / p99 ms",
        "raw p50 / p99 ms",
        "floor p50 / p99 ms",
        "p50 mb/floor",
    ]
    print(table(headers, x1))
    print("\n### X3: user-scope hybrid search p50 by the user's history\n")
    print(table(["store", "user's entries", "p50 ms", "p99 ms", "p50 / small's"], x3))
    if x5:
        print("\n### X5: user-scope search from worker processes (SQLite), in turns\n")
        headers = [
            "run",
            "mb/s",
            "floor/s (32 threads)",
            "mb/floor",
            "mb / in-process 1 client",
            "mb p50 / p99 ms",
            "floor p50 / p99 ms",
            "MB per worker: RSS / private / PSS",
        ]
        print(table(headers, x5))
    if x4:
        print("\n### X4: user-scope search over HTTP (POST /v1/search) against in-process\n")
        headers = [
            "clients",
            "http/s",
            "in-process/s",
            "ratio",
            "http p50 / p99 ms",
            "in-process p50 / p99 ms",
            "added p50 ms",
        ]
        print(table(headers, x4))
    print()
    for note in notes:
        print("-", note)


if __name__ == "__main__":
    main()
