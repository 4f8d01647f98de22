"""AsyncMySQLStore: threads and entries in MySQL 8 / MariaDB 10.6+ (InnoDB), via aiomysql.

The sync ``MySQLStore`` (PyMySQL) is generated from this package; the two drivers
differ only in their pools, wrapped in ``memorybank.stores.mysql.compat``.

The store is composed of one mixin per concern, each in a module of its own, over
``_base.MySQLBase`` (pool, connections, round trips, transactions retried after lock
contention, migrations), itself over the verbs the SQL engines share
(``memorybank.stores.sql._async.core.SQLCore``; threads created and records written by
``writes.SQLWrites``): ``_appends`` (one transaction each, or combined), ``_entries``
(reads, updates), ``_search`` (InnoDB FULLTEXT, vector writes), ``_events``
(the change feed);
``memorybank.stores.mysql.schema`` (tables, migrations) and ``.rows`` (sync-free
helpers: SQL fragments, error translation, URL options).

What each verb does and why it is written so (the tables, appends in one round trip
and write combining, reads, FULLTEXT and its quirks, the vector cache's counters,
durability, timeouts and errors) is in docs/mysql.md ("How the store works").
"""

from __future__ import annotations

from memorybank.stores.mysql._async._appends import AppendsMixin
from memorybank.stores.mysql._async._entries import EntriesMixin
from memorybank.stores.mysql._async._events import EventsMixin
from memorybank.stores.mysql._async._search import SearchMixin
from memorybank.stores.mysql.schema import TABLES

__all__ = ["TABLES", "AsyncMySQLStore"]


class AsyncMySQLStore(AppendsMixin, EntriesMixin, SearchMixin, EventsMixin):
    """Memory in MySQL/MariaDB. See docs/mysql.md (and each part's module) for
    layout and guarantees; its capabilities are ``SQLCore``'s."""
