"""Concurrent clients (asyncio tasks), memorybank against the raw driver, one run.

Three cases, each for appends (one ``remember`` / one single-row ``INSERT`` per
call, each committed on return) and for "last 20" reads:

- 1 client;
- 32 clients, each on its own thread (conversation);
- 32 clients all on ONE shared thread.

Every client is a task with its own connection (raw: one connection per client;
memorybank: a store whose pool has one connection per client). Raw rounds and
memorybank rounds alternate (``rounds`` each, every client doing ``per_round``
calls per round) and each side's wall time is summed, so load on the machine
hits both alike. Ratios: appends memorybank/raw (target >= 0.5); last 20 the
time of memorybank over raw (target <= 2).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memorybank import AsyncMemory

CASES: tuple[tuple[str, int, bool], ...] = (
    ("1 client", 1, False),
    ("32 clients, distinct threads", 32, False),
    ("32 clients, one shared thread", 32, True),
)


class RawClient(Protocol):
    async def append(self, thread_id: str, role: str, content: str) -> None: ...

    async def last(self, thread_id: str, n: int = 20) -> list[dict[str, object]]: ...


@dataclass
class Side:
    """One contender: its clients and the thread each client writes to."""

    append: Callable[[int, int], Awaitable[None]]  # (client, message number)
    last: Callable[[int], Awaitable[object]]


async def _timed_round(side: Side, clients: int, calls: int, start: int, read: bool) -> float:
    async def one(c: int) -> None:
        for i in range(start, start + calls):
            if read:
                await side.last(c)
            else:
                await side.append(c, i)

    began = time.perf_counter()
    await asyncio.gather(*(one(c) for c in range(clients)))
    return time.perf_counter() - began


async def _race(
    raw: Side, mine: Side, clients: int, rounds: int, per_round: int, read: bool
) -> tuple[float, float]:
    """ops/s of raw and memorybank, rounds alternating (warm-up round not counted)."""
    await _timed_round(raw, clients, 2, 0, read)
    await _timed_round(mine, clients, 2, 0, read)
    spent = [0.0, 0.0]
    for r in range(rounds):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        for which in order:
            side = (raw, mine)[which]
            spent[which] += await _timed_round(side, clients, per_round, 10 + r * per_round, read)
    total = clients * rounds * per_round
    return total / spent[0], total / spent[1]


async def run_cases(
    message: Callable[[int], str],
    open_raw: Callable[[int], Awaitable[tuple[Sequence[RawClient], Callable[[], Awaitable[Any]]]]],
    open_memory: Callable[[int], Awaitable[tuple[AsyncMemory, Callable[[], Awaitable[Any]]]]],
    *,
    rounds: int,
    per_round: int,
    reads: int,
    label: str,
) -> list[list[object]]:
    """The table rows: case, operation, raw ops/s, memorybank ops/s, ratio, target."""
    rows: list[list[object]] = []
    for case, clients, shared in CASES:
        raws, close_raw = await open_raw(clients)
        memory, close_memory = await open_memory(clients)
        try:
            tag = f"{label}-{clients}-{shared}-{time.monotonic_ns()}"
            raw_tids = [f"{tag}-shared" if shared else f"{tag}-{c}" for c in range(clients)]
            if shared:
                one = (await memory.threads.create()).id
                mb_tids = [one] * clients
            else:
                mb_tids = [(await memory.threads.create()).id for _ in range(clients)]

            rows += await _one_case(
                case, message, raws, raw_tids, memory, mb_tids, shared, rounds, per_round, reads
            )
        finally:
            await close_memory()
            await close_raw()
    return rows


async def _one_case(
    case: str,
    message: Callable[[int], str],
    raws: Sequence[RawClient],
    raw_tids: list[str],
    memory: AsyncMemory,
    mb_tids: list[str],
    shared: bool,
    rounds: int,
    per_round: int,
    reads: int,
) -> list[list[object]]:
    clients = len(raw_tids)

    async def raw_append(c: int, i: int) -> None:
        await raws[c].append(raw_tids[c], "user", message(i))

    async def raw_last(c: int) -> object:
        return await raws[c].last(raw_tids[c])

    async def mb_append(c: int, i: int) -> None:
        await memory.remember(mb_tids[c], "user", message(i))

    async def mb_last(c: int) -> object:
        return await memory.history(mb_tids[c], last=20)

    raw_side, mb_side = Side(raw_append, raw_last), Side(mb_append, mb_last)
    raw_rate, mb_rate = await _race(raw_side, mb_side, clients, rounds, per_round, False)
    rows: list[list[object]] = [[case, "append", raw_rate, mb_rate, mb_rate / raw_rate, ">= 0.5"]]
    assert shared or await raw_last(0) == await mb_last(0)  # the same output
    raw_rate, mb_rate = await _race(raw_side, mb_side, clients, rounds, reads, True)
    rows.append([case, "last 20", raw_rate, mb_rate, raw_rate / mb_rate, "<= 2 (time)"])
    return rows


HEADERS = ["case", "operation", "raw ops/s", "memorybank ops/s", "ratio", "target"]
