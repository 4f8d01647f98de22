"""External vector indexes: ``Memory(url, vector_index=QdrantIndex(...))``.

::

    from memorybank import Memory
    from memorybank.vector_index import QdrantIndex

    memory = Memory("postgresql://...", embedder=..., vector_index=QdrantIndex(
        "http://localhost:6333", collection_prefix="memorybank"))

The store keeps every vector (the source of truth); the index answers vector
searches, filtered by tenant and owner inside the index, and the store
re-checks every hit. ``VectorIndex`` is the contract of an index;
``IndexedStore(store, index)`` is the layer ``vector_index=`` puts above a store.
``QdrantIndex`` needs ``pip install 'memorybank[qdrant]'``.
See docs/vector-index.md for the consistency model.
"""

from __future__ import annotations

from memorybank.vector_index._async.index import (
    AsyncIndexedStore,
    AsyncQdrantIndex,
    AsyncVectorIndex,
)
from memorybank.vector_index._sync.index import IndexedStore, QdrantIndex, VectorIndex
from memorybank.vector_index.points import IndexPoint

__all__ = [
    "AsyncIndexedStore",
    "AsyncQdrantIndex",
    "AsyncVectorIndex",
    "IndexPoint",
    "IndexedStore",
    "QdrantIndex",
    "VectorIndex",
]
