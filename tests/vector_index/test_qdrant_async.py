"""AsyncQdrantIndex (an AsyncQdrantClient in local mode) beside the async stores."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient, models

from memorybank import AsyncMemory, ConfigurationError, StoreClosed
from memorybank.stores import AsyncInMemoryStore
from memorybank.vector_index import AsyncQdrantIndex
from memorybank.vector_index.points import collection_name
from tests.recall.conftest import HashEmbedder


async def _points(index: AsyncQdrantIndex, model_id: str, **match: str) -> int:
    must: list[models.Condition] = [
        models.FieldCondition(key=key, match=models.MatchValue(value=value))
        for key, value in match.items()
    ]
    found = await index.client.count(
        collection_name(index.prefix, model_id, 64),
        count_filter=models.Filter(must=must),
        exact=True,
    )
    return found.count


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_async_index_scopes_searches_and_forgets(kind: str, tmp_path: Path) -> None:
    client = AsyncQdrantClient(":memory:")
    index = AsyncQdrantIndex(client, collection_prefix="a")
    embedder = HashEmbedder()
    url = AsyncInMemoryStore() if kind == "memory" else f"sqlite:///{tmp_path / 'a.db'}"
    async with AsyncMemory(url, embedder=embedder, vector_index=index) as memory:
        root = memory.tenant(f"a-{uuid.uuid4().hex[:8]}")
        alice = root.scoped(user_id="alice", agent_id="bot")
        bob = root.scoped(user_id="bob", agent_id="bot")
        mine = await alice.documents.add("alice drives an automobile")
        shared = await root.documents.add("everyone likes a vehicle")
        theirs = await bob.documents.add("bob sold his car")
        thread = await alice.threads.create()
        await alice.entries.add(thread.id, {"role": "user", "content": "my car is red"})

        found = await alice.search("car", mode="semantic", kinds=("documents",))
        assert {h.id for h in found} == {mine.id, shared.id}
        found = await bob.search("car", mode="semantic")
        assert {h.id for h in found} == {theirs.id, shared.id}
        unscoped = await root.scoped(user_id=None).search("car", mode="semantic")
        assert {h.id for h in unscoped} == {shared.id}
        assert await _points(index, embedder.model_id, tenant=root.tenant_id) == 4

        assert await root.forget_user("alice") > 0
        assert await _points(index, embedder.model_id, tenant=root.tenant_id) == 2
        assert await _points(index, embedder.model_id, user_id="alice") == 0
        assert await index.reindex(root) == 2
    with pytest.raises(StoreClosed):  # closed with the memory
        await index.search("t", [1.0] * 64, model_id=embedder.model_id, kinds=["entry"], k=1)
    assert await client.collection_exists(collection_name("a", embedder.model_id, 64))
    await client.close()  # the client is the caller's: still open until here


async def test_reindex_needs_an_embedder_and_prefixes_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="collection_prefix"):
        AsyncQdrantIndex(":memory:", collection_prefix="no spaces")
    index = AsyncQdrantIndex(":memory:")
    async with AsyncMemory("memory://", vector_index=index) as memory:
        with pytest.raises(ConfigurationError, match="embedder"):
            await index.reindex(memory)
