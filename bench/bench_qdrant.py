"""QdrantIndex (qdrant-client local mode) against the SQLite store's own vector index.

Q1  ingest N 384-d entry vectors (100 per thread, ``store.vector_put`` of 10,000):
    into SQLite alone, and into SQLite + Qdrant through ``vector_index`` (the
    store write plus the Qdrant upsert), in vectors/s.
Q2  top-10 semantic search p50/p95 at the store contract (``vector_search``),
    unscoped and scoped to one user of ten: the SQLite store's cached/ANN
    search, memorybank's QdrantIndex (Qdrant filter + the store re-check), and
    the raw ``qdrant_client.query_points`` with the same filter (the driver
    baseline, in the same run); plus numpy exact search over an in-memory matrix.
Q3  recall@10 of each against exact search.

Local mode is Qdrant's in-process Python implementation (exact search, no HNSW,
no payload indexes): it stands for the client code, not for a Qdrant server's
speed. Vectors as in ``bench.bench_search`` (clustered, 384-d).

Run: ``python -m bench qdrant [--quick]`` or ``python -m bench.bench_qdrant [--n 100000]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench._util import measure, table
from bench.bench_search import PER_THREAD, dataset, exact_top, queries
from memorybank.records import Thread
from memorybank.stores.contract._sync.store import Store, VectorItem
from memorybank.stores.contract.types import UNSET, Visibility
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.vector_index._sync.index import indexed
from memorybank.vector_index.points import collection_name, scope_filter

MODEL = "bench:precomputed"
USERS = 10
TENANT = "bench"


def ingest(store: Store, vectors: NDArray[np.float32]) -> float:
    """Threads (owned by ten users in turn) and their entry vectors; vectors/s."""
    now = datetime.now(UTC)
    start = time.perf_counter()
    for t in range(0, len(vectors), 10_000):
        end = min(t + 10_000, len(vectors))
        thread_ids = [f"t{i // PER_THREAD:06d}" for i in range(t, end)]
        for tid in dict.fromkeys(thread_ids):
            user = f"u{int(tid[1:]) % USERS}"
            store.thread_create(Thread(tid, TENANT, user, None, None, {}, "active", now, now))
        store.vector_put(
            TENANT,
            [
                VectorItem("entry", f"e{i:07d}", MODEL, vectors[i], thread_ids[i - t])
                for i in range(t, end)
            ],
        )
    return len(vectors) / (time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    # qdrant-client's local mode searches exactly in Python (seconds per query at
    # 100k): the default keeps `make bench` short; ``--n 100000`` is the size.
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    n = 5_000 if args.quick else args.n
    repeat = 10 if args.quick else args.repeat

    from memorybank.vector_index import QdrantIndex

    _, vectors = dataset(n)
    _, qvectors = queries(max(repeat, 50))
    ids = np.arange(n)
    users = (ids // PER_THREAD) % USERS
    rows: list[list[Any]] = []
    notes = [f"N = {n:,} vectors of 384 dims, top-10, {repeat} queries; machine shared (loaded)"]
    with tempfile.TemporaryDirectory() as tmp:
        plain = SQLiteStore(Path(tmp) / "plain.db", synchronous="normal")
        base = SQLiteStore(Path(tmp) / "indexed.db", synchronous="normal")
        index = QdrantIndex(":memory:", collection_prefix="bench")
        both = indexed(base, index)
        try:
            rate_sqlite = ingest(plain, vectors)
            rate_qdrant = ingest(both, vectors)
            notes.append(
                f"ingest: SQLite {rate_sqlite:,.0f} vectors/s; SQLite + Qdrant "
                f"{rate_qdrant:,.0f} vectors/s ({rate_qdrant / rate_sqlite:.2f}x)"
            )
            start = time.perf_counter()
            plain.vector_search(TENANT, qvectors[0], model_id=MODEL, kinds=["entry"], k=10)
            took = time.perf_counter() - start
            notes.append(f"SQLite first search (builds its cache): {took:.2f} s")
            name = collection_name("bench", MODEL, 384)
            cursor = iter(range(10**9))

            for label, scope, mask in (
                ("all", None, None),
                ("one user of 10", Visibility(UNSET, "u3"), users == 3),
            ):
                matrix = vectors if mask is None else vectors[mask]
                row_ids = ids if mask is None else ids[mask]

                def store_search(
                    store: Store, q: NDArray[np.float32], scope: Visibility | None = scope
                ) -> list[str]:
                    hits = store.vector_search(
                        TENANT,
                        q.tolist(),
                        model_id=MODEL,
                        kinds=["entry"],
                        k=10,
                        visible_to=scope,
                    )
                    return [h.id for h in hits]

                flt = scope_filter(TENANT, kinds=["entry"], visible_to=scope)

                def raw_search(q: NDArray[np.float32], flt: Any = flt) -> list[str]:
                    found = index.client.query_points(
                        name,
                        query=q.tolist(),
                        query_filter=flt,
                        limit=10,
                        with_payload=["kind", "rid", "thread_id"],
                    )
                    return [str((p.payload or {})["rid"]) for p in found.points]

                def nxt() -> NDArray[np.float32]:
                    row: NDArray[np.float32] = qvectors[next(cursor) % len(qvectors)]
                    return row

                timings = {
                    "SQLite store": measure(lambda: store_search(plain, nxt()), repeat, 1),
                    "memorybank QdrantIndex": measure(lambda: store_search(both, nxt()), repeat, 1),
                    "raw qdrant-client": measure(lambda: raw_search(nxt()), repeat, 1),
                    "numpy exact": measure(
                        lambda matrix=matrix: exact_top(matrix, nxt()),  # type: ignore[misc]
                        repeat,
                        1,
                    ),
                }
                raw_p50 = timings["raw qdrant-client"].p50
                recalls: dict[str, list[float]] = {k: [] for k in timings}
                for i in range(min(repeat, 50)):
                    q = qvectors[i]
                    exact = {f"e{row_ids[j]:07d}" for j in exact_top(matrix, q)}
                    recalls["SQLite store"].append(len(exact & set(store_search(plain, q))) / 10)
                    got = set(store_search(both, q))
                    recalls["memorybank QdrantIndex"].append(len(exact & got) / 10)
                    recalls["raw qdrant-client"].append(len(exact & set(raw_search(q))) / 10)
                    recalls["numpy exact"].append(1.0)
                for system, lat in timings.items():
                    rows.append(
                        [
                            label,
                            system,
                            lat.p50,
                            lat.p95,
                            f"{lat.p50 / raw_p50:.2f}x",
                            f"{np.mean(recalls[system]):.3f}",
                        ]
                    )
        finally:
            both.close()
            index.close()
            plain.close()
    print(
        table(
            ["scope", "system", "p50 ms", "p95 ms", "p50 vs raw qdrant-client", "recall@10"], rows
        )
    )
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
