"""The store conformance suite through the vector-index layer: it changes nothing but search.

``IndexedStore`` (what ``Memory(vector_index=...)`` puts above a store) must keep
every guarantee of the contract, vector search included, with Qdrant answering.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient

from memorybank.stores import AsyncInMemoryStore, AsyncStore, SQLiteStore, Store
from memorybank.testing import AsyncContract, SyncContract
from memorybank.vector_index import AsyncQdrantIndex, QdrantIndex
from memorybank.vector_index._async.index import indexed as aindexed
from memorybank.vector_index._sync.index import indexed


class TestInMemoryWithQdrantAsync(AsyncContract):
    @pytest.fixture
    async def store(self) -> AsyncIterator[AsyncStore]:
        client = AsyncQdrantClient(":memory:")
        store = aindexed(AsyncInMemoryStore(), AsyncQdrantIndex(client))
        yield store
        await store.close()
        await client.close()


class TestSQLiteWithQdrantSync(SyncContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        client = QdrantClient(":memory:")
        store = indexed(SQLiteStore(tmp_path / "memory.db"), QdrantIndex(client))
        yield store
        store.close()
        client.close()
