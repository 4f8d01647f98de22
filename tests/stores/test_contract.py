"""The conformance suite on every store, through both APIs.

Server stores join through ``conftest.py`` fixtures that skip locally when their
server is absent and fail when ``MEMORYBANK_REQUIRE_SERVERS=1`` (set by CI).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from memorybank.stores import AsyncInMemoryStore, AsyncSQLiteStore, InMemoryStore, SQLiteStore
from memorybank.testing import AsyncContract, SyncContract


class TestInMemoryAsync(AsyncContract):
    @pytest.fixture
    async def store(self) -> AsyncIterator[AsyncInMemoryStore]:
        store = AsyncInMemoryStore()
        yield store
        await store.close()


class TestInMemorySync(SyncContract):
    @pytest.fixture
    def store(self) -> Iterator[InMemoryStore]:
        store = InMemoryStore()
        yield store
        store.close()


class TestSQLiteAsync(AsyncContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[AsyncSQLiteStore]:
        store = AsyncSQLiteStore(tmp_path / "memory.db")
        yield store
        await store.close()


class TestSQLiteSync(SyncContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SQLiteStore]:
        store = SQLiteStore(tmp_path / "memory.db")
        yield store
        store.close()
