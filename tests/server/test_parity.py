"""What the library accepts and returns travels unchanged over REST: messages
(content parts, the ``developer`` role, provider fields, Responses items, tool
calls) and ``build_context``'s arguments (graph context included), with schemas
that say exactly what the server requires."""

from __future__ import annotations

import copy
import inspect
from typing import Any

import pytest

from memorybank.errors import InvalidInput
from memorybank.memory._async.entries import AsyncEntries
from memorybank.memory._async.memory import AsyncMemory
from memorybank.rules import validate as v
from memorybank.server.models import (
    ContextIn,
    EntryIn,
    GraphContextOptionsIn,
    MessageIn,
)
from tests.server.conftest import Api, fresh_store, running_api

TOOL_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
#: Every message shape the library's ``entries.add`` stores, as a client sends it.
MESSAGES: list[dict[str, Any]] = [
    {"role": "developer", "content": "Answer briefly."},
    {"role": "system", "content": "You are helpful.", "name": "setup"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    },
    {"role": "assistant", "content": None, "refusal": "I cannot tell.", "annotations": []},
    # What an SDK's model_dump() sends: empty provider fields, kept as given.
    {"role": "assistant", "content": "ok", "tool_calls": None, "function_call": None},
    {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "42"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hm"}]},
    {"type": "function_call", "id": "fc_1", "call_id": "c2", "name": "g", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c2", "output": "done"},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "content": [{"type": "output_text", "text": "Hi!", "annotations": []}],
    },
]

PARITY_STORES = ("sqlite", "postgres")


@pytest.fixture(params=PARITY_STORES)
async def parity_api(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    async with fresh_store(str(request.param), tmp_path) as store, running_api(store) as api:
        yield api


async def test_every_message_the_library_stores_travels_unchanged(parity_api: Api) -> None:
    api = parity_api
    key = await api.key("parity")
    c = api.client
    assert (await c.post("/v1/threads", json={"thread_id": "p"}, headers=key)).status_code == 201
    stored = []
    for message in MESSAGES:
        r = await c.post("/v1/threads/p/entries", json=message, headers=key)
        assert r.status_code == 201, (message, r.text)
        stored.append(r.json())
    history = await c.get("/v1/threads/p/history", params={"last": 100}, headers=key)
    assert history.status_code == 200
    assert history.json() == {"items": MESSAGES, "next_cursor": None}
    library = api.memory.tenant("parity")
    assert history.json()["items"] == await library.history("p", last=100)
    # Each entry as the REST route returned it is the library's entry, field for field.
    entries = await library.entries.list("p")
    for body, entry in zip(stored, entries, strict=True):
        assert body["id"] == entry.id and body["role"] == entry.role
        assert body["content"] == entry.content
        assert body["extra"] == entry.extra and body["item"] == entry.item
        assert [t["id"] for t in body["tool_calls"]] == [t.id for t in entry.tool_calls]
    # The batch route takes the same messages, atomically.
    await c.post("/v1/threads", json={"thread_id": "q"}, headers=key)
    batch = await c.post("/v1/threads/q/entries/batch", json={"messages": MESSAGES}, headers=key)
    assert batch.status_code == 201, batch.text
    stored_q = await library.entries.list("q")
    assert [e["id"] for e in batch.json()["items"]] == [e.id for e in stored_q]
    again = await c.get("/v1/threads/q/history", params={"last": 100}, headers=key)
    assert again.json()["items"] == MESSAGES


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": "tool", "content": "x"}, "tool_call_id"),
        ({"role": "user", "content": [{"text": "no type"}]}, "content"),
        ({"role": "user", "tool_calls": [TOOL_CALL], "content": "x"}, "tool_calls"),
        ({"role": "user"}, "content"),
        ({"type": "", "output": "x"}, "item"),
    ],
)
async def test_bad_messages_get_the_librarys_error(
    api: Api, message: dict[str, Any], field: str
) -> None:
    key = await api.key("bad")
    await api.client.post("/v1/threads", json={"thread_id": "b"}, headers=key)
    r = await api.client.post("/v1/threads/b/entries", json=message, headers=key)
    assert r.status_code == 422, r.text
    body = r.json()
    assert (body["code"], body["field"]) == ("invalid_input", field)
    with pytest.raises(InvalidInput) as raised:
        v.as_message(copy.deepcopy(message), max_content_chars=10_000)
    assert body["message"] == str(raised.value)  # the library's own words
    assert await api.memory.tenant("bad").entries.count("b") == 0


def test_the_message_model_declares_every_column_the_library_reads() -> None:
    assert set(v.MESSAGE_KEYS) <= set(MessageIn.model_fields)
    assert MessageIn.model_config.get("extra") == "allow"  # provider fields pass through
    options = set(inspect.signature(AsyncEntries.add).parameters) - {"self", "thread_id"}
    # ``user_id`` is the caller's X-User-Id; ``message`` is the body itself.
    assert options - {"message", "user_id"} == set(EntryIn.model_fields) - set(
        MessageIn.model_fields
    )


def test_the_context_model_is_build_contexts_signature() -> None:
    parameters = inspect.signature(AsyncMemory.build_context).parameters
    names = [n for n in parameters if n not in {"self", "thread_id"}]
    assert sorted(names) == sorted(ContextIn.model_fields)
    for name in names:
        default = parameters[name].default
        field = ContextIn.model_fields[name]
        if name in {"agent_id", "max_tokens"}:
            assert field.is_required()
        elif name != "user_id":  # left out: the library's UNSET
            assert field.default == default, name
    from dataclasses import fields

    from memorybank.graph.model import GraphContextOptions

    assert [f.name for f in fields(GraphContextOptions)] == list(GraphContextOptionsIn.model_fields)


async def test_a_body_of_the_schemas_required_fields_is_accepted(api: Api) -> None:
    schema = api.app.openapi()
    key = await api.key("req")
    await api.client.post("/v1/threads", json={"thread_id": "r", "user_id": "ana"}, headers=key)
    await api.client.post(
        "/v1/threads/r/entries", json={"role": "user", "content": "hello"}, headers=key
    )
    context = schema["components"]["schemas"]["ContextIn"]
    assert sorted(context["required"]) == ["agent_id", "max_tokens"]
    sample = {"max_tokens": 500, "agent_id": "atlas", "user_id": None, "strategy": "recent"}
    minimal = {name: sample[name] for name in context["required"]}
    r = await api.client.post("/v1/threads/r/context", json=minimal, headers=key)
    assert r.status_code == 200, r.text
    assert r.json()["messages"] == [{"role": "user", "content": "hello"}]
    # One field fewer than required: the 422 names it.
    r = await api.client.post("/v1/threads/r/context", json={"max_tokens": 500}, headers=key)
    assert (r.status_code, r.json()["field"]) == (422, "body.agent_id")
    # Entries: the schema requires nothing the library does not (a Responses item has no role).
    entry = schema["components"]["schemas"]["EntryIn"]
    assert entry.get("required", []) == []


async def test_context_takes_every_build_context_argument(parity_api: Api) -> None:
    api = parity_api
    key = await api.key("ctx")
    c = api.client
    library = api.memory.tenant("ctx")
    await library.threads.create(thread_id="g", user_id="ana", agent_id="atlas")
    await library.entries.add("g", {"role": "user", "content": "Tell me about Zanzibar."})
    await library.graph.add_entity("Zanzibar", type="place", user_id="ana", agent_id="atlas")
    await library.facts.add(content="ana likes islands", agent_id="atlas", user_id="ana")
    body: dict[str, Any] = {
        "max_tokens": 2000,
        "agent_id": "atlas",
        "system_prompt": "Be kind.",
        "current_input": "What about Zanzibar?",
        "strategy": "recent",
        "reserve_tokens": 100,
        "include_system_prompt": True,
        "include_facts": True,
        "include_semantic_context": False,
        "include_graph_context": True,
        "graph_options": {"max_nodes": 5, "max_depth": 1, "entity_types": ["place"]},
    }
    user = {**key, "X-User-Id": "ana"}
    r = await c.post("/v1/threads/g/context", json=body, headers=user)
    assert r.status_code == 200, r.text
    got = r.json()
    expected = await library.build_context(
        "g",
        **{k: x for k, x in body.items() if k != "graph_options"},
        user_id="ana",
        graph_options={"max_nodes": 5, "max_depth": 1, "entity_types": ["place"]},
    )
    assert got["graph"] == expected.graph and "Zanzibar" in (got["graph"] or "")
    assert [e["name"] for e in got["graph_entities"]] == ["Zanzibar"]
    assert got["messages"] == expected.messages
    assert [f["content"] for f in got["facts"]] == ["ana likes islands"]
    # The profile block's lines come back as the library gives them (they were always []).
    profiled = {**body, "include_profile": True}
    r = await c.post("/v1/threads/g/context", json=profiled, headers=user)
    assert r.status_code == 200, r.text
    lines = (
        await library.build_context(
            "g",
            **{k: x for k, x in profiled.items() if k != "graph_options"},
            user_id="ana",
            graph_options={"max_nodes": 5, "max_depth": 1, "entity_types": ["place"]},
        )
    ).profile
    assert lines and r.json()["profile"] == lines
    # Bad graph options: the library's error, its field.
    bad = {**body, "graph_options": {"max_nodes": 0}}
    r = await c.post("/v1/threads/g/context", json=bad, headers=user)
    assert (r.status_code, r.json()["field"]) == (422, "graph_options")
    unknown = {**body, "graph_options": {"depth": 1}}
    r = await c.post("/v1/threads/g/context", json=unknown, headers=user)
    assert (r.status_code, r.json()["field"]) == (422, "body.graph_options.depth")


async def test_docs_pages_load_their_assets_from_this_server(api: Api) -> None:
    import re

    for path in ("/docs", "/redoc"):
        page = await api.client.get(path)
        assert page.status_code == 200, path
        urls = re.findall(r"""(?:src|href|url)\s*[:=]\s*['"]([^'"]+)['"]""", page.text)
        assert urls, page.text
        assert all(u.startswith("/") and not u.startswith("//") for u in urls), (path, urls)
        for url in urls:
            if url != "/openapi.json":
                asset = await api.client.get(url)
                assert asset.status_code == 200 and len(asset.content) > 1000, url
    assert "http" not in (await api.client.get("/docs")).text.replace("http-equiv", "")
