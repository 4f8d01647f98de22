"""Every store, sync, for the tests that must hold on all five alike.

``open_store(kind, tmp_path)`` yields a fresh store of ``kind`` (its own SQLite
file, table prefix or key prefix, dropped at the end). Server stores skip
locally when their server is unreachable and fail in CI (see ``require_server``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memorybank.stores import InMemoryStore, SQLiteStore, Store

STORE_KINDS = ("memory", "sqlite", "postgres", "redis", "mysql")


@contextmanager
def open_store(kind: str, tmp_path: Path) -> Iterator[Store]:
    """A fresh sync store of ``kind``; everything it wrote is dropped afterwards."""
    store: Store
    prefix = f"v{uuid.uuid4().hex[:10]}_"
    if kind == "memory":
        store = InMemoryStore()
    elif kind == "sqlite":
        store = SQLiteStore(tmp_path / f"{prefix}.db")
    elif kind == "postgres":
        from memorybank.stores import PostgresStore
        from tests.stores.test_contract_postgres import URL, require_postgres

        require_postgres()
        store = PostgresStore.from_url(URL, prefix=prefix, pool_size=2, timeout=5)
    elif kind == "redis":
        from memorybank.stores import RedisStore
        from tests.stores.test_contract_redis import REDIS_URL, require_redis

        require_redis()
        prefix = f"mbtest:{prefix}:"
        store = RedisStore.from_url(REDIS_URL, prefix=prefix, timeout=5)
    elif kind == "mysql":
        from memorybank.stores import MySQLStore
        from tests.stores.test_contract_mysql import URL as MYSQL_URL
        from tests.stores.test_contract_mysql import require_mysql

        require_mysql()
        store = MySQLStore.from_url(MYSQL_URL, prefix=prefix, pool_size=2, timeout=10)
    else:
        raise ValueError(f"unknown store kind {kind!r}")
    try:
        yield store
    finally:
        store.close()
        _drop(kind, prefix)


def _drop(kind: str, prefix: str) -> None:
    """Drop what a server store of ``kind`` wrote under ``prefix``."""
    if kind == "postgres":
        from tests.stores.test_contract_postgres import URL, drop_tables

        drop_tables(URL, prefix)
    elif kind == "redis":
        from tests.stores.test_contract_redis import REDIS_URL, drop_prefix

        drop_prefix(REDIS_URL, prefix)
    elif kind == "mysql":
        from tests.stores.test_contract_mysql import drop_tables as drop_mysql_tables

        drop_mysql_tables(prefix)
