"""Auth on every route, generated from the app's route table (its OpenAPI paths).

``CASES`` names every authenticated route with a request that succeeds for
tenant A and the status tenant B's key must get for the same request (404:
A's id is invisible; 2xx: B acted in its own tenant). ``test_every_route_has_a_case``
fails when a route is added without a case here.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from tests.server.conftest import Api, fresh_store, running_api

# One app for the module (building one costs a second on a busy machine); every
# test uses tenants of its own.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Api]:
    async with (
        fresh_store("memory", tmp_path_factory.mktemp("auth")) as store,
        running_api(store) as running,
    ):
        yield running


def tenant(name: str) -> str:
    """A tenant no other test uses."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


PUBLIC = {("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics")}
MARK = "SECRET-A-" + uuid.uuid4().hex  # in every piece of tenant A's content


@dataclass
class World:
    """Tenant A's data, made through the API, and the ids the cases refer to."""

    thread: str
    entry: str
    branch: str
    run: str
    key: str
    fact: str
    document: str
    session: str
    agent: str
    user: str
    key_id: str
    entity: str
    entity2: str
    relation: str
    consolidation: str
    webhook: str


@dataclass(frozen=True)
class Case:
    params: Callable[[World], dict[str, str]]
    body: Callable[[World], Any] | None = None
    other: int = 404  # tenant B's status for the same request
    query: Callable[[World], dict[str, Any]] | None = None


def _thread(w: World) -> dict[str, str]:
    return {"thread_id": w.thread}


def _none(w: World) -> dict[str, str]:
    return {}


def _entity(w: World) -> dict[str, str]:
    return {"entity_id": w.entity}


def _relation(w: World) -> dict[str, str]:
    return {"relation_id": w.relation}


def _msg(text: str = MARK) -> dict[str, str]:
    return {"role": "user", "content": text}


CASES: dict[tuple[str, str], Case] = {
    ("POST", "/v1/threads"): Case(_none, lambda w: {"title": "t"}, other=201),
    # the raw store route: another tenant's key reads its own (empty) space, not w.thread
    ("POST", "/v1/store/{method}"): Case(
        lambda w: {"method": "thread_get"},
        lambda w: {"v": 1, "args": {"tenant": "default", "thread_id": w.thread}},
        other=200,
    ),
    ("GET", "/v1/threads"): Case(_none, other=200),
    ("GET", "/v1/threads/{thread_id}"): Case(_thread),
    ("PATCH", "/v1/threads/{thread_id}"): Case(_thread, lambda w: {"title": "x"}),
    ("DELETE", "/v1/threads/{thread_id}"): Case(_thread),
    ("POST", "/v1/threads/{thread_id}/entries"): Case(_thread, lambda w: _msg()),
    ("GET", "/v1/threads/{thread_id}/entries"): Case(_thread),
    ("DELETE", "/v1/threads/{thread_id}/entries"): Case(_thread),
    ("POST", "/v1/threads/{thread_id}/entries/batch"): Case(
        _thread, lambda w: {"messages": [_msg()]}
    ),
    ("GET", "/v1/threads/{thread_id}/count"): Case(_thread),
    ("GET", "/v1/threads/{thread_id}/entries/{entry_id}"): Case(
        lambda w: {"thread_id": w.thread, "entry_id": w.entry}
    ),
    ("DELETE", "/v1/threads/{thread_id}/entries/{entry_id}"): Case(
        lambda w: {"thread_id": w.thread, "entry_id": w.entry}
    ),
    ("GET", "/v1/threads/{thread_id}/history"): Case(_thread),
    ("POST", "/v1/threads/{thread_id}/branches"): Case(_thread, lambda w: {"name": "new"}),
    ("GET", "/v1/threads/{thread_id}/branches"): Case(_thread),
    ("DELETE", "/v1/threads/{thread_id}/branches/{name}"): Case(
        lambda w: {"thread_id": w.thread, "name": w.branch}
    ),
    ("POST", "/v1/threads/{thread_id}/checkout"): Case(_thread, lambda w: {"name": w.branch}),
    ("POST", "/v1/threads/{thread_id}/rewind"): Case(_thread, lambda w: {"entry_id": w.entry}),
    # A context for a thread that does not exist (yet) is empty, as in the library.
    ("POST", "/v1/threads/{thread_id}/context"): Case(
        _thread, lambda w: {"max_tokens": 100, "agent_id": w.agent}, other=200
    ),
    ("POST", "/v1/threads/{thread_id}/compact"): Case(
        _thread, lambda w: {"threshold": 10_000, "keep_recent": 5}
    ),
    ("POST", "/v1/threads/{thread_id}/restore"): Case(_thread),
    ("GET", "/v1/runs"): Case(_none, other=200),
    ("GET", "/v1/runs/{run_id}/working"): Case(lambda w: {"run_id": w.run}, other=200),
    ("DELETE", "/v1/runs/{run_id}/working"): Case(lambda w: {"run_id": w.run}, other=204),
    ("GET", "/v1/runs/{run_id}/working/{key}"): Case(lambda w: {"run_id": w.run, "key": w.key}),
    ("PUT", "/v1/runs/{run_id}/working/{key}"): Case(
        lambda w: {"run_id": w.run, "key": w.key}, lambda w: {"value": "b"}, other=204
    ),
    ("DELETE", "/v1/runs/{run_id}/working/{key}"): Case(lambda w: {"run_id": w.run, "key": w.key}),
    ("PUT", "/v1/snapshots/{run_id}"): Case(
        lambda w: {"run_id": w.run}, lambda w: {"value": 1}, other=204
    ),
    ("GET", "/v1/snapshots"): Case(_none, other=200),
    ("GET", "/v1/snapshots/{run_id}"): Case(lambda w: {"run_id": w.run}),
    ("DELETE", "/v1/snapshots/{run_id}"): Case(lambda w: {"run_id": w.run}),
    ("POST", "/v1/summaries"): Case(
        _none, lambda w: {"content": "s", "agent_id": w.agent}, other=201
    ),
    ("GET", "/v1/summaries"): Case(_none, other=200, query=lambda w: {"agent_id": w.agent}),
    ("POST", "/v1/facts"): Case(_none, lambda w: {"content": "f"}, other=201),
    ("GET", "/v1/facts"): Case(_none, other=200),
    ("GET", "/v1/events"): Case(_none, other=200),  # tenant B reads its own (empty) feed
    ("POST", "/v1/facts/search"): Case(_none, lambda w: {"query": MARK}, other=200),
    ("GET", "/v1/facts/{fact_id}"): Case(lambda w: {"fact_id": w.fact}),
    ("POST", "/v1/consolidate"): Case(_none, lambda w: {"user_id": w.user}, other=200),
    ("POST", "/v1/feedback"): Case(
        _none, lambda w: {"fact_id": w.fact, "user_id": w.user, "useful": True}
    ),
    ("GET", "/v1/consolidation/runs"): Case(_none, other=200),
    ("GET", "/v1/consolidation/runs/{run_id}"): Case(lambda w: {"run_id": w.consolidation}),
    ("POST", "/v1/consolidation/runs/{run_id}/undo"): Case(lambda w: {"run_id": w.consolidation}),
    ("PATCH", "/v1/facts/{fact_id}"): Case(
        lambda w: {"fact_id": w.fact}, lambda w: {"content": "y"}
    ),
    ("DELETE", "/v1/facts/{fact_id}"): Case(lambda w: {"fact_id": w.fact}),
    ("GET", "/v1/facts/{fact_id}/history"): Case(lambda w: {"fact_id": w.fact}, other=200),
    ("GET", "/v1/core-facts"): Case(_none, other=200),
    ("GET", "/v1/core-facts/{key}"): Case(lambda w: {"key": w.key}),
    ("PUT", "/v1/core-facts/{key}"): Case(lambda w: {"key": w.key}, lambda w: {"value": "v"}, 200),
    ("DELETE", "/v1/core-facts/{key}"): Case(lambda w: {"key": w.key}),
    ("GET", "/v1/core-facts/{key}/history"): Case(lambda w: {"key": w.key}, other=200),
    ("POST", "/v1/documents"): Case(_none, lambda w: {"content": "d"}, other=201),
    ("GET", "/v1/documents"): Case(_none, other=200),
    ("GET", "/v1/documents/{document_id}"): Case(lambda w: {"document_id": w.document}),
    ("DELETE", "/v1/documents/{document_id}"): Case(lambda w: {"document_id": w.document}),
    ("POST", "/v1/search"): Case(_none, lambda w: {"query": MARK}, other=200),
    ("GET", "/v1/embedding/status"): Case(_none, other=200),
    ("POST", "/v1/sessions"): Case(
        _none,
        lambda w: {"channel_type": "web", "channel_id": "c", "agent_id": w.agent, "user_id": "u"},
        other=200,
    ),
    ("GET", "/v1/sessions"): Case(_none, other=200),
    ("GET", "/v1/sessions/{session_id}"): Case(lambda w: {"session_id": w.session}),
    ("PATCH", "/v1/sessions/{session_id}"): Case(
        lambda w: {"session_id": w.session}, lambda w: {"metadata": {"k": 1}}
    ),
    ("DELETE", "/v1/sessions/{session_id}"): Case(lambda w: {"session_id": w.session}),
    ("DELETE", "/v1/users/{user_id}"): Case(lambda w: {"user_id": w.user}, other=200),
    # another tenant's key reads the (empty) profile of the same user id in its own tenant
    ("GET", "/v1/users/{user_id}/profile"): Case(lambda w: {"user_id": w.user}, other=200),
    ("GET", "/cortex/agents/{name}/memory"): Case(lambda w: {"name": w.agent}, other=200),
    ("POST", "/cortex/agents/{name}/memory"): Case(
        lambda w: {"name": w.agent}, lambda w: {"messages": [_msg("b")]}, other=204
    ),
    ("DELETE", "/cortex/agents/{name}/memory"): Case(lambda w: {"name": w.agent}, other=204),
    ("POST", "/v1/graph/entities"): Case(_none, lambda w: {"name": "n"}, other=201),
    ("GET", "/v1/graph/entities"): Case(_none, other=200),
    ("GET", "/v1/graph/entities/search"): Case(_none, other=200, query=lambda w: {"query": MARK}),
    ("GET", "/v1/graph/entities/{entity_id}"): Case(_entity),
    ("PATCH", "/v1/graph/entities/{entity_id}"): Case(_entity, lambda w: {"aliases": ["x"]}),
    ("DELETE", "/v1/graph/entities/{entity_id}"): Case(_entity),
    ("POST", "/v1/graph/entities/{entity_id}/observations"): Case(
        _entity, lambda w: {"observations": ["o"]}
    ),
    ("POST", "/v1/graph/entities/{entity_id}/observations/delete"): Case(
        _entity, lambda w: {"observations": [MARK]}
    ),
    ("POST", "/v1/graph/entities/{entity_id}/merge"): Case(_entity, lambda w: {"merge": w.entity2}),
    ("GET", "/v1/graph/entities/{entity_id}/relations"): Case(_entity),
    ("GET", "/v1/graph/entities/{entity_id}/neighbors"): Case(_entity),
    ("POST", "/v1/graph/relations"): Case(
        _none,
        lambda w: {"source_id": w.entity, "type": "likes", "target_id": w.entity2},
    ),
    ("GET", "/v1/graph/relations/{relation_id}"): Case(_relation),
    ("PATCH", "/v1/graph/relations/{relation_id}"): Case(_relation, lambda w: {"weight": 2.0}),
    ("DELETE", "/v1/graph/relations/{relation_id}"): Case(_relation),
    ("POST", "/v1/graph/relations/{relation_id}/invalidate"): Case(_relation, lambda w: {}),
    ("POST", "/v1/graph/traverse"): Case(_none, lambda w: {"start_ids": [w.entity]}),
    ("GET", "/v1/graph/path"): Case(
        _none, query=lambda w: {"source_id": w.entity, "target_id": w.entity2}
    ),
    ("GET", "/v1/graph/stats"): Case(_none, other=200),
    ("POST", "/v1/graph/infer"): Case(_none, lambda w: {}, other=200),
    ("DELETE", "/v1/graph"): Case(_none, other=200),
}

ADMIN_ROUTES: dict[tuple[str, str], Case] = {
    ("POST", "/v1/admin/keys"): Case(_none, lambda w: {"tenant": "c"}),
    ("GET", "/v1/admin/keys"): Case(_none),
    ("GET", "/v1/admin/keys/{key_id}"): Case(lambda w: {"key_id": w.key_id}),
    ("DELETE", "/v1/admin/keys/{key_id}"): Case(lambda w: {"key_id": w.key_id}),
    ("GET", "/v1/admin/tenants"): Case(_none),
    ("POST", "/v1/admin/tenants/{tenant}/revoke"): Case(lambda w: {"tenant": tenant("nobody")}),
    ("POST", "/v1/admin/webhooks"): Case(
        _none, lambda w: {"tenant": "c", "url": "https://example.test/h"}
    ),
    ("GET", "/v1/admin/webhooks"): Case(_none),
    ("GET", "/v1/admin/webhooks/{webhook_id}"): Case(lambda w: {"webhook_id": w.webhook}),
    ("PATCH", "/v1/admin/webhooks/{webhook_id}"): Case(
        lambda w: {"webhook_id": w.webhook}, lambda w: {"paused": True}
    ),
    ("DELETE", "/v1/admin/webhooks/{webhook_id}"): Case(lambda w: {"webhook_id": w.webhook}),
}

ALL = {**CASES, **ADMIN_ROUTES}


async def make_world(api: Api, headers: dict[str, str]) -> World:
    """Tenant A's thread (with an entry and a branch), working memory, snapshot,
    summary, fact, core fact, document, session, cortex memory and graph (two
    shared entities and a relation)."""
    c = api.client
    agent, user, run, key = (f"{p}-{uuid.uuid4().hex[:8]}" for p in ("ag", "us", "run", "k"))
    thread = (await c.post("/v1/threads", json={"title": MARK}, headers=headers)).json()["id"]
    entry = await c.post(f"/v1/threads/{thread}/entries", json=_msg(), headers=headers)
    entry_id = entry.json()["id"]
    await c.post(f"/v1/threads/{thread}/branches", json={"name": "side"}, headers=headers)
    await c.put(f"/v1/runs/{run}/working/{key}", json={"value": MARK}, headers=headers)
    await c.put(f"/v1/snapshots/{run}", json={"value": MARK}, headers=headers)
    await c.post("/v1/summaries", json={"content": MARK, "agent_id": agent}, headers=headers)
    fact = await c.post("/v1/facts", json={"content": MARK, "user_id": user}, headers=headers)
    await c.put(f"/v1/core-facts/{key}", json={"value": MARK}, headers=headers)
    doc = await c.post("/v1/documents", json={"content": MARK}, headers=headers)
    session = await c.post(
        "/v1/sessions",
        json={"channel_type": "web", "channel_id": "x", "agent_id": agent, "user_id": user},
        headers=headers,
    )
    await c.post(f"/cortex/agents/{agent}/memory", json={"messages": [_msg()]}, headers=headers)
    entity = await c.post(
        "/v1/graph/entities", json={"name": f"E1 {MARK}", "observations": [MARK]}, headers=headers
    )
    entity2 = await c.post("/v1/graph/entities", json={"name": f"E2 {MARK}"}, headers=headers)
    relation = await c.post(
        "/v1/graph/relations",
        json={"source_id": entity.json()["id"], "type": "knows", "target_id": entity2.json()["id"]},
        headers=headers,
    )
    consolidation = await c.post("/v1/consolidate", json={"user_id": user}, headers=headers)
    info, _ = await api.keys.create(tenant("tenant-c"), "victim")
    hook, _ = await api.app.state.webhooks.create(tenant("tenant-c"), "https://example.test/h")
    return World(
        thread=thread,
        entry=entry_id,
        branch="side",
        run=run,
        key=key,
        fact=fact.json()["id"],
        document=doc.json()["id"],
        session=session.json()["id"],
        agent=agent,
        user=user,
        key_id=info.id,
        webhook=hook.id,
        consolidation=consolidation.json()["run_id"],
        entity=entity.json()["id"],
        entity2=entity2.json()["id"],
        relation=relation.json()["id"],
    )


async def call(
    api: Api, route: tuple[str, str], case: Case, world: World, headers: dict[str, str]
) -> Any:
    method, template = route
    path = template.format(**case.params(world))
    return await api.client.request(
        method,
        path,
        json=None if case.body is None else case.body(world),
        params=None if case.query is None else case.query(world),
        headers=headers,
    )


async def test_every_route_has_a_case(api: Api) -> None:
    """The route table and the cases agree: a new route needs a case here."""
    routes = {
        (method.upper(), path)
        for path, operations in api.app.openapi()["paths"].items()
        for method in operations
    }
    assert routes - PUBLIC == set(ALL)


BAD_KEYS = {
    "missing": {},
    "empty bearer": {"Authorization": "Bearer "},
    "not bearer": {"Authorization": "Basic dXNlcjpwYXNz"},
    "forged": {"Authorization": "Bearer mb_0123456789ab_forgedsecretforgedsecret"},
    "garbage": {"Authorization": "Bearer x"},
}


@pytest.mark.parametrize("route", sorted(ALL), ids=" ".join)
async def test_every_route_refuses_bad_keys(api: Api, route: tuple[str, str]) -> None:
    """Missing, malformed, forged and revoked keys get 401 ``unauthorized`` everywhere."""
    good = await api.key(tenant("tenant-a"))
    world = await make_world(api, good)
    info, secret = await api.keys.create(tenant("tenant-a"), "to revoke")
    await api.keys.revoke(info.id)
    # A real key's prefix with a wrong secret is forged too.
    real_prefix = good["Authorization"].split("_")[1]
    cases = {
        **BAD_KEYS,
        "revoked": {"Authorization": f"Bearer {secret}"},
        "wrong secret": {"Authorization": f"Bearer mb_{real_prefix}_wrong"},
    }
    for name, headers in cases.items():
        # A bad X-User-Id must not turn 401 into 422: authentication comes first.
        headers = {**headers, "X-User-Id": "bad\x01user"} if name == "forged" else headers
        response = await call(api, route, ALL[route], world, headers)
        assert response.status_code == 401, (name, response.text)
        assert response.json()["code"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("route", sorted(CASES), ids=" ".join)
async def test_other_tenant_sees_nothing(api: Api, route: tuple[str, str]) -> None:
    """Tenant B's key on A's ids: 404 for a by-id route, and never A's data; A's
    request succeeds, so the 404 is the tenant boundary and not a bad request."""
    key_a, key_b = await api.key(tenant("tenant-a")), await api.key(tenant("tenant-b"))
    world = await make_world(api, key_a)
    case = CASES[route]
    other = await call(api, route, case, world, key_b)
    assert other.status_code == case.other, other.text
    assert MARK not in other.text
    if other.status_code == 404:
        assert other.json()["code"] == "not_found"
    own = await call(api, route, case, world, key_a)
    assert own.status_code < 300, own.text


@pytest.mark.parametrize("route", sorted(ADMIN_ROUTES), ids=" ".join)
async def test_admin_routes_need_the_admin_key(api: Api, route: tuple[str, str]) -> None:
    """A tenant's key gets 403 ``forbidden`` on admin routes; the admin key works."""
    key = await api.key(tenant("tenant-a"))
    world = await make_world(api, key)
    refused = await call(api, route, ADMIN_ROUTES[route], world, key)
    assert refused.status_code == 403
    assert refused.json()["code"] == "forbidden"
    allowed = await call(api, route, ADMIN_ROUTES[route], world, api.admin)
    assert allowed.status_code < 300, allowed.text


async def test_public_routes_need_no_key(api: Api) -> None:
    for method, path in PUBLIC:
        assert (await api.client.request(method, path)).status_code == 200
