"""Recall speed: ingest with precomputed vectors, search latency per mode, ANN recall.

S1  ingest N entries (100 per thread, ``entries.add_many`` of 100) whose vectors
    are precomputed (a lookup "embedder"), in entries/s: token counting, the
    entries, FTS and the vectors, durable on return.
S2  ``memory.search`` top-10 p50/p95 per mode (semantic, keyword, hybrid) over
    all N entries of the tenant, against the raw baseline in the same run:
    numpy exact search over an in-memory float32 matrix (semantic), and a raw
    pgvector ``ORDER BY embedding <=> q LIMIT 10`` on PostgreSQL.
S3  ANN recall@10 against exact search, where the HNSW index answers
    (SQLite beyond ``memorybank.stores.vectors.exact.ANN_THRESHOLD`` vectors).

Vectors are 384-d, drawn around 2,000 random centres (real sentence embeddings
are clustered, and uniformly random vectors are the worst case for HNSW);
texts are 12 words from a 5,000-word vocabulary. Sizes of 1M load the vectors
with ``store.vector_put`` (threads + vectors, no entry text) and measure the
semantic mode only: the API ingest at that size is S1 x 10.

Run: ``python -m bench.bench_search [--quick] [--sizes 10k,100k,1m]
[--postgres postgresql://postgres@127.0.0.1:5432/test]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench._util import measure, table
from memorybank import Memory
from memorybank.records import Thread
from memorybank.stores.contract._sync.store import VectorItem

DIM = 384
PER_THREAD = 100
MODEL = "bench:precomputed"


class Precomputed:
    """An embedder that looks vectors up: ingest measures memorybank, not a model."""

    def __init__(self, table: dict[str, NDArray[np.float32]]) -> None:
        self.table = table

    @property
    def model_id(self) -> str:
        return MODEL

    @property
    def dimensions(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def _centres() -> NDArray[np.float32]:
    return np.random.default_rng(42).standard_normal((2000, DIM)).astype(np.float32)


def dataset(n: int, seed: int = 0) -> tuple[list[str], NDArray[np.float32]]:
    rng = np.random.default_rng(seed)
    centres = _centres()
    vectors = centres[rng.integers(0, 2000, n)] + 0.6 * rng.standard_normal((n, DIM)).astype(
        np.float32
    )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(5000)]
    words = rng.integers(0, len(vocab), (n, 12))
    texts = [f"{i} " + " ".join(vocab[j] for j in row) for i, row in enumerate(words)]
    return texts, vectors


def queries(count: int, seed: int = 1) -> tuple[list[str], NDArray[np.float32]]:
    """Queries from the same clusters as the data (a question is near its answers)."""
    texts, vectors = dataset(count, seed)
    return [t.split(" ", 1)[1][:40] for t in texts], vectors


def exact_top(matrix: NDArray[np.float32], q: NDArray[np.float32], k: int = 10) -> list[int]:
    scores = matrix @ q
    best = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in best[np.argsort(-scores[best])]]


def ingest_api(memory: Memory, texts: list[str]) -> float:
    start = time.perf_counter()
    for t in range(0, len(texts), PER_THREAD):
        thread = memory.threads.create()
        memory.entries.add_many(
            thread.id, [{"role": "user", "content": text} for text in texts[t : t + PER_THREAD]]
        )
    return len(texts) / (time.perf_counter() - start)


def ingest_vectors(memory: Memory, vectors: NDArray[np.float32]) -> list[str]:
    """Threads and vectors only (for the 1M semantic run)."""
    from datetime import UTC, datetime

    store = memory.store
    now = datetime.now(UTC)
    ids = [f"e{i:07d}" for i in range(len(vectors))]
    for t in range(0, len(vectors), 10_000):
        thread_ids = [f"t{i // PER_THREAD:06d}" for i in range(t, min(t + 10_000, len(vectors)))]
        for tid in dict.fromkeys(thread_ids):
            store.thread_create(
                Thread(tid, memory.tenant_id, None, None, None, {}, "active", now, now)
            )
        store.vector_put(
            memory.tenant_id,
            [
                VectorItem("entry", ids[i], MODEL, vectors[i], thread_ids[i - t])
                for i in range(t, t + len(thread_ids))
            ],
        )
    return ids


def run_size(
    label: str, n: int, url: str, repeat: int, api: bool, out: list[list[Any]], notes: list[str]
) -> None:
    texts, vectors = dataset(n)
    qtexts, qvectors = queries(max(repeat, 50))
    table_ = dict(zip(texts, vectors, strict=True)) | dict(zip(qtexts, qvectors, strict=True))
    with Memory(url, embedder=Precomputed(table_)) as memory:
        if api:
            rate = ingest_api(memory, texts)
            notes.append(f"{label}: ingest {rate:,.0f} entries/s ({url.split(':')[0]})")
        else:
            ingest_vectors(memory, vectors)
        store_name = url.split(":")[0]
        cursor = iter(range(10**9))

        def q(i: int) -> str:
            return qtexts[i % len(qtexts)]

        modes = ["semantic", "keyword", "hybrid"] if api else ["semantic"]
        first = time.perf_counter()
        memory.search(q(0), mode="semantic", kinds=("entries",))
        notes.append(
            f"{label}: first semantic search (builds caches) {time.perf_counter() - first:.2f} s"
        )
        for mode in modes:
            lat = measure(
                lambda m=mode: memory.search(q(next(cursor)), mode=m, kinds=("entries",)),  # type: ignore[misc]
                repeat,
                warmup=3,
            )
            out.append([label, store_name, mode, lat.p50, lat.p95])
        raw = measure(lambda: exact_top(vectors, qvectors[next(cursor) % len(qvectors)]), repeat, 3)
        out.append([label, "numpy exact", "semantic (raw)", raw.p50, raw.p95])
        # recall of what the store answered vs exact
        got_recall = []
        id_of = {}
        if api:
            for e_thread in memory.threads.list():
                for entry in memory.entries.list(e_thread.id):
                    id_of[entry.id] = int(entry.content.split(" ", 1)[0]) if entry.content else -1
        for i in range(min(repeat, 50)):
            hits = memory.search(qtexts[i], mode="semantic", kinds=("entries",))
            found = {id_of[h.id] if api else int(h.id[1:]) for h in hits}
            got_recall.append(len(found & set(exact_top(vectors, qvectors[i]))) / 10)
        notes.append(f"{label}: semantic recall@10 vs exact = {np.mean(got_recall):.3f}")


def run_postgres(url: str, n: int, repeat: int, out: list[list[Any]], notes: list[str]) -> None:
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

    texts, vectors = dataset(n)
    qtexts, qvectors = queries(max(repeat, 50))
    table_ = dict(zip(texts, vectors, strict=True)) | dict(zip(qtexts, qvectors, strict=True))
    prefix = f"bs{os.getpid()}_"
    store = PostgresStore.from_url(url, prefix=prefix)
    label = f"{n // 1000}k"
    try:
        with Memory(store, embedder=Precomputed(table_)) as memory:
            rate = ingest_api(memory, texts)
            notes.append(f"{label}: ingest {rate:,.0f} entries/s (postgresql)")
            cursor = iter(range(10**9))
            for mode in ("semantic", "keyword", "hybrid"):
                lat = measure(
                    lambda m=mode: memory.search(  # type: ignore[misc]
                        qtexts[next(cursor) % len(qtexts)], mode=m, kinds=("entries",)
                    ),
                    repeat,
                    warmup=3,
                )
                out.append([label, "postgresql", mode, lat.p50, lat.p95])
            if "pgvector" in store.capabilities:
                with psycopg.connect(url) as conn:
                    sql = (
                        f"SELECT id FROM {prefix}vectors WHERE tenant_id = 'default' AND"
                        " model_id = %s ORDER BY vector <=> %s::vector LIMIT 10"
                    )

                    def raw() -> None:
                        q = qvectors[next(cursor) % len(qvectors)]
                        conn.execute(sql, (MODEL, "[" + ",".join(f"{x:.6f}" for x in q) + "]"))

                    try:
                        lat = measure(raw, repeat, warmup=3)
                        out.append([label, "raw pgvector", "semantic (raw)", lat.p50, lat.p95])
                    except Exception as error:
                        notes.append(f"postgres raw pgvector query failed: {error}")
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            for (name,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE %s", (prefix + "%",)
            ).fetchall():
                conn.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k only, fewer queries")
    parser.add_argument("--sizes", default="10k,100k", help="comma list of 10k, 100k, 1m")
    parser.add_argument("--postgres", default=None, help="also run PostgreSQL at 10k")
    args = parser.parse_args(argv)
    sizes = ["10k"] if args.quick else [s.strip().lower() for s in args.sizes.split(",") if s]
    repeat = 30 if args.quick else 100
    out: list[list[Any]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for label in sizes:
            n = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}[label]
            url = f"sqlite:///{Path(tmp) / f'search_{label}.db'}"
            run_size(label, n, url, repeat, api=n <= 100_000, out=out, notes=notes)
    if args.postgres:
        run_postgres(args.postgres, 10_000, repeat, out, notes)
    print("### Search latency, top-10 (ms)\n")
    print(table(["size", "store", "mode", "p50 ms", "p95 ms"], out))
    print()
    for note in notes:
        print("-", note)


if __name__ == "__main__":
    main()
