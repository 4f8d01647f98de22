"""PostgreSQL store connections: a down server, exhausted and killed pools and their
recovery, a caller's own pool or connection, URL options and bad configuration.

Uses the server at ``$MEMORYBANK_POSTGRES_URL`` (see ``_postgres.py``): skipped
locally when it is down, failed in CI. Every test works under its own table
prefix, dropped after.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from memorybank.errors import ConfigurationError, StoreUnavailable
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from memorybank.stores._async.open import open_store
from memorybank.stores.postgres._async import AsyncPostgresStore
from memorybank.stores.postgres._sync import PostgresStore
from tests.stores import _postgres
from tests.stores._postgres import admin
from tests.stores.test_contract_postgres import URL

pytestmark = pytest.mark.server


def _with_params(url: str, **params: str) -> str:
    sep = "&" if "?" in url else "?"
    return url + sep + "&".join(f"{k}={v}" for k, v in params.items())


def _terminate(application_name: str) -> int:
    rows = admin(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        (application_name,),
    )
    return len(rows)


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


prefix = _postgres.prefix  # the fixture: a fresh table prefix, dropped afterwards


# -- outages, pools, recovery -------------------------------------------------------------


async def test_a_down_server_raises_store_unavailable_within_the_timeout() -> None:
    store = AsyncPostgresStore.from_url(
        f"postgresql://postgres@127.0.0.1:{_closed_port()}/test", timeout=1.0
    )
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        await AsyncMemory(store).threads.get("x")
    assert time.monotonic() - started < 3.0
    assert isinstance(info.value.__cause__, psycopg.Error)
    await store.close()


def test_a_down_server_raises_store_unavailable_within_the_timeout_sync() -> None:
    store = PostgresStore.from_url(
        f"postgresql://postgres@127.0.0.1:{_closed_port()}/test", timeout=1.0
    )
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        Memory(store).threads.list()
    assert time.monotonic() - started < 3.0
    store.close()


async def test_an_exhausted_pool_raises_store_unavailable_and_recovers(prefix: str) -> None:
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        URL, min_size=1, max_size=1, open=False, kwargs={"autocommit": True}
    )
    await pool.open(wait=True)
    store = AsyncPostgresStore(pool, prefix=prefix, timeout=0.5)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    async with pool.connection():
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await memory.threads.get(tid)
        assert time.monotonic() - started < 2.0
    assert (await memory.threads.get(tid)) is not None
    await store.close()
    assert not pool.closed  # the caller's pool stays open
    await pool.close()


async def test_the_pool_recovers_after_its_connections_are_killed(prefix: str) -> None:
    app = f"mbtest_{uuid.uuid4().hex[:8]}"
    store = AsyncPostgresStore.from_url(
        _with_params(URL, application_name=app), prefix=prefix, pool_size=3, timeout=5
    )
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    await asyncio.gather(*(memory.remember(tid, "user", f"m{i}") for i in range(6)))
    assert _terminate(app) >= 1
    # reads are retried once on a fresh connection: no error at all
    assert len(await memory.history(tid)) == 6
    assert _terminate(app) >= 1
    # a write may fail once (it cannot know whether it was applied), then works
    try:
        await memory.remember(tid, "user", "after")
    except StoreUnavailable:
        await memory.remember(tid, "user", "after")
    await memory.remember(tid, "user", "again")
    contents = [m["content"] for m in await memory.history(tid, last=2)]
    assert contents == ["after", "again"]
    await store.close()


def test_the_sync_pool_recovers_after_its_connections_are_killed(prefix: str) -> None:
    app = f"mbtest_{uuid.uuid4().hex[:8]}"
    store = PostgresStore.from_url(
        _with_params(URL, application_name=app), prefix=prefix, pool_size=2, timeout=5
    )
    memory = Memory(store)
    tid = memory.threads.create().id
    memory.remember(tid, "user", "before")
    assert _terminate(app) >= 1
    assert [m["content"] for m in memory.history(tid)] == ["before"]
    store.close()


async def test_a_caller_connection_is_used_and_left_as_it_was(prefix: str) -> None:
    conn = await psycopg.AsyncConnection.connect(URL)  # not autocommit
    store = AsyncPostgresStore(conn, prefix=prefix)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    await asyncio.gather(*(memory.remember(tid, "user", f"m{i}") for i in range(10)))
    assert conn.autocommit is False
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    # committed: another connection sees every entry
    assert admin(f"SELECT count(*) FROM {prefix}entries") == [(10,)]
    assert sorted(e.position for e in await memory.entries.list(tid)) == list(range(1, 11))
    await store.close()
    assert not conn.closed
    await conn.close()


# -- configuration ----------------------------------------------------------------


async def test_url_options_and_open_store(prefix: str) -> None:
    url = _with_params(
        URL.replace("postgresql://", "postgresql+psycopg://", 1),
        prefix=prefix,
        pool_size="3",
        timeout="2.5",
        application_name="mbtest_url",
    )
    store = open_store(url)
    assert isinstance(store, AsyncPostgresStore)
    assert (store.prefix, store.timeout) == (prefix, 2.5)
    memory = AsyncMemory(store)
    tid = (await memory.threads.create()).id
    assert admin(f"SELECT id FROM {prefix}threads") == [(tid,)]
    await store.close()


@pytest.mark.parametrize(
    "kwargs",
    [{"prefix": "Bad-Prefix"}, {"prefix": "1abc"}, {"timeout": 0}, {"pool_size": 0}],
)
def test_bad_options_raise_configuration_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        AsyncPostgresStore.from_url(URL, **kwargs)


def test_a_non_postgres_url_is_rejected() -> None:
    with pytest.raises(ConfigurationError):
        PostgresStore.from_url("mysql://localhost/x")
