"""One list shape and one error shape, on every route the app's OpenAPI declares.

The list routes are found in the schema, not listed by hand: a route whose 2xx
answer is an array, or an object holding one array and nothing but a cursor
beside it, is a list route, and must answer ``{"items": [...], "next_cursor"}``
(``Page_*``). Each is then called for real (the requests of
``test_auth.CASES``) and its body checked. Errors are checked per route family
(the path's first two segments), ``/mcp`` included.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.server.conftest import Api, fresh_store, running_api
from tests.server.test_auth import ADMIN_ROUTES, ALL, CASES, call, make_world, tenant

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: The reference service's route keeps the reference's own shape (a bare array of
#: messages): clients written for that service read it unchanged.
FOREIGN_SHAPE = {("GET", "/cortex/agents/{name}/memory")}
#: Properties that may stand beside a list's array without making it a record.
CURSOR_LIKE = {"next_cursor", "cursor", "nextCursor", "total", "count"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Api]:
    async with (
        fresh_store("memory", tmp_path_factory.mktemp("shapes")) as store,
        running_api(store) as running,
    ):
        yield running


def _resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        resolved: dict[str, Any] = spec["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        return resolved
    return schema


def _answers(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """Every operation's 2xx JSON schema, by (METHOD, path)."""
    out = {}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status, response in operation.get("responses", {}).items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if status.startswith("2") and schema is not None:
                    out[(method.upper(), path)] = _resolve(schema, spec)
    return out


def _is_list(schema: dict[str, Any], spec: dict[str, Any]) -> bool:
    if schema.get("type") == "array":
        return True
    properties = schema.get("properties", {})
    arrays = [n for n, p in properties.items() if _resolve(p, spec).get("type") == "array"]
    return len(arrays) == 1 and set(properties) - set(arrays) <= CURSOR_LIKE


def list_routes(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {route: s for route, s in _answers(spec).items() if _is_list(s, spec)}


async def test_every_list_route_declares_one_page_shape(api: Api) -> None:
    spec = api.app.openapi()
    found = list_routes(spec)
    # the search finds the lists (not a vacuous pass): pages, rankings, windows, batches
    for route in [
        ("GET", "/v1/threads"),
        ("POST", "/v1/search"),
        ("POST", "/v1/facts/search"),
        ("GET", "/v1/threads/{thread_id}/history"),
        ("GET", "/v1/facts/{fact_id}/history"),
        ("GET", "/v1/graph/entities/search"),
        ("POST", "/v1/threads/{thread_id}/entries/batch"),
        ("POST", "/v1/admin/tenants/{tenant}/revoke"),
    ]:
        assert route in found, route
    for route, schema in found.items():
        if route in FOREIGN_SHAPE:
            continue
        assert schema.get("type") == "object", route
        assert set(schema["properties"]) == {"items", "next_cursor"}, route
        assert schema["required"] == ["items"], route
        assert schema["properties"]["items"]["type"] == "array", route
        cursor = schema["properties"]["next_cursor"]["anyOf"]
        assert {"type": "string"} in cursor and {"type": "null"} in cursor, route
    assert set(found) >= FOREIGN_SHAPE


async def test_every_list_route_answers_one_page(api: Api) -> None:
    """Each list route, called for real, answers exactly ``{"items": [...], "next_cursor"}``."""
    key = await api.key(tenant("lists"))
    world = await make_world(api, key)
    routes = sorted(set(list_routes(api.app.openapi())) - FOREIGN_SHAPE)
    for route in routes:
        headers = api.admin if route in ADMIN_ROUTES else key
        answer = await call(api, route, ALL[route], world, headers)
        assert answer.status_code < 300, (route, answer.text)
        body = answer.json()
        assert set(body) == {"items", "next_cursor"}, (route, body)
        assert isinstance(body["items"], list), route
        assert body["next_cursor"] is None or isinstance(body["next_cursor"], str), route
    # and a few hold what the world wrote: the items are the records, not a wrapper
    history = ("GET", "/v1/threads/{thread_id}/history")
    page = await call(api, history, CASES[history], world, key)
    items = page.json()["items"]
    assert items and all(m["role"] == "user" for m in items), items


def assert_error_shape(answer: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    assert (
        {"code", "message", "request_id"}
        <= set(body)
        <= {
            "code",
            "message",
            "field",
            "request_id",
        }
    ), body
    assert body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert body["request_id"] == answer.headers["x-request-id"]
    return body


def families() -> dict[str, list[tuple[str, str]]]:
    """Routes by family: ``/v1/threads``, ``/v1/graph``, ``/cortex/agents``, ..."""
    out: dict[str, list[tuple[str, str]]] = {}
    for method, path in sorted(ALL):
        family = "/" + "/".join(path.strip("/").split("/")[:2])
        out.setdefault(family, []).append((method, path))
    return out


async def test_every_route_family_errors_in_one_shape(api: Api) -> None:
    """401 without a key on every route, and per family one refusal a valid key gets
    (another tenant's id: 404, else an X-User-Id that is no id: 422), all in one shape;
    a body that does not fit the schema says where, without pydantic's banner."""
    key_a, key_b = await api.key(tenant("err-a")), await api.key(tenant("err-b"))
    world = await make_world(api, key_a)
    by_family = families()
    assert len(by_family) >= 12, sorted(by_family)
    for family, routes in by_family.items():
        for route in routes:
            refused = await call(api, route, ALL[route], world, {})
            assert_error_shape(refused, 401, "unauthorized")
            assert refused.headers["www-authenticate"] == "Bearer"
        by_id = [r for r in routes if r in CASES and CASES[r].other == 404]
        if by_id:
            answer = await call(api, by_id[0], CASES[by_id[0]], world, key_b)
            assert_error_shape(answer, 404, "not_found")
            continue
        headers = {**(api.admin if family == "/v1/admin" else key_a), "X-User-Id": "bad\x01user"}
        answer = await call(api, routes[0], ALL[routes[0]], world, headers)
        body = assert_error_shape(answer, 422, "invalid_input")
        assert body["field"] == "X-User-Id", (family, body)
    bad = {"role": "narrator", "content": 5}
    answer = await api.client.post(f"/v1/threads/{world.thread}/entries", json=bad, headers=key_a)
    body = assert_error_shape(answer, 422, "invalid_input")
    assert body["field"].startswith("body."), body
    assert "errors.pydantic.dev" not in body["message"] and "input_value" not in body["message"]


MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


async def test_mcp_refusals_are_in_the_one_shape_with_the_mcp_challenge(api: Api) -> None:
    pytest.importorskip("mcp")
    info, secret = await api.keys.create(tenant("mcp"), "to revoke")
    await api.keys.revoke(info.id)
    for name, headers in {
        "missing": {},
        "not bearer": {"Authorization": "Basic dXNlcjpwYXNz"},
        "forged": {"Authorization": "Bearer mb_0123456789ab_forged"},
        "revoked": {"Authorization": f"Bearer {secret}"},
        "admin": api.admin,
    }.items():
        answer = await api.client.post("/mcp", json=TOOLS_LIST, headers={**MCP_ACCEPT, **headers})
        body = assert_error_shape(answer, 401, "unauthorized")
        assert "tools" not in answer.text, name
        # the challenge MCP clients read to learn the server wants a bearer token
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith('Bearer error="invalid_token"'), (name, challenge)
        if name in {"missing", "not bearer"}:
            assert "Authorization: Bearer" in body["message"]
        else:
            assert "invalid or revoked" in body["message"]
    good = await api.key(tenant("mcp"))
    answer = await api.client.post("/mcp", json=TOOLS_LIST, headers={**MCP_ACCEPT, **good})
    assert answer.status_code == 200 and "remember" in answer.text
