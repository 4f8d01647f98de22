"""Opaque cursor pagination on list routes: every item once, in order, then the end."""

from __future__ import annotations

from typing import Any

from tests.server.conftest import Api


async def walk(api: Api, path: str, key: dict[str, str], limit: int, **params: Any) -> list[Any]:
    """Every page of ``path`` in turn; checks each page's size and the end marker."""
    items: list[Any] = []
    cursor = None
    for _ in range(100):
        query = {**params, "limit": limit, **({} if cursor is None else {"cursor": cursor})}
        page = (await api.client.get(path, params=query, headers=key)).json()
        assert len(page["items"]) <= limit
        items.extend(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return items
        assert page["items"], "a page with a next cursor is never empty"
    raise AssertionError("pagination did not end")


async def test_threads_pages(api: Api) -> None:
    key = await api.key("pages")
    made = [
        (await api.client.post("/v1/threads", json={}, headers=key)).json()["id"] for _ in range(7)
    ]
    for limit in (1, 2, 3, 7, 50):
        seen = [t["id"] for t in await walk(api, "/v1/threads", key, limit)]
        assert seen == list(reversed(made))  # most recently updated first


async def test_entries_pages_go_back_from_newest(api: Api) -> None:
    key = await api.key("pages")
    await api.client.post("/v1/threads", json={"thread_id": "t"}, headers=key)
    batch = {"messages": [{"role": "user", "content": f"m{i}"} for i in range(9)]}
    await api.client.post("/v1/threads/t/entries/batch", json=batch, headers=key)
    for limit in (1, 4, 9, 20):
        pages = await walk(api, "/v1/threads/t/entries", key, limit, order="desc")
        assert [e["content"] for e in pages] == [f"m{i}" for i in reversed(range(9))]
    first = (await api.client.get("/v1/threads/t/entries?limit=4", headers=key)).json()
    assert [e["content"] for e in first["items"]] == ["m5", "m6", "m7", "m8"]  # asc page
    # A window option applies to every page: tool results and calls left out.
    calls = {
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
            {"role": "assistant", "content": "done"},
        ]
    }
    await api.client.post("/v1/threads/t/entries/batch", json=calls, headers=key)
    plain = await walk(api, "/v1/threads/t/entries", key, 2, include_tool_calls=False)
    # Pages of 2 from the newest, each oldest first.
    expected = ["m8", "done", "m6", "m7", "m4", "m5", "m2", "m3", "m0", "m1"]
    assert [e["content"] for e in plain] == expected


async def test_small_lists_page_too(api: Api) -> None:
    key = await api.key("pages")
    for i in range(5):
        await api.client.post("/v1/facts", json={"content": f"fact {i}"}, headers=key)
        await api.client.put(f"/v1/runs/r/working/k{i}", json={"value": i}, headers=key)
    facts = await walk(api, "/v1/facts", key, 2)
    assert [f["content"] for f in facts] == [f"fact {i}" for i in range(5)]
    values = await walk(api, "/v1/runs/r/working", key, 3)
    assert [v["value"] for v in values] == list(range(5))


async def test_bad_cursor_is_422(api: Api) -> None:
    key = await api.key("pages")
    for cursor in ("nonsense", "eyJvIjogLTF9", "e30", "!!"):
        r = await api.client.get("/v1/threads", params={"cursor": cursor}, headers=key)
        assert r.status_code == 422, (cursor, r.text)
        assert r.json()["field"] == "cursor"


async def test_paging_problems_come_after_the_routes_own(api: Api) -> None:
    """A 422 lists its problems in the order of the route's parameters, ``limit`` and
    ``cursor`` last, on a list route of its own parameters and dependencies alike."""
    key = await api.key("pages")
    for path, first in (
        ("/v1/facts?include_expired=maybe&limit=0", "query.include_expired"),
        ("/v1/graph/entities/e1/neighbors?depth=0&limit=0&direction=up", "query.direction"),
        ("/v1/threads?status=gone&limit=0", "query.status"),
    ):
        body = (await api.client.get(path, headers=key)).json()
        assert body["field"] == first, path
        assert body["message"].rindex("query.limit") > body["message"].index(first)
