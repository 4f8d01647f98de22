"""PostgreSQL: memorybank (sync and async) against raw psycopg doing the same work.

W1  appends: T threads x M messages, one call per message, each durable on return
    (autocommit, the server's synchronous_commit as configured, same for both sides;
    raw and memorybank calls alternate, each side's time is summed).
    Raw: one ``INSERT`` per message into a (thread_id, position) table, positions
    counted in Python (single writer, no thread row, no ownership check).
W2  "last 20" p50/p95 on a 200-entry and a 20,000-entry thread: ``history(last=20)``
    against one ``ORDER BY position DESC LIMIT 20`` query turned into the same dicts
    (samples of raw and memorybank interleaved, so load on the machine hits both alike).

Run: ``python -m bench.bench_postgres [--quick] [--url postgresql://...]``
(default ``$MEMORYBANK_POSTGRES_URL`` or ``postgresql://postgres@127.0.0.1:5432/test``).
Tables get a fresh prefix and are dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg

from bench._util import Latency, table
from memorybank import AsyncMemory, Memory
from memorybank._async.stores.postgres import TABLES, AsyncPostgresStore
from memorybank._sync.stores.postgres import PostgresStore

TEXT = "The quick brown fox jumps over the lazy dog while the agent keeps notes. "
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _message(i: int) -> str:
    return f"{i}: {TEXT}"


class Raw:
    """What an application would write by hand: one table, one index, autocommit per message."""

    def __init__(self, url: str, table_name: str) -> None:
        self.table = table_name
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table_name} (thread_id text NOT NULL,"
            " position bigint NOT NULL, role text NOT NULL, content text, name text,"
            " tool_calls jsonb, tool_call_id text, created_at timestamptz NOT NULL,"
            " PRIMARY KEY (thread_id, position))"
        )
        self.positions: dict[str, int] = {}
        self.insert = (
            f"INSERT INTO {table_name} (thread_id, position, role, content, created_at)"
            " VALUES (%s, %s, %s, %s, now())"
        )
        self.select = (
            f"SELECT role, content, name, tool_calls, tool_call_id FROM {table_name}"
            " WHERE thread_id = %s ORDER BY position DESC LIMIT %s"
        )

    def append(self, thread_id: str, role: str, content: str) -> None:
        position = self.positions.get(thread_id, 0) + 1
        self.positions[thread_id] = position
        self.conn.execute(self.insert, (thread_id, position, role, content))

    def last(self, thread_id: str, n: int = 20) -> list[dict[str, object]]:
        """The same output as ``history()``: provider-shaped dicts, oldest first."""
        rows = self.conn.execute(self.select, (thread_id, n)).fetchall()
        return [_shape(row) for row in reversed(rows)]

    def close(self) -> None:
        self.conn.execute(f"DROP TABLE IF EXISTS {self.table}")
        self.conn.close()


class AsyncRaw:
    """``Raw`` on ``psycopg.AsyncConnection`` (the fair baseline for ``AsyncMemory``)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], raw: Raw) -> None:
        self.conn = conn
        self.raw = raw
        self.positions: dict[str, int] = {}

    async def append(self, thread_id: str, role: str, content: str) -> None:
        position = self.positions.get(thread_id, 0) + 1
        self.positions[thread_id] = position
        await self.conn.execute(self.raw.insert, (thread_id, position, role, content))

    async def last(self, thread_id: str, n: int = 20) -> list[dict[str, object]]:
        cur = await self.conn.execute(self.raw.select, (thread_id, n))
        return [_shape(row) for row in reversed(await cur.fetchall())]


def _shape(row: tuple[Any, ...]) -> dict[str, object]:
    role, content, name, tool_calls, tool_call_id = row
    message: dict[str, object] = {"role": role, "content": content}
    if name is not None:
        message["name"] = name
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    if tool_call_id is not None:
        message["tool_call_id"] = tool_call_id
    return message


def _interleaved(fns: Sequence[Callable[[], object]], repeat: int) -> list[Latency]:
    """Latency of each call, sampled in shuffled rounds so machine noise hits all alike."""
    for fn in fns:
        for _ in range(5):
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    for _ in range(repeat):
        random.shuffle(order)
        for i in order:
            start = time.perf_counter()
            fns[i]()
            samples[i].append(time.perf_counter() - start)
    return [Latency.of(s) for s in samples]


async def _ainterleaved(
    fns: Sequence[Callable[[], Awaitable[object]]], repeat: int
) -> list[Latency]:
    """``_interleaved`` for coroutine functions."""
    for fn in fns:
        for _ in range(5):
            await fn()
    samples: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    for _ in range(repeat):
        random.shuffle(order)
        for i in order:
            start = time.perf_counter()
            await fns[i]()
            samples[i].append(time.perf_counter() - start)
    return [Latency.of(s) for s in samples]


def w1(url: str, prefix: str, raw: Raw, threads: int, messages: int) -> list[list[object]]:
    """Appends, raw and memorybank alternating call by call (each side's time summed)."""
    total = threads * messages
    store = PostgresStore.from_url(url, prefix=prefix, pool_size=2)
    memory = Memory(store)
    ids = [memory.threads.create().id for _ in range(threads)]
    memory.remember(ids[0], "user", "warm up the tokenizer")
    raw.append("warm", "user", "warm up")
    raw_s = mb_s = 0.0
    for t, tid in enumerate(ids):
        for i in range(messages):
            start = time.perf_counter()
            raw.append(f"w1-{t}", "user", _message(i))
            middle = time.perf_counter()
            memory.remember(tid, "user", _message(i))
            mb_s += time.perf_counter() - middle
            raw_s += middle - start
    store.close()

    async def run_async() -> tuple[float, float]:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        araw = AsyncRaw(conn, raw)
        astore = AsyncPostgresStore.from_url(url, prefix=prefix, pool_size=2)
        amemory = AsyncMemory(astore)
        aids = [(await amemory.threads.create()).id for _ in range(threads)]
        await amemory.remember(aids[0], "user", "warm up")
        await araw.append("warm-async", "user", "warm up")
        raw_s = mb_s = 0.0
        for t, tid in enumerate(aids):
            for i in range(messages):
                start = time.perf_counter()
                await araw.append(f"w1a-{t}", "user", _message(i))
                middle = time.perf_counter()
                await amemory.remember(tid, "user", _message(i))
                mb_s += time.perf_counter() - middle
                raw_s += middle - start
        await astore.close()
        await conn.close()
        return total / raw_s, total / mb_s

    raw_rate, sync_rate = total / raw_s, total / mb_s
    raw_async, async_rate = asyncio.run(run_async())
    return [
        ["raw psycopg (sync)", raw_rate, 1.0, "-"],
        ["memorybank Memory", sync_rate, sync_rate / raw_rate, ">= 0.5"],
        ["raw psycopg (async)", raw_async, 1.0, "-"],
        ["memorybank AsyncMemory", async_rate, async_rate / raw_async, ">= 0.5"],
    ]


def w2(url: str, prefix: str, raw: Raw, repeat: int) -> list[list[object]]:
    store = PostgresStore.from_url(url, prefix=prefix, pool_size=2)
    memory = Memory(store)
    rows: list[list[object]] = []
    tids: list[str] = []
    for size in (200, 20_000):
        tid = memory.threads.create().id
        tids.append(tid)
        batch = [{"role": "user", "content": _message(i)} for i in range(size)]
        for start in range(0, size, 1000):
            memory.entries.add_many(tid, batch[start : start + 1000])
        with raw.conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {raw.table} (thread_id, position, role, content, created_at)"
                " VALUES (%s, %s, 'user', %s, now())",
                [(tid, i + 1, _message(i)) for i in range(size)],
            )
    with raw.conn.cursor() as cur:
        cur.execute(f"ANALYZE {raw.table}")
        cur.execute(f"ANALYZE {prefix}entries")
    for size, tid in zip((200, 20_000), tids, strict=True):
        assert raw.last(tid) == memory.history(tid, last=20)
        raw_lat, mb_lat, ent_lat = _interleaved(
            [
                functools.partial(raw.last, tid),
                functools.partial(memory.history, tid, last=20),
                functools.partial(memory.entries.list, tid, limit=20),
            ],
            repeat,
        )
        rows += [
            [f"{size:,}", "raw psycopg", raw_lat.p50, raw_lat.p95, 1.0],
            [f"{size:,}", "Memory.history()", mb_lat.p50, mb_lat.p95, mb_lat.p50 / raw_lat.p50],
            [
                f"{size:,}",
                "Memory.entries.list()",
                ent_lat.p50,
                ent_lat.p95,
                ent_lat.p50 / raw_lat.p50,
            ],
        ]
    store.close()

    async def run_async() -> tuple[Latency, Latency]:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        araw = AsyncRaw(conn, raw)
        astore = AsyncPostgresStore.from_url(url, prefix=prefix, pool_size=2)
        amemory = AsyncMemory(astore)
        raw_lat, mb_lat = await _ainterleaved(
            [lambda: araw.last(tids[1]), lambda: amemory.history(tids[1], last=20)], repeat
        )
        await astore.close()
        await conn.close()
        return raw_lat, mb_lat

    araw_lat, amb_lat = asyncio.run(run_async())
    rows += [
        ["20,000", "raw psycopg (async)", araw_lat.p50, araw_lat.p95, 1.0],
        [
            "20,000",
            "AsyncMemory.history()",
            amb_lat.p50,
            amb_lat.p95,
            amb_lat.p50 / araw_lat.p50,
        ],
    ]
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--url", default=os.environ.get("MEMORYBANK_POSTGRES_URL", DEFAULT_URL))
    args = parser.parse_args(argv)
    threads, messages, repeat = (10, 50, 50) if args.quick else (100, 200, 500)
    prefix = f"bench{uuid.uuid4().hex[:8]}_"
    raw = Raw(args.url, f"{prefix}raw_messages")
    try:
        with raw.conn.cursor() as cur:
            cur.execute("SHOW synchronous_commit")
            row = cur.fetchone()
        durability = row[0] if row else "?"
        print(
            f"\n### PostgreSQL W1: {threads} threads x {messages} appends, one call each,"
            f" autocommit (synchronous_commit={durability})\n"
        )
        print(table(["", "appends/s", "ratio vs raw", "target"], w1(args.url, prefix, raw,
                                                                   threads, messages)))
        print("\n### PostgreSQL W2: last 20 entries (ms)\n")
        print(table(["thread size", "", "p50 ms", "p95 ms", "p50 ratio"],
                    w2(args.url, prefix, raw, repeat)))
    finally:
        raw.close()
        with psycopg.connect(args.url, autocommit=True) as conn:
            for name in TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {prefix}{name}")


if __name__ == "__main__":
    main()
