"""The REST request bodies are the library's arguments.

Generated from ``memorybank.surface.BODIES`` by ``scripts/gen_models.py`` and checked
here from the declaration, the library's signatures and the app's own OpenAPI schema:
the generated module is current; each route's body is its verb's generated model (or a
subclass adding HTTP meaning); its fields, required set and defaults are the library's;
every library argument travels in the body, the path, a query parameter, a header or a
declared gap; and for every route with a request body, a body of the schema's required
fields alone is not refused with 422.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel

from memorybank import graph, records
from memorybank.context import values
from memorybank.memory._async.memory import AsyncMemory
from memorybank.server import create_app, models_generated
from memorybank.server import models as m
from memorybank.server import responses_generated as gm
from memorybank.server.keys import KeyRing
from memorybank.stores.contract.types import UNSET
from memorybank.stores.memory._async.store import AsyncInMemoryStore
from memorybank.surface import BODIES, HEADERS, VERBS, Body, Route, Verb
from tests.recall.conftest import HashEmbedder
from tests.server.conftest import ADMIN, CHEAP_HASH, Api, running_api
from tests.server.test_surface import _resolve, _sample, _seed, route_of

ROOT = Path(__file__).resolve().parents[2]
REST = [v for v in VERBS if isinstance(v.rest, Route)]
#: Routes whose body is no verb's arguments, and why they are not sent here.
NOT_A_VERB = {
    "/v1/store/{method}": "the remote store's wire: its tests check each method's arguments",
}


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_models", ROOT / "scripts" / "gen_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app(memory=AsyncMemory(AsyncInMemoryStore()), admin_key=ADMIN)


def body_model(found: APIRoute) -> type[BaseModel]:
    (param,) = found.dependant.body_params
    model = param.field_info.annotation
    assert isinstance(model, type) and issubclass(model, BaseModel), found.path
    return model


def _json(value: Any) -> Any:
    """A library default as JSON has it (a tuple is a list)."""
    return list(value) if isinstance(value, tuple) else value


def test_the_generated_module_is_current() -> None:
    text = (ROOT / "src" / "memorybank" / "server" / "models_generated.py").read_text("utf-8")
    assert _generator().source() == text, "stale: run python scripts/gen_models.py"


def test_the_generated_responses_are_current() -> None:
    text = (ROOT / "src" / "memorybank" / "server" / "responses_generated.py").read_text("utf-8")
    assert _generator().responses_source() == text, "stale: run python scripts/gen_models.py"


def test_every_route_with_a_body_is_declared() -> None:
    """A verb routed with a body has its own ``Body`` or shares another's route."""
    routes = {str(b.route) for b in BODIES}
    assert len(routes) == len(BODIES), "two bodies for one route"
    for verb in REST:
        assert isinstance(verb.rest, Route)
        if verb.rest.method in ("POST", "PUT", "PATCH") and str(verb.rest) not in routes:
            assert verb.name in ("CompactionService.restore", "Consolidation.undo") or any(
                v.rest == verb.rest and v.name != verb.name for v in REST
            ), f"{verb.name}: {verb.rest} has no Body in memorybank.surface.BODIES"


@pytest.mark.parametrize("body", BODIES, ids=[b.verb for b in BODIES])
def test_the_body_is_the_verbs_arguments(app: FastAPI, body: Body) -> None:
    generated: type[BaseModel] = getattr(models_generated, body.model)
    used = body_model(route_of(app, body.route))
    assert issubclass(used, generated), f"{body.route} takes {used}, not {body.model}"
    arguments = {a.name: a for a in body.fields()}
    assert list(generated.model_fields) == list(arguments), f"{body.model}: fields"
    for name, argument in arguments.items():
        field = generated.model_fields[name]
        assert field.is_required() == Body.required(argument), f"{body.model}.{name}"
        if field.is_required() or argument.default is UNSET:
            continue
        default = field.get_default(call_default_factory=True)
        assert default == _json(argument.default), f"{body.model}.{name}: {default!r}"
    # The schema says the same: required exactly where the library requires.
    spec = app.openapi()
    operation = spec["paths"][body.route.path][body.route.method.lower()]
    schema = _resolve(operation["requestBody"]["content"]["application/json"]["schema"], spec)
    required = set(schema.get("required", [])) & set(arguments)
    assert required == {n for n, a in arguments.items() if Body.required(a)}, body.model
    # a hand-written subclass may redefine a field (CompactIn: the one strategy it runs)
    redefined = set(used.__annotations__) if used is not generated else set()
    for name in set(arguments) - required - redefined:  # left out: the library's default
        shown = schema["properties"][name].get("default", "none shown")
        library = arguments[name].default
        if library is UNSET:  # the caller's scope, or unchanged: no default to show
            assert shown == "none shown", f"{body.model}.{name}: the schema says {shown!r}"
        elif library is not None or shown != "none shown":  # (a null default goes unsaid)
            assert shown == _json(library), f"{body.model}.{name}: the schema says {shown!r}"


def _query_params(dependant: Any) -> set[str]:
    """The query parameters of a route's function and of its dependencies, all levels."""
    names = {p.name for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_params(sub)
    return names


@pytest.mark.parametrize("verb", REST, ids=[v.name for v in REST])
def test_every_argument_travels_where_the_declaration_says(app: FastAPI, verb: Verb) -> None:
    """Body field, path parameter, query parameter, header, or a gap with its reason."""
    assert isinstance(verb.rest, Route)
    found = route_of(app, verb.rest)
    path = set(re.findall(r"\{(\w+)\}", verb.rest.path))
    # query parameters of the route and of its dependencies (``OwnerDep``, ``WalkDep``)
    query = _query_params(found.dependant)
    fields: set[str] = set()
    if found.dependant.body_params:
        fields = set(body_model(found).model_fields)
    declared = next((b for b in BODIES if b.route == verb.rest), None)
    for argument in verb.arguments:
        name = argument.name
        if name in verb.rest_gaps:
            assert name not in fields | query, f"{verb.name}: {name} is taken: drop its gap"
        elif declared is not None and declared.verb == verb.name and name in declared.query:
            assert name in query, f"{verb.rest}: {name} is declared a query parameter"
        elif declared is not None and declared.verb == verb.name and name in declared.header:
            assert name in HEADERS, f"{verb.name}: {name} comes from no header"
        else:
            assert name in path | query | fields | set(HEADERS), f"{verb.rest} drops {name}"


def _operations(app: FastAPI) -> list[tuple[str, str]]:
    spec = app.openapi()
    return [
        (method.upper(), path)
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation and path not in NOT_A_VERB
    ]


_APP = create_app(memory=AsyncMemory(AsyncInMemoryStore()), admin_key=ADMIN, mcp=False)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(("method", "path"), _operations(_APP))
async def test_the_schemas_required_fields_alone_are_accepted(
    shared_api: Api, method: str, path: str
) -> None:
    """Read off the app's OpenAPI schema, not the declaration: every route with a body."""
    api = shared_api
    tenant = f"acme-{uuid.uuid4().hex[:8]}"
    headers = {**await api.key(tenant), "X-User-Id": "u1"}
    if path.startswith("/v1/admin"):
        headers = api.admin
    ids = await _seed(api, {**await api.key(tenant), "X-User-Id": "u1"}, tenant)
    spec = api.app.openapi()
    schema = spec["paths"][path][method.lower()]["requestBody"]["content"]["application/json"]
    body = _sample("body", schema["schema"], spec, ids)
    url = re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)
    answer = await api.client.request(method, url, json=body, headers=headers)
    assert answer.status_code != 422 and answer.status_code < 500, (
        f"{method} {path} with {body}: {answer.status_code} {answer.text}"
    )


# -- responses ------------------------------------------------------------------------------

_TENANT = "the API key names the tenant"
#: Each response body, the library record it mirrors field for field, and what it leaves
#: out (or adds: a record's properties), with the reason.
RECORDS: list[tuple[type[BaseModel], type, dict[str, str]]] = [
    (m.ThreadOut, records.Thread, {}),
    (m.EntryOut, records.Entry, {}),
    (gm.ToolCallOut, records.ToolCall, {}),
    (m.BranchOut, records.Branch, {}),
    (m.SummaryOut, records.Summary, {}),
    (m.FactOut, records.Fact, {}),
    (m.DocumentOut, records.Document, {}),
    (m.HitOut, records.Hit, {}),
    (m.ContextOut, values.Context, {}),
    (m.CompactionOut, values.CompactionResult, {}),
    (m.SessionOut, values.Session, {}),
    (gm.EntityOut, graph.Entity, {"tenant_id": _TENANT}),
    (gm.RelationOut, graph.Relation, {"tenant_id": _TENANT}),
    (gm.SubgraphOut, graph.Subgraph, {}),
    (gm.PathOut, graph.Path, {"hops": "a property of Path", "cost": "a property of Path"}),
    (gm.GraphStatsOut, graph.GraphStats, {}),
]


@pytest.mark.parametrize(("out", "record", "apart"), RECORDS, ids=[o.__name__ for o, *_ in RECORDS])
def test_a_response_carries_every_field_of_its_record(
    out: type[BaseModel], record: type, apart: dict[str, str]
) -> None:
    """A field the library adds to a record is a field of its response (or said apart)."""
    fields = {f.name for f in dataclasses.fields(record)}
    missing = sorted(fields - set(out.model_fields) - set(apart))
    assert not missing, f"{out.__name__} drops {missing} of {record.__name__}"
    extra = sorted(set(out.model_fields) - fields - set(apart))
    assert not extra, f"{out.__name__} has {extra}, no field of {record.__name__}"
    for name in apart:
        assert (name in fields) != (name in out.model_fields), f"{out.__name__}.{name}"


def test_a_context_states_each_failed_part_as_text() -> None:
    """``ContextOut.errors``: each ``ContextError`` as ``"<source>: <error>"``."""
    failed = values.ContextError("graph", RuntimeError("store down"))
    context = values.Context([], 0, False, 0, 0, errors=[failed], warnings=["w"])
    out = m.ContextOut.model_validate(context)
    assert (out.errors, out.warnings) == (["graph: store down"], ["w"])


# -- the gaps this closed ------------------------------------------------------------------


async def test_facts_and_documents_by_id_take_the_agent(api: Api) -> None:
    """``agent_id`` on the by-id routes is the library's: another agent's record is 404."""
    headers = {**await api.key("acme"), "X-User-Id": "u1"}
    fact = (
        await api.client.post("/v1/facts", json={"content": "c", "agent_id": "a"}, headers=headers)
    ).json()
    document = (
        await api.client.post(
            "/v1/documents", json={"content": "d", "agent_id": "a"}, headers=headers
        )
    ).json()
    for url in (f"/v1/facts/{fact['id']}", f"/v1/documents/{document['id']}"):
        mine = await api.client.get(url, params={"agent_id": "a"}, headers=headers)
        theirs = await api.client.get(url, params={"agent_id": "b"}, headers=headers)
        assert (mine.status_code, theirs.status_code) == (200, 404), url
        gone = await api.client.delete(url, params={"agent_id": "b"}, headers=headers)
        assert gone.status_code == 404
        assert (await api.client.get(url, headers=headers)).status_code == 200
    changed = await api.client.patch(
        f"/v1/facts/{fact['id']}", json={"content": "x"}, params={"agent_id": "b"}, headers=headers
    )
    assert changed.status_code == 404


async def test_a_document_takes_the_callers_own_vector() -> None:
    """``embedding`` as the library takes it: the embedder's dimensions, else 422."""
    memory = AsyncMemory(AsyncInMemoryStore(), embedder=HashEmbedder(dimensions=8))
    app = create_app(memory=memory, admin_key=ADMIN, mcp=False)
    async with app.router.lifespan_context(app):
        app.state.keys = KeyRing(memory.store, hasher=CHEAP_HASH)
        _, secret = await app.state.keys.create("acme", "test")
        headers = {"Authorization": f"Bearer {secret}", "X-User-Id": "u1"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            vector = [1.0] + [0.0] * 7
            added = await client.post(
                "/v1/documents", json={"content": "d", "embedding": vector}, headers=headers
            )
            assert added.status_code == 201, added.text
            wrong = await client.post(
                "/v1/documents", json={"content": "e", "embedding": [1.0, 0.0]}, headers=headers
            )
            assert wrong.status_code == 422 and wrong.json()["field"] == "embedding"

    async with running_api(AsyncInMemoryStore()) as api:  # no embedder: refused
        headers = {**await api.key("acme"), "X-User-Id": "u1"}
        refused = await api.client.post(
            "/v1/documents", json={"content": "d", "embedding": [1.0]}, headers=headers
        )
        assert refused.status_code == 422 and refused.json()["field"] == "embedding"
