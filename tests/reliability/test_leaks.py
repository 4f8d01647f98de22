"""Opening and closing a store many times leaks no descriptor and no server session.

Each cycle opens a store, writes and reads through ``Memory``/``AsyncMemory``,
and closes it; ``200 x MEMORYBANK_RELIABILITY_SCALE`` cycles per store (half
sync, half async). Before and after: this process's open file descriptors
(``/proc/self/fd``) and the sessions the server holds for its connections
(``pg_stat_activity``, MariaDB's process list, Redis ``CLIENT LIST``). One
leaked descriptor or connection per cycle would show as hundreds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank import AsyncMemory, Memory
from tests.reliability._harness import (
    SCALE,
    StoreSpec,
    Words,
    open_fds,
    provide,
    scaled,
    server_sessions,
    store_params,
)

pytestmark = pytest.mark.timeout(120 + 120 * SCALE)

CYCLES = scaled(100)  # of each kind, sync and async
WARMUP = 3
#: Descriptors that may come and go between two samples without a leak (lazy imports, caches).
SLACK = 3


@pytest.fixture(params=store_params(("sqlite-full", "postgres", "mysql", "redis")))
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


def sync_cycle(spec: StoreSpec) -> None:
    store = spec.open()
    try:
        memory = Memory(store, tokenizer=Words())
        thread_id = memory.threads.create().id
        memory.entries.add(thread_id, {"role": "user", "content": "hello"})
        assert len(memory.history(thread_id)) == 1
    finally:
        store.close()


async def async_cycles(spec: StoreSpec, count: int) -> None:
    for _ in range(count):
        store = spec.open_async()
        try:
            memory = AsyncMemory(store, tokenizer=Words())
            thread_id = (await memory.threads.create()).id
            await memory.entries.add(thread_id, {"role": "user", "content": "hello"})
            assert len(await memory.history(thread_id)) == 1
        finally:
            await store.close()


def cycles(spec: StoreSpec, count: int) -> None:
    for _ in range(count):
        sync_cycle(spec)
    asyncio.run(async_cycles(spec, count))


def test_open_close_cycles(spec: StoreSpec) -> None:
    cycles(spec, WARMUP)
    fds, sessions = open_fds(), server_sessions(spec)
    with spec.memory() as memory:  # the probes see an open store's descriptors and sessions
        memory.threads.create()
        assert open_fds() > fds
        assert server_sessions(spec) > sessions or spec.kind == "sqlite"
    cycles(spec, CYCLES)
    fds_after, sessions_after = open_fds(), server_sessions(spec)
    print(f"{spec.name}: {2 * CYCLES} cycles, descriptors {fds}->{fds_after},", end=" ")
    print(f"server sessions {sessions}->{sessions_after}")
    assert fds_after <= fds + SLACK, f"{fds_after - fds} descriptors leaked"
    assert sessions_after <= sessions, f"{sessions_after - sessions} server sessions leaked"
