"""Where a hot user-scope hybrid search spends its Python CPU, and a fingerprint of its
results (to check a speed change does not change what is found).

Builds (once, cached at ``--path``) a SQLite store of ``--users`` users x ``--per-user``
entries with the search-scale builders (precomputed vectors, no model), warms every user,
then runs ``--searches`` hot searches under cProfile (timed by each thread's CPU
time, so waits for the worker or the GIL do not count) and prints the top entries by
cumulative and own time, the CPU time per search, and a digest of every hit (id, score).

Run: ``python -m bench.profile_search [--users 20] [--per-user 2000] [--searches 200]
[--path /tmp/profile_search.db] [--dump results.json]``; ``--postgres PREFIX`` builds
(once) and searches tables of that prefix on the bench's PostgreSQL instead.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import io
import json
import os
import pstats
import threading
import time
from typing import Any

import numpy as np

from bench.bench_search_scale import (
    AGENT,
    PG_URL,
    Known,
    _one_blas_thread,
    load,
    owners_x1,
    queries,
)
from memorybank import AsyncMemory, Memory


def _picks(users: list[str], n: int, nq: int) -> list[tuple[str, int]]:
    rng = np.random.default_rng(5)
    return [(users[int(rng.integers(len(users)))], int(rng.integers(nq))) for _ in range(n)]


_PROFILES: list[cProfile.Profile] = []


def _thread_profile(*_: Any) -> None:
    """Installed by ``threading.setprofile`` in every new thread: one profiler each (the
    store's worker, the ranking offloaded by ``aoffload``), cleared when the measured
    searches start and merged into the report."""
    profile = cProfile.Profile(time.thread_time)
    _PROFILES.append(profile)
    profile.enable()


class _Snapshot:
    """A thread's profile read from another thread (``create_stats`` would disable the
    reader's own profiling, not the thread's)."""

    def __init__(self, profile: cProfile.Profile) -> None:
        self.profile = profile

    def create_stats(self) -> None:
        self.profile.snapshot_stats()
        self.stats = self.profile.stats


async def _run(args: argparse.Namespace) -> list[list[Any]]:
    qtexts, qvecs = queries(512, seed=99)
    lookup = Known()
    lookup.fixed = dict(zip(qtexts, qvecs, strict=True))
    if args.postgres:
        from memorybank.stores import AsyncPostgresStore

        store = AsyncPostgresStore.from_url(PG_URL, prefix=args.postgres)
        memory = AsyncMemory(store, embedder=lookup)
    else:
        memory = AsyncMemory(f"sqlite:///{args.path}", embedder=lookup)
    users = [f"user-{n:02d}" for n in range(args.users)]
    picks = _picks(users, args.searches, len(qtexts))
    results: list[list[Any]] = []
    try:
        for n, user in enumerate(users):  # warm every user's memos
            await memory.search(qtexts[n], user_id=user, agent_id=AGENT, k=10)
        profiler = cProfile.Profile(time.thread_time)
        for profile in _PROFILES:
            profile.clear()
        cpu = time.process_time()
        wall = time.perf_counter()
        if not args.no_profile:
            profiler.enable()
        for user, q in picks:
            hits = await memory.search(qtexts[q], user_id=user, agent_id=AGENT, k=10)
            results.append([[h.id, h.score] for h in hits])
        profiler.disable()
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - wall
    finally:
        await memory.close()
    if not args.no_profile:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        for profile in _PROFILES:
            snapshot = _Snapshot(profile)
            snapshot.create_stats()
            if snapshot.stats:  # a thread that ran nothing profiled since the clear
                stats.add(snapshot)  # type: ignore[arg-type]
        stats.sort_stats("cumulative").print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)
        if args.callers:
            stats.print_callers(args.callers)
        print(out.getvalue())
    n = len(picks)
    print(f"{n} searches: CPU {cpu / n * 1000:.2f} ms/search, wall {wall / n * 1000:.2f} ms")
    digest = hashlib.sha256(json.dumps(results).encode()).hexdigest()[:16]
    print(f"results digest {digest}")
    return results


def _load_postgres(args: argparse.Namespace) -> None:
    """The store of ``--postgres PREFIX``, built and analysed once (kept for later runs)."""
    import psycopg

    from memorybank.stores import PostgresStore

    with Memory(PostgresStore.from_url(PG_URL, prefix=args.postgres)) as plain:
        if plain.threads.list(user_id="user-00", limit=1):
            return
        load(plain, owners_x1(False, args.per_user)[: args.users], seed=1000)
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for table in ("entries", "threads", "vectors"):
            conn.execute(f"ANALYZE {args.postgres}{table}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--per-user", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--path", default="/tmp/profile_search.db")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--dump", default="")
    parser.add_argument("--callers", default="", help="print the callers of these functions")
    parser.add_argument("--no-profile", action="store_true", help="CPU time and digest only")
    parser.add_argument("--postgres", default="", help="a table prefix on the bench's PostgreSQL")
    args = parser.parse_args()
    _one_blas_thread()
    if not args.no_profile:
        threading.setprofile(_thread_profile)
    if args.postgres:
        _load_postgres(args)
    elif not os.path.exists(args.path):
        with Memory(f"sqlite:///{args.path}") as plain:
            load(plain, owners_x1(False, args.per_user)[: args.users], seed=1000)
    results = asyncio.run(_run(args))
    if args.dump:
        with open(args.dump, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
