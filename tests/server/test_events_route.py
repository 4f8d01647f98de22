"""``GET /v1/events`` on every store that keeps a feed: pages by cursor, kinds, the
``X-User-Id`` scope, 410 ``cursor_expired``, and a long poll that a write ends."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from memorybank.stores.contract.capabilities import Capability
from tests.server.conftest import Api


async def test_events_route_pages_filters_and_scopes(store_api: Api) -> None:
    api = store_api
    if Capability.EVENTS not in api.memory.store.capabilities:
        pytest.skip("the store keeps no change feed")
    await api.memory.events.enable(keep=timedelta(days=1))
    key = await api.key("feed-t")
    ana, bob = {**key, "X-User-Id": "ana"}, {**key, "X-User-Id": "bob"}
    await api.client.post("/v1/threads", json={"thread_id": "ta"}, headers=ana)
    await api.client.post("/v1/threads", json={"thread_id": "tb"}, headers=bob)
    made = await api.client.post(
        "/v1/threads/ta/entries", json={"role": "user", "content": "private"}, headers=ana
    )
    assert made.status_code == 201, made.text
    first = await api.client.get("/v1/events", params={"limit": 2}, headers=key)
    assert first.status_code == 200, first.text
    page = first.json()
    assert [e["kind"] for e in page["items"]] == ["thread.created", "thread.created"]
    rest = await api.client.get("/v1/events", params={"after": page["next_cursor"]}, headers=key)
    assert [e["kind"] for e in rest.json()["items"]] == ["entry.added"]
    assert "private" not in rest.text
    asked = await api.client.get(
        "/v1/events", params={"after": page["next_cursor"], "content": "true"}, headers=key
    )
    assert [e["content"] for e in asked.json()["items"]] == ["private"]
    end = rest.json()["next_cursor"]
    empty = await api.client.get("/v1/events", params={"after": end}, headers=key)
    assert empty.json() == {"items": [], "next_cursor": end}
    kinds = await api.client.get(
        "/v1/events", params={"kinds": "entry.added,thread.deleted"}, headers=key
    )
    assert [e["kind"] for e in kinds.json()["items"]] == ["entry.added"]
    mine = await api.client.get("/v1/events", headers=bob)
    assert [(e["kind"], e["thread_id"]) for e in mine.json()["items"]] == [("thread.created", "tb")]
    bad = await api.client.get("/v1/events", params={"kinds": "nope"}, headers=key)
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_input"
    if Capability.REMOTE not in api.memory.store.capabilities:
        await api.memory.events.disable()
        await api.memory.events.enable(keep=timedelta(days=1))
        gone = await api.client.get("/v1/events", params={"after": end}, headers=key)
        assert gone.status_code == 410 and gone.json()["code"] == "cursor_expired"


async def test_a_long_poll_returns_when_a_change_commits(api: Api) -> None:
    await api.memory.events.enable(keep=timedelta(days=1))
    key = await api.key("feed-poll")
    await api.client.post("/v1/threads", json={"thread_id": "t"}, headers=key)
    now = (await api.client.get("/v1/events", headers=key)).json()["next_cursor"]

    async def write_soon() -> None:
        await asyncio.sleep(0.3)
        await api.client.post(
            "/v1/threads/t/entries", json={"role": "user", "content": "x"}, headers=key
        )

    writer = asyncio.create_task(write_soon())
    polled = await api.client.get("/v1/events", params={"after": now, "wait": 30}, headers=key)
    await writer
    assert [e["kind"] for e in polled.json()["items"]] == ["entry.added"]
