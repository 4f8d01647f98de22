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
is ``AsyncStore``/``Store`` (``memorybank.stores.contract``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memorybank.errors import ConfigurationError

if TYPE_CHECKING:
    from memorybank.stores.contract._async.store import AsyncStore
    from memorybank.stores.contract._sync.store import Store
    from memorybank.stores.memory._async.store import AsyncInMemoryStore
    from memorybank.stores.memory._sync.store import InMemoryStore
    from memorybank.stores.sqlite._async import AsyncSQLiteStore
    from memorybank.stores.sqlite._sync import SQLiteStore

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
    "AsyncStore": ("stores.contract._async.store", None),
    "Store": ("stores.contract._sync.store", None),
    "AsyncInMemoryStore": ("stores.memory._async.store", None),
    "InMemoryStore": ("stores.memory._sync.store", None),
    "AsyncSQLiteStore": ("stores.sqlite._async", None),
    "SQLiteStore": ("stores.sqlite._sync", None),
    "AsyncPostgresStore": ("stores.postgres._async", "postgres"),
    "PostgresStore": ("stores.postgres._sync", "postgres"),
    "AsyncRedisStore": ("stores.redis._async", "redis"),
    "RedisStore": ("stores.redis._sync", "redis"),
    "AsyncMySQLStore": ("stores.mysql._async", "mysql"),
    "MySQLStore": ("stores.mysql._sync", "mysql"),
    "AsyncHTTPStore": ("stores.http._async.store", "remote"),
    "HTTPStore": ("stores.http._sync.store", "remote"),
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
