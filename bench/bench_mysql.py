"""MySQL/MariaDB: memorybank (sync and async) against raw PyMySQL on the same server.

W1  appends: T threads x M messages, one call per message, each durable on return
    (autocommit: every INSERT is its own committed transaction, at the server's
    ``innodb_flush_log_at_trx_commit``). memorybank runs its append transaction:
    lock thread+branch, INSERT, counter/``updated_at`` UPDATEs, COMMIT. Also sync with
    the change feed on (its own tables): its time over the feed-off sync time is the
    feed's cost (target: at most 1.15).
W2  "last 20" p50/p95 on a 200-entry and a 20,000-entry thread: raw is one
    ``SELECT ... ORDER BY position DESC LIMIT 20`` on the (thread, position) key,
    turned into the provider-shaped dicts ``history()`` returns (checked equal);
    also ``entries.count()`` of the same thread (ratio: to raw's last 20).

W3  concurrent clients (asyncio tasks, one connection each, raw on aiomysql): 1 client,
    32 clients on distinct threads, 32 clients on one shared thread; appends and last
    20 (``bench._clients``).

Raw and memorybank runs are interleaved (W1: per round of appends, W2: per
sample), so whatever load the machine has hits both alike.

Both sides commit once per append on the same server, so they pay the same
durability: the run prints the settings that decide it (``server_settings``;
this machine: MariaDB 10.11, ``innodb_flush_log_at_trx_commit=1``, binary log
off). Raw's table has its primary key only; memorybank's entries table also
has a FULLTEXT index, two secondary keys, and every append updates the branch
counter and the thread's ``updated_at`` (an indexed column) in the same
transaction.

Run: ``python -m bench.bench_mysql [--quick] [--url mysql://root@127.0.0.1:3306/test]``.
Tables get a fresh prefix and are dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import time
import uuid
from typing import Any

import pymysql

from bench._clients import HEADERS, run_cases
from bench._util import Latency, table
from memorybank import AsyncMemory, Memory
from memorybank.stores import AsyncMySQLStore, MySQLStore
from memorybank.stores.mysql._async import TABLES
from memorybank.stores.mysql.rows import url_options

TEXT = "The quick brown fox jumps over the lazy dog while the agent keeps notes. "
DEFAULT_URL = os.environ.get("MEMORYBANK_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")


def _message(i: int) -> str:
    return f"{i}: {TEXT}"


class Raw:
    """What an application would write by hand: one table, one key, autocommit per message."""

    def __init__(self, url: str, table_name: str) -> None:
        self.conn = pymysql.connect(**url_options(url), charset="utf8mb4", autocommit=True)
        self.table = table_name
        with self.conn.cursor() as cur:
            cur.execute(
                f"CREATE TABLE {table_name} (thread_id VARCHAR(255) NOT NULL,"
                " position BIGINT NOT NULL, role VARCHAR(16) NOT NULL, content LONGTEXT NULL,"
                " name TEXT NULL, tool_calls LONGTEXT NULL, tool_call_id TEXT NULL,"
                " created_at BIGINT NOT NULL, PRIMARY KEY (thread_id, position))"
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
            )
        self.positions: dict[str, int] = {}

    def append(self, thread_id: str, role: str, content: str) -> None:
        position = self.positions.get(thread_id, 0) + 1
        self.positions[thread_id] = position
        with self.conn.cursor() as cur:
            cur.execute(
                f"INSERT INTO {self.table} VALUES (%s, %s, %s, %s, NULL, NULL, NULL, %s)",
                (thread_id, position, role, content, time.time_ns() // 1000),
            )

    def load(self, thread_id: str, size: int) -> None:
        with self.conn.cursor() as cur:
            for start in range(0, size, 1000):
                cur.executemany(
                    f"INSERT INTO {self.table} VALUES (%s, %s, %s, %s, NULL, NULL, NULL, 0)",
                    [
                        (thread_id, i + 1, "user", _message(i))
                        for i in range(start, min(size, start + 1000))
                    ],
                )

    def last(self, thread_id: str, n: int = 20) -> list[dict[str, object]]:
        """The same output as ``history()``: provider-shaped dicts, oldest first."""
        with self.conn.cursor() as cur:
            cur.execute(
                f"SELECT role, content, name, tool_calls, tool_call_id FROM {self.table}"
                " WHERE thread_id = %s ORDER BY position DESC LIMIT %s",
                (thread_id, n),
            )
            rows = cur.fetchall()
        messages: list[dict[str, object]] = []
        for role, content, name, tool_calls, tool_call_id in reversed(rows):
            message: dict[str, object] = {"role": role, "content": content}
            if name is not None:
                message["name"] = name
            if tool_calls is not None:
                message["tool_calls"] = json.loads(tool_calls)
            if tool_call_id is not None:
                message["tool_call_id"] = tool_call_id
            messages.append(message)
        return messages

    def close(self) -> None:
        with self.conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self.table}")
        self.conn.close()


def w1(url: str, prefix: str, threads: int, messages: int) -> list[list[object]]:
    """Appends, interleaved: every round appends one message to each thread with raw,
    sync and async in turn, so machine load hits all three alike."""
    total = threads * messages
    raw = Raw(url, f"{prefix}raw_w1")
    store = MySQLStore.from_url(url, prefix=prefix)
    memory = Memory(store)
    ids = [memory.threads.create().id for _ in range(threads)]
    memory.remember(ids[0], "user", "warm up the tokenizer")
    loop = asyncio.new_event_loop()
    astore = AsyncMySQLStore.from_url(url, prefix=prefix)
    amemory = AsyncMemory(astore)

    async def create() -> list[str]:
        return [(await amemory.threads.create()).id for _ in range(threads)]

    aids = loop.run_until_complete(create())
    # The same sync appends with the change feed on (tables of their own prefix): the
    # feed's cost is this side's time over the plain sync one's, interleaved alike.
    feed_store = MySQLStore.from_url(url, prefix=f"{prefix}f_")
    feed = Memory(feed_store)
    feed.events.enable()
    feed_ids = [feed.threads.create().id for _ in range(threads)]
    feed.remember(feed_ids[0], "user", "warm up the tokenizer")

    async def append_async(i: int) -> None:
        for tid in aids:
            await amemory.remember(tid, "user", _message(i))

    spent = {"raw": 0.0, "sync": 0.0, "async": 0.0, "feed": 0.0}
    for i in range(messages):
        start = time.perf_counter()
        for t in range(threads):
            raw.append(f"t{t}", "user", _message(i))
        spent["raw"] += time.perf_counter() - start
        start = time.perf_counter()
        for tid in ids:
            memory.remember(tid, "user", _message(i))
        spent["sync"] += time.perf_counter() - start
        start = time.perf_counter()
        loop.run_until_complete(append_async(i))
        spent["async"] += time.perf_counter() - start
        start = time.perf_counter()
        for tid in feed_ids:
            feed.remember(tid, "user", _message(i))
        spent["feed"] += time.perf_counter() - start
    loop.run_until_complete(astore.close())
    loop.close()
    store.close()
    feed_store.close()
    raw.close()
    raw_rate, sync_rate, async_rate, feed_rate = (
        total / spent[k] for k in ("raw", "sync", "async", "feed")
    )
    return [
        ["raw PyMySQL (autocommit INSERT)", raw_rate, 1.0, "-"],
        ["memorybank sync", sync_rate, sync_rate / raw_rate, ">= 0.5"],
        ["memorybank async", async_rate, async_rate / raw_rate, ">= 0.5"],
        [
            "memorybank sync, change feed on",
            feed_rate,
            feed_rate / raw_rate,
            f"time x{sync_rate / feed_rate:.3f} of feed off (<= 1.15)",
        ],
    ]


def w2(url: str, prefix: str, repeat: int) -> list[list[object]]:
    """Last 20, interleaved: each sample times raw, history(), entries.list() and async
    history() back to back. Raw returns what history() returns (checked)."""
    raw = Raw(url, f"{prefix}raw_w2")
    store = MySQLStore.from_url(url, prefix=prefix)
    memory = Memory(store)
    loop = asyncio.new_event_loop()
    astore = AsyncMySQLStore.from_url(url, prefix=prefix)
    amemory = AsyncMemory(astore)
    rows: list[list[object]] = []
    for size in (200, 20_000):
        tid = memory.threads.create().id
        batch = [{"role": "user", "content": _message(i)} for i in range(size)]
        for first in range(0, size, 1000):
            memory.entries.add_many(tid, batch[first : first + 1000])
        raw.load(tid, size)
        assert raw.last(tid) == memory.history(tid, last=20)  # the same output
        calls: dict[str, Any] = {
            "raw PyMySQL": functools.partial(raw.last, tid),
            "memorybank history()": functools.partial(memory.history, tid, last=20),
            "memorybank entries.list()": functools.partial(memory.entries.list, tid, limit=20),
            "memorybank async history()": lambda tid=tid: loop.run_until_complete(
                amemory.history(tid, last=20)
            ),
            # the branch row's kept entry_count (migration 7), not a count of the rows
            "memorybank entries.count()": functools.partial(memory.entries.count, tid),
        }
        samples: dict[str, list[float]] = {name: [] for name in calls}
        for sample in range(5 + repeat):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                if sample >= 5:  # warm-up
                    samples[name].append(time.perf_counter() - start)
        base = Latency.of(samples["raw PyMySQL"]).p50
        for name in calls:
            lat = Latency.of(samples[name])
            rows.append([f"{size:,}", name, lat.p50, lat.p95, lat.p50 / base])
    loop.run_until_complete(astore.close())
    loop.close()
    store.close()
    raw.close()
    return rows


class AsyncRaw:
    """``Raw`` on one aiomysql connection (the baseline for ``AsyncMemory``)."""

    def __init__(self, conn: Any, table_name: str, positions: dict[str, int]) -> None:
        self.conn = conn
        self.table = table_name
        self.positions = positions

    async def append(self, thread_id: str, role: str, content: str) -> None:
        position = self.positions.get(thread_id, 0) + 1
        self.positions[thread_id] = position
        async with self.conn.cursor() as cur:
            await cur.execute(
                f"INSERT INTO {self.table} VALUES (%s, %s, %s, %s, NULL, NULL, NULL, %s)",
                (thread_id, position, role, content, time.time_ns() // 1000),
            )

    async def last(self, thread_id: str, n: int = 20) -> list[dict[str, object]]:
        async with self.conn.cursor() as cur:
            await cur.execute(
                f"SELECT role, content, name, tool_calls, tool_call_id FROM {self.table}"
                " WHERE thread_id = %s ORDER BY position DESC LIMIT %s",
                (thread_id, n),
            )
            rows = await cur.fetchall()
        messages: list[dict[str, object]] = []
        for role, content, name, tool_calls, tool_call_id in reversed(rows):
            message: dict[str, object] = {"role": role, "content": content}
            if name is not None:
                message["name"] = name
            if tool_calls is not None:
                message["tool_calls"] = json.loads(tool_calls)
            if tool_call_id is not None:
                message["tool_call_id"] = tool_call_id
            messages.append(message)
        return messages


def w3(url: str, prefix: str, rounds: int, per_round: int) -> list[list[object]]:
    """Concurrent clients: appends and last 20 with 1 and 32 tasks (see ``bench._clients``)."""
    import aiomysql

    raw = Raw(url, f"{prefix}raw_w3")  # creates the table (and drops it at the end)

    async def open_raw(n: int) -> tuple[list[AsyncRaw], Any]:
        options = url_options(url)
        options["db"] = options.pop("database")
        conns = [
            await aiomysql.connect(**options, charset="utf8mb4", autocommit=True) for _ in range(n)
        ]
        positions: dict[str, int] = {}
        clients = [AsyncRaw(conn, raw.table, positions) for conn in conns]

        async def close() -> None:
            for conn in conns:
                conn.close()

        return clients, close

    async def open_memory(n: int) -> tuple[AsyncMemory, Any]:
        store = AsyncMySQLStore.from_url(url, prefix=prefix, pool_size=n)
        memory = AsyncMemory(store)
        await memory.remember((await memory.threads.create()).id, "user", "warm up")
        return memory, store.close

    try:
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
    finally:
        raw.close()


def _drop(url: str, prefix: str) -> None:
    conn: Any = pymysql.connect(**url_options(url), charset="utf8mb4", autocommit=True)
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_notes = 0")
        for name in TABLES:
            cur.execute(f"DROP TABLE IF EXISTS `{prefix}{name}`")
    conn.close()


def server_settings(url: str) -> str:
    """The server's version and what decides the cost of a commit."""
    conn: Any = pymysql.connect(**url_options(url), charset="utf8mb4", autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT @@version, @@innodb_flush_log_at_trx_commit, @@log_bin, @@sync_binlog"
            )
            version, flush, log_bin, sync_binlog = cur.fetchone()
    finally:
        conn.close()
    return (
        f"server {version}: innodb_flush_log_at_trx_commit={flush}, log_bin={log_bin},"
        f" sync_binlog={sync_binlog}; raw autocommits each INSERT"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--url", default=DEFAULT_URL, help="mysql:// URL of the server")
    parser.add_argument("--only", choices=("core", "clients"), help="run one part (clients: W3)")
    args = parser.parse_args(argv)
    threads, messages, repeat = (10, 50, 50) if args.quick else (100, 200, 500)
    prefix = f"bench{uuid.uuid4().hex[:8]}_"
    print(server_settings(args.url))
    try:
        if args.only != "core":
            print("\n### MySQL W3: concurrent clients (asyncio tasks, a connection each)\n")
            print(table(HEADERS, w3(args.url, prefix, *((2, 10) if args.quick else (12, 50)))))
        if args.only == "clients":
            return
        print(f"\n### MySQL W1: {threads} threads x {messages} appends, each committed\n")
        appends = w1(args.url, prefix, threads, messages)
        print(table(["", "appends/s", "ratio vs raw", "target"], appends))
        print("\n### MySQL W2: last 20 entries (ms)\n")
        reads = w2(args.url, prefix, repeat)
        print(table(["thread size", "", "p50 ms", "p95 ms", "p50 ratio"], reads))
        print("\n(targets: last-20 p50 ratio <= 2)")
    finally:
        _drop(args.url, prefix)
        _drop(args.url, f"{prefix}f_")  # W1's change feed side


if __name__ == "__main__":
    main()
