"""A server stopped and restarted under load: typed failures, then recovery, nothing half-written.

For each server store, on a server of the suite's own (``own_postgres``,
``own_redis``, ``own_mariadb``: never the shared ones), several concurrent
callers append three-entry batches to one thread and read it back in a loop.
The server is killed mid-load (``pg_ctl -m immediate``, SIGKILL): every caller
must then get ``StoreUnavailable`` (any other exception fails the test; a
hang would hit the test's timeout, as the store's own timeout should end every
call first). The server restarts on the same port and data: every caller must
succeed again on the same ``AsyncMemory``, never reopened. At the end each
batch is whole or absent, every acknowledged batch is there exactly once, and
positions have no duplicates.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable

import pytest

from memorybank import AsyncMemory, StoreUnavailable
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.mysql._async import AsyncMySQLStore
from memorybank.stores.postgres._async import AsyncPostgresStore
from memorybank.stores.redis._async import AsyncRedisStore
from tests.reliability.conftest import OwnServer

pytestmark = [pytest.mark.server, pytest.mark.timeout(120)]

TIMEOUT = 2.0  # the stores' timeout, seconds
CALLERS = 4
BATCH = 3


def _postgres(url: str, prefix: str, timeout: float) -> AsyncStore:
    return AsyncPostgresStore.from_url(url, prefix=prefix, pool_size=CALLERS, timeout=timeout)


def _redis(url: str, prefix: str, timeout: float) -> AsyncStore:
    return AsyncRedisStore.from_url(url, prefix=f"{prefix}:", timeout=timeout)


def _mariadb(url: str, prefix: str, timeout: float) -> AsyncStore:
    return AsyncMySQLStore.from_url(url, prefix=prefix, pool_size=CALLERS, timeout=timeout)


STORES: dict[str, Callable[[str, str, float], AsyncStore]] = {
    "postgres": _postgres,
    "redis": _redis,
    "mariadb": _mariadb,
}


class _Load:
    """Callers appending batches and reading; what they saw, per phase."""

    def __init__(self, memory: AsyncMemory, thread_id: str) -> None:
        self.memory = memory
        self.thread_id = thread_id
        self.acknowledged: list[str] = []
        self.phase = "up"
        self.failed_down = [asyncio.Event() for _ in range(CALLERS)]
        self.recovered = [asyncio.Event() for _ in range(CALLERS)]
        self.failures = Counter[str]()
        self.warm = asyncio.Event()  # a few batches written before the outage
        self.stop = asyncio.Event()

    async def caller(self, n: int) -> None:
        batch = 0
        while not self.stop.is_set():
            label = f"c{n}b{batch}"
            batch += 1
            phase = self.phase
            try:
                await self.memory.entries.add_many(
                    self.thread_id,
                    [{"role": "user", "content": f"{label} m{k}"} for k in range(BATCH)],
                )
                self.acknowledged.append(label)
                if len(self.acknowledged) >= 2 * CALLERS:
                    self.warm.set()
                await self.memory.entries.list(self.thread_id, limit=BATCH)
            except StoreUnavailable:
                self.failures[phase] += 1
                if phase == "down":
                    self.failed_down[n].set()
                await asyncio.sleep(0.05)
                continue
            if phase == "restarted":
                self.recovered[n].set()
            await asyncio.sleep(0)


async def _all(events: list[asyncio.Event]) -> None:
    await asyncio.gather(*(event.wait() for event in events))


@pytest.mark.parametrize("name", list(STORES))
async def test_a_restart_fails_calls_as_unavailable_then_the_same_memory_works(
    name: str, request: pytest.FixtureRequest
) -> None:
    server: OwnServer = request.getfixturevalue(f"own_{name}")
    prefix = f"mb_{uuid.uuid4().hex[:8]}_"
    # The schema is made first without the short timeout: creating it on the fresh
    # server can take longer than TIMEOUT on a loaded machine, and is not under test.
    setup = STORES[name](server.url, prefix, 30.0)
    await AsyncMemory(setup).threads.create()
    await setup.close()
    store = STORES[name](server.url, prefix, TIMEOUT)
    memory = AsyncMemory(store)
    thread = await memory.threads.create()
    load = _Load(memory, thread.id)
    callers = [asyncio.create_task(load.caller(n)) for n in range(CALLERS)]
    try:
        await load.warm.wait()
        load.phase = "down"
        await asyncio.to_thread(server.stop)
        try:
            await _all(load.failed_down)
        finally:
            load.phase = "restarted"
            await asyncio.to_thread(server.start)
        await _all(load.recovered)
    finally:
        load.stop.set()
        await asyncio.gather(*callers)  # re-raises anything but StoreUnavailable

    entries = await memory.entries.list(thread.id)
    await store.close()
    sizes = Counter(e.content.split(" ")[0] for e in entries if e.content)
    assert set(sizes.values()) == {BATCH}, f"half-written batches: {sizes}"
    assert set(load.acknowledged) <= set(sizes)
    assert len({e.position for e in entries}) == len(entries)
    assert load.failures["down"] >= CALLERS
