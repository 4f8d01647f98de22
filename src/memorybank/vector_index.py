"""External vector indexes: ``Memory(url, vector_index=QdrantIndex(...))``.

::

    from qdrant_client import QdrantClient
    from memorybank import Memory
    from memorybank.vector_index import QdrantIndex

    memory = Memory("postgresql://...", embedder=..., vector_index=QdrantIndex(
        "http://localhost:6333", collection_prefix="memorybank"))

The store keeps every vector (the source of truth); the index answers vector
searches, filtered by tenant and owner inside the index, and the store
re-checks every hit. ``QdrantIndex`` needs ``pip install 'memorybank[qdrant]'``.
See docs/vector-index.md for the consistency model.
"""

from __future__ import annotations

from memorybank._async.vector_index import AsyncQdrantIndex, AsyncVectorIndex
from memorybank._index import IndexPoint
from memorybank._sync.vector_index import QdrantIndex, VectorIndex

__all__ = ["AsyncQdrantIndex", "AsyncVectorIndex", "IndexPoint", "QdrantIndex", "VectorIndex"]
