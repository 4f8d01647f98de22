"""How many statements the graph's reads send to PostgreSQL (issue 9's speed targets).

Each breadth-first level of ``traverse`` and ``shortest_path`` is one statement:
the relations of both directions with the entities at their far ends
(``record_list_keys_linked``); the closing level of ``traverse`` reads only the
relations into the nodes reached (``record_list_links``); the graph context does
not read its seeds twice. The answers are checked against the in-memory store.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores import AsyncInMemoryStore
from memorybank.stores.postgres._async import AsyncPostgresStore
from tests.conftest import require_server
from tests.stores.test_contract_postgres import URL, drop_tables

pytestmark = pytest.mark.server


@pytest.fixture
async def store() -> AsyncIterator[AsyncPostgresStore]:
    try:
        with psycopg.connect(URL, connect_timeout=3):
            pass
    except psycopg.Error as error:
        require_server("PostgreSQL", error)
    prefix = f"g{uuid.uuid4().hex[:10]}_"
    store = AsyncPostgresStore.from_url(URL, prefix=prefix, pool_size=1)
    yield store
    await store.close()
    drop_tables(URL, prefix)


async def _tree(memory: AsyncMemory) -> list[str]:
    """A root with 4 children of 4 children each, two relations among the grandchildren,
    and Bob's private child of the root; returns the root id and a grandchild id."""
    graph = memory.graph
    root = await graph.add_entity("root", type="concept")
    children = [await graph.add_entity(f"child {i}", type="concept") for i in range(4)]
    grand: list[str] = []
    for i, child in enumerate(children):
        await graph.add_relation(root.id, "part_of", child.id)
        for j in range(4):
            leaf = await graph.add_entity(f"leaf {i} {j}", type="person")
            await graph.add_relation(leaf.id, "member_of", child.id)
            grand.append(leaf.id)
    await graph.add_relation(grand[0], "knows", grand[5])
    await graph.add_relation(grand[7], "knows", grand[12])
    private = await graph.add_entity("bob's", type="concept", user_id="bob")
    await graph.add_relation(root.id, "owns", private.id, user_id="bob")
    return [root.id, grand[13]]


def _count(store: AsyncPostgresStore) -> list[str]:
    sent: list[str] = []
    run = store._fetch

    async def fetch(query: str, params: Any = None, **kwargs: Any) -> Any:
        sent.append(query)
        return await run(query, params, **kwargs)

    store._fetch = fetch  # type: ignore[method-assign]
    return sent


def _shape(sub: Any) -> tuple[list[str], list[str], bool]:
    return [e.name for e in sub.entities], sorted(r.type for r in sub.relations), sub.truncated


async def test_a_traversal_is_one_statement_per_level(store: AsyncPostgresStore) -> None:
    memory, reference = AsyncMemory(store), AsyncMemory(AsyncInMemoryStore())
    root, leaf = await _tree(memory)
    ref_root, ref_leaf = await _tree(reference)
    sent = _count(store)
    got = await memory.graph.traverse(root, max_depth=2, max_nodes=100)
    want = await reference.graph.traverse(ref_root, max_depth=2, max_nodes=100)
    assert _shape(got) == _shape(want)
    assert len(got.entities) == 21 and len(got.relations) == 22 and not got.truncated
    # the start, levels 0 and 1 (relations + far ends), the closing level's links
    assert len(sent) == 4, sent
    assert sum(" e AS MATERIALIZED" in q for q in sent) == 2
    assert "json_typeof" in sent[-1] and " e AS MATERIALIZED" not in sent[-1]

    sent.clear()  # a cut: the closing level also asks whether a node was left out
    got = await memory.graph.traverse(root, max_depth=3, max_nodes=6, user_id="bob")
    want = await reference.graph.traverse(ref_root, max_depth=3, max_nodes=6, user_id="bob")
    assert _shape(got) == _shape(want) and got.truncated
    assert len(sent) <= 5, sent

    sent.clear()
    path = await memory.graph.shortest_path(root, leaf)
    ref_path = await reference.graph.shortest_path(ref_root, ref_leaf)
    assert path is not None and ref_path is not None
    assert [e.name for e in path.entities] == [e.name for e in ref_path.entities]
    assert path.hops == 2
    # the ends, then one statement per level (the two sides meet after two levels)
    assert len(sent) == 3, sent


async def test_the_graph_context_reads_its_seeds_once(store: AsyncPostgresStore) -> None:
    memory, reference = AsyncMemory(store), AsyncMemory(AsyncInMemoryStore())
    await _tree(memory)
    await _tree(reference)
    sent = _count(store)
    block = await memory.graph.context_block("what is Child 2 made of?", max_tokens=2000)
    want = await reference.graph.context_block("what is Child 2 made of?", max_tokens=2000)
    assert block is not None and block == want
    assert "leaf 2 3" in block
    # the names with their entities, levels 0-2 (relations + far ends), the closing links
    assert len(sent) == 5, sent
