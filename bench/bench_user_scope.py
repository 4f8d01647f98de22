"""User-scope search: one user's whole history among many other users' entries.

U1  ``memory.search(question, user_id=..., agent_id=...)`` (no ``thread_id``) top-10
    p50/p95 per mode (hybrid, keyword, semantic) for a user with 10,000 entries in
    200 threads, among ``--others`` entries of other users (default 100k, 1M with
    ``--others 1000000``), on SQLite and PostgreSQL.
U2  The raw baseline in the same run: the store's own full-text query scoped to
    the user's threads (SQLite FTS5 ``MATCH ... ORDER BY bm25``, PostgreSQL
    ``tsvector @@ ... ORDER BY ts_rank_cd``) returning 30 rows with their content,
    and pgvector ``ORDER BY embedding <=> q LIMIT 30`` where the extension is
    installed (else numpy exact search over the user's vectors in memory).

Vectors are precomputed (a lookup embedder, as in ``bench_search``); entries are
loaded with ``entries.add_many`` (100 per thread for the other users, 50 for
the user), so ingest goes through the public API.

Built databases are cached (building 1M entries takes a while): the SQLite file
in ``/tmp/memorybank-bench-user-scope/`` (copied for each run, so a run never
changes the cache; an older schema is migrated on the copy), the PostgreSQL
tables under the prefix ``bus_cache<N>_`` (kept; migrated in place). Both are
keyed by ``--others``; ``--fresh`` rebuilds them.

Run: ``python -m bench.bench_user_scope [--quick] [--others N] [--stores sqlite,postgres]
[--postgres URL] [--profile] [--fresh]``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench._util import measure, table
from bench.bench_search import DIM, MODEL, dataset, queries
from memorybank import Memory
from memorybank.stores.contract._sync.store import VectorItem
from memorybank.stores.sql.common import fts_query

USER, AGENT = "u-main", "agent"
USER_ENTRIES, USER_THREADS = 10_000, 200
OTHER_PER_THREAD, OTHER_THREADS_PER_USER = 100, 10
CHUNK = 10_000
FETCH = 30  # what search asks each native index for (max(30, 3k))
CACHE = Path(tempfile.gettempdir()) / "memorybank-bench-user-scope"


class Lookup:
    """An embedder that looks the questions' precomputed vectors up."""

    def __init__(self) -> None:
        self.fixed: dict[str, NDArray[np.float32]] = {}

    @property
    def model_id(self) -> str:
        return MODEL

    @property
    def dimensions(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.fixed[t].tolist() for t in texts]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def load(memory: Memory, others: int) -> tuple[float, NDArray[np.float32]]:
    """The user's 10,000 entries, then ``others`` entries of other users; entries/s.

    ``memory`` has no embedder: the precomputed vectors go straight to
    ``store.vector_put`` (the embedder path checks each vector in Python, which
    would dominate the load, not the search this measures)."""
    start = time.perf_counter()
    store = memory.store

    def add(owner: str, texts: list[str], vectors: NDArray[np.float32]) -> None:
        thread = memory.threads.create(user_id=owner, agent_id=AGENT)
        entries = memory.entries.add_many(
            thread.id, [{"role": "user", "content": x} for x in texts]
        )
        store.vector_put(
            memory.tenant_id,
            [
                VectorItem("entry", e.id, MODEL, vec, thread.id)
                for e, vec in zip(entries, vectors, strict=True)
            ],
        )

    texts, vectors = dataset(USER_ENTRIES, seed=7)
    per = USER_ENTRIES // USER_THREADS
    for t in range(0, USER_ENTRIES, per):
        add(USER, texts[t : t + per], vectors[t : t + per])
    user_vectors = vectors
    thread_no = 0
    for c in range(0, others, CHUNK):
        n = min(CHUNK, others - c)
        texts, vectors = dataset(n, seed=100 + c // CHUNK)
        for t in range(0, n, OTHER_PER_THREAD):
            owner = f"other-{thread_no // OTHER_THREADS_PER_USER}"
            thread_no += 1
            add(owner, texts[t : t + OTHER_PER_THREAD], vectors[t : t + OTHER_PER_THREAD])
    return (USER_ENTRIES + others) / (time.perf_counter() - start), user_vectors


def user_vectors() -> NDArray[np.float32]:
    """The user's vectors (as ``load`` stores them), for a cached database."""
    return dataset(USER_ENTRIES, seed=7)[1]


def sqlite_copy(others: int, fresh: bool, tmp: str) -> tuple[str, str]:
    """A copy of the cached database for ``others`` (built first if missing); a note."""
    CACHE.mkdir(exist_ok=True)
    cached = CACHE / f"sqlite-{others}.db"
    path = str(Path(tmp) / "scope.db")
    if fresh or not cached.exists():
        building = CACHE / f"sqlite-{others}.building.db"
        building.unlink(missing_ok=True)
        with Memory(f"sqlite:///{building}") as plain:
            rate, _ = load(plain, others)
        shutil.rmtree(f"{building}.ann", ignore_errors=True)
        building.replace(cached)
        note = f"sqlite: loaded at {rate:,.0f} entries/s (cached in {cached})"
    else:
        note = f"sqlite: database from the cache {cached}"
    shutil.copyfile(cached, path)
    return path, note


def _vec(q: NDArray[np.float32]) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in q) + "]"


def raw_sqlite(path: str) -> Callable[[str, NDArray[np.float32]], object]:
    import sqlite3

    conn = sqlite3.connect(path)
    p = "memorybank_"  # SQLiteStore's default table prefix
    sql = (
        f"SELECT e.id, e.thread_id, e.content, -bm25({p}entries_fts) FROM {p}entries_fts"
        f" JOIN {p}entries e ON e.rowid = {p}entries_fts.rowid"
        f" JOIN {p}threads t ON t.tenant_id = e.tenant_id AND t.id = e.thread_id"
        f" WHERE {p}entries_fts MATCH ? AND e.tenant_id = 'default'"
        " AND (t.agent_id IS NULL OR t.agent_id = ?) AND (t.user_id IS NULL OR t.user_id = ?)"
        f" ORDER BY bm25({p}entries_fts) LIMIT ?"
    )
    return lambda text, _q: conn.execute(sql, (fts_query(text), AGENT, USER, FETCH)).fetchall()


def raw_postgres(
    url: str, prefix: str, pgvector: bool
) -> tuple[Callable[[str, NDArray[np.float32]], object], Any]:
    import psycopg

    from memorybank.stores.postgres._sync import tsquery

    conn = psycopg.connect(url, autocommit=True)
    text_sql = (
        "SELECT e.id, e.thread_id, e.content, ts_rank_cd(e.search, to_tsquery('english', %(q)s))"
        f" AS s FROM {prefix}entries e JOIN {prefix}threads t ON t.tenant_id = e.tenant_id"
        " AND t.id = e.thread_id WHERE e.search @@ to_tsquery('english', %(q)s)"
        " AND e.tenant_id = 'default'"
        " AND (t.agent_id IS NULL OR t.agent_id = %(agent)s)"
        " AND (t.user_id IS NULL OR t.user_id = %(user)s) ORDER BY s DESC, e.id LIMIT %(k)s"
    )
    vec_sql = (
        f"SELECT v.id FROM {prefix}vectors v JOIN {prefix}threads t ON t.tenant_id = v.tenant_id"
        f" AND t.id = v.thread_id WHERE v.tenant_id = 'default' AND v.model_id = %s"
        f" AND (t.agent_id IS NULL OR t.agent_id = %s) AND (t.user_id IS NULL OR t.user_id = %s)"
        f" ORDER BY v.embedding <=> %s::vector LIMIT %s"
    )

    def raw(text: str, q: NDArray[np.float32]) -> object:
        params = {"q": tsquery(text), "agent": AGENT, "user": USER, "k": FETCH}
        rows = conn.execute(text_sql, params).fetchall()
        if pgvector:
            rows += conn.execute(vec_sql, (MODEL, AGENT, USER, _vec(q), FETCH)).fetchall()
        return rows

    return raw, conn


def run_store(
    name: str,
    memory: Memory,
    embedder: Lookup,
    others: int,
    repeat: int,
    raw: Callable[[str, NDArray[np.float32]], object],
    raw_label: str,
    user_vectors: NDArray[np.float32] | None,
    out: list[list[Any]],
    notes: list[str],
    profile: bool,
) -> None:
    qtexts, qvectors = queries(max(repeat, 50), seed=11)
    embedder.fixed = dict(zip(qtexts, qvectors, strict=True))
    cursor = iter(range(10**9))

    def search(mode: str) -> object:
        i = next(cursor) % len(qtexts)
        return memory.search(qtexts[i], mode=mode, user_id=USER, agent_id=AGENT, kinds=("entries",))  # type: ignore[arg-type]

    first = time.perf_counter()
    search("hybrid")
    notes.append(f"{name}: first user-scope search {time.perf_counter() - first:.2f} s")
    size = f"{others // 1000}k others"
    for mode in ("hybrid", "keyword", "semantic"):
        lat = measure(lambda m=mode: search(m), repeat, warmup=3)  # type: ignore[misc]
        out.append([size, name, f"memorybank {mode}", lat.p50, lat.p95])

    def raw_call() -> object:
        i = next(cursor) % len(qtexts)
        found = raw(qtexts[i], qvectors[i])
        if user_vectors is not None:
            scores = user_vectors @ qvectors[i]
            np.argpartition(-scores, FETCH)[:FETCH]
        return found

    lat = measure(raw_call, repeat, warmup=3)
    out.append([size, name, raw_label, lat.p50, lat.p95])
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20):
            search("hybrid")
        prof.disable()
        print(f"\n### cProfile: 20 user-scope hybrid searches on {name}\n")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(35)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k others, fewer queries")
    parser.add_argument("--others", type=int, default=100_000, help="other users' entries")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--profile", action="store_true", help="cProfile 20 hybrid searches")
    parser.add_argument("--fresh", action="store_true", help="rebuild the cached databases")
    args = parser.parse_args(argv)
    others = 10_000 if args.quick else args.others
    repeat = 30 if args.quick else 100
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    out: list[list[Any]] = []
    notes: list[str] = []
    if "sqlite" in stores:
        with tempfile.TemporaryDirectory() as tmp:
            path, note = sqlite_copy(others, args.fresh, tmp)
            notes.append(note)
            embedder = Lookup()
            with Memory(f"sqlite:///{path}", embedder=embedder) as memory:
                run_store(
                    "sqlite",
                    memory,
                    embedder,
                    others,
                    repeat,
                    raw_sqlite(path),
                    "raw FTS5 + numpy (user's vectors)",
                    user_vectors(),
                    out,
                    notes,
                    args.profile,
                )
    if "postgres" in stores:
        run_pg(args.postgres, others, repeat, out, notes, args.profile, args.fresh)
    print("### User-scope search, top-10 (ms)\n")
    print(table(["size", "store", "what", "p50 ms", "p95 ms"], out))
    print()
    for note in notes:
        print("-", note)


def run_pg(
    url: str,
    others: int,
    repeat: int,
    out: list[list[Any]],
    notes: list[str],
    profile: bool,
    fresh: bool,
) -> None:
    try:
        import psycopg
    except ImportError:
        notes.append("postgres: psycopg not installed, skipped")
        return
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as error:
        notes.append(f"postgres: unreachable ({type(error).__name__}), skipped")
        return
    from memorybank.stores import PostgresStore

    prefix = f"bus_cache{others}_"
    embedder = Lookup()
    raw_conn = None
    with psycopg.connect(url, autocommit=True) as conn:
        # A finished build records itself in its done table (a killed one has none).
        done = conn.execute("SELECT to_regclass(%s)", (prefix + "built",)).fetchone()
        if fresh or done is None or done[0] is None:
            drop_tables(conn, prefix)
            fresh = True
    try:
        if fresh:
            with Memory(PostgresStore.from_url(url, prefix=prefix)) as plain:
                rate, _ = load(plain, others)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"CREATE TABLE {prefix}built (at timestamptz DEFAULT now())")
            notes.append(f"postgresql: loaded at {rate:,.0f} entries/s (kept as {prefix}*)")
        else:
            notes.append(f"postgresql: tables from the cache {prefix}* (--fresh rebuilds)")
        store = PostgresStore.from_url(url, prefix=prefix)
        with Memory(store, embedder=embedder) as memory:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"ANALYZE {prefix}entries")
                conn.execute(f"ANALYZE {prefix}threads")
                conn.execute(f"ANALYZE {prefix}vectors")
            pgvector = "pgvector" in store.capabilities
            if not pgvector:
                notes.append("postgresql: no pgvector here: the raw vector side is numpy")
            raw, raw_conn = raw_postgres(url, prefix, pgvector)
            run_store(
                "postgresql",
                memory,
                embedder,
                others,
                repeat,
                raw,
                "raw tsvector + " + ("pgvector" if pgvector else "numpy (user's vectors)"),
                None if pgvector else user_vectors(),
                out,
                notes,
                profile,
            )
    finally:
        if raw_conn is not None:
            raw_conn.close()


def drop_tables(conn: Any, prefix: str) -> None:
    like = prefix.replace("_", "\\_") + "%"
    for (name,) in conn.execute(
        "SELECT tablename FROM pg_tables WHERE tablename LIKE %s", (like,)
    ).fetchall():
        conn.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')


if __name__ == "__main__":
    main()
