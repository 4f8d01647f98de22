"""Worker process of ``test_ann_files``: ``python -m tests.recall._ann_child MODE DB ...``.

Runs with a low ``ANN_THRESHOLD`` (the tests' small sizes use the HNSW index).
Modes:
    search SEED         one search for the vector of SEED; prints
                        ``{"source", "n", "ids"}`` (how the index came to be).
    put FIRST COUNT     ``vector_put`` of ids ``n<FIRST>``... in thread ``a``, no search.
    churn FIRST         forever: put 40 vectors, search (every search saves the
                        index), print ``{"saved": i}``; the parent SIGKILLs it.
"""

from __future__ import annotations

import json
import sys

from memorybank.stores.contract._sync.store import VectorItem
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.stores.vectors import exact as _vectors
from memorybank.stores.vectors import files as _vector_files

MODEL = "test:ann"
DIM = 16
THRESHOLD = 100
EXACT_LIMIT = 50


def vec(seed: int) -> list[float]:
    import numpy as np

    return [float(x) for x in np.random.default_rng(seed).standard_normal(DIM)]


def search(store: SQLiteStore, seed: int, k: int = 5) -> dict[str, object]:
    hits = store.vector_search("t", vec(seed), model_id=MODEL, kinds=["entry"], k=k)
    slot = store._vector_cache.slots[("t", MODEL, "entry")]  # type: ignore[attr-defined]
    return {"source": slot.ann_source, "n": slot.n, "ids": [h.id for h in hits]}


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    _vectors.ANN_THRESHOLD, _vectors.EXACT_LIMIT = THRESHOLD, EXACT_LIMIT
    _vectors.SCOPED_EXACT_LIMIT = EXACT_LIMIT  # scoped searches use the index too
    _vectors.BACKGROUND_BUILD = False  # each search waits for the build and its save
    store = SQLiteStore(path)
    try:
        if mode == "search":
            print(json.dumps(search(store, int(sys.argv[3]))), flush=True)
        elif mode == "put":
            first, count = int(sys.argv[3]), int(sys.argv[4])
            store.vector_put(
                "t",
                [
                    VectorItem("entry", f"n{i}", MODEL, vec(i), "a")
                    for i in range(first, first + count)
                ],
            )
        elif mode == "churn":
            _vector_files.SAVE_AFTER_ROWS, _vector_files.SAVE_AFTER_SHARE = 1, 0.0
            first = int(sys.argv[3])
            for i in range(10**6):
                start = first + 40 * i
                store.vector_put(
                    "t",
                    [
                        VectorItem("entry", f"c{j}", MODEL, vec(j), "a")
                        for j in range(start, start + 40)
                    ],
                )
                search(store, start)
                print(json.dumps({"saved": i, "upto": start + 40}), flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    main()
