"""Isolation over the service's run-state lists and change feed, on every store: bob,
through REST (``X-User-Id: bob``), lists none of alice's runs, snapshots or events (with
their content or without), and naming alice (``?user_id=alice``) on a run list widens his
scope and is refused. The library cases are ``Memory.working_runs``, ``Snapshots.list`` and
``Events.list`` in test_isolation_verbs.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memorybank.stores.contract.capabilities import Capability
from tests.all_stores import STORE_KINDS
from tests.reliability._isolation import SECRET
from tests.server.conftest import Api, fresh_store, running_api


@pytest.fixture(params=STORE_KINDS)
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    """Alice's run and snapshot, bob's, and a shared snapshot, in tenant acme."""
    async with fresh_store(str(request.param), tmp_path) as store, running_api(store) as api:
        memory = api.memory.tenant("acme")
        await memory.working("run-a", user_id="alice", agent_id="bot").set("k", SECRET)
        await memory.snapshots.save("run-a", {"s": SECRET}, user_id="alice")
        await memory.working("run-b", user_id="bob").set("k", "bob's")
        await memory.snapshots.save("run-b", "bob's", user_id="bob")
        await memory.snapshots.save("run-shared", "for all")
        yield api


async def test_bob_lists_none_of_alices_runs_or_snapshots(world: Api) -> None:
    bob = {**await world.key("acme"), "X-User-Id": "bob"}
    runs = await world.client.get("/v1/runs", headers=bob)
    assert runs.status_code == 200 and SECRET not in runs.text
    assert [r["run_id"] for r in runs.json()["items"]] == ["run-b"]
    snapshots = await world.client.get("/v1/snapshots", headers=bob)
    assert snapshots.status_code == 200 and SECRET not in snapshots.text
    assert [s["run_id"] for s in snapshots.json()["items"]] == ["run-b", "run-shared"]
    widened = await world.client.get("/v1/snapshots", params={"user_id": "alice"}, headers=bob)
    assert widened.status_code == 403 and SECRET not in widened.text
    # another tenant's key sees nothing of acme's
    other = await world.key("other")
    for path in ("/v1/runs", "/v1/snapshots"):
        answer = await world.client.get(path, headers=other)
        assert answer.json() == {"items": [], "next_cursor": None}
    # alice's state is intact
    memory = world.memory.tenant("acme")
    assert await memory.snapshots.load("run-a") == {"s": SECRET}
    assert await memory.working("run-a", user_id="alice", agent_id="bot").items() == {"k": SECRET}


async def test_bob_reads_none_of_alices_events_or_their_content(world: Api) -> None:
    memory = world.memory.tenant("acme")
    if Capability.EVENTS not in memory.store.capabilities:
        pytest.skip("the store keeps no change feed")
    await world.memory.events.enable()
    alice = memory.scoped(user_id="alice", agent_id="bot")
    thread = await alice.threads.create()
    await alice.entries.add(thread.id, {"role": "user", "content": f"said {SECRET}"})
    await alice.facts.add(content=f"fact {SECRET}")
    bob = memory.scoped(user_id="bob")
    own = await bob.threads.create()
    await bob.entries.add(own.id, {"role": "user", "content": "bob's own"})
    key = await world.key("acme")
    as_alice = await world.client.get(
        "/v1/events", params={"content": "true"}, headers={**key, "X-User-Id": "alice"}
    )
    assert as_alice.status_code == 200 and as_alice.text.count(SECRET) == 2  # not vacuous
    bob_headers = {**key, "X-User-Id": "bob"}
    for content in ("true", "false"):
        answer = await world.client.get(
            "/v1/events", params={"content": content, "limit": 1000}, headers=bob_headers
        )
        assert answer.status_code == 200 and SECRET not in answer.text
        items = answer.json()["items"]
        assert items and all(e["user_id"] == "bob" for e in items)
        if content == "true":
            assert "bob's own" in [e["content"] for e in items]
