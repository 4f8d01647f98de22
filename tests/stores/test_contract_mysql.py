"""The conformance suite on the MySQL/MariaDB store, async (aiomysql) and sync (PyMySQL).

Needs a server at ``$MEMORYBANK_MYSQL_URL`` (default
``mysql://root@127.0.0.1:3306/test``); skipped locally when it is not reachable,
failed in CI. Tables get a fresh prefix per session, dropped at the end; each
suite (async, sync) gets its own under it, so one suite's data (both write as the
``default`` tenant) never shows in the other's searches.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pymysql
import pytest

from memorybank.stores.mysql._async import TABLES, AsyncMySQLStore
from memorybank.stores.mysql._sync import MySQLStore
from memorybank.stores.mysql.rows import url_options
from memorybank.testing import AsyncContract, SyncContract
from tests.conftest import require_server

pytestmark = pytest.mark.server

URL = os.environ.get("MEMORYBANK_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")


def connect(url: str = URL, **options: Any) -> pymysql.connections.Connection[Any]:
    """A plain PyMySQL connection to the test server (autocommit)."""
    return pymysql.connect(
        **url_options(url), charset="utf8mb4", autocommit=True, connect_timeout=3, **options
    )


def drop_tables(prefix: str, url: str = URL) -> None:
    """Drop every table of ``prefix``."""
    conn = connect(url)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_notes = 0")
            for table in TABLES:
                cur.execute(f"DROP TABLE IF EXISTS `{prefix}{table}`")
    finally:
        conn.close()


def require_mysql() -> None:
    """Skip (locally) or fail (CI) unless the test MySQL answers."""
    try:
        connect().close()
    except pymysql.err.Error as error:
        require_server("MySQL", error)


@pytest.fixture(scope="session")
def mysql_prefix() -> Iterator[str]:
    """A fresh table prefix for this session; its tables are dropped at the end."""
    require_mysql()
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    yield prefix
    drop_tables(prefix)


@pytest.fixture(scope="session")
def async_prefix(mysql_prefix: str) -> Iterator[str]:
    """The async suite's tables."""
    prefix = f"{mysql_prefix}a_"
    yield prefix
    drop_tables(prefix)


@pytest.fixture(scope="session")
def sync_prefix(mysql_prefix: str) -> Iterator[str]:
    """The sync suite's tables."""
    prefix = f"{mysql_prefix}s_"
    yield prefix
    drop_tables(prefix)


class TestMySQLAsync(AsyncContract):
    @pytest.fixture
    async def store(self, async_prefix: str) -> AsyncIterator[AsyncMySQLStore]:
        store = AsyncMySQLStore.from_url(URL, prefix=async_prefix, pool_size=6, timeout=10)
        yield store
        await store.close()


class TestMySQLSync(SyncContract):
    @pytest.fixture
    def store(self, sync_prefix: str) -> Iterator[MySQLStore]:
        store = MySQLStore.from_url(URL, prefix=sync_prefix, pool_size=6, timeout=10)
        yield store
        store.close()
