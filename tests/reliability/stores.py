"""Every store, opened the same way for the reliability suite: fresh tables or keys, dropped after.

``open_memory(kind, tmp_path)`` yields a ``Memory`` on the shared server of
``kind`` (or a fresh embedded file); an unreachable server skips locally and
fails in CI (``require_server``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

from memorybank import Memory, MemoryBankError
from memorybank.stores import InMemoryStore
from tests.conftest import require_server
from tests.stores import test_contract_mysql as mysql_suite
from tests.stores import test_contract_postgres as postgres_suite
from tests.stores import test_contract_redis as redis_suite

STORE_KINDS = ["memory", "sqlite", "postgres", "redis", "mysql"]


@contextlib.contextmanager
def open_memory(kind: str, tmp_path: Path) -> Iterator[Memory]:
    """A ``Memory`` on a fresh namespace of store ``kind``; everything is dropped after."""
    prefix = f"r{uuid.uuid4().hex[:10]}_"
    if kind == "memory":
        with Memory(InMemoryStore()) as memory:
            yield memory
        return
    if kind == "sqlite":
        with Memory(f"sqlite:///{tmp_path / 'reliability.db'}") as memory:
            yield memory
        return
    urls = {
        "postgres": f"{postgres_suite.URL}?prefix={prefix}",
        "redis": f"{redis_suite.REDIS_URL}?prefix={prefix.rstrip('_')}:",
        "mysql": f"{mysql_suite.URL}?prefix={prefix}",
    }
    try:
        memory = Memory(urls[kind])
        memory.threads.list(limit=1)
    except MemoryBankError as error:
        require_server(kind, error)
        raise
    try:
        with memory:
            yield memory
    finally:
        if kind == "postgres":
            postgres_suite.drop_tables(postgres_suite.URL, prefix)
        elif kind == "mysql":
            mysql_suite.drop_tables(prefix)
        else:
            redis_suite.drop_prefix(redis_suite.REDIS_URL, prefix.rstrip("_") + ":")
