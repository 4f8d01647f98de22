"""The MCP reference memory server's nine tools on ``memory.graph``, through the SDK's Client.

Shapes are the reference server's (``modelcontextprotocol/servers`` ``src/memory``):
entities ``{name, entityType, observations}``, relations ``{from, to,
relationType}``; what differs (scope, bounds, pages) is asserted here too.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memorybank.mcp import graph_tools
from memorybank.mcp.server import create_server
from memorybank.memory._async.memory import AsyncMemory
from tests.integrations.test_mcp import call, fails
from tests.reliability._harness import Words


@pytest.fixture(params=["memory", "sqlite"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncMemory]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/graph.db"
    async with AsyncMemory(url, tokenizer=Words()) as opened:
        yield opened


def entity(name: str, kind: str = "person", *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": kind, "observations": list(observations)}


def relation(source: str, kind: str, target: str) -> dict[str, str]:
    return {"from": source, "to": target, "relationType": kind}


def relation_set(graph: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(r["from"], r["relationType"], r["to"]) for r in graph["relations"]}


async def seed(client: Client) -> None:
    await call(
        client,
        "create_entities",
        entities=[
            entity("Alice", "person", "likes tea", "works remotely"),
            entity("Bob", "person"),
            entity("Acme", "organization", "makes anvils"),
        ],
    )
    await call(
        client,
        "create_relations",
        relations=[relation("Alice", "works_at", "Acme"), relation("Alice", "knows", "Bob")],
    )


async def test_create_entities_returns_only_new_ones(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u")) as client:
        first = await call(client, "create_entities", entities=[entity("Alice", "person", "x")])
        assert first == {"entities": [entity("Alice", "person", "x")]}
        again = await call(
            client,
            "create_entities",
            entities=[entity("alice ", "person", "y"), entity("Bob", "person")],
        )
        assert again == {"entities": [entity("Bob", "person")]}  # an existing name is ignored
        assert "invalid_input" in await fails(client, "create_entities", entities=[entity(" ")])
        assert "invalid_input" in await fails(
            client, "create_entities", entities=[entity("Carol", "\x00")]
        )
    stored = await memory.graph.find_entities(user_id="u")
    assert sorted((e.name, e.observations) for e in stored) == [("Alice", ("x",)), ("Bob", ())]
    assert all(e.user_id == "u" for e in stored)


async def test_create_relations_skips_duplicates_and_refuses_unknown_entities(
    memory: AsyncMemory,
) -> None:
    async with Client(create_server(memory, user_id="u")) as client:
        await seed(client)
        again = await call(
            client,
            "create_relations",
            relations=[relation("Alice", "knows", "Bob"), relation("Bob", "knows", "Alice")],
        )
        assert again == {"relations": [relation("Bob", "knows", "Alice")]}
        text = await fails(
            client,
            "create_relations",
            relations=[relation("Bob", "likes", "Acme"), relation("Bob", "likes", "Nobody")],
        )
        assert "not_found" in text and "Nobody" in text
        graph = await call(client, "open_nodes", names=["Bob"])
    # nothing of the refused call was written
    assert ("Bob", "likes", "Acme") not in relation_set(graph)
    alice = (await memory.graph.find_entities("Alice", user_id="u"))[0]
    knows = await memory.graph.relations(alice.id, user_id="u", direction="out", types=["knows"])
    assert len(knows) == 1 and knows[0].weight == 1.0  # the duplicate did not add weight


async def test_add_and_delete_observations(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u")) as client:
        await seed(client)
        added = await call(
            client,
            "add_observations",
            observations=[
                {"entityName": "Alice", "contents": ["likes tea", "plays chess"]},
                {"entityName": "Bob", "contents": ["is tall"]},
            ],
        )
        assert added == {
            "results": [
                {"entityName": "Alice", "addedObservations": ["plays chess"]},
                {"entityName": "Bob", "addedObservations": ["is tall"]},
            ]
        }
        text = await fails(
            client,
            "add_observations",
            observations=[
                {"entityName": "Bob", "contents": ["never stored"]},
                {"entityName": "Ghost", "contents": ["boo"]},
            ],
        )
        assert "Ghost" in text and "not found" in text
        deleted = await call(
            client,
            "delete_observations",
            deletions=[
                {"entityName": "Alice", "observations": ["likes tea", "unknown"]},
                {"entityName": "Ghost", "observations": ["boo"]},
            ],
        )
        assert deleted == {"success": True, "message": "Observations deleted successfully"}
        opened = await call(client, "open_nodes", names=["Alice", "Bob"])
    observations = {e["name"]: e["observations"] for e in opened["entities"]}
    assert observations == {"Alice": ["works remotely", "plays chess"], "Bob": ["is tall"]}


async def test_delete_entities_cascades_and_is_idempotent(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u")) as client:
        await seed(client)
        for _ in range(2):
            outcome = await call(client, "delete_entities", entityNames=["Alice", "Ghost"])
            assert outcome == {"success": True, "message": "Entities deleted successfully"}
        graph = await call(client, "read_graph")
    assert sorted(e["name"] for e in graph["entities"]) == ["Acme", "Bob"]
    assert graph["relations"] == []


async def test_delete_relations(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u")) as client:
        await seed(client)
        for _ in range(2):
            outcome = await call(
                client, "delete_relations", relations=[relation("Alice", "knows", "Bob")]
            )
            assert outcome == {"success": True, "message": "Relations deleted successfully"}
        graph = await call(client, "read_graph")
    assert relation_set(graph) == {("Alice", "works_at", "Acme")}


async def test_search_nodes_and_open_nodes(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u")) as client:
        await seed(client)
        found = await call(client, "search_nodes", query="anvils")
        assert [e["name"] for e in found["entities"]] == ["Acme"]
        # relations with at least one endpoint among the results
        assert relation_set(found) == {("Alice", "works_at", "Acme")}
        by_type = await call(client, "search_nodes", query="organization")
        assert "Acme" in [e["name"] for e in by_type["entities"]]
        opened = await call(client, "open_nodes", names=["bob", "Nobody"])
        assert opened["entities"] == [entity("Bob", "person")]
        assert relation_set(opened) == {("Alice", "knows", "Bob")}
        assert "invalid_input" in await fails(client, "search_nodes", query="  ")


async def test_read_graph_pages_cover_everything_once(memory: AsyncMemory) -> None:
    names = [f"Person {i:02d}" for i in range(23)]
    async with Client(create_server(memory, user_id="u")) as client:
        await call(client, "create_entities", entities=[entity(n) for n in names])
        chain = [relation(a, "knows", b) for a, b in itertools.pairwise(names)]
        await call(client, "create_relations", relations=chain)
        seen: list[str] = []
        relations: list[tuple[str, str, str]] = []
        cursor: str | None = None
        pages = 0
        while True:
            args: dict[str, Any] = {"limit": 5}
            if cursor is not None:
                args["cursor"] = cursor
            page = await call(client, "read_graph", **args)
            pages += 1
            assert len(page["entities"]) <= 5
            seen += [e["name"] for e in page["entities"]]
            relations += sorted(relation_set(page))
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert pages == 5
        assert seen == names  # oldest first, each once
        assert len(relations) == len(set(relations)) == 22
        assert set(relations) == {(r["from"], "knows", r["to"]) for r in chain}
        whole = await call(client, "read_graph", limit=graph_tools.PAGE_MAX)
        assert "nextCursor" not in whole and len(whole["entities"]) == 23
        assert "limit" in await fails(client, "read_graph", limit=graph_tools.PAGE_MAX + 1)
        assert "invalid_input" in await fails(client, "read_graph", cursor="garbage")


async def test_read_graph_is_bounded_in_size(memory: AsyncMemory) -> None:
    long = "x" * 2000
    async with Client(create_server(memory, user_id="u")) as client:
        batch = [entity(f"Big {i:02d}", "concept", long + str(i)) for i in range(60)]
        await call(client, "create_entities", entities=batch)
        page = await call(client, "read_graph", limit=60)
        assert 1 <= len(page["entities"]) < 60
        assert "nextCursor" in page
        size = len(str(page))
        assert size <= graph_tools.MAX_PAGE_CHARS * 1.1
        total = len(page["entities"])
        while "nextCursor" in page:
            page = await call(client, "read_graph", limit=60, cursor=page["nextCursor"])
            total += len(page["entities"])
        assert total == 60


async def test_scope_users_see_their_own_and_shared_nodes_only(memory: AsyncMemory) -> None:
    await memory.graph.add_entity("Paris", type="location", observations=["capital of France"])
    alice = create_server(memory, user_id="alice", agent_id="a")
    bob = create_server(memory, user_id="bob", agent_id="a")
    async with Client(alice) as a, Client(bob) as b:
        await call(
            a,
            "create_entities",
            entities=[entity("Secret Lover", "person", "hidden"), entity("Diary", "object")],
        )
        await call(a, "create_relations", relations=[relation("Secret Lover", "lives_in", "Paris")])
        for tool, args in (
            ("read_graph", {}),
            ("search_nodes", {"query": "Secret Lover"}),
            ("search_nodes", {"query": "hidden"}),
            ("open_nodes", {"names": ["Secret Lover", "Paris"]}),
        ):
            graph = await call(b, tool, **args)
            assert "Secret" not in str(graph), tool
        assert (await call(b, "open_nodes", names=["Paris"]))["relations"] == []
        # bob cannot touch it either: deletes find nothing, writes fail as not found
        await call(b, "delete_entities", entityNames=["Secret Lover"])
        text = await fails(
            b, "add_observations", observations=[{"entityName": "Secret Lover", "contents": ["x"]}]
        )
        assert "not found" in text
        # bob's own entity of the same name is his, not alice's
        await call(b, "create_entities", entities=[entity("Secret Lover", "person", "bob's")])
        mine = await call(a, "open_nodes", names=["Secret Lover"])
        assert mine["entities"] == [entity("Secret Lover", "person", "hidden")]
        assert relation_set(mine) == {("Secret Lover", "lives_in", "Paris")}
        shared = await call(a, "open_nodes", names=["Paris"])
        assert shared["entities"] == [entity("Paris", "location", "capital of France")]
        # a cursor naming alice's entity reveals nothing to bob
        page = await call(a, "read_graph", limit=2)
        assert [e["name"] for e in page["entities"]] == ["Paris", "Secret Lover"]
        assert "nextCursor" in page
        assert "not_found" in await fails(b, "read_graph", cursor=page["nextCursor"])  # as if gone


async def test_two_servers_on_one_store_keep_each_others_writes(tmp_path: Path) -> None:
    """The reference server's two processes on one file lose writes; one store does not."""
    url = f"sqlite:///{tmp_path}/shared.db"
    async with AsyncMemory(url) as one, AsyncMemory(url) as two:
        async with Client(create_server(one)) as first, Client(create_server(two)) as second:
            await call(first, "create_entities", entities=[entity("From One")])
            await call(second, "create_entities", entities=[entity("From Two")])
            await call(
                first, "create_relations", relations=[relation("From One", "knows", "From Two")]
            )
            graph = await call(second, "read_graph")
    assert sorted(e["name"] for e in graph["entities"]) == ["From One", "From Two"]
    assert relation_set(graph) == {("From One", "knows", "From Two")}


async def test_reads_say_when_the_relation_bound_cut_them(
    memory: AsyncMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(graph_tools, "MAX_RELATIONS", 3)
    spokes = [f"Spoke {i}" for i in range(5)]
    async with Client(create_server(memory, user_id="u")) as client:
        await call(client, "create_entities", entities=[entity("Hub"), *map(entity, spokes)])
        edges = [relation("Hub", "knows", s) for s in spokes]
        await call(client, "create_relations", relations=edges)
        opened = await call(client, "open_nodes", names=["Hub"])
        assert len(opened["relations"]) == 3 and opened["truncated"] is True
        page = await call(client, "read_graph")
        assert len(page["relations"]) == 3 and page["truncated"] is True
        small = await call(client, "open_nodes", names=["Spoke 1"])
        assert relation_set(small) == {("Hub", "knows", "Spoke 1")}
        assert "truncated" not in small
