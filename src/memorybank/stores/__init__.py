"""Stores: where memory lives. Pick one by URL, or construct one directly.

=====================  ===========================  ========================  =========
URL                    async class                  sync class                extra
=====================  ===========================  ========================  =========
``memory://``          ``AsyncInMemoryStore``       ``InMemoryStore``         -
``sqlite:///path.db``  ``AsyncSQLiteStore``         ``SQLiteStore``           -
``postgresql://...``   ``AsyncPostgresStore``       ``PostgresStore``         postgres
``redis://...``        ``AsyncRedisStore``          ``RedisStore``            redis
``mysql://...``        ``AsyncMySQLStore``          ``MySQLStore``            mysql
``http://host:port``   ``AsyncHTTPStore``           ``HTTPStore``             remote
=====================  ===========================  ========================  =========

Classes are imported lazily: ``from memorybank.stores import PostgresStore``
imports psycopg only then, and without the extra raises ``ConfigurationError``
naming it. ``http(s)://`` is a memorybank server (``memorybank serve``), reached
with an API key (``api_key=`` or ``$MEMORYBANK_API_KEY``). The contract itself
is ``AsyncStore``/``Store`` (``base.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memorybank.errors import ConfigurationError

if TYPE_CHECKING:
    from memorybank._async.stores.base import AsyncStore
    from memorybank._async.stores.memory import AsyncInMemoryStore
    from memorybank._async.stores.sqlite import AsyncSQLiteStore
    from memorybank._sync.stores.base import Store
    from memorybank._sync.stores.memory import InMemoryStore
    from memorybank._sync.stores.sqlite import SQLiteStore

__all__ = [
    "AsyncHTTPStore",
    "AsyncInMemoryStore",
    "AsyncMySQLStore",
    "AsyncPostgresStore",
    "AsyncRedisStore",
    "AsyncSQLiteStore",
    "AsyncStore",
    "HTTPStore",
    "InMemoryStore",
    "MySQLStore",
    "PostgresStore",
    "RedisStore",
    "SQLiteStore",
    "Store",
]

_WHERE: dict[str, tuple[str, str | None]] = {
    "AsyncStore": ("_async.stores.base", None),
    "Store": ("_sync.stores.base", None),
    "AsyncInMemoryStore": ("_async.stores.memory", None),
    "InMemoryStore": ("_sync.stores.memory", None),
    "AsyncSQLiteStore": ("_async.stores.sqlite", None),
    "SQLiteStore": ("_sync.stores.sqlite", None),
    "AsyncPostgresStore": ("_async.stores.postgres", "postgres"),
    "PostgresStore": ("_sync.stores.postgres", "postgres"),
    "AsyncRedisStore": ("_async.stores.redis", "redis"),
    "RedisStore": ("_sync.stores.redis", "redis"),
    "AsyncMySQLStore": ("_async.stores.mysql", "mysql"),
    "MySQLStore": ("_sync.stores.mysql", "mysql"),
    "AsyncHTTPStore": ("_async.stores.http", "remote"),
    "HTTPStore": ("_sync.stores.http", "remote"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'memorybank.stores' has no attribute {name!r}")
    module_name, extra = _WHERE[name]
    try:
        module = importlib.import_module(f"memorybank.{module_name}")
    except ImportError as error:
        if extra is None:
            raise
        raise ConfigurationError(
            f"{name} needs its driver: pip install 'memorybank[{extra}]'"
        ) from error
    return getattr(module, name)
