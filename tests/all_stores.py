"""Every store, sync, for the tests that must hold on all five alike.

``open_store(kind, tmp_path)`` yields a fresh store of ``kind`` (its own SQLite
file, table prefix or key prefix, dropped at the end). Server stores skip
locally when their server is unreachable and fail in CI (see ``require_server``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memorybank.stores import InMemoryStore, Store
from tests.reliability._harness import provide

STORE_KINDS = ("memory", "sqlite", "postgres", "redis", "mysql")
#: ``STORE_KINDS`` and a real three-master Redis Cluster (started by the tests).
WITH_CLUSTER = (*STORE_KINDS, "redis-cluster")


@contextmanager
def open_store(kind: str, tmp_path: Path) -> Iterator[Store]:
    """A fresh sync store of ``kind``; everything it wrote is dropped afterwards.

    Server stores and SQLite come from the reliability suite's ``StoreSpec`` (one
    way to open a store in the tests); ``memory`` is a new ``InMemoryStore``.
    """
    if kind == "memory":
        store: Store = InMemoryStore()
        try:
            yield store
        finally:
            store.close()
        return
    if kind not in WITH_CLUSTER:
        raise ValueError(f"unknown store kind {kind!r}")
    for spec in provide("sqlite-full" if kind == "sqlite" else kind, tmp_path):
        store = spec.open()
        try:
            yield store
        finally:
            store.close()
