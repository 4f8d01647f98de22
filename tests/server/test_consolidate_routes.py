"""Consolidation on every surface: ``POST /v1/consolidate`` and the runs' routes (every
store), the remote store, the MCP ``consolidate`` tool and ``memorybank consolidate``."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from typer.testing import CliRunner

from memorybank import Memory
from memorybank.cli import app
from memorybank.mcp.server import create_server
from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores.sqlite._async import AsyncSQLiteStore
from tests.server.conftest import Api
from tests.stores.http_server import live_server


async def test_consolidate_report_and_undo_over_rest(store_api: Api) -> None:
    api = store_api
    key = await api.key("tenant-c")
    ana, bob = {**key, "X-User-Id": "ana"}, {**key, "X-User-Id": "bob"}
    for content in ("Ana likes green tea", "ana likes green tea.", "Ana plays chess"):
        made = await api.client.post("/v1/facts", json={"content": content}, headers=ana)
        assert made.status_code == 201, made.text
    await api.client.post("/v1/facts", json={"content": "Ana likes green tea"}, headers=bob)
    dry = await api.client.post("/v1/consolidate", json={"dry_run": True}, headers=ana)
    assert dry.status_code == 200, dry.text
    assert (dry.json()["status"], dry.json()["merged"]) == ("dry_run", 1)
    facts = await api.client.get("/v1/facts", headers=ana)
    assert len(facts.json()["items"]) == 3
    done = await api.client.post("/v1/consolidate", json={}, headers=ana)
    run = done.json()
    assert run["status"] == "applied" and run["user_id"] == "ana"
    assert [c["content"] for c in run["changes"]] == ["ana likes green tea."]
    assert [c["decided_by"] for c in run["changes"]] == ["rules"] and run["judge"] is None
    assert len((await api.client.get("/v1/facts", headers=ana)).json()["items"]) == 2
    runs = await api.client.get("/v1/consolidation/runs", headers=ana)
    assert [r["run_id"] for r in runs.json()["items"]] == [run["run_id"]]
    report = await api.client.get(f"/v1/consolidation/runs/{run['run_id']}", headers=ana)
    assert report.json()["changes"] == run["changes"]
    # bob neither sees nor undoes ana's run, nor consolidates her facts
    hidden = await api.client.get(f"/v1/consolidation/runs/{run['run_id']}", headers=bob)
    assert hidden.status_code == 404
    refused = await api.client.post(f"/v1/consolidation/runs/{run['run_id']}/undo", headers=bob)
    assert refused.status_code == 404
    widened = await api.client.post("/v1/consolidate", json={"user_id": "ana"}, headers=bob)
    assert widened.status_code == 403 and widened.json()["code"] == "out_of_scope"
    assert (await api.client.get("/v1/consolidation/runs", headers=bob)).json()["items"] == []
    undone = await api.client.post(f"/v1/consolidation/runs/{run['run_id']}/undo", headers=ana)
    assert undone.status_code == 200 and undone.json()["status"] == "undone"
    assert len((await api.client.get("/v1/facts", headers=ana)).json()["items"]) == 3
    again = await api.client.post(f"/v1/consolidation/runs/{run['run_id']}/undo", headers=ana)
    assert again.status_code == 409
    bad = await api.client.post("/v1/consolidate", json={"dry_run": "maybe"}, headers=ana)
    assert bad.status_code == 422


def test_consolidate_through_the_remote_store(tmp_path: Path) -> None:
    with (
        live_server(lambda: AsyncSQLiteStore(tmp_path / "s.db"), ["t"]) as server,
        Memory(server.url, api_key=server.keys["t"]) as memory,
    ):
        first = memory.facts.add(content="User likes green tea", user_id="u")
        memory.facts.add(content="user likes green tea", user_id="u", source_entries=["e"])
        before = [(f.id, f.version) for f in memory.facts.list(user_id="u")]
        report = memory.consolidate(user_id="u")
        assert [c.into for c in report.changes] == [first.id]
        kept = memory.facts.get(first.id, user_id="u")
        assert kept is not None and kept.source_entries == ("e",)
        memory.consolidation.undo(report.run_id)
        assert [(f.id, f.version) for f in memory.facts.list(user_id="u")] == before


async def test_the_mcp_tool_consolidates_the_servers_user_only() -> None:
    async with AsyncMemory("memory://") as memory:
        for user in ("u", "v"):
            await memory.facts.add(content="User likes green tea", user_id=user)
            await memory.facts.add(content="user likes green tea!", user_id=user)
        async with Client(create_server(memory, user_id="u", agent_id=None)) as client:
            dry = await client.call_tool("consolidate", {"dry_run": True})
            assert not dry.is_error and dry.structured_content is not None
            assert dry.structured_content["merged"] == 1
            assert len(await memory.facts.list(user_id="u")) == 2
            done = await client.call_tool("consolidate", {})
            assert done.structured_content is not None
            assert done.structured_content["changes"][0]["reason"] == "duplicate"
        assert len(await memory.facts.list(user_id="u")) == 1
        assert len([f for f in await memory.facts.list() if f.user_id == "v"]) == 2


def test_the_cli_consolidates_a_user(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/cli.db"
    with Memory(url) as memory:
        memory.facts.add(content="User lives in Paris", user_id="u")
        memory.facts.add(content="User lives in Berlin", user_id="u")
    runner = CliRunner()
    dry = runner.invoke(app, ["consolidate", "--user", "u", "--dry-run", "--url", url])
    assert dry.exit_code == 0, dry.output
    assert "would merge 0 duplicates and supersede 1" in dry.output
    assert "'User lives in Paris' -> 'User lives in Berlin'" in dry.output
    done = runner.invoke(app, ["consolidate", "--user", "u", "--url", url, "--json"])
    assert done.exit_code == 0, done.output
    assert '"superseded": 1' in done.output
    with Memory(url) as memory:
        assert [f.content for f in memory.facts.list(user_id="u")] == ["User lives in Berlin"]
    neither = runner.invoke(app, ["consolidate", "--url", url])
    assert neither.exit_code != 0 and "--shared" in neither.output


async def test_feedback_over_rest_and_mcp(api: Api) -> None:
    key = await api.key("tenant-fb")
    ana, bob = {**key, "X-User-Id": "ana"}, {**key, "X-User-Id": "bob"}
    made = await api.client.post(
        "/v1/facts", json={"content": "Ana likes tea", "confidence": 0.8}, headers=ana
    )
    fact = made.json()["id"]
    body = {"fact_id": fact, "useful": False, "reason": "outdated"}
    hidden = await api.client.post("/v1/feedback", json=body, headers=bob)
    assert hidden.status_code == 404
    done = await api.client.post("/v1/feedback", json=body, headers=ana)
    assert done.status_code == 200, done.text
    assert done.json()["confidence"] == 0.4
    async with Client(create_server(api.memory.tenant("tenant-fb"), user_id="ana")) as client:
        result = await client.call_tool("feedback", {"fact_id": fact, "useful": True})
        assert not result.is_error and result.structured_content is not None
        assert result.structured_content["confidence"] == 0.7
    async with Client(create_server(api.memory.tenant("tenant-fb"), user_id="bob")) as client:
        refused = await client.call_tool("feedback", {"fact_id": fact, "useful": True})
        assert refused.is_error


async def test_entity_merges_over_rest_and_mcp(store_api: Api) -> None:
    """A run's graph entity merges in the REST report, and its undo over REST."""
    api = store_api
    key = await api.key("tenant-ce")
    ana = {**key, "X-User-Id": "ana"}
    city = await api.client.post(
        "/v1/graph/entities",
        json={"name": "New York City", "type": "location", "aliases": ["NYC"]},
        headers=ana,
    )
    assert city.status_code in (200, 201), city.text
    other = await api.client.post(
        "/v1/graph/entities", json={"name": "N.Y.C.", "type": "location"}, headers=ana
    )
    assert other.status_code in (200, 201), other.text
    done = await api.client.post("/v1/consolidate", json={}, headers=ana)
    run = done.json()
    assert run["entities_merged"] == 1
    [change] = run["entity_changes"]
    assert (change["entity_id"], change["into"]) == (other.json()["id"], city.json()["id"])
    assert (change["rule"], change["reason"], change["relations_moved"]) == ("alias", "alias", 0)
    report = await api.client.get(f"/v1/consolidation/runs/{run['run_id']}", headers=ana)
    assert report.json()["entity_changes"] == run["entity_changes"]
    gone = await api.client.get(f"/v1/graph/entities/{other.json()['id']}", headers=ana)
    assert gone.status_code == 404
    undone = await api.client.post(f"/v1/consolidation/runs/{run['run_id']}/undo", headers=ana)
    assert undone.status_code == 200, undone.text
    back = await api.client.get(f"/v1/graph/entities/{other.json()['id']}", headers=ana)
    assert back.status_code == 200 and back.json()["name"] == "N.Y.C."


async def test_the_mcp_tool_reports_entity_merges() -> None:
    async with AsyncMemory("memory://") as memory:
        await memory.graph.add_entity("Acme Corp.", type="organization", user_id="u")
        await memory.graph.add_entity("ACME corp", type="organization", user_id="u")
        async with Client(create_server(memory, user_id="u", agent_id=None)) as client:
            done = await client.call_tool("consolidate", {})
            assert not done.is_error and done.structured_content is not None
            assert done.structured_content["entities_merged"] == 1
            assert done.structured_content["entity_changes"][0]["into_name"] == "Acme Corp."
