"""The MCP server: memorybank's own tools, scope, errors, stdio and the /mcp mount.

Everything goes through the official SDK's ``Client`` (in-process, over stdio
from a subprocess, or over streamable HTTP on the service's ASGI app); the
graph tools have their own module (``test_mcp_graph.py``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

import memorybank
from memorybank.errors import ConfigurationError
from memorybank.mcp.server import HISTORY_MAX, create_server
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import Memory
from tests.reliability._harness import Words
from tests.server.conftest import ADMIN, CHEAP_HASH

SRC = Path(memorybank.__file__).resolve().parents[1]  # the tree under test, for subprocesses

GRAPH_TOOLS = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}
OWN_TOOLS = {
    "remember",
    "recall",
    "history",
    "get_context",
    "add_fact",
    "list_facts",
    "consolidate",
    "feedback",
    "forget",
}
READ_ONLY = {"read_graph", "search_nodes", "open_nodes", "recall", "history", "get_context"}
READ_ONLY |= {"list_facts"}
DESTRUCTIVE = {"delete_entities", "delete_observations", "delete_relations", "forget"}


@pytest.fixture(params=["memory", "sqlite"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncMemory]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/mcp.db"
    async with AsyncMemory(url, tokenizer=Words()) as opened:
        yield opened


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured result; fails the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def fails(client: Client, tool: str, **arguments: Any) -> str:
    """The text of a tool error (the call must fail as a tool error, not a crash)."""
    result: CallToolResult = await client.call_tool(tool, arguments)
    assert result.is_error
    return " ".join(getattr(part, "text", "") for part in result.content)


# -- tools and annotations ---------------------------------------------------------


async def test_lists_every_tool_with_honest_annotations(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == GRAPH_TOOLS | OWN_TOOLS
    for name, tool in tools.items():
        hints = tool.annotations
        assert hints is not None, name
        assert hints.read_only_hint is (name in READ_ONLY), name
        assert hints.destructive_hint is (name in DESTRUCTIVE), name
        # reads, deletes and the graph's creations can be repeated (a repeat changes
        # nothing more); remember and add_fact add again
        assert hints.idempotent_hint is (name not in {"remember", "add_fact", "feedback"}), name
        assert hints.open_world_hint is False
        assert tool.output_schema is not None, name
        assert tool.description, name


async def test_remember_history_recall_and_context(memory: AsyncMemory) -> None:
    server = create_server(memory, user_id="alice", agent_id="helper")
    async with Client(server) as client:
        stored = await call(client, "remember", thread_id="trip", content="I love hiking")
        assert stored["thread_id"] == "trip" and stored["role"] == "user"
        await call(
            client, "remember", thread_id="trip", content="Then try Zermatt", role="assistant"
        )
        history = await call(client, "history", thread_id="trip", last=1)
        assert history["messages"] == [{"role": "assistant", "content": "Then try Zermatt"}]
        hits = (await call(client, "recall", query="hiking"))["hits"]
        assert [hit["content"] for hit in hits][:1] == ["I love hiking"]
        assert hits[0]["thread_id"] == "trip" and hits[0]["kind"] == "entry"
        await call(client, "add_fact", content="Alice is vegetarian", category="diet")
        context = await call(client, "get_context", thread_id="trip", max_tokens=200)
        assert context["messages"][0]["role"] == "system"
        assert "vegetarian" in context["messages"][0]["content"]
        assert context["messages"][-1] == {"role": "assistant", "content": "Then try Zermatt"}
        assert context["included_entries"] == 2 and context["token_count"] <= 200
    # the thread is an ordinary memorybank thread, owned by the server's user
    thread = await memory.threads.get("trip")
    assert thread is not None and thread.user_id == "alice"
    assert [m["content"] for m in await memory.history("trip")] == [
        "I love hiking",
        "Then try Zermatt",
    ]


async def test_remember_with_an_idempotency_key_stores_once(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        first = await call(client, "remember", thread_id="t", content="hi", idempotency_key="k1")
        again = await call(client, "remember", thread_id="t", content="hi", idempotency_key="k1")
    assert first["id"] == again["id"]
    assert await memory.entries.count("t") == 1


async def test_get_context_respects_the_budget(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        for i in range(30):
            await call(client, "remember", thread_id="long", content=f"message number {i} " * 5)
        context = await call(client, "get_context", thread_id="long", max_tokens=300)
    assert context["token_count"] <= 300
    assert context["truncated"] is True
    assert 0 < context["included_entries"] < context["total_entries"] == 30
    assert context["messages"][-1]["content"].startswith("message number 29")


async def test_facts_add_list_pages_and_forget(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        ids = [(await call(client, "add_fact", content=f"fact {i}"))["id"] for i in range(5)]
        await call(client, "add_fact", content="likes tea", category="taste")
        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            args: dict[str, Any] = {"limit": 2}
            if cursor is not None:
                args["cursor"] = cursor
            page = await call(client, "list_facts", **args)
            pages += 1
            assert len(page["facts"]) <= 2
            seen += [fact["id"] for fact in page["facts"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert pages == 3 and len(seen) == 6 == len(set(seen))
        assert seen[:5] == ids
        taste = await call(client, "list_facts", category="taste")
        assert [fact["content"] for fact in taste["facts"]] == ["likes tea"]
        assert "nextCursor" not in taste
        assert await call(client, "forget", id=ids[0]) == {
            "deleted": True,
            "kind": "fact",
            "id": ids[0],
        }
        assert (await call(client, "forget", id=ids[0]))["deleted"] is False  # idempotent
        assert await memory.facts.get(ids[0]) is None
        await call(client, "remember", thread_id="gone", content="x")
        assert (await call(client, "forget", id="gone", kind="thread"))["deleted"] is True
    assert await memory.threads.get("gone") is None


# -- bounds and errors ---------------------------------------------------------------


async def test_bounds_are_enforced_as_tool_errors(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        await call(client, "remember", thread_id="t", content="x")
        assert "last" in await fails(client, "history", thread_id="t", last=HISTORY_MAX + 1)
        assert "k" in await fails(client, "recall", query="x", k=10_000)
        assert "limit" in await fails(client, "list_facts", limit=0)
        assert "invalid_input" in await fails(client, "list_facts", cursor="not-a-cursor")
        assert "max_tokens" in await fails(client, "get_context", thread_id="t", max_tokens=0)
        # the server still answers after the refusals
        assert len((await call(client, "history", thread_id="t"))["messages"]) == 1


async def test_memorybank_errors_become_tool_errors(memory: AsyncMemory) -> None:
    async with Client(create_server(memory, user_id="u", agent_id="a")) as client:
        assert "not_found" in await fails(client, "history", thread_id="missing")
        assert "invalid_input" in await fails(client, "remember", thread_id="t", content="\x00")
        assert "invalid_input" in await fails(client, "add_fact", content="   ")
    async with Client(create_server(memory, user_id="u")) as client:  # no agent
        await call(client, "remember", thread_id="t2", content="x")
        text = await fails(client, "get_context", thread_id="t2", max_tokens=100)
        assert "invalid_input" in text and "--agent" in text


async def test_create_server_needs_an_async_memory(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path}/s.db") as sync_memory:
        with pytest.raises(ConfigurationError, match="AsyncMemory"):
            create_server(sync_memory)  # type: ignore[arg-type]


# -- scope -----------------------------------------------------------------------------


async def test_a_server_for_one_user_never_sees_another_users_data(memory: AsyncMemory) -> None:
    await memory.facts.add(content="the office opens at nine", user_id=None, agent_id=None)
    alice = create_server(memory, user_id="alice", agent_id="helper")
    bob = create_server(memory, user_id="bob", agent_id="helper")
    async with Client(alice) as a, Client(bob) as b:
        await call(a, "remember", thread_id="alice-diary", content="my secret plan: tulips")
        secret = (await call(a, "add_fact", content="alice hides tulips"))["id"]
        # bob cannot read, search, list, build context from or delete alice's things
        assert "thread_forbidden" in await fails(b, "history", thread_id="alice-diary")
        text = await fails(b, "get_context", thread_id="alice-diary", max_tokens=100)
        assert "thread_forbidden" in text
        assert "thread_forbidden" in await fails(
            b, "remember", thread_id="alice-diary", content="bob was here"
        )
        assert (await call(b, "recall", query="secret plan tulips"))["hits"] == []
        bob_facts = [f["content"] for f in (await call(b, "list_facts"))["facts"]]
        assert bob_facts == ["the office opens at nine"]  # shared only
        assert (await call(b, "forget", id=secret))["deleted"] is False
        assert "thread_forbidden" in await fails(b, "forget", id="alice-diary", kind="thread")
        # alice still has everything, and sees the shared fact too
        alice_facts = {f["content"] for f in (await call(a, "list_facts"))["facts"]}
        assert alice_facts == {"alice hides tulips", "the office opens at nine"}
        assert len((await call(a, "history", thread_id="alice-diary"))["messages"]) == 1
        assert (await call(a, "recall", query="secret plan tulips"))["hits"]


async def test_a_server_without_user_sees_shared_records_only(memory: AsyncMemory) -> None:
    await memory.facts.add(content="private to carol", user_id="carol")
    await memory.facts.add(content="for everyone")
    async with Client(create_server(memory)) as client:
        facts = [f["content"] for f in (await call(client, "list_facts"))["facts"]]
        created = await call(client, "add_fact", content="written by the shared server")
    assert facts == ["for everyone"]
    assert created["user_id"] is None and created["agent_id"] is None


# -- stdio, end to end -----------------------------------------------------------------


async def test_stdio_end_to_end_from_a_subprocess(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/stdio.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memorybank.cli", "mcp", "--url", url, "--user", "dana", "--agent", "x"],
        env={"PYTHONPATH": str(SRC), "MEMORYBANK_URL": ""},
        cwd=str(tmp_path),
    )
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == GRAPH_TOOLS | OWN_TOOLS
        await call(client, "remember", thread_id="over-stdio", content="hello through a pipe")
        await call(client, "add_fact", content="dana uses stdio")
        assert "not_found" in await fails(client, "history", thread_id="nothing-here")
        history = await call(client, "history", thread_id="over-stdio")
    assert history["messages"] == [{"role": "user", "content": "hello through a pipe"}]
    # the subprocess wrote to the store, owned by its user
    async with AsyncMemory(url) as reopened:
        thread = await reopened.threads.get("over-stdio")
        assert thread is not None and thread.user_id == "dana"
        assert [f.content for f in await reopened.facts.list(user_id="dana")] == ["dana uses stdio"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_cli_serves_streamable_http(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/http.db"
    port = _free_port()
    command = [sys.executable, "-m", "memorybank.cli", "mcp", "--url", url]
    command += ["--transport", "http", "--port", str(port), "--user", "gil"]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    process = await asyncio.create_subprocess_exec(
        *command, env=env, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        for _ in range(300):  # the server is up once the port accepts (a minute at most)
            assert process.returncode is None, "memorybank mcp exited"
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await asyncio.sleep(0.2)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await call(client, "add_fact", content="gil speaks http")
            facts = await call(client, "list_facts")
        assert [f["content"] for f in facts["facts"]] == ["gil speaks http"]
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), timeout=30)
    async with AsyncMemory(url) as reopened:
        assert [f.user_id for f in await reopened.facts.list()] == ["gil"]


# -- the /mcp mount of memorybank serve ---------------------------------------------------


@asynccontextmanager
async def served(memory: AsyncMemory) -> AsyncIterator[Any]:
    from memorybank.server import create_app
    from memorybank.server.keys import KeyRing

    app = create_app(memory=memory, admin_key=ADMIN)
    async with app.router.lifespan_context(app):
        app.state.keys = KeyRing(memory.store, hasher=CHEAP_HASH)
        yield app


@asynccontextmanager
async def http_client(app: Any, headers: dict[str, Any]) -> AsyncIterator[Client]:
    transport = httpx2.ASGITransport(app=app)
    http = httpx2.AsyncClient(transport=transport, headers=headers)
    async with http, Client(streamable_http_client("http://test/mcp", http_client=http)) as client:
        yield client


async def test_mount_binds_each_key_to_its_tenant(memory: AsyncMemory) -> None:
    async with served(memory) as app:
        _, acme_key = await app.state.keys.create("acme")
        _, other_key = await app.state.keys.create("other")
        acme = {"Authorization": f"Bearer {acme_key}"}
        other = {"Authorization": f"Bearer {other_key}"}
        async with http_client(app, acme) as client:
            await call(client, "remember", thread_id="t-acme", content="acme's roadmap")
            await call(client, "add_fact", content="acme ships on fridays")
            assert len((await call(client, "history", thread_id="t-acme"))["messages"]) == 1
            graph = {"name": "Anvil", "entityType": "object", "observations": ["acme's"]}
            await call(client, "create_entities", entities=[graph])
            assert (await call(client, "read_graph"))["entities"] == [graph]
        async with http_client(app, other) as client:
            assert (await call(client, "list_facts"))["facts"] == []
            assert (await call(client, "recall", query="roadmap"))["hits"] == []
            assert "not_found" in await fails(client, "history", thread_id="t-acme")
            assert (await call(client, "read_graph"))["entities"] == []
            assert (await call(client, "open_nodes", names=["Anvil"]))["entities"] == []
            assert (await call(client, "search_nodes", query="Anvil"))["entities"] == []
            await call(client, "add_fact", content="other's own fact")
    assert [f.content for f in await memory.tenant("acme").facts.list()] == [
        "acme ships on fridays"
    ]
    assert [f.content for f in await memory.tenant("other").facts.list()] == ["other's own fact"]
    assert await memory.threads.get("t-acme") is None  # not in the default tenant either


async def test_mount_scopes_to_the_x_user_id_header(memory: AsyncMemory) -> None:
    async with served(memory) as app:
        _, key = await app.state.keys.create("acme")
        auth = {"Authorization": f"Bearer {key}"}
        async with http_client(app, {**auth, "X-User-Id": "erin"}) as client:
            await call(client, "remember", thread_id="erin-t", content="erin only")
            await call(client, "add_fact", content="erin's fact")
        async with http_client(app, {**auth, "X-User-Id": "frank"}) as client:
            assert "thread_forbidden" in await fails(client, "history", thread_id="erin-t")
            assert (await call(client, "list_facts"))["facts"] == []
    thread = await memory.tenant("acme").threads.get("erin-t")
    assert thread is not None and thread.user_id == "erin"


async def test_mount_passes_non_ascii_user_ids_through_exactly(memory: AsyncMemory) -> None:
    async with served(memory) as app:
        _, key = await app.state.keys.create("acme")
        auth: dict[str, Any] = {"Authorization": f"Bearer {key}"}
        async with http_client(app, {**auth, "X-User-Id": "zo\u00eb".encode()}) as client:
            await call(client, "remember", thread_id="zoe-t", content="zoe only")
            await call(client, "add_fact", content="zoe's fact")
        async with http_client(app, {**auth, "X-User-Id-Encoded": "zo%C3%AB"}) as client:
            assert [f["content"] for f in (await call(client, "list_facts"))["facts"]] == [
                "zoe's fact"
            ]
        # the NFD spelling is another user: never normalised into zoë
        async with http_client(app, {**auth, "X-User-Id": "zoe\u0308".encode()}) as client:
            assert "thread_forbidden" in await fails(client, "history", thread_id="zoe-t")
            assert (await call(client, "list_facts"))["facts"] == []
    thread = await memory.tenant("acme").threads.get("zoe-t")
    assert thread is not None and thread.user_id == "zo\u00eb"


async def test_mount_refuses_missing_bad_revoked_and_admin_keys(memory: AsyncMemory) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    async with served(memory) as app:
        info, key = await app.state.keys.create("acme")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            for headers in (
                {},
                {"Authorization": "Bearer mb_0123456789ab_forged"},
                {"Authorization": f"Bearer {ADMIN}"},
            ):
                answer = await http.post("/mcp", json=request, headers={**accept, **headers})
                assert answer.status_code == 401, headers
                assert "tools" not in answer.text
            good = {**accept, "Authorization": f"Bearer {key}"}
            answer = await http.post("/mcp", json=request, headers=good)
            assert answer.status_code == 200
            assert "remember" in answer.text
            await app.state.keys.revoke(info.id)
            answer = await http.post("/mcp", json=request, headers=good)
            assert answer.status_code == 401
            # the REST routes are untouched by the mount
            assert (await http.get("/healthz")).status_code == 200


async def test_app_without_mcp_has_no_route(memory: AsyncMemory) -> None:
    from memorybank.server import create_app

    app = create_app(memory=memory, admin_key=ADMIN, mcp=False)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            answer = await http.post("/mcp", json={}, headers={"Authorization": f"Bearer {ADMIN}"})
    assert answer.status_code in (404, 405)


async def test_memorybank_serve_answers_mcp_with_its_keys(tmp_path: Path) -> None:
    from tests.server.test_serve import cli, free_port, wait_up

    url = f"sqlite:///{tmp_path / 'served.db'}"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    args = ("keys", "create", "--url", url, "--tenant", "t1")
    created = await asyncio.to_thread(cli, *args, env=env)
    key = created.stdout.strip().splitlines()[-1]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "memorybank.cli", "serve", "--url", url, "--port", str(port)]
    process = await asyncio.to_thread(
        subprocess.Popen, command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        await asyncio.to_thread(wait_up, base, process)
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
        async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
            await call(client, "remember", thread_id="served", content="over the real server")
            history = await call(client, "history", thread_id="served")
        assert history["messages"] == [{"role": "user", "content": "over the real server"}]
        async with httpx.AsyncClient() as plain:
            answer = await plain.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1})
        assert answer.status_code == 401
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, 60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    async with AsyncMemory(url, tenant_id="t1") as reopened:
        assert len(await reopened.history("served")) == 1
