"""``GET /v1/runs`` and ``GET /v1/snapshots``: the library's ``working_runs()`` and
``snapshots.list()`` over REST, in the one list shape, and ``memorybank runs`` /
``memorybank snapshots`` in the CLI; and a session opened without a user, whose
422 names the header to send."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memorybank.cli.app import app as cli_app
from memorybank.memory._sync.memory import Memory
from tests.server.conftest import Api


async def _runs(api: Api) -> None:
    memory = api.memory.tenant("acme")
    await memory.working("r-root").set("a", 1)
    await memory.working("r-alice", user_id="alice", agent_id="bot").set("b", [2])
    await memory.working("r-bob", user_id="bob").set("c", {"x": 3})
    await api.memory.tenant("other").working("r-other").set("z", 0)
    await memory.snapshots.save("s-alice", {"n": 1}, user_id="alice")
    await memory.snapshots.save("s-bob", "b", user_id="bob")
    await memory.snapshots.save("s-shared", [1])


async def test_runs_page_through_every_run_of_the_tenant(api: Api) -> None:
    await _runs(api)
    key = await api.key("acme")
    first = await api.client.get("/v1/runs", params={"limit": 2}, headers=key)
    assert first.status_code == 200, first.text
    page = first.json()
    assert set(page) == {"items", "next_cursor"} and page["next_cursor"] is not None
    rest = await api.client.get(
        "/v1/runs", params={"limit": 2, "cursor": page["next_cursor"]}, headers=key
    )
    assert rest.json()["next_cursor"] is None
    runs = page["items"] + rest.json()["items"]
    assert sorted(runs, key=lambda r: r["run_id"]) == [
        {"run_id": "r-alice", "user_id": "alice", "agent_id": "bot", "items": {"b": [2]}},
        {"run_id": "r-bob", "user_id": "bob", "agent_id": None, "items": {"c": {"x": 3}}},
        {"run_id": "r-root", "user_id": None, "agent_id": None, "items": {"a": 1}},
    ]


async def test_a_user_lists_her_own_runs_and_the_snapshots_she_may_load(api: Api) -> None:
    await _runs(api)
    alice = {**await api.key("acme"), "X-User-Id": "alice"}
    runs = (await api.client.get("/v1/runs", headers=alice)).json()
    assert [r["run_id"] for r in runs["items"]] == ["r-alice"]
    snapshots = (await api.client.get("/v1/snapshots", headers=alice)).json()
    assert snapshots == {
        "items": [
            {"run_id": "s-alice", "user_id": "alice", "value": {"n": 1}},
            {"run_id": "s-shared", "user_id": None, "value": [1]},
        ],
        "next_cursor": None,
    }


async def test_the_tenant_lists_every_snapshot_or_one_users(api: Api) -> None:
    await _runs(api)
    key = await api.key("acme")
    every = (await api.client.get("/v1/snapshots", headers=key)).json()["items"]
    assert [s["run_id"] for s in every] == ["s-alice", "s-bob", "s-shared"]
    bob = await api.client.get("/v1/snapshots", params={"user_id": "bob"}, headers=key)
    assert [s["run_id"] for s in bob.json()["items"]] == ["s-bob", "s-shared"]
    paged = await api.client.get("/v1/snapshots", params={"limit": 1}, headers=key)
    assert [s["run_id"] for s in paged.json()["items"]] == ["s-alice"]
    assert paged.json()["next_cursor"] is not None


def test_the_cli_lists_runs_and_snapshots(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Memory(url) as memory:
        memory.working("r-alice", user_id="alice").set("k", "v")
        memory.working("r-bob", user_id="bob").set("k", "w")
        memory.snapshots.save("s-bob", {"at": 3}, user_id="bob")
        memory.snapshots.save("s-shared", 1)
    runner = CliRunner()
    every = runner.invoke(cli_app, ["runs", "--json", "--url", url])
    assert every.exit_code == 0, every.output
    assert sorted(r["run_id"] for r in json.loads(every.output)) == ["r-alice", "r-bob"]
    mine = runner.invoke(cli_app, ["runs", "--user", "alice", "--json", "--url", url])
    assert [r["run_id"] for r in json.loads(mine.output)] == ["r-alice"]
    table = runner.invoke(cli_app, ["runs", "--url", url])
    assert table.exit_code == 0 and "r-bob" in table.output
    alice = runner.invoke(cli_app, ["snapshots", "--user", "alice", "--json", "--url", url])
    assert alice.exit_code == 0, alice.output
    assert json.loads(alice.output) == [{"run_id": "s-shared", "user_id": None, "value": 1}]
    shown = runner.invoke(cli_app, ["snapshots", "--url", url])
    assert shown.exit_code == 0 and "s-bob" in shown.output and "s-shared" in shown.output
    missing = runner.invoke(cli_app, ["runs", "--url", f"sqlite:///{tmp_path / 'nope.db'}"])
    assert missing.exit_code == 1 and "not_found" in missing.output


async def test_a_session_without_a_user_says_how_to_name_one(api: Api) -> None:
    key = await api.key("acme")
    body = {"channel_type": "web", "channel_id": "c1", "agent_id": "bot"}
    answer = await api.client.post("/v1/sessions", json=body, headers=key)
    assert answer.status_code == 422
    error = answer.json()
    assert error["field"] == "user_id" and "X-User-Id" in error["message"]
    named = await api.client.post("/v1/sessions", json=body, headers={**key, "X-User-Id": "ana"})
    assert named.status_code == 200 and named.json()["user_id"] == "ana"
    given = await api.client.post("/v1/sessions", json={**body, "user_id": "bo"}, headers=key)
    assert given.status_code == 200 and given.json()["user_id"] == "bo"
