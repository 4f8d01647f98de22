"""Fixtures shared by the framework adapters' tests: a fresh memory on SQLite and PostgreSQL.

A module binds them by name (``memory = _stores.memory``; pytest finds fixtures by
module attribute). ``memory`` is a sync ``Memory``, ``amemory`` an ``AsyncMemory``;
each has its own SQLite file or PostgreSQL table prefix, dropped at the end (the
server skips locally when unreachable and fails in CI, see ``require_server``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from memorybank import AsyncMemory, Memory
from tests.all_stores import open_store
from tests.reliability._harness import provide

#: The stores every adapter is tested on (the isolation suite covers all of them).
ADAPTER_STORES = ("sqlite", "postgres")


@pytest.fixture(params=ADAPTER_STORES)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A sync ``Memory`` on a fresh store of each kind."""
    with open_store(str(request.param), tmp_path) as store, Memory(store) as root:
        yield root


@pytest.fixture(params=ADAPTER_STORES)
async def amemory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncMemory]:
    """An ``AsyncMemory`` on a fresh store of each kind."""
    name = "sqlite-full" if request.param == "sqlite" else str(request.param)
    for spec in provide(name, tmp_path):
        store = spec.open_async(pool_size=2)
        try:
            yield AsyncMemory(store)
        finally:
            await store.close()
