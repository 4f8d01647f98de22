"""Every MCP tool does what its description says: run against seeded data of every kind
the description names, each tool shows each of those kinds (returns it, or acts on it).

A model trusts a tool's description; a kind it names but the tool never returns (say
``recall`` naming facts while searching only conversations) makes the model miss it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memorybank.mcp.server import create_server
from memorybank.memory._async.memory import AsyncMemory
from tests.integrations.test_mcp import call, fails
from tests.reliability._harness import Words

#: A kind of record, and the words a description names it by.
KIND_WORDS = {
    "entry": r"conversations?|messages?|history|entries",
    "thread": r"threads?",
    "document": r"documents?",
    "fact": r"facts?",
    "entity": r"entit(?:y|ies)|nodes?",
    "relation": r"relations?",
    "observation": r"observations?",
}


def named_kinds(description: str) -> set[str]:
    """The kinds of record ``description`` names."""
    return {
        kind
        for kind, words in KIND_WORDS.items()
        if re.search(rf"\b(?:{words})\b", description, re.IGNORECASE)
    }


@pytest.fixture(params=["memory", "sqlite"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncMemory]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/d.db"
    async with AsyncMemory(url, tokenizer=Words()) as opened:
        yield opened


async def seed(client: Client, memory: AsyncMemory) -> None:
    """One record of every kind, each holding the word ``peanuts`` (the document through
    the library: no tool writes one)."""
    await memory.documents.add("Peanuts are legumes, not nuts.")
    await call(client, "remember", thread_id="chat", content="I had peanuts at lunch")
    await call(client, "remember", thread_id="chat", content="Noted.", role="assistant")
    await call(client, "add_fact", content="Alice is allergic to peanuts", category="health")
    await call(
        client,
        "create_entities",
        entities=[
            {"name": "Alice", "entityType": "person", "observations": ["avoids peanuts"]},
            {"name": "Lisbon", "entityType": "city", "observations": []},
        ],
    )
    await call(
        client,
        "create_relations",
        relations=[{"from": "Alice", "to": "Lisbon", "relationType": "visits"}],
    )


def graph_kinds(result: dict[str, Any]) -> set[str]:
    kinds = set()
    if result.get("entities"):
        kinds.add("entity")
    if result.get("relations"):
        kinds.add("relation")
    if any(e["observations"] for e in result.get("entities", [])):
        kinds.add("observation")
    return kinds


Runner = Callable[[Client, AsyncMemory], Awaitable[set[str]]]


async def _create_entities(client: Client, memory: AsyncMemory) -> set[str]:
    new = {"name": "Porto", "entityType": "city", "observations": ["north"]}
    return graph_kinds(await call(client, "create_entities", entities=[new]))


async def _create_relations(client: Client, memory: AsyncMemory) -> set[str]:
    relation = {"from": "Alice", "to": "Lisbon", "relationType": "likes"}
    created = await call(client, "create_relations", relations=[relation])
    opened = await call(client, "open_nodes", names=["Alice", "Lisbon"])
    assert created["relations"] == [relation]
    return {"relation"} | ({"entity"} if len(opened["entities"]) == 2 else set())


async def _add_observations(client: Client, memory: AsyncMemory) -> set[str]:
    added = await call(
        client, "add_observations", observations=[{"entityName": "Lisbon", "contents": ["hilly"]}]
    )
    opened = await call(client, "open_nodes", names=["Lisbon"])
    kinds = {"entity"} if added["results"][0]["entityName"] == "Lisbon" else set()
    return kinds | ({"observation"} if "hilly" in opened["entities"][0]["observations"] else set())


async def _delete_entities(client: Client, memory: AsyncMemory) -> set[str]:
    await call(client, "delete_entities", entityNames=["Lisbon"])
    left = await call(client, "read_graph")
    kinds = set()
    if [e["name"] for e in left["entities"]] == ["Alice"]:
        kinds.add("entity")
    if left["relations"] == []:  # its relation went with it
        kinds.add("relation")
    return kinds


async def _delete_observations(client: Client, memory: AsyncMemory) -> set[str]:
    await call(
        client,
        "delete_observations",
        deletions=[{"entityName": "Alice", "observations": ["avoids peanuts"]}],
    )
    alice = (await call(client, "open_nodes", names=["Alice"]))["entities"]
    return {"entity", "observation"} if alice and alice[0]["observations"] == [] else set()


async def _delete_relations(client: Client, memory: AsyncMemory) -> set[str]:
    relation = {"from": "Alice", "to": "Lisbon", "relationType": "visits"}
    await call(client, "delete_relations", relations=[relation])
    left = await call(client, "read_graph")
    return {"relation"} if left["relations"] == [] and len(left["entities"]) == 2 else set()


async def _read_graph(client: Client, memory: AsyncMemory) -> set[str]:
    return graph_kinds(await call(client, "read_graph"))


async def _search_nodes(client: Client, memory: AsyncMemory) -> set[str]:
    # found by an observation alone (the description names them)
    return graph_kinds(await call(client, "search_nodes", query="peanuts"))


async def _open_nodes(client: Client, memory: AsyncMemory) -> set[str]:
    return graph_kinds(await call(client, "open_nodes", names=["Alice"]))


async def _remember(client: Client, memory: AsyncMemory) -> set[str]:
    stored = await call(client, "remember", thread_id="new-thread", content="hello")
    thread = await memory.threads.get("new-thread")
    kinds = {"entry"} if stored["thread_id"] == "new-thread" else set()
    return kinds | ({"thread"} if thread is not None and thread.user_id == "alice" else set())


async def _recall(client: Client, memory: AsyncMemory) -> set[str]:
    hits = (await call(client, "recall", query="peanuts"))["hits"]
    kinds = {"entry" if hit["kind"] == "entry" else hit["kind"] for hit in hits}
    in_thread = (await call(client, "recall", query="peanuts", thread_id="chat"))["hits"]
    assert {hit["kind"] for hit in in_thread} == {"entry"}  # a thread_id: its messages only
    if any(hit["thread_id"] == "chat" for hit in hits):
        kinds.add("thread")
    return kinds


async def _history(client: Client, memory: AsyncMemory) -> set[str]:
    history = await call(client, "history", thread_id="chat")
    return {"entry", "thread"} if len(history["messages"]) == 2 else set()


async def _get_context(client: Client, memory: AsyncMemory) -> set[str]:
    built = await call(client, "get_context", thread_id="chat", max_tokens=500)
    kinds = {"thread"} if built["total_entries"] == 2 else set()
    if built["messages"][-1]["content"] == "Noted.":
        kinds.add("entry")
    if "allergic to peanuts" in built["messages"][0]["content"]:
        kinds.add("fact")
    return kinds


async def _add_fact(client: Client, memory: AsyncMemory) -> set[str]:
    fact = await call(client, "add_fact", content="Alice lives in Porto")
    return {"fact"} if await memory.facts.get(fact["id"], user_id="alice") else set()


async def _list_facts(client: Client, memory: AsyncMemory) -> set[str]:
    facts = (await call(client, "list_facts"))["facts"]
    return {"fact"} if [f["content"] for f in facts] == ["Alice is allergic to peanuts"] else set()


async def _forget(client: Client, memory: AsyncMemory) -> set[str]:
    fact = (await call(client, "list_facts"))["facts"][0]
    kinds = set()
    if (await call(client, "forget", id=fact["id"]))["deleted"]:
        kinds.add("fact")
    if (await call(client, "forget", id="chat", kind="thread"))["deleted"]:
        kinds.add("thread")
    if "not_found" in await fails(client, "history", thread_id="chat"):
        kinds.add("entry")  # the thread's messages went with it
    return kinds


async def _consolidate(client: Client, memory: AsyncMemory) -> set[str]:
    await call(client, "add_fact", content="Alice is allergic to peanuts")  # said twice
    await call(  # Lisbon written another way: one entity
        client,
        "create_entities",
        entities=[{"name": "Lisbon!", "entityType": "city", "observations": []}],
    )
    done = await call(client, "consolidate")
    facts = (await call(client, "list_facts"))["facts"]
    merged = done["merged"] == 1 and len(facts) == 1
    shown = (
        {"fact"}
        if merged and done["changes"][0]["fact_id"] not in {f["id"] for f in facts}
        else set()
    )
    entities = done["entity_changes"]
    if [(e["name"], e["into_name"]) for e in entities] == [("Lisbon!", "Lisbon")]:
        shown.add("entity")
    return shown


async def _feedback(client: Client, memory: AsyncMemory) -> set[str]:
    fact = (await call(client, "list_facts"))["facts"][0]
    before = await memory.facts.get(fact["id"], user_id="alice")
    marked = await call(client, "feedback", fact_id=fact["id"], useful=False, reason="outdated")
    after = await memory.facts.get(fact["id"], user_id="alice")
    if before is None or after is None:
        return set()
    lowered = (after.confidence or 0) < (before.confidence or 0.5)
    return {"fact"} if marked["id"] == fact["id"] and lowered else set()


RUNNERS: dict[str, Runner] = {
    "create_entities": _create_entities,
    "create_relations": _create_relations,
    "add_observations": _add_observations,
    "delete_entities": _delete_entities,
    "delete_observations": _delete_observations,
    "delete_relations": _delete_relations,
    "read_graph": _read_graph,
    "search_nodes": _search_nodes,
    "open_nodes": _open_nodes,
    "remember": _remember,
    "recall": _recall,
    "history": _history,
    "get_context": _get_context,
    "add_fact": _add_fact,
    "list_facts": _list_facts,
    "forget": _forget,
    "consolidate": _consolidate,
    "feedback": _feedback,
}


async def test_every_tool_is_checked(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="alice", agent_id="helper")) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == set(RUNNERS)


@pytest.mark.parametrize("tool", sorted(RUNNERS))
async def test_a_tool_shows_every_kind_its_description_names(
    memory: AsyncMemory, tool: str
) -> None:
    async with Client(create_server(memory, user_id="alice", agent_id="helper")) as client:
        described = {t.name: t.description or "" for t in (await client.list_tools()).tools}
        await seed(client, memory)
        shown = await RUNNERS[tool](client, memory)
    named = named_kinds(described[tool])
    assert named, f"{tool}: its description names no kind of record: {described[tool]!r}"
    assert named <= shown, f"{tool} names {sorted(named - shown)} but does not show them"


async def test_recall_returns_a_matching_fact(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="alice", agent_id="helper")) as client:
        await call(client, "remember", thread_id="t", content="what should I cook tonight?")
        added = await call(client, "add_fact", content="Alice is allergic to peanuts")
        for query in ("peanut allergy", "allergic to peanuts", "Alice allergic"):
            hits = (await call(client, "recall", query=query))["hits"]
            facts = [hit for hit in hits if hit["kind"] == "fact"]
            assert [hit["id"] for hit in facts] == [added["id"]], query
            assert facts[0]["content"] == "Alice is allergic to peanuts"
            assert facts[0]["thread_id"] is None and facts[0]["role"] is None


async def test_get_context_on_a_missing_thread_is_not_found_as_history(
    memory: AsyncMemory,
) -> None:
    async with Client(create_server(memory, user_id="alice", agent_id="helper")) as client:
        await call(client, "add_fact", content="Alice is allergic to peanuts")
        in_history = await fails(client, "history", thread_id="never-made")
        in_context = await fails(client, "get_context", thread_id="never-made", max_tokens=200)
    assert in_history.startswith("not_found") and in_context.startswith("not_found")
    assert await memory.threads.get("never-made") is None  # and nothing was created


async def test_get_context_says_in_plain_words_when_it_refuses(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="alice")) as client:
        tools = {t.name: t.description or "" for t in (await client.list_tools()).tools}
    description = tools["get_context"]
    assert "Needs the server's agent" not in description
    assert "started without an agent" in description and "invalid_input" in description
