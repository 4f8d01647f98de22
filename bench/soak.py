"""Mixed-load soak: many clients on one store for minutes; throughput, latency, errors, memory.

``CLIENTS`` asyncio tasks share one ``AsyncMemory`` and loop until time is up,
each call drawn at random: 70% ``history(thread, last=20)``, 25% appends (one
``entries.add``), 5% ``search`` (hybrid, tenant-wide) on threads seeded first.
Reported per store: calls/s per operation, p50/p99 latency, errors (target 0,
each kind listed) and the process's RSS at the start of the load, at its middle
and at its end (target flat: the growth from middle to end is the leak signal;
the first half also fills caches and the tokenizer).

Stores: ``--url`` (any memorybank URL; the soak works in a fresh tenant and
deletes its threads afterwards), by default a SQLite file in a temporary
directory; ``--all`` runs that SQLite file, then PostgreSQL, MariaDB and Redis
at the test URLs (``$MEMORYBANK_POSTGRES_URL``...), each under a fresh table or
key prefix dropped afterwards, skipping a server that does not answer.

``--nodes`` runs the several-nodes scenario instead (``tests.reliability._nodes``):
three ``memorybank serve --workers 2`` behind HAProxy, over a PostgreSQL database
of its own and over a Redis Cluster started for the run, ``--clients`` clients
back to back (70% history, 20% appends with idempotency keys, 10% search or
context) for ``--seconds`` of steady load, then one node SIGKILLed (down 5 s)
and restarted, a rolling restart of all three, and ``--seconds`` more. Reported
per store: calls/s and p50/p99 per call, failed attempts and the error rate per
phase, RSS per node, acknowledged appends lost or stored twice (target 0).

Run: ``python -m bench.soak [--seconds 300] [--clients 32] [--url URL | --all | --nodes]``
(``make soak`` runs the reliability suite at scale 5, then ``--all``, then
``--nodes --seconds 60``). Exits 1 if any call failed (for ``--nodes``: if a call
failed on every retry, or an append was lost or stored twice).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._util import percentile, table
from memorybank import AsyncMemory
from memorybank.stores.contract._async.store import AsyncStore
from tests.reliability._harness import SERVER_STORES, StoreSpec

MIX = (("history", 0.70), ("append", 0.25), ("search", 0.05))
WORDS = (
    "invoice refund shipping order account password login billing address delivery"
    " warranty upgrade subscription discount coupon receipt payment tracking return"
    " exchange support ticket agent manager email phone schedule meeting report"
).split()
SEED_THREADS = 64
SEED_ENTRIES = 40  # per thread


@dataclass
class Result:
    """What one store's soak measured."""

    store: str
    seconds: float
    samples: dict[str, list[float]] = field(default_factory=dict)  # op -> latencies (s)
    errors: Counter[str] = field(default_factory=Counter)  # "op: Type: message" -> count
    rss_mb: list[tuple[float, float]] = field(default_factory=list)  # (elapsed s, MB)

    def rss_at(self, fraction: float) -> float:
        """RSS (MB) of the sample nearest to ``fraction`` of the run."""
        target = fraction * self.seconds
        return min(self.rss_mb, key=lambda s: abs(s[0] - target))[1]

    @property
    def growth(self) -> float:
        """RSS growth from the middle to the end of the load, in percent."""
        middle = self.rss_at(0.5)
        return (self.rss_at(1.0) - middle) / middle * 100


def rss_mb() -> float:
    """This process's resident set size, in MB (Linux ``/proc``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18)))


async def seed(memory: AsyncMemory, rng: random.Random) -> list[str]:
    """``SEED_THREADS`` threads of ``SEED_ENTRIES`` alternating user/assistant messages."""
    thread_ids = []
    for _ in range(SEED_THREADS):
        thread_id = (await memory.threads.create()).id
        messages = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": sentence(rng)}
            for i in range(SEED_ENTRIES)
        ]
        await memory.entries.add_many(thread_id, messages)
        thread_ids.append(thread_id)
    return thread_ids


async def client(
    memory: AsyncMemory, thread_ids: Sequence[str], result: Result, deadline: float, n: int
) -> None:
    rng = random.Random(n)
    ops = [op for op, _ in MIX]
    weights = [w for _, w in MIX]
    while time.monotonic() < deadline:
        op = rng.choices(ops, weights)[0]
        thread_id = rng.choice(thread_ids)
        start = time.perf_counter()
        try:
            if op == "history":
                await memory.history(thread_id, last=20)
            elif op == "append":
                role = rng.choice(("user", "assistant"))
                await memory.entries.add(thread_id, {"role": role, "content": sentence(rng)})
            else:
                await memory.search(" ".join(rng.sample(WORDS, 2)), k=10)
        except Exception as error:  # counted and reported: the target is zero
            result.errors[f"{op}: {type(error).__name__}: {str(error)[:120]}"] += 1
            continue
        result.samples[op].append(time.perf_counter() - start)


async def sample_rss(result: Result, started: float, stop: asyncio.Event) -> None:
    while True:
        result.rss_mb.append((time.monotonic() - started, rss_mb()))
        try:
            await asyncio.wait_for(stop.wait(), timeout=1.0)
        except TimeoutError:
            continue
        result.rss_mb.append((time.monotonic() - started, rss_mb()))
        return


async def soak(name: str, store: AsyncStore | str, seconds: float, clients: int) -> Result:
    """Seed, then run ``clients`` tasks for ``seconds`` on a fresh tenant of ``store``."""
    rng = random.Random(0)
    async with AsyncExitStack() as stack:
        root = AsyncMemory(store)
        stack.push_async_callback(root.close)
        memory = root.tenant(f"soak{uuid.uuid4().hex[:8]}")
        thread_ids = await seed(memory, rng)
        # Warm up (tokenizer, caches, pools) before the first RSS sample.
        await memory.history(thread_ids[0], last=20)
        await memory.search("invoice refund", k=10)
        result = Result(name, seconds, {op: [] for op, _ in MIX})
        stop = asyncio.Event()
        started = time.monotonic()
        sampler = asyncio.create_task(sample_rss(result, started, stop))
        await asyncio.gather(
            *(client(memory, thread_ids, result, started + seconds, n) for n in range(clients))
        )
        result.seconds = time.monotonic() - started
        stop.set()
        await sampler
        for thread_id in thread_ids:
            await memory.threads.delete(thread_id)
    return result


def report(result: Result) -> str:
    rows: list[list[object]] = []
    for op, samples in result.samples.items():
        errors = sum(n for kind, n in result.errors.items() if kind.startswith(f"{op}:"))
        rows.append(row(op, samples, errors, result.seconds))
    every = [s for samples in result.samples.values() for s in samples]
    rows.append(row("all", every, sum(result.errors.values()), result.seconds))
    lines = [table(["op", "calls", "calls/s", "p50 ms", "p99 ms", "errors"], rows)]
    lines.append(
        f"\nRSS start {result.rss_at(0):.1f} MB, middle {result.rss_at(0.5):.1f} MB,"
        f" end {result.rss_at(1.0):.1f} MB: {result.growth:+.1f}% from middle to end"
    )
    lines += [f"error x{n}: {kind}" for kind, n in result.errors.most_common(10)]
    return "\n".join(lines)


def row(op: str, samples: Sequence[float], errors: int, seconds: float) -> list[object]:
    if not samples:
        return [op, 0, 0.0, "-", "-", errors]
    p50, p99 = percentile(samples, 0.50) * 1000, percentile(samples, 0.99) * 1000
    return [op, len(samples), len(samples) / seconds, p50, p99, errors]


async def run(args: argparse.Namespace) -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory(prefix="mbsoak") as tmp:
        targets: list[tuple[str, AsyncStore | str, StoreSpec | None]] = []
        if args.url:
            targets.append((args.url.split("://", 1)[0], args.url, None))
        else:
            spec = StoreSpec.new("sqlite-full", Path(tmp))
            targets.append(("sqlite", spec.open_async(), spec))
        if args.all:
            for name in SERVER_STORES:
                spec = StoreSpec.new(name, Path(tmp))
                error = spec.reachable()
                if error is not None:
                    print(f"\n## {name}\n\nskipped: {error}", flush=True)
                    continue
                targets.append((name, spec.open_async(pool_size=16), spec))
        for name, store, owned in targets:
            print(f"\n## {name}: {args.clients} clients, {args.seconds:.0f} s\n", flush=True)
            try:
                result = await soak(name, store, args.seconds, args.clients)
            finally:
                if owned is not None:
                    assert not isinstance(store, str)
                    await store.close()
                    owned.drop()
            print(report(result), flush=True)
            results.append(result)
    return results


def summary(results: Sequence[Result]) -> str:
    rows: list[list[Any]] = []
    for r in results:
        every = [s for samples in r.samples.values() for s in samples]
        rows.append(
            [
                r.store,
                len(every) / r.seconds,
                percentile(every, 0.99) * 1000 if every else "-",
                sum(r.errors.values()),
                f"{r.rss_at(0):.0f} / {r.rss_at(0.5):.0f} / {r.rss_at(1.0):.0f}",
                f"{r.growth:+.1f}",
            ]
        )
    headers = ["store", "calls/s", "p99 ms", "errors", "RSS MB start/mid/end", "growth %"]
    return table(headers, rows)


def run_nodes(seconds: float, clients: int) -> bool:
    """The several-nodes scenario on PostgreSQL and a Redis Cluster; whether it held."""
    from memorybank.server.keys import DEFAULT_CACHE_SECONDS
    from tests.redis_cluster import stop_shared_cluster
    from tests.reliability import _nodes

    held = True
    try:
        for make in (_nodes.postgres_backend, _nodes.redis_cluster_backend):
            backend = make()
            try:
                with (
                    tempfile.TemporaryDirectory(prefix="mbnodes") as tmp,
                    _nodes.nodes_over(backend, Path(tmp)) as (nodes, balancer),
                ):
                    keys = _nodes.check_keys(nodes, "soak-keys", DEFAULT_CACHE_SECONDS)
                    _, secret = _nodes.create_key(nodes[0], "soak-load")
                    scenario = _nodes.Scenario(backend.name, nodes, balancer, clients)
                    chaos = _nodes.Chaos(steady=seconds, down=5.0, after=seconds)
                    figures = asyncio.run(scenario.run(chaos, secret))
            finally:
                backend.drop()
            refused = ", ".join(f"{n} {s:.2f} s" for n, s in keys.refused_after.items())
            print(f"\n{_nodes.report(figures)}\nrevoked key refused after: {refused}", flush=True)
            held = held and not (
                figures.lost or figures.duplicated or figures.gave_up or figures.unexpected
            )
    finally:
        stop_shared_cluster()
    return held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="load time per store")
    parser.add_argument("--clients", type=int, default=32, help="concurrent client tasks")
    parser.add_argument("--url", help="store URL (default: a SQLite file in a temp directory)")
    parser.add_argument("--all", action="store_true", help="then PostgreSQL, MariaDB and Redis")
    parser.add_argument(
        "--nodes",
        action="store_true",
        help="three serve nodes behind HAProxy, one killed, a rolling restart",
    )
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.clients < 1:
        parser.error("--seconds must be > 0 and --clients >= 1")
    if args.nodes:
        return 0 if run_nodes(args.seconds, args.clients) else 1
    results = asyncio.run(run(args))
    if len(results) > 1:
        print("\n## summary\n\n" + summary(results))
    return 1 if any(r.errors for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
