"""SQLite: memorybank (sync and async) against raw ``sqlite3`` and the peers, in one run.

Systems: raw ``sqlite3`` (WAL, one table, one index) at synchronous NORMAL and
FULL; memorybank at ``synchronous="normal"`` and at its default (``"full"``);
the OpenAI Agents SDK ``SQLiteSession`` (WAL, SQLite's default FULL) and
LangGraph's ``SqliteSaver`` (WAL, FULL; one checkpoint holding the thread's
messages per append), when installed (the ``dev`` extra has both).

W1  appends: T threads x M messages, one call per message, each committed on
    return. The systems take turns one thread at a time, so a load change on a
    shared machine hits them alike; the page cache is written back (untimed)
    before each turn, so no system's fsync pays for another's unsynced writes.
W2  "last 20" p50/p95 on a 200-message and a 20,000-message thread.
W3  cold start: a new process imports the library, opens the file and reads the last 20.
W4  where an append's time goes (``--only w4``, not in the default run): raw and
    memorybank (sync) at synchronous OFF, NORMAL and FULL, after 5,000 untimed
    appends (past the first checkpoint, where every commit also grows the
    ``-wal`` file), taking turns as in W1; and the WAL frames (pages) one commit
    writes, counted by ``PRAGMA wal_checkpoint`` over 300 appends. OFF is the
    CPU; FULL - NORMAL is the WAL ``fsync``, which grows with the frames written.

Run: ``python -m bench.bench_sqlite [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from bench._util import Latency, measure, table
from memorybank import AsyncMemory, Memory
from memorybank.stores import AsyncSQLiteStore, SQLiteStore

TEXT = "The quick brown fox jumps over the lazy dog while the agent keeps notes. "
SIZES = (200, 20_000)


def _message(i: int) -> str:
    return f"{i}: {TEXT}"


class Raw:
    """What an application would write by hand: one table, one index, commit per message."""

    def __init__(self, path: Path, synchronous: str = "FULL") -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {synchronous}")
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


# -- peers (optional: skipped when not installed) ------------------------------------


class Loop:
    """One event loop for the async systems, so a call does not pay for a new loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.loop.close()


class OpenAISessions:
    """``agents.SQLiteSession``: one session per thread on one file (WAL, FULL)."""

    def __init__(self, path: Path, loop: Loop) -> None:
        from agents import SQLiteSession

        self.cls = SQLiteSession
        self.path = path
        self.loop = loop
        self.sessions: dict[str, Any] = {}

    def session(self, thread_id: str) -> Any:
        if thread_id not in self.sessions:
            self.sessions[thread_id] = self.cls(thread_id, self.path)
        return self.sessions[thread_id]

    def append(self, thread_id: str, content: str) -> None:
        self.loop.run(self.session(thread_id).add_items([{"role": "user", "content": content}]))

    def add_many(self, thread_id: str, contents: list[str]) -> None:
        items = [{"role": "user", "content": c} for c in contents]
        self.loop.run(self.session(thread_id).add_items(items))

    def last(self, thread_id: str) -> Any:
        return self.loop.run(self.session(thread_id).get_items(limit=20))

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()


class LangGraphSaver:
    """``langgraph.checkpoint.sqlite.SqliteSaver``: the thread's messages are one channel;
    an append writes the next checkpoint (how a graph with a message list persists)."""

    def __init__(self, path: Path) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()
        self.state: dict[str, tuple[list[dict[str, str]], dict[str, Any]]] = {}

    def _put(self, thread_id: str, new: list[dict[str, str]]) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        messages, config = self.state.get(
            thread_id, ([], {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        )
        messages = messages + new
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": messages}
        version = len(messages)
        checkpoint["channel_versions"] = {"messages": version}
        step = {"source": "loop", "step": version, "parents": {}}
        config = self.saver.put(config, checkpoint, step, {"messages": version})  # type: ignore[arg-type,assignment]
        self.state[thread_id] = (messages, config)

    def append(self, thread_id: str, content: str) -> None:
        self._put(thread_id, [{"role": "user", "content": content}])

    def add_many(self, thread_id: str, contents: list[str]) -> None:
        self._put(thread_id, [{"role": "user", "content": c} for c in contents])

    def last(self, thread_id: str) -> Any:
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        found = self.saver.get_tuple(config)  # type: ignore[arg-type]
        assert found is not None
        return found.checkpoint["channel_values"]["messages"][-20:]

    def close(self) -> None:
        self.conn.close()


def _peers(tmp: Path, name: str, loop: Loop) -> dict[str, Any]:
    """The installed peers, each on its own file under ``tmp``."""
    peers: dict[str, Any] = {}
    try:
        peers["OpenAI Agents SQLiteSession (WAL, FULL)"] = OpenAISessions(
            tmp / f"openai_{name}.db", loop
        )
    except ImportError as error:
        print(f"(OpenAI Agents SDK not installed: {error})")
    try:
        peers["LangGraph SqliteSaver (WAL, FULL)"] = LangGraphSaver(tmp / f"langgraph_{name}.db")
    except ImportError as error:
        print(f"(langgraph-checkpoint-sqlite not installed: {error})")
    return peers


# -- W1 -----------------------------------------------------------------------------


def w1(tmp: Path, threads: int, messages: int, slices: int) -> list[list[object]]:
    total = threads * messages
    loop = Loop()
    raw_normal = Raw(tmp / "raw_w1_normal.db", "NORMAL")
    raw_full = Raw(tmp / "raw_w1_full.db", "FULL")
    mb_normal = Memory(SQLiteStore(tmp / "mb_w1_normal.db", synchronous="normal"))
    mb_full = Memory(SQLiteStore(tmp / "mb_w1_full.db"))  # the default: "full"
    # The change feed on (``memory.events``): its cost is this system's time over the
    # one above it (same durability, turns taken alike).
    mb_feed = Memory(SQLiteStore(tmp / "mb_w1_feed.db", synchronous="normal"))
    mb_feed.events.enable()
    astore = AsyncSQLiteStore(tmp / "mb_w1_async.db")
    amemory = AsyncMemory(astore)
    ids = {
        "normal": [mb_normal.threads.create().id for _ in range(threads)],
        "full": [mb_full.threads.create().id for _ in range(threads)],
        "feed": [mb_feed.threads.create().id for _ in range(threads)],
        "async": [loop.run(amemory.threads.create()).id for _ in range(threads)],
    }
    for memory, key in ((mb_normal, "normal"), (mb_full, "full"), (mb_feed, "feed")):
        memory.remember(ids[key][0], "user", "warm up the tokenizer")
    peers = _peers(tmp, "w1", loop)

    async def async_slice(tids: list[str]) -> None:
        for tid in tids:
            for i in range(messages):
                await amemory.remember(tid, "user", _message(i))

    def run_raw(raw: Raw) -> Callable[[range], None]:
        def go(part: range) -> None:
            for t in part:
                for i in range(messages):
                    raw.append(f"t{t}", "user", _message(i))

        return go

    def run_mb(memory: Memory, key: str) -> Callable[[range], None]:
        def go(part: range) -> None:
            for t in part:
                tid = ids[key][t]
                for i in range(messages):
                    memory.remember(tid, "user", _message(i))

        return go

    def run_peer(peer: Any) -> Callable[[range], None]:
        def go(part: range) -> None:
            for t in part:
                for i in range(messages):
                    peer.append(f"t{t}", _message(i))

        return go

    systems: dict[str, Callable[[range], None]] = {
        "raw sqlite3 (WAL, NORMAL)": run_raw(raw_normal),
        'memorybank sync, synchronous="normal"': run_mb(mb_normal, "normal"),
        'memorybank sync, synchronous="normal", change feed on': run_mb(mb_feed, "feed"),
        "raw sqlite3 (WAL, FULL)": run_raw(raw_full),
        "memorybank sync, default (full)": run_mb(mb_full, "full"),
        "memorybank async, default (full)": lambda part: loop.run(
            async_slice([ids["async"][t] for t in part])
        ),
    }
    for name, peer in peers.items():
        systems[name] = run_peer(peer)
    seconds = dict.fromkeys(systems, 0.0)
    step = max(1, threads // slices)
    for first in range(0, threads, step):
        part = range(first, min(threads, first + step))
        for name, go in systems.items():
            # Untimed: write back what the previous system left in the page cache
            # (NORMAL commits do not sync), or the next fsync would pay for it.
            os.sync()
            start = time.perf_counter()
            go(part)
            seconds[name] += time.perf_counter() - start
    rate = {name: total / s for name, s in seconds.items()}
    normal, full = rate["raw sqlite3 (WAL, NORMAL)"], rate["raw sqlite3 (WAL, FULL)"]
    openai = rate.get("OpenAI Agents SQLiteSession (WAL, FULL)")
    targets = {
        'memorybank sync, synchronous="normal"': (normal, ">= 0.2 x raw NORMAL"),
        "memorybank sync, default (full)": (full, ">= 0.7 x raw FULL"),
    }
    plain = rate['memorybank sync, synchronous="normal"']
    feed_name = 'memorybank sync, synchronous="normal", change feed on'
    targets[feed_name] = (
        normal,
        f"time x{plain / rate[feed_name]:.3f} of feed off (<= 1.15)",
    )
    rows: list[list[object]] = []
    for name, value in rate.items():
        base, target = targets.get(name, (normal if "NORMAL" in name else full, "-"))
        rows.append(
            [
                name,
                value,
                1e6 / value,
                value / base,
                "-" if openai is None else value / openai,
                target,
            ]
        )
    mb_normal.close()
    mb_full.close()
    mb_feed.close()
    loop.run(astore.close())
    for peer in peers.values():
        peer.close()
    loop.close()
    return rows


# -- W4 -----------------------------------------------------------------------------

_LOWER: dict[str, Literal["off", "normal", "full"]] = {
    "OFF": "off",
    "NORMAL": "normal",
    "FULL": "full",
}


def _frames_per_commit(path: Path, append: Callable[[int], object], count: int = 300) -> float:
    """WAL frames one append writes: empty the WAL, append ``count`` times (fewer
    pages than an automatic checkpoint takes), read the WAL's frame count."""
    side = sqlite3.connect(path, isolation_level=None)
    try:
        side.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for i in range(count):
            append(i)
        _, frames, _ = side.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        side.close()
    return float(frames) / count


def w4(tmp: Path, slices: int, messages: int) -> list[list[object]]:
    modes = ("OFF", "NORMAL", "FULL")
    raws = {mode: Raw(tmp / f"raw_w4_{mode}.db", mode) for mode in modes}
    mbs = {
        mode: Memory(SQLiteStore(tmp / f"mb_w4_{mode}.db", synchronous=_LOWER[mode]))
        for mode in modes
    }
    warm = 5_000
    extra = warm // messages + 2  # threads for the warm-up and the frame count
    tids = {mode: [m.threads.create().id for _ in range(slices + extra)] for mode, m in mbs.items()}

    def raw_go(mode: str, thread: int) -> Callable[[int], object]:
        return lambda i: raws[mode].append(f"t{thread}", "user", _message(i))

    def mb_go(mode: str, thread: int) -> Callable[[int], object]:
        return lambda i: mbs[mode].remember(tids[mode][thread], "user", _message(i))

    systems: dict[str, Callable[[str, int], Callable[[int], object]]] = {
        "raw sqlite3": raw_go,
        "memorybank sync": mb_go,
    }
    for go in systems.values():  # past the WAL's first growth
        for mode in modes:
            for i in range(warm):
                go(mode, slices + 1 + i // messages)(i % messages)
    seconds = {(name, mode): 0.0 for name in systems for mode in modes}
    for thread in range(slices):
        for name, go in systems.items():
            for mode in modes:
                append = go(mode, thread)
                os.sync()
                start = time.perf_counter()
                for i in range(messages):
                    append(i)
                seconds[name, mode] += time.perf_counter() - start
    rows: list[list[object]] = []
    per_mode: list[dict[str, float]] = []
    for name, go in systems.items():
        us = {mode: seconds[name, mode] / (slices * messages) * 1e6 for mode in modes}
        path = tmp / f"{'raw' if name == 'raw sqlite3' else 'mb'}_w4_FULL.db"
        frames = _frames_per_commit(path, go("FULL", slices + extra - 1))
        rows.append([name, frames, us["OFF"], us["NORMAL"], us["FULL"], us["FULL"] - us["NORMAL"]])
        per_mode.append(us)
    raw_us, mb_us = per_mode
    rows.append(["ratio raw / memorybank", "-", *(raw_us[m] / mb_us[m] for m in modes), "-"])
    for memory in mbs.values():
        memory.close()
    for raw in raws.values():
        raw.conn.close()
    return rows


# -- W2 -----------------------------------------------------------------------------


def w2(tmp: Path, repeat: int) -> tuple[list[list[object]], dict[str, str]]:
    raw = Raw(tmp / "raw_w2.db")
    raw.conn.execute("PRAGMA synchronous = OFF")
    store = SQLiteStore(tmp / "mb_w2.db", synchronous="off")
    memory = Memory(store)
    loop = Loop()
    peers = _peers(tmp, "w2", loop)
    rows: list[list[object]] = []
    big_id = ""
    astore = AsyncSQLiteStore(tmp / "mb_w2.db", synchronous="off")
    amemory = AsyncMemory(astore)

    async def async_history(tid: str) -> Latency:
        for _ in range(5):
            await amemory.history(tid, last=20)
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            await amemory.history(tid, last=20)
            samples.append(time.perf_counter() - start)
        return Latency.of(samples)

    for size in SIZES:
        tid = memory.threads.create().id
        big_id = tid
        contents = [_message(i) for i in range(size)]
        for start in range(0, size, 1000):
            memory.entries.add_many(
                tid, [{"role": "user", "content": c} for c in contents[start : start + 1000]]
            )
        raw.conn.execute("BEGIN")
        for i in range(size):
            raw.conn.execute(
                "INSERT INTO messages VALUES (?, ?, ?, ?, NULL, NULL, NULL, 0)",
                (tid, i + 1, "user", contents[i]),
            )
        raw.conn.execute("COMMIT")
        for peer in peers.values():
            for start in range(0, size, 1000):
                peer.add_many(tid, contents[start : start + 1000])
        assert len(memory.history(tid, last=20)) == len(raw.last(tid)) == 20
        lat = {
            "raw sqlite3": measure(functools.partial(raw.last, tid), repeat),
            "memorybank history()": measure(
                functools.partial(memory.history, tid, last=20), repeat
            ),
            "memorybank entries.list()": measure(
                functools.partial(memory.entries.list, tid, limit=20), repeat
            ),
            "memorybank async history()": loop.run(async_history(tid)),
        }
        for name, peer in peers.items():
            assert len(peer.last(tid)) == 20
            lat[name] = measure(functools.partial(peer.last, tid), repeat)
        base = lat["raw sqlite3"].p50
        rows += [
            [f"{size:,}", name, 1000 * x.p50, 1000 * x.p95, x.p50 / base] for name, x in lat.items()
        ]
    store.close()
    loop.run(astore.close())
    for peer in peers.values():
        peer.close()
    loop.close()
    paths = {
        "raw": str(tmp / "raw_w2.db"),
        "memorybank": str(tmp / "mb_w2.db"),
        "openai": str(tmp / "openai_w2.db"),
        "langgraph": str(tmp / "langgraph_w2.db"),
        "thread": big_id,
    }
    return rows, paths


# -- W3 -----------------------------------------------------------------------------


def w3(paths: dict[str, str], repeat: int) -> list[list[object]]:
    tid = paths["thread"]
    codes = {
        "raw sqlite3": (
            f"import sqlite3; c = sqlite3.connect({paths['raw']!r});"
            " c.execute('SELECT role, content FROM messages WHERE thread_id = ?"
            f" ORDER BY position DESC LIMIT 20', ({tid!r},)).fetchall()"
        ),
        "memorybank": (
            "from memorybank import Memory;"
            f" m = Memory({'sqlite:///' + paths['memorybank']!r});"
            f" assert len(m.history({tid!r}, last=20)) == 20"
        ),
    }
    try:
        import agents  # noqa: F401

        codes["OpenAI Agents SQLiteSession"] = (
            "import asyncio; from agents import SQLiteSession;"
            f" s = SQLiteSession({tid!r}, {paths['openai']!r});"
            " assert len(asyncio.run(s.get_items(limit=20))) == 20"
        )
    except ImportError:
        pass
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401

        codes["LangGraph SqliteSaver"] = (
            "import sqlite3; from langgraph.checkpoint.sqlite import SqliteSaver;"
            f" s = SqliteSaver(sqlite3.connect({paths['langgraph']!r}));"
            " t = s.get_tuple({'configurable': {'thread_id': "
            f"{tid!r}, 'checkpoint_ns': ''}}}});"
            " assert len(t.checkpoint['channel_values']['messages'][-20:]) == 20"
        )
    except ImportError:
        pass

    # A process compiles every module it imports unless the bytecode caches exist, as
    # they do after an install from a wheel: the warm-up runs write them (also where
    # the environment says not to), so the timed runs measure starts, not compiles.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def run(code: str) -> None:
        subprocess.run([sys.executable, "-c", code], check=True, env=env)

    samples: dict[str, list[float]] = {name: [] for name in codes}
    for code in codes.values():  # warm the page cache and the bytecode caches
        run(code)
    for _ in range(repeat):  # interleaved: a load change hits every system alike
        for name, code in codes.items():
            start = time.perf_counter()
            run(code)
            samples[name].append(time.perf_counter() - start)
    lat = {name: Latency.of(s) for name, s in samples.items()}
    base = lat["raw sqlite3"].p50
    return [
        [name, x.p50, x.p95, x.p50 / base, "<= 2.5" if name == "memorybank" else "-"]
        for name, x in lat.items()
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", choices=["w1", "w2", "w3", "w4"], action="append")
    parser.add_argument("--threads", type=int, help="W1 threads (default 100)")
    parser.add_argument("--messages", type=int, help="W1 messages per thread (default 200)")
    args = parser.parse_args(argv)
    threads, messages, repeat = (10, 20, 50) if args.quick else (100, 200, 1000)
    threads = args.threads or threads
    messages = args.messages or messages
    only = set(args.only or ["w1", "w2", "w3"])
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if "w1" in only:
            print(f"\n### SQLite W1: {threads} threads x {messages} appends, one commit each\n")
            print(
                table(
                    ["", "appends/s", "µs/append", "ratio vs raw", "vs OpenAI", "target"],
                    w1(tmp, threads, messages, slices=threads),
                )
            )
        if only & {"w2", "w3"}:
            rows, paths = w2(tmp, repeat)
            if "w2" in only:
                print("\n### SQLite W2: last 20 messages (µs)\n")
                print(table(["thread size", "", "p50 µs", "p95 µs", "p50 ratio"], rows))
                print("(target: memorybank history() <= 2.5 x raw on both sizes)")
            if "w3" in only:
                print("\n### SQLite W3: cold start, a new process reads the last 20 (ms)\n")
                print(
                    table(
                        ["", "p50 ms", "p95 ms", "ratio", "target"],
                        w3(paths, 5 if args.quick else 20),
                    )
                )
        if "w4" in only:
            print("\n### SQLite W4: where an append's time goes (µs per append)\n")
            print(
                table(
                    ["", "WAL frames/commit", "OFF", "NORMAL", "FULL", "FULL - NORMAL"],
                    w4(tmp, 10 if args.quick else 60, messages),
                )
            )


if __name__ == "__main__":
    main()
