"""Semantic search latency right after a vector delete (SQLite file store).

``python -m bench.bench_vector_delete --vectors 6000 --db /tmp/x.db`` stores N 384-d
entry vectors in one thread, warms the cache (and, beyond the ANN threshold, the
HNSW index), then repeats: write one vector in a small thread, search, delete that
thread (its vector goes, so the database logs or counts a vector deletion), and
time the next search; and, for comparison, a search after a write only. Prints
one JSON line. It uses whatever ``memorybank`` is on ``PYTHONPATH``, so the same
script measures two versions in one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vectors", type=int, default=6000)
    parser.add_argument("--db", required=True)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()

    from memorybank.records import Thread
    from memorybank.stores.contract._sync.store import VectorItem
    from memorybank.stores.sqlite._sync import SQLiteStore

    rng = np.random.default_rng(7)
    dim, model, tenant = 384, "bench:delete", "b"
    store = SQLiteStore(args.db, synchronous="normal")
    now = datetime.now(UTC)
    if store.thread_get(tenant, "big") is None:
        store.thread_create(Thread("big", tenant, None, None, None, {}, "active", now, now))
        for start in range(0, args.vectors, 5000):
            count = min(5000, args.vectors - start)
            block = rng.standard_normal((count, dim)).astype(np.float32)
            store.vector_put(
                tenant,
                [
                    VectorItem("entry", f"e{start + i}", model, block[i].tolist(), "big")
                    for i in range(count)
                ],
            )
    query = rng.standard_normal(dim).astype(np.float32).tolist()

    def search() -> float:
        began = time.perf_counter()
        store.vector_search(tenant, query, model_id=model, kinds=["entry"], k=10)
        return (time.perf_counter() - began) * 1000

    began = time.perf_counter()
    search()
    first = (time.perf_counter() - began) * 1000
    after_delete, after_write, steady = [], [], []
    for r in range(args.rounds):
        tid = f"small-{r}-{time.time_ns()}"
        store.thread_create(Thread(tid, tenant, None, None, None, {}, "active", now, now))
        vec = rng.standard_normal(dim).astype(np.float32).tolist()
        store.vector_put(tenant, [VectorItem("entry", f"s{tid}", model, vec, tid)])
        after_write.append(search())
        steady.append(search())
        store.thread_delete(tenant, tid)
        after_delete.append(search())
    store.close()
    print(
        json.dumps(
            {
                "vectors": args.vectors,
                "first_search_ms": round(first, 1),
                "after_delete_p50_ms": round(statistics.median(after_delete), 2),
                "after_write_p50_ms": round(statistics.median(after_write), 2),
                "steady_p50_ms": round(statistics.median(steady), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
