"""An export taken while writers work is one consistent state that imports (issue 39).

Three writers append entries, create branches from entries, add facts and delete
threads, without pause, while 20 exports are taken one after another. Every dump
must import into an empty tenant of a store of the same kind, and say exactly what
it holds: each branch's entries in increasing positions and as many as its thread
line counts, every fork entry present on its source branch, and (re-exported from
the import) the same lines again. On a store with ``Capability.SNAPSHOT`` the dump is
moreover one point in time: the ledger writer appends entry ``n`` and only then adds
fact ``n``, so a dump holds as many ledger facts as ledger entries, or one fewer.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memorybank import AsyncMemory
from memorybank.dump._async.portability import export_dump, import_dump
from memorybank.errors import Conflict, NotFound
from memorybank.stores.contract import AsyncStore, Capability
from tests.reliability._harness import provide, store_params

TENANT = "snap"
ROUNDS = 20
NOW = datetime(2026, 12, 6, tzinfo=UTC)
#: Seconds a writer waits between writes: the data stays small (the test's time is the
#: imports'), the writes still land between the reads of every export.
PAUSE = 0.03

pytestmark = pytest.mark.parametrize(
    "kind", store_params(("sqlite-full", "postgres", "mysql", "redis"))
)


async def _lines(store: AsyncStore, tenant: str) -> list[str]:
    return [line async for line in export_dump(store, tenant, now=NOW)]


async def _writer(memory: AsyncMemory, number: int, stop: asyncio.Event, ledger: str | None) -> int:
    """Writes until ``stop``; how many writes it made."""
    rng = random.Random(number)
    mine: list[str] = []
    done = 0
    while not stop.is_set():
        done += 1
        try:
            if ledger is not None and done % 3 == 0:
                entry = await memory.entries.add(ledger, {"role": "user", "content": f"L{done}"})
                await memory.facts.add(content=f"ledger {entry.id}")
                continue
            roll = rng.random()
            if len(mine) < 3 or (roll < 0.1 and len(mine) < 6):
                thread = await memory.threads.create(title=f"w{number}")
                mine.append(thread.id)
            elif roll < 0.55:
                messages = [
                    {"role": "user", "content": f"w{number} {done}.{i}"}
                    for i in range(rng.randint(1, 3))
                ]
                await memory.entries.add_many(rng.choice(mine), messages)
            elif roll < 0.7:
                thread_id = rng.choice(mine)
                entries = await memory.entries.list(thread_id, limit=5)
                if entries:
                    await memory.branches.create(
                        thread_id, f"b{done}", from_entry=rng.choice(entries).id
                    )
            elif roll < 0.75:
                await memory.facts.add(content=f"w{number} fact {done}")
            else:
                await memory.threads.delete(mine.pop(rng.randrange(len(mine))))
        except (NotFound, Conflict):  # a thread another step of this writer deleted
            pass
        await asyncio.sleep(PAUSE)
    return done


def _check(lines: list[str], snapshot: bool) -> None:
    """What a dump says of itself holds (see the module docstring)."""
    data = [json.loads(line) for line in lines[1:-1]]
    thread: dict[str, Any] | None = None
    positions: dict[str, list[int]] = {}
    ids: dict[str, set[str]] = {}

    def end() -> None:
        if thread is None:
            return
        branches = {b["name"]: b for b in thread["branches"]}
        for name, info in branches.items():
            got = positions.get(name, [])
            assert got == sorted(set(got)), (thread["thread"]["id"], name)
            fork = info["fork_entry"]
            if fork is not None:  # held by the source: dumped there or in its own prefix
                source = branches[info["from_branch"]]
                assert fork in ids.get(source["name"], set()) or source["fork_entry"] is not None
                shared = info["entries"] - len(got)
                assert shared >= 1
            else:
                assert len(got) == info["entries"], (thread["thread"]["id"], name)

    for line in data:
        if line["type"] == "thread":
            end()
            thread, positions, ids = line, {}, {}
        elif line["type"] == "entry":
            entry = line["entry"]
            positions.setdefault(entry["branch"], []).append(entry["position"])
            ids.setdefault(entry["branch"], set()).add(entry["id"])
        else:
            end()
            thread = None
    end()
    if snapshot:
        ledger = [
            line
            for line in data
            if line["type"] == "thread" and line["thread"].get("title") == "ledger"
        ]
        entries = sum(b["entries"] for b in ledger[0]["branches"])
        facts = sum(
            1
            for line in data
            if line["type"] == "record"
            and line["record"]["kind"] == "fact"
            and line["record"]["content"].startswith("ledger ")
        )
        assert facts in (entries - 1, entries), (facts, entries)


@pytest.fixture
async def stores(kind: str, tmp_path: Path) -> AsyncIterator[tuple[AsyncStore, AsyncStore]]:
    """A source store and an import target of ``kind``, each of its own."""
    specs = [provide(kind, tmp_path) for _ in range(2)]
    opened: list[AsyncStore] = []
    try:
        for spec in specs:
            opened.append(next(spec).open_async())
        yield opened[0], opened[1]
    finally:
        for store in opened:
            await store.close()
        for spec in specs:
            next(spec, None)  # drops the tables or keys


async def test_exports_under_concurrent_writers_import_and_are_consistent(
    stores: tuple[AsyncStore, AsyncStore],
) -> None:
    source, target = stores
    memory = AsyncMemory(source, tenant_id=TENANT)
    ledger = await memory.threads.create(title="ledger")
    snapshot = Capability.SNAPSHOT in source.capabilities
    stop = asyncio.Event()
    writers = [
        asyncio.create_task(
            _writer(AsyncMemory(source, tenant_id=TENANT), n, stop, ledger.id if n == 0 else None)
        )
        for n in range(3)
    ]
    try:
        await asyncio.sleep(0.2)  # some data first
        dumps = []
        for _ in range(ROUNDS):
            dumps.append(await _lines(source, TENANT))
            await asyncio.sleep(0.01)
    finally:
        stop.set()
        written = await asyncio.gather(*writers)
    assert min(written) > ROUNDS  # the writers did work while the exports ran
    threads_seen: set[str] = set()
    lanes = asyncio.Semaphore(4)  # imports into tenants of their own, a few at once

    async def verify(number: int, lines: list[str]) -> None:
        _check(lines, snapshot)
        tenant = f"r{number}"
        async with lanes:
            report = await import_dump(target, tenant, lines)
            assert report.partial is None and not report.warnings
            mine = [json.loads(line) for line in lines[1:-1]]
            if number % 4 == 3:  # the import holds what the dump says (a few: each costs)
                back = [json.loads(line) for line in (await _lines(target, tenant))[1:-1]]
                assert _normal(back) == _normal(mine), number
        threads_seen.update(line["thread"]["id"] for line in mine if line["type"] == "thread")

    await asyncio.gather(*(verify(number, lines) for number, lines in enumerate(dumps)))
    assert len(threads_seen) > 3


def _normal(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines with what an import recreates differently left out: the tenant, a branch's
    ``from_entry``, and positions (an import appends, closing gaps)."""
    out = []
    for line in lines:
        line = {
            k: {f: x for f, x in v.items() if f != "tenant_id"} if isinstance(v, dict) else v
            for k, v in line.items()
        }
        if line["type"] == "thread":
            line = {**line, "branches": [{**b, "from_entry": None} for b in line["branches"]]}
        elif line["type"] == "entry":
            line = {**line, "entry": {**line["entry"], "position": None}}
        out.append(line)
    return out
