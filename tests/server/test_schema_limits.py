"""The schema says what the server enforces: ids, text, cursors and headers carry their
limits, each route documents its own error answers, a 405 names every method of the
path, and a body's date-time is a string, never a number."""

from __future__ import annotations

import re
from typing import Any

from memorybank.rules.validate import check_id
from memorybank.server.pagination import CURSOR_PATTERN, encode_cursor
from memorybank.server.schema_limits import id_pattern
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
