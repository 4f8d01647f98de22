"""SQLite: memorybank (sync and async) against raw ``sqlite3`` at the same durability.

W1  appends: T threads x M messages, one call per message, each durable on return
    (WAL, synchronous=FULL for both sides).
W2  "last 20" p50/p95 on a 200-entry and a 20,000-entry thread.
W3  cold start: a new process opens the file and reads the last 20.

Run: ``python -m bench.bench_sqlite [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._util import Latency, measure, table
from memorybank import AsyncMemory, Memory
from memorybank.stores import AsyncSQLiteStore, SQLiteStore

TEXT = "The quick brown fox jumps over the lazy dog while the agent keeps notes. "


def _message(i: int) -> str:
    return f"{i}: {TEXT}"


class Raw:
    """What an application would write by hand: one table, one index, commit per message."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS messages (thread_id TEXT NOT NULL, position INTEGER NOT"
            " NULL, role TEXT NOT NULL, content TEXT, name TEXT, tool_calls TEXT,"
            " tool_call_id TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (thread_id, position))"
        )
        self.positions: dict[str, int] = {}

    def append(self, thread_id: str, role: str, content: str) -> None:
        position = self.positions.get(thread_id, 0) + 1
        self.positions[thread_id] = position
        self.conn.execute("BEGIN")
        self.conn.execute(
            "INSERT INTO messages VALUES (?, ?, ?, ?, NULL, NULL, NULL, ?)",
            (thread_id, position, role, content, time.time_ns() // 1000),
        )
        self.conn.execute("COMMIT")

    def last(self, thread_id: str, n: int = 20) -> list[dict[str, object]]:
        """The same output as ``history()``: provider-shaped dicts, oldest first."""
        rows = self.conn.execute(
            "SELECT role, content, name, tool_calls, tool_call_id FROM messages"
            " WHERE thread_id = ? ORDER BY position DESC LIMIT ?",
            (thread_id, n),
        ).fetchall()
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


def w1(tmp: Path, threads: int, messages: int) -> list[list[object]]:
    total = threads * messages

    raw = Raw(tmp / "raw_w1.db")
    start = time.perf_counter()
    for t in range(threads):
        for i in range(messages):
            raw.append(f"t{t}", "user", _message(i))
    raw_rate = total / (time.perf_counter() - start)

    memory = Memory(SQLiteStore(tmp / "mb_w1.db", synchronous="full"))
    ids = [memory.threads.create().id for _ in range(threads)]
    memory.remember(ids[0], "user", "warm up the tokenizer")
    start = time.perf_counter()
    for tid in ids:
        for i in range(messages):
            memory.remember(tid, "user", _message(i))
    sync_rate = total / (time.perf_counter() - start)
    memory.store.close()

    async def run_async() -> float:
        store = AsyncSQLiteStore(tmp / "mb_w1_async.db", synchronous="full")
        amemory = AsyncMemory(store)
        aids = [(await amemory.threads.create()).id for _ in range(threads)]
        start = time.perf_counter()
        for tid in aids:
            for i in range(messages):
                await amemory.remember(tid, "user", _message(i))
        rate = total / (time.perf_counter() - start)
        await store.close()
        return rate

    async_rate = asyncio.run(run_async())
    return [
        ["raw sqlite3", raw_rate, 1.0, "-"],
        ["memorybank sync", sync_rate, sync_rate / raw_rate, ">= 0.33"],
        ["memorybank async", async_rate, async_rate / raw_rate, ">= 0.15"],
    ]


def w2(tmp: Path, repeat: int) -> tuple[list[list[object]], Path, str, str]:
    raw = Raw(tmp / "raw_w2.db")
    raw.conn.execute("PRAGMA synchronous = OFF")
    store = SQLiteStore(tmp / "mb_w2.db", synchronous="off")
    memory = Memory(store)
    rows: list[list[object]] = []
    big_id = ""
    for size in (200, 20_000):
        tid = memory.threads.create().id
        big_id = tid
        batch = [{"role": "user", "content": _message(i)} for i in range(size)]
        for start in range(0, size, 1000):
            memory.entries.add_many(tid, batch[start : start + 1000])
        raw.conn.execute("BEGIN")
        for i in range(size):
            raw.conn.execute(
                "INSERT INTO messages VALUES (?, ?, ?, ?, NULL, NULL, NULL, 0)",
                (tid, i + 1, "user", _message(i)),
            )
        raw.conn.execute("COMMIT")
        raw_lat = measure(functools.partial(raw.last, tid), repeat)
        mb_lat = measure(functools.partial(memory.history, tid, last=20), repeat)
        ent_lat = measure(functools.partial(memory.entries.list, tid, limit=20), repeat)
        rows += [
            [f"{size:,}", "raw sqlite3", raw_lat.p50, raw_lat.p95, 1.0],
            [f"{size:,}", "memorybank history()", mb_lat.p50, mb_lat.p95, mb_lat.p50 / raw_lat.p50],
            [
                f"{size:,}",
                "memorybank entries.list()",
                ent_lat.p50,
                ent_lat.p95,
                ent_lat.p50 / raw_lat.p50,
            ],
        ]

    async def run_async() -> Latency:
        astore = AsyncSQLiteStore(tmp / "mb_w2.db", synchronous="off")
        amemory = AsyncMemory(astore)
        for _ in range(5):
            await amemory.history(big_id, last=20)
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            await amemory.history(big_id, last=20)
            samples.append(time.perf_counter() - start)
        await astore.close()
        return Latency.of(samples)

    alat = asyncio.run(run_async())
    raw_big = rows[-3][2]
    assert isinstance(raw_big, float)
    rows.append(["20,000", "memorybank async history()", alat.p50, alat.p95, alat.p50 / raw_big])
    store.close()
    return rows, tmp / "mb_w2.db", big_id, str(tmp / "raw_w2.db")


def w3(mb_path: Path, thread_id: str, raw_path: str, repeat: int) -> list[list[object]]:
    raw_code = (
        f"import sqlite3; c = sqlite3.connect({raw_path!r});"
        " c.execute('SELECT role, content FROM messages WHERE thread_id = ?"
        f" ORDER BY position DESC LIMIT 20', ({thread_id!r},)).fetchall()"
    )
    mb_code = "from memorybank import Memory; m = Memory({!r}); m.history({!r}, last=20)".format(
        f"sqlite:///{mb_path}",
        thread_id,
    )

    def run(code: str) -> None:
        subprocess.run([sys.executable, "-c", code], check=True)

    raw_lat = measure(lambda: run(raw_code), repeat, warmup=2)
    mb_lat = measure(lambda: run(mb_code), repeat, warmup=2)
    return [
        ["raw sqlite3", raw_lat.p50, raw_lat.p95, 1.0, "-"],
        ["memorybank", mb_lat.p50, mb_lat.p95, mb_lat.p50 / raw_lat.p50, "<= 5"],
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args(argv)
    threads, messages, repeat = (10, 20, 50) if args.quick else (100, 200, 500)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        print(
            f"\n### SQLite W1: {threads} threads x {messages} appends, durable (synchronous=FULL)\n"
        )
        print(table(["", "appends/s", "ratio vs raw", "target"], w1(tmp, threads, messages)))
        rows, mb_path, big_id, raw_path = w2(tmp, repeat)
        print("\n### SQLite W2: last 20 entries (ms)\n")
        print(table(["thread size", "", "p50 ms", "p95 ms", "p50 ratio"], rows))
        print("\n### SQLite W3: cold start, new process reads last 20 (ms, whole process)\n")
        print(
            table(
                ["", "p50 ms", "p95 ms", "ratio", "target"],
                w3(mb_path, big_id, raw_path, 5 if args.quick else 20),
            )
        )


if __name__ == "__main__":
    main()
