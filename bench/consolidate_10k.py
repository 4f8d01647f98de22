"""Time one consolidation run over a user with 10,000 facts (SQLite, no LLM), and the p99
of a writer adding facts meanwhile. ``python bench/consolidate_10k.py [--embedder local]``.

The writer (another user's facts, one every 10 ms) runs in the same process, as an app's
requests would; its latencies are reported as p50/p95/p99/max. ``--chunk N`` and
``--pause S`` override the run's chunk size and its pause between chunks
(``memorybank.consolidation._async.consolidation.CHUNK``/``PAUSE``) to compare settings.

The facts: 2,500 distinct statements, each stored in up to four phrasings over time, a
tenth of them with a later contradicting value. Vectors come from the hashing embedder of
the tests unless ``--embedder local`` (all-MiniLM-L6-v2) is asked for.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memorybank import AsyncMemory
from memorybank.embeddings.base import Embedder
from memorybank.stores.sqlite._async import AsyncSQLiteStore

N = 10_000
TEMPLATES = (
    "User{n} likes green tea number {n}",
    "The user{n} likes green tea number {n}.",
    "user{n} likes green tea number {n}!",
    "USER{n} LIKES GREEN TEA NUMBER {n}",
)


async def fill(memory: AsyncMemory, user: str) -> None:
    rng = random.Random(7)
    made = 0
    n = 0
    while made < N:
        for template in TEMPLATES[: rng.randint(1, 4)]:
            if made >= N:
                break
            await memory.facts.add(content=template.format(n=n), user_id=user)
            made += 1
        if n % 10 == 0 and made < N:
            await memory.facts.add(content=f"Person{n} lives in Paris", user_id=user)
            await memory.facts.add(content=f"Person{n} lives in Rome", user_id=user)
            made += 2
        n += 1


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedder", choices=["hash", "local"], default="hash")
    parser.add_argument("--chunk", type=int, default=None)
    parser.add_argument("--pause", type=float, default=None)
    parser.add_argument(
        "--filled",
        default=None,
        help="a SQLite file to keep the 10,000 facts in: filled once, copied for each run",
    )
    args = parser.parse_args()
    from memorybank.consolidation._async import consolidation

    if args.chunk is not None:
        consolidation.CHUNK = args.chunk
    if args.pause is not None:
        consolidation.PAUSE = args.pause
    chunk, pause = getattr(consolidation, "CHUNK", "n/a"), getattr(consolidation, "PAUSE", "n/a")
    print(f"chunk {chunk}, pause {pause}")
    embedder: Embedder
    if args.embedder == "local":
        from memorybank.embeddings.local import LocalEmbedder

        embedder = LocalEmbedder()
    else:
        from tests.recall.conftest import HashEmbedder

        embedder = HashEmbedder()
    # when the run starts writing (after its plan): the writer's latencies are split there
    applying: list[float] = []
    original = consolidation.AsyncConsolidation._apply

    async def timed(self: Any, *args: Any) -> None:
        applying.append(time.perf_counter())
        await original(self, *args)

    consolidation.AsyncConsolidation._apply = timed  # type: ignore[method-assign,assignment]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        filled = None if args.filled is None else Path(args.filled)
        if filled is not None and filled.exists():
            shutil.copyfile(filled, path)
        store = AsyncSQLiteStore(str(path))
        async with AsyncMemory(store, embedder=embedder) as memory:
            if filled is None or not filled.exists():
                started = time.perf_counter()
                await fill(memory, "big")
                print(f"stored {N} facts in {time.perf_counter() - started:.1f} s")
                if filled is not None:
                    await store.close()
                    shutil.copyfile(path, filled)
                    store = AsyncSQLiteStore(str(path))
                    memory = AsyncMemory(store, embedder=embedder)
            latencies: list[float] = []
            stamps: list[float] = []
            running = True

            async def writer() -> None:
                k = 0
                while running:
                    t = time.perf_counter()
                    await memory.facts.add(content=f"other user's fact {k}", user_id="w")
                    latencies.append(time.perf_counter() - t)
                    stamps.append(t)
                    k += 1
                    await asyncio.sleep(0.01)

            task = asyncio.create_task(writer())
            started = time.perf_counter()
            report = await memory.consolidate(user_id="big")
            took = time.perf_counter() - started
            running = False
            await task
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            if applying:
                during = sorted(
                    x for x, t in zip(latencies, stamps, strict=True) if t >= applying[0]
                )
                before = sorted(
                    x for x, t in zip(latencies, stamps, strict=True) if t < applying[0]
                )
                for name, part in (("planning", before), ("applying", during)):
                    if part:
                        p99 = part[int(0.99 * (len(part) - 1))] * 1000
                        print(
                            f"  while {name} ({len(part)} writes): p50 "
                            f"{statistics.median(part) * 1000:.1f} ms, p99 {p99:.1f} ms, "
                            f"max {part[-1] * 1000:.1f} ms"
                        )
                plan_s, apply_s = applying[0] - started, started + took - applying[0]
                print(f"  plan {plan_s:.1f} s, apply {apply_s:.1f} s")
            latencies.sort()

            def at(q: float) -> float:
                return latencies[int(q * (len(latencies) - 1))] * 1000

            print(
                f"consolidated {report.facts_examined} facts in {took:.1f} s: "
                f"{report.merged} merged, {report.superseded} superseded; "
                f"writer p50 {statistics.median(latencies) * 1000:.1f} ms, p95 {at(0.95):.1f} ms, "
                f"p99 {at(0.99):.1f} ms, max {latencies[-1] * 1000:.1f} ms "
                f"({len(latencies)} writes); max RSS {rss:.0f} MB"
            )
            started = time.perf_counter()
            await memory.consolidation.undo(report.run_id)
            print(f"undo in {time.perf_counter() - started:.1f} s")
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
