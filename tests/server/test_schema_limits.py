"""The schema says what the server enforces: ids, text, cursors and headers carry their
limits, each route documents its own error answers, a 405 names every method of the
path, and a body's date-time is a string, never a number."""

from __future__ import annotations

import re
from typing import Any

import pytest

from memorybank.rules.validate import check_id
from memorybank.server.pagination import CURSOR_PATTERN, encode_cursor
from memorybank.server.schema_limits import CANNOT_STATE, id_pattern
from tests.server.conftest import Api


async def test_405_and_options_name_every_method_of_the_path(api: Api) -> None:
    key = await api.key("acme")
    thread = (await api.client.post("/v1/threads", json={}, headers=key)).json()["id"]
    options = await api.client.options(f"/v1/threads/{thread}")
    assert options.status_code == 204
    assert options.headers["allow"] == "GET, PATCH, DELETE, OPTIONS"
    refused = await api.client.put(f"/v1/threads/{thread}", json={}, headers=key)
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, PATCH, DELETE, OPTIONS"
    assert refused.json()["code"] == "method_not_allowed"
    listing = await api.client.options("/v1/threads")
    assert listing.headers["allow"] == "GET, POST, OPTIONS"
    assert (await api.client.options("/v1/no-such-route")).status_code == 404


async def test_a_number_is_not_a_date_time(api: Api) -> None:
    key = await api.key("acme")
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}], "created_at": 0}
    answer = await api.client.post("/cortex/agents/a/memory", json=body, headers=key)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == "body.created_at"
    history = await api.client.get("/cortex/agents/a/memory", headers=key)
    assert history.json() == []  # nothing written
    body["created_at"] = "2026-01-02T03:04:05Z"
    assert (
        await api.client.post("/cortex/agents/a/memory", json=body, headers=key)
    ).status_code == 204


async def test_the_schema_states_the_limits_and_each_routes_errors(api: Api) -> None:
    schema = (await api.client.get("/openapi.json")).json()
    paths = schema["paths"]
    assert set(paths["/healthz"]["get"]["responses"]) == {"200"}
    assert set(paths["/readyz"]["get"]["responses"]) == {"200", "503"}
    assert {"401", "404", "422", "503"} <= set(paths["/v1/threads"]["get"]["responses"])
    assert "413" not in paths["/v1/threads"]["get"]["responses"]  # no body, nothing too large
    assert "413" in paths["/v1/threads"]["post"]["responses"]
    ids = schema["components"]["schemas"]["Id"]
    assert (ids["minLength"], ids["maxLength"]) == (1, 255)
    search = schema["components"]["schemas"]["SearchIn"]["properties"]
    assert {"$ref": "#/components/schemas/Id"} in search["agent_id"]["anyOf"]
    assert search["query"]["minLength"] == 1
    path_id = paths["/v1/threads/{thread_id}"]["get"]["parameters"][0]
    assert path_id["schema"] == {"$ref": "#/components/schemas/Id"}
    cursor = next(p for p in paths["/v1/threads"]["get"]["parameters"] if p["name"] == "cursor")
    assert cursor["schema"]["anyOf"][0]["pattern"] == CURSOR_PATTERN
    user = next(p for p in paths["/v1/threads"]["get"]["parameters"] if p["name"] == "x-user-id")
    assert user["schema"]["minLength"] == 1


def test_every_id_the_pattern_allows_is_an_id() -> None:
    allowed = re.compile(id_pattern())
    for code in range(0x3000):
        text = f"a{chr(code)}b"
        if allowed.fullmatch(text):
            assert check_id(text, "id") == text, hex(code)
    for refused in ("a\x00", "a\u00a0", "a\u200b", "a\u0378", "\x85"):
        assert not allowed.fullmatch(refused), repr(refused)
    assert re.fullmatch(CURSOR_PATTERN, encode_cursor(0)) and re.fullmatch(
        CURSOR_PATTERN, encode_cursor(123_456)
    )


async def test_the_schema_states_names_counts_weights_and_message_shapes(api: Api) -> None:
    schema = (await api.client.get("/openapi.json")).json()
    models, paths = schema["components"]["schemas"], schema["paths"]
    assert models["EntityIn"]["properties"]["name"]["minLength"] == 1
    name = models["MessageIn"]["properties"]["name"]["anyOf"][0]
    assert (name["minLength"], name["maxLength"]) == (1, 1000)  # as_message's label rule
    keep = models["CompactIn"]["properties"]["keep_recent"]
    assert (keep["minimum"], keep["maximum"]) == (0, 2**31 - 1)
    assert models["RelationPatch"]["properties"]["weight"]["exclusiveMinimum"] == 0
    start = models["TraverseIn"]["properties"]["start_ids"]["anyOf"]
    assert {"$ref": "#/components/schemas/Id"} in start  # one id, or a list of them
    types = next(
        p for p in paths["/v1/graph/entities"]["get"]["parameters"] if p["name"] == "types"
    )
    assert types["schema"]["anyOf"][0]["items"]["minLength"] == 1
    item = {"required": ["type"], "properties": {"type": {"type": "string", "minLength": 1}}}
    assert item in models["MessageIn"]["anyOf"]
    summaries = paths["/v1/summaries"]["get"]["parameters"]
    assert next(p for p in summaries if p["name"] == "agent_id")["required"] is True


async def test_limits_the_schema_states_are_the_servers(api: Api) -> None:
    key = await api.key("acme")
    c = api.client
    empty = await c.get("/v1/graph/entities", params={"name": ""}, headers=key)
    assert empty.status_code == 422 and empty.json()["field"] == "name"
    thread = (await c.post("/v1/threads", json={}, headers=key)).json()["id"]
    negative = {"threshold": 0, "keep_recent": -1}
    answer = await c.post(f"/v1/threads/{thread}/compact", json=negative, headers=key)
    assert answer.status_code == 422 and answer.json()["field"] == "keep_recent"
    no_agent = await c.get("/v1/summaries", headers=key)
    assert no_agent.status_code == 422


async def test_merging_an_entity_into_itself_changes_nothing(api: Api) -> None:
    key = await api.key("acme")
    made = await api.client.post("/v1/graph/entities", json={"name": "Ada"}, headers=key)
    entity = made.json()
    merged = await api.client.post(
        f"/v1/graph/entities/{entity['id']}/merge", json={"merge": entity["id"]}, headers=key
    )
    assert merged.status_code == 200, merged.text
    assert merged.json()["id"] == entity["id"] and merged.json()["name"] == "Ada"
    again = await api.client.get(f"/v1/graph/entities/{entity['id']}", headers=key)
    assert again.status_code == 200
    missing = await api.client.post(
        "/v1/graph/entities/nope/merge", json={"merge": "nope"}, headers=key
    )
    assert missing.status_code == 404  # no such entity, merged into itself or not


async def test_acting_for_another_user_is_forbidden(api: Api) -> None:
    key = {**(await api.key("acme")), "X-User-Id": "bob"}
    answer = await api.client.post("/v1/threads", json={"user_id": "alice"}, headers=key)
    assert answer.status_code == 403, answer.text
    assert (answer.json()["code"], answer.json()["field"]) == ("out_of_scope", "user_id")
    assert (await api.client.get("/v1/threads", headers=key)).json()["items"] == []


CALL: dict[str, Any] = {"id": "c1", "function": {"name": "f"}}
#: Messages the schema calls valid (each is stored), and ones it refuses (each is a 422
#: naming the field): the rules ``rules.validate.as_message`` checks, stated per role.
VALID_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "hi"},
    {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]},
    {"role": "assistant", "content": None, "refusal": "no"},
    {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f"}}]},
    {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
    {"type": "message", "role": "user", "content": "a Responses item"},
]
REFUSED_MESSAGES: list[tuple[dict[str, Any], str]] = [
    ({"role": "tool", "content": "72F"}, "tool_call_id"),  # answers no call
    ({"role": "user", "content": "hi", "tool_call_id": "c1"}, "tool_call_id"),
    ({"role": "user", "content": None}, "content"),
    ({"role": "assistant", "content": None}, "content"),
    ({"role": "user", "content": [{"text": "no type"}]}, "content"),
    ({"role": "user", "content": [{"type": "text"}]}, "content"),  # a text part, no text
    ({"role": "assistant", "tool_calls": [{"id": "c1"}]}, "tool_calls"),  # no function
    ({"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}, "tool_calls"),
    ({"role": "user", "content": "hi", "tool_calls": [CALL]}, "tool_calls"),
    ({"role": "user", "content": "hi", "name": ""}, "name"),
    ({"role": "assistant", "content": None, "function_call": {"arguments": "{}"}}, "tool_calls"),
]


def _validator(schema: dict[str, Any], model: str) -> Any:
    """A validator of ``#/components/schemas/model`` within the whole OpenAPI document
    (``jsonschema`` comes with schemathesis, in the dev extra)."""
    jsonschema = pytest.importorskip("jsonschema")
    document = {**schema, "$ref": f"#/components/schemas/{model}"}
    return jsonschema.Draft202012Validator(document)


async def test_a_message_the_schema_calls_valid_is_stored_and_one_it_refuses_is_not(
    api: Api,
) -> None:
    """The message rules stated per role: what the schema refuses the server refuses
    (422 naming the field) and what it calls valid is stored. On the old schema every
    refused message here was valid (it said only which fields a role needs)."""
    schema = (await api.client.get("/openapi.json")).json()
    messages = _validator(schema, "MessageIn")
    key = await api.key("acme")
    thread = (await api.client.post("/v1/threads", json={}, headers=key)).json()["id"]
    for message in VALID_MESSAGES:
        assert messages.is_valid(message), message
        stored = await api.client.post(f"/v1/threads/{thread}/entries", json=message, headers=key)
        assert stored.status_code == 201, (message, stored.text)
    for message, field in REFUSED_MESSAGES:
        assert not messages.is_valid(message), message
        refused = await api.client.post(f"/v1/threads/{thread}/entries", json=message, headers=key)
        assert refused.status_code == 422, (message, refused.text)
        assert field in refused.json()["field"], (message, refused.text)


@pytest.mark.parametrize(("model", "field"), sorted(CANNOT_STATE))
async def test_a_rule_the_schema_cannot_state_is_said_in_its_description(
    api: Api, model: str, field: str
) -> None:
    schema = (await api.client.get("/openapi.json")).json()
    description = schema["components"]["schemas"][model]["properties"][field]["description"]
    assert CANNOT_STATE[(model, field)] in description
