"""Whether two checkouts write the same usage records, and what noting a search's hits costs.

``--dump FILE``: ``--searches`` hot user-scope hybrid searches (as ``bench.search_same
--cpu``, with a clock that moves one second a search) on a copy of the
``bench.profile_search`` store, then ``close()``; every ``memory_usage`` record (id,
owner, key, data, created and updated times) is written to ``FILE``. ``--compare A B``
checks two dumps record for record. Each run prints the CPU time (``time.process_time``)
per search and per flush of the use buffer (the flushes' share of a search).
Run each on two checkouts (``PYTHONPATH=<src>:.``) against the same ``--path``.

Run: ``python -m bench.usage_same [--path /tmp/profile_search.db] [--searches 1000]
[--queries 512] (--dump FILE | --compare A B)``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

import memorybank.memory._async.memory as facade
from bench.bench_search_scale import AGENT, _one_blas_thread
from bench.search_same import on_a_copy, questions
from memorybank import AsyncMemory

_FLUSHES: list[float] = []


def _timed(flush: Any) -> Any:
    async def timed(*args: Any, **kwargs: Any) -> int:
        cpu = time.process_time()
        written = int(await flush(*args, **kwargs))
        _FLUSHES.append(time.process_time() - cpu)
        return written

    return timed


async def _run(args: argparse.Namespace, path: str) -> list[Any]:
    qtexts, lookup = questions()
    users = [f"user-{n:02d}" for n in range(args.users)]
    now = [datetime(2026, 12, 1, tzinfo=UTC)]
    names = vars(facade)  # the flushes a full buffer makes
    names["flush_usage"] = _timed(names["flush_usage"])
    async with AsyncMemory(f"sqlite:///{path}", embedder=lookup, clock=lambda: now[0]) as memory:
        for n, user in enumerate(users):  # warm every user's memos
            await memory.search(qtexts[n], user_id=user, agent_id=AGENT, k=10)
        rng = np.random.default_rng(5)
        picks = [
            (users[int(rng.integers(len(users)))], int(rng.integers(args.queries)))
            for _ in range(args.searches)
        ]
        _FLUSHES.clear()
        cpu = time.process_time()
        for user, q in picks:
            now[0] += timedelta(seconds=1)
            await memory.search(qtexts[q], user_id=user, agent_id=AGENT, k=10)
        cpu = time.process_time() - cpu
        flushes = list(_FLUSHES)  # not close()'s
    n, flushed = len(picks), sum(flushes)
    print(
        f"{n} searches: CPU {cpu / n * 1000:.3f} ms/search; {len(flushes)} flushes,"
        f" {flushed / max(len(flushes), 1) * 1000:.2f} ms/flush,"
        f" {flushed / n * 1000:.3f} ms/search"
    )
    async with AsyncMemory(f"sqlite:///{path}") as memory:
        records = await memory.store.record_list("default", "memory_usage")
    return sorted(
        [r.id, r.agent_id, r.user_id, r.key, r.data, r.created_at.isoformat(),
         r.updated_at.isoformat()]
        for r in records
    )  # fmt: skip


def compare(a: str, b: str) -> int:
    left, right = json.loads(Path(a).read_text()), json.loads(Path(b).read_text())
    same = sum(x == y for x, y in zip(left, right, strict=False))
    print(f"{len(left)} and {len(right)} usage records: {same} identical")
    return 0 if same == len(left) == len(right) else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default="/tmp/profile_search.db")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=512, help="how many distinct queries")
    parser.add_argument("--dump", default="")
    parser.add_argument("--compare", nargs=2, default=None)
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    _one_blas_thread()
    records = on_a_copy(args.path, lambda path: _run(args, path))
    if args.dump:
        Path(args.dump).write_text(json.dumps(records))
        print(f"{len(records)} usage records -> {args.dump}")


if __name__ == "__main__":
    main()
