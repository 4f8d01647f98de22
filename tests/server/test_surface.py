"""The surface test, generated from the public API and from ``memorybank.surface``.

Parametrized over the declaration table *and* over the verbs read off the classes
(the isolation suite's ``public_verbs``), so a new verb without a declaration fails,
and so does a declaration whose route, tool or command is missing, a route that
does not take an argument of its library verb under the library's name (unless
``rest_gaps`` says why), a route whose schema's required fields alone are refused
(422), a list answered in another shape than ``{items, next_cursor}``, or an MCP
tool of memorybank's own whose arguments are not its verb's.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
import typer
from fastapi import FastAPI
from fastapi.dependencies.utils import get_flat_params
from fastapi.routing import APIRoute
from pydantic import BaseModel

from memorybank.cli.app import app as cli_app
from memorybank.errors import MemoryBankError
from memorybank.memory._async.memory import AsyncMemory
from memorybank.server import create_app
from memorybank.server.errors import status_of
from memorybank.server.models import Count
from memorybank.stores.memory._async.store import AsyncInMemoryStore
from memorybank.surface import (
    CLI_GAPS,
    MCP_DEFAULTS,
    MCP_NOTES,
    REFERENCE_TOOLS,
    VERBS,
    Route,
    Verb,
    Without,
    cli_option,
    markdown_table,
    one_verb_tools,
    tool_form,
)
from tests.reliability.test_isolation_verbs import public_verbs
from tests.server.conftest import ADMIN, Api

#: Arguments a route may leave out on every verb: the caller's user is the
#: ``X-User-Id`` header (the handle is scoped to it), and a paged list's
#: ``limit``/``cursor`` are the page's.
CARRIED = {"user_id": "X-User-Id"}
#: MCP arguments that page a list, not arguments of the verb.
PAGING = {"cursor", "limit"}

REST = [v for v in VERBS if isinstance(v.rest, Route)]
MCP = [v for v in VERBS if isinstance(v.mcp, str)]
CLI = [v for v in VERBS if isinstance(v.cli, str)]
WITH_BODY = [v for v in REST if v.rest.method in ("POST", "PUT", "PATCH")]  # type: ignore[union-attr]


def _ids(verbs: list[Verb]) -> list[str]:
    return [v.name for v in verbs]


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app(memory=AsyncMemory(AsyncInMemoryStore()), admin_key=ADMIN)


def api_routes(app: FastAPI) -> Iterator[APIRoute]:
    """Every ``APIRoute`` of ``app``, through the routers it includes."""
    for route in app.routes:
        inner = getattr(getattr(route, "original_router", None), "routes", None)
        for found in inner if inner is not None else [route]:
            if isinstance(found, APIRoute):
                yield found


def route_of(app: FastAPI, route: Route) -> APIRoute:
    for found in api_routes(app):
        if found.path == route.path and route.method in (found.methods or ()):
            return found
    raise AssertionError(f"no route {route}")


def route_inputs(found: APIRoute) -> set[str]:
    """The names a route takes: path, query and header parameters (its own and its
    dependencies') and body fields."""
    dependant = found.dependant
    names = {p.name for p in get_flat_params(dependant)}
    for body in dependant.body_params:
        model = body.field_info.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            names |= set(model.model_fields)
            names |= {f.alias for f in model.model_fields.values() if f.alias}
        else:
            names.add(body.name)
    return names


# -- the table and the classes agree -----------------------------------------------------------


def test_every_public_verb_is_declared() -> None:
    declared = [v.name for v in VERBS]
    assert len(declared) == len(set(declared)), "a verb declared twice"
    missing = sorted(public_verbs() - set(declared))
    assert not missing, f"public verbs without a declaration in memorybank.surface: {missing}"
    stale = sorted(set(declared) - public_verbs())
    assert not stale, f"declarations of verbs that no longer exist: {stale}"


@pytest.mark.parametrize("name", sorted(public_verbs()))
def test_each_verb_has_a_form_or_a_reason_on_every_surface(name: str) -> None:
    verb = next(v for v in VERBS if v.name == name)
    assert verb.summary, f"{name} has no docstring to describe it with"
    for surface in (verb.rest, verb.mcp, verb.cli):
        assert isinstance(surface, Route | str) or (
            isinstance(surface, Without) and len(surface.reason) > 10
        ), f"{name}: {surface!r}"
    for error in verb.errors:
        assert issubclass(error, MemoryBankError)
        status = status_of(error.__new__(error))
        assert status < 500, f"{name}: {error.__name__} is answered {status}"


# -- REST -----------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", REST, ids=_ids(REST))
def test_the_route_exists_and_takes_every_library_argument(app: FastAPI, verb: Verb) -> None:
    assert isinstance(verb.rest, Route)
    found = route_of(app, verb.rest)
    taken = route_inputs(found)
    arguments = {a.name for a in verb.arguments}
    missing = sorted(arguments - taken - set(CARRIED) - set(verb.rest_gaps))
    assert not missing, f"{verb.rest} does not take {missing} of {verb.name}"
    for name in verb.rest_gaps:
        assert name in arguments, f"{verb.name}: rest_gaps names {name!r}, not an argument"
        assert name not in taken, f"{verb.rest} takes {name!r}: drop it from rest_gaps"


@pytest.mark.parametrize("verb", REST, ids=_ids(REST))
def test_the_route_answers_the_declared_shape(app: FastAPI, verb: Verb) -> None:
    assert isinstance(verb.rest, Route)
    found = route_of(app, verb.rest)
    model = found.response_model
    fields = (
        set(model.model_fields)
        if isinstance(model, type) and issubclass(model, BaseModel)
        else set()
    )
    if verb.shape in ("page", "ranking"):
        assert fields == {"items", "next_cursor"}, f"{verb.rest} answers {model}, not a page"
    elif verb.shape == "count":
        assert model is Count, f"{verb.rest} answers {model}, not {{count}}"
    elif verb.shape == "empty":
        assert found.status_code == 204 and model is None, f"{verb.rest} is not a 204"
    else:
        assert model is not None and fields != {"items", "next_cursor"}, f"{verb.rest}: {model}"


def _resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec["components"]["schemas"][name]
    return schema


def _sample(name: str, schema: dict[str, Any], spec: dict[str, Any], ids: dict[str, str]) -> Any:
    """A valid-looking value of ``schema`` (an id of the seeded world where one is named)."""
    schema = _resolve(schema, spec)
    if "properties" in schema:  # an object; anyOf/oneOf alternatives of required fields
        required = list(schema.get("required", []))
        for union in ("anyOf", "oneOf"):
            alternatives = schema.get(union, [])
            if alternatives and all("required" in a for a in alternatives):
                required += alternatives[0]["required"]
        props = schema["properties"]
        return {key: _sample(key, props[key], spec, ids) for key in required}
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for union in ("anyOf", "oneOf"):
        if union in schema:
            options = [s for s in schema[union] if s.get("type") != "null"]
            return _sample(name, options[0], spec, ids)
    kind = schema.get("type")
    if kind == "string":
        return ids.get(name, "x")
    if kind == "integer":
        return max(1000, int(schema.get("minimum", 0)))
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return "x"


async def _seed(api: Api, headers: dict[str, str], tenant: str = "acme") -> dict[str, str]:
    """``tenant`` (whose key ``headers`` carry) with one of everything; its ids by path
    parameter name."""
    memory = api.memory.tenant(tenant)
    thread = await memory.threads.create(thread_id="t1")
    entry = await memory.entries.add("t1", {"role": "user", "content": "hello there"})
    await memory.branches.create("t1", "alt")
    fact = await memory.facts.add(content="the sky is blue")
    document = await memory.documents.add("a document")
    entity = await memory.graph.add_entity("Ada", type="person")
    other = await memory.graph.add_entity("Paris", type="place")
    relation = await memory.graph.add_relation(entity.id, "lives_in", other.id)
    answer = await api.client.post(
        "/v1/sessions",
        json={"channel_type": "web", "channel_id": "c1", "agent_id": "bot"},
        headers=headers,
    )
    assert answer.status_code == 200, answer.text
    hook, _ = await api.app.state.webhooks.create(tenant, "https://example.test/hook")
    return {
        "webhook_id": hook.id,
        "url": "https://example.test/hook",
        "thread_id": thread.id,
        "entry_id": entry.id,
        "from_entry": entry.id,
        "fact_id": fact.id,
        "document_id": document.id,
        "entity_id": entity.id,
        "relation_id": relation.id,
        "source_id": entity.id,
        "target_id": other.id,
        "session_id": answer.json()["id"],
        "run_id": "run-1",
        "key": "k",
        "name": "alt",
        "agent_id": "bot",
    }


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("verb", WITH_BODY, ids=_ids(WITH_BODY))
async def test_a_body_of_the_schemas_required_fields_alone_is_accepted(
    shared_api: Api, verb: Verb
) -> None:
    """The OpenAPI schema's promise: what it marks required is enough (no 422 for a
    field it calls optional, as ``agent_id is required`` was). Sent as an end user
    (``X-User-Id``), whose id the routes take for every ``user_id`` left out."""
    assert isinstance(verb.rest, Route)
    api = shared_api
    tenant = f"acme-{uuid.uuid4().hex[:8]}"
    headers = {**await api.key(tenant), "X-User-Id": "u1"}
    ids = await _seed(api, headers, tenant)
    spec = api.app.openapi()
    operation = spec["paths"][verb.rest.path][verb.rest.method.lower()]
    body = None
    if "requestBody" in operation:
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        body = _sample("body", schema, spec, ids)
    path = re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], verb.rest.path)
    answer = await api.client.request(verb.rest.method, path, json=body, headers=headers)
    assert answer.status_code != 422 and answer.status_code < 500, (
        f"{verb.rest} with {body}: {answer.status_code} {answer.text}"
    )


# -- MCP and CLI ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tools() -> dict[str, Any]:
    from memorybank.mcp.server import create_server

    server = create_server(AsyncMemory(AsyncInMemoryStore()), user_id="u", agent_id="a")
    return {t.name: t for t in asyncio.run(server.list_tools())}


@pytest.mark.parametrize("verb", MCP, ids=_ids(MCP))
def test_the_tool_exists_and_names_its_arguments_as_the_library(
    tools: dict[str, Any], verb: Verb
) -> None:
    assert verb.mcp in tools, f"no MCP tool {verb.mcp!r}"
    if verb.mcp in REFERENCE_TOOLS:  # the reference server's names and shapes, kept
        return
    arguments = {a.name for a in verb.arguments}
    tool = tools[verb.mcp]
    for name in tool.input_schema["properties"]:
        if name in PAGING or name in arguments:
            continue
        mapped = verb.mcp_names.get(name)
        assert mapped is not None, f"{verb.mcp}.{name} is no argument of {verb.name}"
        if re.fullmatch(r"[a-z_]+", mapped):  # a library name, not a reason
            assert mapped in arguments, f"{verb.name}: mcp_names maps {name} to {mapped!r}"


@pytest.mark.parametrize("tool", one_verb_tools())
def test_a_tool_of_one_verb_publishes_what_the_declaration_derives(
    tools: dict[str, Any], tool: str
) -> None:
    """Its description and each library argument's description, default and
    requiredness are ``tool_form``'s (the verb's docstring and signature), so a
    description or default written by hand in the server fails here."""
    form = tool_form(tool)
    published = tools[tool]
    assert published.description == form.description
    schema = published.input_schema
    required = set(schema.get("required", []))
    library = [name for name in schema["properties"] if name in form.arguments]
    assert library, f"{tool} takes none of {form.verb.name}'s arguments"
    for name in library:
        prop, argument = schema["properties"][name], form.argument(name)
        assert prop.get("description") == argument.description, f"{tool}.{name}"
        assert (name in required) is argument.required, f"{tool}.{name}"
        if not argument.required:
            assert prop.get("default") == argument.default, f"{tool}.{name}"
    for name in set(schema["properties"]) - set(library):  # the tool's own: described too
        assert schema["properties"][name].get("description"), f"{tool}.{name}"


def test_the_tools_of_one_verb_are_the_memory_tools_but_forget() -> None:
    assert one_verb_tools() == sorted(
        [
            "add_fact",
            "consolidate",
            "feedback",
            "get_context",
            "history",
            "list_facts",
            "recall",
            "remember",
        ]
    )
    for tool in MCP_NOTES:
        assert tool in one_verb_tools(), f"MCP_NOTES names {tool}, no tool of one verb"
    for tool, defaults in MCP_DEFAULTS.items():
        form = tool_form(tool)
        for name, (value, why) in defaults.items():
            assert name in form.arguments and len(why) > 10, (tool, name)
            assert form.argument(name).default == value


def test_editing_a_docstring_changes_the_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    from memorybank.memory._async.memory import AsyncMemory as Owner

    doc = (Owner.history.__doc__ or "").replace("how many of the newest", "at most this many")
    monkeypatch.setattr(Owner.history, "__doc__", doc)
    from memorybank.mcp.server import create_server

    server = create_server(AsyncMemory(AsyncInMemoryStore()), user_id="u", agent_id="a")
    history = {t.name: t for t in asyncio.run(server.list_tools())}["history"]
    last = history.input_schema["properties"]["last"]
    assert last["description"] == "At most this many messages."


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("last: Annotated[int, Field(description='Newest ones')] = FROM_VERB", "describes"),
        ("last: int = 50", "default"),
    ],
)
def test_a_description_or_default_written_by_hand_is_refused(source: str, problem: str) -> None:
    """``_of_verb`` refuses what the library says already, so it is never written twice."""
    from mcp.server import MCPServer
    from pydantic import Field

    from memorybank.mcp import server as mcp_server

    namespace: dict[str, Any] = {"Annotated": Annotated, "Field": Field, **vars(mcp_server)}
    exec(f"async def history(thread_id: str, {source}) -> None: ...", namespace)
    register = mcp_server._of_verb(
        MCPServer("t"), "history", title="History", annotations=mcp_server._READ
    )
    with pytest.raises(TypeError, match=problem):
        register(namespace["history"])


def _commands() -> dict[str, Any]:
    group: Any = typer.main.get_command(cli_app)
    return dict(group.commands)


@pytest.mark.parametrize("verb", CLI, ids=_ids(CLI))
def test_the_cli_command_exists(verb: Verb) -> None:
    assert verb.cli in _commands(), f"no CLI command {verb.cli!r}"


def _cli_inputs(command: Any) -> tuple[set[str], set[str]]:
    """A command's shown option names and its positional arguments' names."""
    options, arguments = set(), set()
    for param in command.params:
        if param.param_type_name == "argument":
            arguments.add(param.name)
        elif not getattr(param, "hidden", False):
            options |= set(param.opts) | set(param.secondary_opts)
    return options, arguments


@pytest.mark.parametrize("verb", CLI, ids=_ids(CLI))
def test_the_cli_command_takes_every_library_argument(verb: Verb) -> None:
    """Each library argument is an option under its name (``--max-tokens``; ``--user``,
    ``--agent``, ``--tenant`` for the principals) or the positional argument, unless
    ``CLI_GAPS`` says why not."""
    assert isinstance(verb.cli, str)
    options, arguments = _cli_inputs(_commands()[verb.cli])
    gaps = CLI_GAPS.get(verb.name, {})
    library = {a.name for a in verb.arguments}
    taken = {a for a in library if cli_option(a) in options or a in arguments}
    missing = sorted(library - taken - set(gaps))
    assert not missing, f"memorybank {verb.cli} takes no {[cli_option(a) for a in missing]}"
    for name, why in gaps.items():
        assert name in library, f"CLI_GAPS of {verb.name} names {name!r}, not an argument"
        assert name not in taken, f"memorybank {verb.cli} takes {name!r}: drop it from CLI_GAPS"
        assert len(why) > 10, f"{verb.name}.{name}: say why"


def test_cli_gaps_name_verbs_with_a_command() -> None:
    assert set(CLI_GAPS) <= {v.name for v in CLI}


def test_principal_and_embedder_options_have_one_name_on_every_command() -> None:
    """``--user``, ``--agent``, ``--embedder``, ``--tenant``: never ``--user-id`` and the
    like, except as the hidden old spelling of one of them."""
    group: Any = typer.main.get_command(cli_app)
    commands = [
        (f"{name} {sub}", c)
        for name, g in group.commands.items()
        for sub, c in getattr(g, "commands", {}).items()
    ] + list(group.commands.items())
    for name, command in commands:
        for param in getattr(command, "params", []):
            if param.param_type_name != "option":
                continue
            shown = [] if getattr(param, "hidden", False) else list(param.opts)
            for opt in shown:
                assert opt not in {"--user-id", "--agent-id", "--tenant-id"}, (name, opt)
            if param.name in ("user_id", "agent_id", "tenant", "embedder") and shown:
                expected = {"user_id": "--user", "agent_id": "--agent"}.get(
                    param.name, f"--{param.name}"
                )
                assert expected in shown, (name, param.name, shown)


def test_the_docs_carry_the_current_table() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    assert markdown_table() in text, "docs/api.md is stale: run scripts/surface_table.py --write"
