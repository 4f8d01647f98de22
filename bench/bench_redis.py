"""Redis: memorybank (sync and async) against raw redis-py on the same server.

W1  appends: T threads x M messages, one call per message. Raw: what an
    application writes by hand, one MULTI/EXEC round trip per message (RPUSH the
    message JSON, HSET the thread's updated_at). memorybank: one EVALSHA (checks,
    idempotency, positions, entry + id index, updated_at, tenant index).
    Both are "durable on return" at the server's configured persistence (the
    same server, so the ratio is fair; this CI server keeps nothing on disk).
    The async side is compared with raw ``redis.asyncio`` doing the same.
W2  "last 20" p50/p95 on a 200-entry and a 20,000-entry thread: raw
    ``LRANGE -20 -1`` + JSON decode to provider dicts, against ``history(last=20)``.
W3  one node vs a three-master Redis Cluster, 32 concurrent clients (asyncio
    tasks, each on a thread of its own): appends/s, then "last 20" reads/s on
    the same threads (200 entries each by then). The bench starts its own
    servers on spare ports (``tests.redis_cluster``: the cluster joined with
    ``redis-cli --cluster create``, and one plain server with the same settings,
    no persistence), so both sides run the same redis-server config. Raw: the
    same asyncio work by hand (MULTI RPUSH + HSET with the keys hash-tagged
    ``{thread}`` so the transaction is in one slot; LRANGE + JSON decode), on
    ``redis.asyncio.Redis`` and ``redis.asyncio.RedisCluster``. One client
    process drives all servers, so on a small machine the client's CPU, not the
    servers, bounds both; the ratio says what the cluster client costs.
Every measurement interleaves memorybank and raw calls, so load from other
processes on the machine hits both sides alike.

Run: ``python -m bench.bench_redis [--quick] [--url redis://...] [--no-cluster]``. Keys go under a
random prefix and are deleted at the end. The reply parser (hiredis when installed,
redis-py's Python parser otherwise) is printed with the results; to measure without
hiredis while it is installed, hide it before redis-py is imported::

    python -c "import sys, runpy; sys.modules['hiredis'] = None; \
        runpy.run_module('bench.bench_redis', run_name='__main__')"
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

import redis
import redis.asyncio
import redis.utils

from bench._util import Latency, table
from memorybank import AsyncMemory, Memory

TEXT = "The quick brown fox jumps over the lazy dog while the agent keeps notes. "
DEFAULT_URL = os.environ.get("MEMORYBANK_REDIS_URL", "redis://127.0.0.1:6379/0")


def _message(i: int) -> str:
    return f"{i}: {TEXT}"


class Raw:
    """A hand-written chat history: one list per thread, a hash for the thread record."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    def append(self, thread_id: str, role: str, content: str) -> None:
        now = time.time_ns() // 1000
        record = json.dumps({"role": role, "content": content, "created_at": now})
        pipe = self.client.pipeline(transaction=True)
        pipe.rpush(f"{self.prefix}{thread_id}:messages", record)
        pipe.hset(f"{self.prefix}{thread_id}:thread", "updated_at", now)
        pipe.execute()

    def last(self, thread_id: str, n: int = 20) -> list[dict[str, Any]]:
        """The same output as ``history()``: provider-shaped dicts, oldest first."""
        rows = self.client.lrange(f"{self.prefix}{thread_id}:messages", -n, -1)
        out = []
        for row in rows:
            data = json.loads(row)
            out.append({"role": data["role"], "content": data["content"]})
        return out


class AsyncRaw(Raw):
    """The same by hand with ``redis.asyncio``."""

    def __init__(self, client: redis.asyncio.Redis, prefix: str) -> None:
        self.aclient = client
        self.prefix = prefix

    async def append(self, thread_id: str, role: str, content: str) -> None:  # type: ignore[override]
        now = time.time_ns() // 1000
        record = json.dumps({"role": role, "content": content, "created_at": now})
        async with self.aclient.pipeline(transaction=True) as pipe:
            pipe.rpush(f"{self.prefix}{thread_id}:messages", record)
            pipe.hset(f"{self.prefix}{thread_id}:thread", "updated_at", now)
            await pipe.execute()

    async def last(self, thread_id: str, n: int = 20) -> list[dict[str, Any]]:  # type: ignore[override]
        rows = await self.aclient.lrange(f"{self.prefix}{thread_id}:messages", -n, -1)
        return [{"role": d["role"], "content": d["content"]} for d in map(json.loads, rows)]


def _drop(client: redis.Redis, prefix: str) -> None:
    batch = list(client.scan_iter(match=prefix + "*", count=1000))
    for start in range(0, len(batch), 500):
        client.delete(*batch[start : start + 500])


Sample = Callable[[], Awaitable[None]]


async def _interleaved(calls: dict[str, Sample], rounds: int) -> dict[str, list[float]]:
    """Time each call once per round, in rotating order (fair on a noisy machine)."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            await calls[name]()
            samples[name].append(time.perf_counter() - start)
    return samples


def _sync(fn: Callable[[], object]) -> Sample:
    async def call() -> None:
        fn()

    return call


async def w1(url: str, prefix: str, threads: int, messages: int) -> list[list[object]]:
    """Appends, the sides interleaved thread by thread; memorybank sync with the change
    feed off and on (a prefix of its own) alternate call by call within one side."""
    client = redis.Redis.from_url(url)
    aclient = redis.asyncio.Redis.from_url(url)
    raw, araw = Raw(client, prefix + "raw:"), AsyncRaw(aclient, prefix + "araw:")
    mb_url = f"{url}?{urlencode({'prefix': prefix + 'mb:'})}"
    memory = Memory(mb_url)
    amemory = AsyncMemory(mb_url)
    feed = Memory(f"{url}?{urlencode({'prefix': prefix + 'feed:'})}")
    feed.events.enable()
    ids = [memory.threads.create().id for _ in range(threads)]
    aids = [(await amemory.threads.create()).id for _ in range(threads)]
    feed_ids = [feed.threads.create().id for _ in range(threads)]
    memory.remember(ids[0], "user", "warm up the tokenizer and the scripts")
    feed.remember(feed_ids[0], "user", "warm up the tokenizer and the scripts")
    await amemory.remember(aids[0], "user", "warm up")
    raw.append("warm", "user", "warm up")
    await araw.append("warm", "user", "warm up")
    totals = dict.fromkeys(["raw", "mb", "araw", "amb", "feed"], 0.0)
    for t in range(threads):
        tid, atid = ids[t], aids[t]

        async def raw_sync(t: int = t) -> None:
            for i in range(messages):
                raw.append(f"t{t}", "user", _message(i))

        async def mb_sync(tid: str = tid, fid: str = feed_ids[t]) -> None:
            """Feed off and on alternating call by call, each call timed on its own side
            (a load change hits both alike): the feed's cost is the time ratio."""
            for i in range(messages):
                sides = [("mb", memory, tid), ("feed", feed, fid)]
                for name, target, thread in sides if i % 2 else sides[::-1]:
                    start = time.perf_counter()
                    target.remember(thread, "user", _message(i))
                    totals[name] += time.perf_counter() - start

        async def raw_async(t: int = t) -> None:
            for i in range(messages):
                await araw.append(f"t{t}", "user", _message(i))

        async def mb_async(tid: str = atid) -> None:
            for i in range(messages):
                await amemory.remember(tid, "user", _message(i))

        calls: dict[str, Sample] = {
            "raw": raw_sync,
            "mb": mb_sync,
            "araw": raw_async,
            "amb": mb_async,
        }
        names = list(calls)
        for name in names[t % len(names) :] + names[: t % len(names)]:
            start = time.perf_counter()
            await calls[name]()
            if name != "mb":  # timed call by call inside
                totals[name] += time.perf_counter() - start
    memory.close()
    feed.close()
    await amemory.close()
    client.close()
    await aclient.aclose()
    total = threads * messages
    rate = {name: total / seconds for name, seconds in totals.items()}
    return [
        ["raw redis-py sync (MULTI: RPUSH + HSET)", rate["raw"], 1.0, "-"],
        ["memorybank sync", rate["mb"], rate["mb"] / rate["raw"], ">= 0.5"],
        [
            "memorybank sync, change feed on",
            rate["feed"],
            rate["feed"] / rate["raw"],
            f"time x{rate['mb'] / rate['feed']:.3f} of feed off (<= 1.15)",
        ],
        ["raw redis-py asyncio (same)", rate["araw"], 1.0, "-"],
        ["memorybank async", rate["amb"], rate["amb"] / rate["araw"], ">= 0.5"],
    ]


async def w2(url: str, prefix: str, repeat: int) -> list[list[object]]:
    """Last 20, memorybank and raw calls interleaved."""
    client = redis.Redis.from_url(url)
    aclient = redis.asyncio.Redis.from_url(url)
    raw, araw = Raw(client, prefix + "raw:"), AsyncRaw(aclient, prefix + "raw:")
    mb_url = f"{url}?{urlencode({'prefix': prefix + 'mb:'})}"
    memory = Memory(mb_url)
    amemory = AsyncMemory(mb_url)
    rows: list[list[object]] = []
    for size in (200, 20_000):
        tid = memory.threads.create().id
        batch = [{"role": "user", "content": _message(i)} for i in range(size)]
        for start in range(0, size, 1000):
            memory.entries.add_many(tid, batch[start : start + 1000])
        key = f"{raw.prefix}{tid}:messages"
        for start in range(0, size, 1000):
            client.rpush(
                key,
                *(
                    json.dumps({"role": "user", "content": _message(i), "created_at": 0})
                    for i in range(start, min(size, start + 1000))
                ),
            )
        assert raw.last(tid) == memory.history(tid, last=20) == await amemory.history(tid)

        async def ahistory(tid: str = tid) -> None:
            await amemory.history(tid, last=20)

        async def araw_last(tid: str = tid) -> None:
            await araw.last(tid)

        calls: dict[str, Sample] = {
            "raw": _sync(functools.partial(raw.last, tid)),
            "history": _sync(functools.partial(memory.history, tid, last=20)),
            "list": _sync(functools.partial(memory.entries.list, tid, limit=20)),
            "araw": araw_last,
            "ahistory": ahistory,
        }
        await _interleaved(calls, 20)  # warm up
        lat = {n: Latency.of(v) for n, v in (await _interleaved(calls, repeat)).items()}
        label = f"{size:,}"
        rows += [
            [label, "raw redis-py LRANGE", lat["raw"].p50, lat["raw"].p95, 1.0],
            [
                label,
                "memorybank history()",
                lat["history"].p50,
                lat["history"].p95,
                lat["history"].p50 / lat["raw"].p50,
            ],
            [
                label,
                "memorybank entries.list()",
                lat["list"].p50,
                lat["list"].p95,
                lat["list"].p50 / lat["raw"].p50,
            ],
            [label, "raw redis-py asyncio LRANGE", lat["araw"].p50, lat["araw"].p95, 1.0],
            [
                label,
                "memorybank async history()",
                lat["ahistory"].p50,
                lat["ahistory"].p95,
                lat["ahistory"].p50 / lat["araw"].p50,
            ],
        ]
    memory.close()
    await amemory.close()
    client.close()
    await aclient.aclose()
    return rows


class ClusterRaw:
    """The raw side of W3: ``Raw``'s work with hash-tagged keys (one slot per thread)."""

    def __init__(self, client: redis.asyncio.Redis | redis.asyncio.RedisCluster, prefix: str):
        self.client = client
        self.prefix = prefix

    async def append(self, thread_id: str, content: str) -> None:
        now = time.time_ns() // 1000
        record = json.dumps({"role": "user", "content": content, "created_at": now})
        base = f"{self.prefix}{{{thread_id}}}:"
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.rpush(base + "messages", record)
            pipe.hset(base + "thread", "updated_at", now)
            await pipe.execute()

    async def last(self, thread_id: str, n: int = 20) -> list[dict[str, Any]]:
        rows = await self.client.lrange(f"{self.prefix}{{{thread_id}}}:messages", -n, -1)
        return [{"role": d["role"], "content": d["content"]} for d in map(json.loads, rows)]


async def w3(
    single_url: str, cluster_url: str, prefix: str, clients: int, rounds: int, per_round: int
) -> tuple[list[list[object]], list[list[object]]]:
    """Appends/s and last-20 reads/s, ``clients`` tasks, 1 node vs the cluster, interleaved."""
    from memorybank.stores import AsyncRedisStore

    sides: dict[str, tuple[str, Any]] = {}
    memories: list[AsyncMemory] = []
    raws: list[Any] = []
    for where, url in (("1 node", single_url), ("cluster", cluster_url)):
        if where == "cluster":
            node = url.replace("redis+cluster://", "redis://", 1)
            raw_client: Any = redis.asyncio.RedisCluster.from_url(node, max_connections=clients)
        else:
            raw_client = redis.asyncio.Redis.from_url(url, max_connections=clients)
        raws.append(raw_client)
        store = AsyncRedisStore.from_url(url, prefix=prefix + "mb:", max_connections=clients)
        memory = AsyncMemory(store)
        memories.append(memory)
        ids = [(await memory.threads.create()).id for _ in range(clients)]
        await memory.remember(ids[0], "user", "warm up the tokenizer and the scripts")
        raw = ClusterRaw(raw_client, prefix + "raw:")
        await raw.append("warm", "warm up")
        sides[f"raw {where}"] = ("raw", (raw, [f"t{i}" for i in range(clients)]))
        sides[f"mb {where}"] = ("mb", (memory, ids))

    async def run(name: str, op: str) -> float:
        kind, (target, ids) = sides[name]

        async def one(tid: str) -> None:
            for i in range(per_round):
                if kind == "raw" and op == "append":
                    await target.append(tid, _message(i))
                elif kind == "raw":
                    await target.last(tid)
                elif op == "append":
                    await target.remember(tid, "user", _message(i))
                else:
                    await target.history(tid, last=20)

        start = time.perf_counter()
        await asyncio.gather(*(one(tid) for tid in ids))
        return time.perf_counter() - start

    results: dict[str, dict[str, float]] = {}
    names = list(sides)
    for op in ("append", "last20"):
        totals = dict.fromkeys(names, 0.0)
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                totals[name] += await run(name, op)
        results[op] = {n: rounds * clients * per_round / t for n, t in totals.items()}
    for memory in memories:
        await memory.close()
    for client in raws:
        await client.aclose()
    tables = []
    for op in ("append", "last20"):
        rate = results[op]
        tables.append(
            [
                [
                    "raw redis.asyncio",
                    rate["raw 1 node"],
                    rate["raw cluster"],
                    rate["raw cluster"] / rate["raw 1 node"],
                ],
                [
                    "memorybank async",
                    rate["mb 1 node"],
                    rate["mb cluster"],
                    rate["mb cluster"] / rate["mb 1 node"],
                ],
                [
                    "memorybank / raw",
                    rate["mb 1 node"] / rate["raw 1 node"],
                    rate["mb cluster"] / rate["raw cluster"],
                    "-",
                ],
            ]
        )
    return tables[0], tables[1]


def cluster_bench(prefix: str, quick: bool) -> None:
    """W3: start a cluster and a single server of our own, measure, stop them."""
    from tests.redis_cluster import ClusterProcesses

    clients = 32
    rounds, per_round = (2, 5) if quick else (5, 40)
    single = ClusterProcesses(cluster=False).start()
    try:
        cluster = ClusterProcesses().start()
        try:
            appends, reads = asyncio.run(
                w3(single.url, cluster.url, prefix + "w3:", clients, rounds, per_round)
            )
        finally:
            cluster.close()
    finally:
        single.close()
    head = ["", "1 node /s", "3-node cluster /s", "cluster / 1 node"]
    print(f"\n### Redis W3: {clients} concurrent clients, appends ({rounds * per_round} each)\n")
    print(table(head, appends))
    print(
        f"\n### Redis W3: {clients} concurrent clients, last 20 of a {rounds * per_round}-entry"
        " thread\n"
    )
    print(table(head, reads))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--url", default=DEFAULT_URL, help="the Redis server to use")
    parser.add_argument("--no-cluster", action="store_true", help="skip W3 (1 node vs cluster)")
    parser.add_argument("--only-cluster", action="store_true", help="only W3")
    args = parser.parse_args(argv)
    threads, messages, repeat = (10, 50, 100) if args.quick else (100, 200, 1000)
    prefix = f"mbbench:{uuid.uuid4().hex[:8]}:"
    client = redis.Redis.from_url(args.url)
    reply_parser = "hiredis" if redis.utils.HIREDIS_AVAILABLE else "redis-py (Python)"
    print(f"\nreply parser: {reply_parser}")
    try:
        if not args.only_cluster:
            print(f"\n### Redis W1: {threads} threads x {messages} appends, one call each\n")
            rows = asyncio.run(w1(args.url, prefix, threads, messages))
            print(table(["", "appends/s", "ratio vs raw", "target"], rows))
            print("\n### Redis W2: last 20 entries (ms)\n")
            rows = asyncio.run(w2(args.url, prefix, repeat))
            print(table(["thread size", "", "p50 ms", "p95 ms", "p50 ratio vs raw"], rows))
        if not args.no_cluster:
            cluster_bench(prefix, args.quick)
    finally:
        _drop(client, prefix)
        client.close()


if __name__ == "__main__":
    main()
