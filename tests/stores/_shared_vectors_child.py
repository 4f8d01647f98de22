"""Worker process of ``test_sqlite_shared_vectors``.

``python -m tests.stores._shared_vectors_child DB``.

A sync ``SQLiteStore`` over DB with a low ``SHARE_MIN_ROWS``; reads one JSON command a
line on stdin and answers one JSON line:
    {"op": "search", "seed": S, "user": U}  the ids of the 5 best entry vectors for
        ``vec(S)`` visible to user U (with their scores), whether the slot's matrix is
        shared, and the ``.f32`` files this process maps
    {"op": "put", "id": I, "seed": S, "thread": T}  ``vector_put`` of ``vec(S)`` as I in T
"""

from __future__ import annotations

import json
import sys
from typing import Any

from memorybank.stores.contract._sync.store import VectorItem, Visibility
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.stores.vectors import exact as _vectors

MODEL = "test:shared"
DIM = 16
SHARE_MIN_ROWS = 64


def vec(seed: int) -> list[float]:
    import numpy as np

    return [float(x) for x in np.random.default_rng(seed).standard_normal(DIM)]


def mapped_f32() -> list[str]:
    """The ``.f32`` vector files this process maps."""
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if line.rstrip().endswith(".f32")})


def search(store: SQLiteStore, seed: int, user: str) -> dict[str, Any]:
    hits = store.vector_search(
        "t", vec(seed), model_id=MODEL, kinds=["entry"], k=5, visible_to=Visibility(None, user)
    )
    slot = store._vector_cache.slots[("t", MODEL, "entry")]  # type: ignore[attr-defined]
    return {
        "ids": [h.id for h in hits],
        "scores": [h.score for h in hits],
        "shared": slot.shared,
        "maps": mapped_f32(),
    }


def main() -> None:
    _vectors.SHARE_MIN_ROWS = SHARE_MIN_ROWS
    store = SQLiteStore(sys.argv[1])
    try:
        for line in sys.stdin:
            command = json.loads(line)
            if command["op"] == "search":
                answer = search(store, command["seed"], command["user"])
            else:
                item = VectorItem(
                    "entry", command["id"], MODEL, vec(command["seed"]), command["thread"]
                )
                store.vector_put("t", [item])
                answer = {}
            print(json.dumps(answer), flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    main()
