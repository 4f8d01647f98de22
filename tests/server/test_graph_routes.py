"""``/v1/graph/...``: the graph over HTTP, with the server's scope and pagination.

(Every route's 401 and other-tenant 404 are in ``test_auth``; here: what the
routes answer, users' private nodes, cursors, time.)
"""

from __future__ import annotations

from typing import Any

from tests.server.conftest import Api


async def _post(api: Api, path: str, body: Any, headers: dict[str, str], status: int = 201) -> Any:
    response = await api.client.post(path, json=body, headers=headers)
    assert response.status_code == status, response.text
    return response.json()


async def test_entities_relations_and_traversal(api: Api) -> None:
    h = await api.key("acme")
    ada = await _post(
        api,
        "/v1/graph/entities",
        {"name": "Ada", "type": "person", "observations": ["writes programs"]},
        h,
    )
    acme = await _post(api, "/v1/graph/entities", {"name": "Acme", "type": "organization"}, h)
    paris = await _post(api, "/v1/graph/entities", {"name": "Paris", "type": "location"}, h)
    # Adding again merges (same owner, type, normalised name), it does not duplicate.
    again = await _post(api, "/v1/graph/entities", {"name": " ada ", "type": "person"}, h)
    assert again["id"] == ada["id"] and again["observations"] == ["writes programs"]
    works = await _post(
        api,
        "/v1/graph/relations",
        {"source_id": ada["id"], "type": "works_at", "target_id": acme["id"]},
        h,
    )
    await _post(
        api,
        "/v1/graph/relations",
        {"source_id": acme["id"], "type": "located_in", "target_id": paris["id"]},
        h,
    )
    got = await api.client.get(f"/v1/graph/entities/{ada['id']}", headers=h)
    assert got.json()["name"] == "Ada" and got.json()["user_id"] is None
    relations = await api.client.get(f"/v1/graph/entities/{ada['id']}/relations", headers=h)
    assert [r["id"] for r in relations.json()["items"]] == [works["id"]]
    near = await api.client.get(
        f"/v1/graph/entities/{ada['id']}/neighbors", params={"depth": 2}, headers=h
    )
    assert [e["name"] for e in near.json()["items"]] == ["Acme", "Paris"]
    sub = await _post(
        api, "/v1/graph/traverse", {"start_ids": [ada["id"]], "max_depth": 1}, h, status=200
    )
    assert [e["name"] for e in sub["entities"]] == ["Ada", "Acme"] and not sub["truncated"]
    path = await api.client.get(
        "/v1/graph/path", params={"source_id": ada["id"], "target_id": paris["id"]}, headers=h
    )
    assert path.json()["hops"] == 2
    assert [e["name"] for e in path.json()["entities"]] == ["Ada", "Acme", "Paris"]
    lonely = await _post(api, "/v1/graph/entities", {"name": "Nobody"}, h)
    none = await api.client.get(
        "/v1/graph/path", params={"source_id": ada["id"], "target_id": lonely["id"]}, headers=h
    )
    assert none.status_code == 200 and none.json() is None
    stats = (await api.client.get("/v1/graph/stats", headers=h)).json()
    assert stats["entities"] == 4 and stats["relations"] == 2
    assert stats["entity_types"]["person"] == 1
    found = await api.client.get(
        "/v1/graph/entities/search", params={"query": "programs"}, headers=h
    )
    assert [e["id"] for e in found.json()["items"]] == [ada["id"]]


async def test_observations_updates_invalidation_and_deletes(api: Api) -> None:
    h = await api.key("acme")
    bob = await _post(api, "/v1/graph/entities", {"name": "Bob", "type": "person"}, h)
    rome = await _post(api, "/v1/graph/entities", {"name": "Rome", "type": "location"}, h)
    url = f"/v1/graph/entities/{bob['id']}"
    added = await _post(api, f"{url}/observations", {"observations": ["a", "b"]}, h, status=200)
    assert added["observations"] == ["a", "b"]
    kept = await _post(api, f"{url}/observations/delete", {"observations": ["a"]}, h, status=200)
    assert kept["observations"] == ["b"]
    patched = await api.client.patch(url, json={"aliases": ["Robert"]}, headers=h)
    assert patched.json()["aliases"] == ["Robert"]
    by_alias = await api.client.get("/v1/graph/entities", params={"name": "robert"}, headers=h)
    assert [e["id"] for e in by_alias.json()["items"]] == [bob["id"]]
    lives = await _post(
        api,
        "/v1/graph/relations",
        {"source_id": bob["id"], "type": "lives_in", "target_id": rome["id"]},
        h,
    )
    rel_url = f"/v1/graph/relations/{lives['id']}"
    assert (await api.client.patch(rel_url, json={"weight": 3.0}, headers=h)).json()["weight"] == 3
    closed = await _post(api, f"{rel_url}/invalidate", {}, h, status=200)
    assert closed["invalid_at"] is not None
    current = await api.client.get(f"{url}/relations", headers=h)
    assert current.json()["items"] == []  # reads return what holds now
    history = await api.client.get(f"{url}/relations", params={"include_invalid": True}, headers=h)
    assert [r["id"] for r in history.json()["items"]] == [lives["id"]]
    assert (await api.client.delete(rel_url, headers=h)).status_code == 204
    assert (await api.client.get(rel_url, headers=h)).status_code == 404
    assert (await api.client.delete(rel_url, headers=h)).status_code == 404
    assert (await api.client.delete(url, headers=h)).status_code == 204
    gone = await api.client.get(url, headers=h)
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"


async def test_a_users_private_entity_is_invisible_to_another_user(api: Api) -> None:
    key = await api.key("acme")
    alice = {**key, "X-User-Id": "alice"}
    bob = {**key, "X-User-Id": "bob"}
    secret = await _post(api, "/v1/graph/entities", {"name": "Alice's diary"}, alice)
    shared = await _post(api, "/v1/graph/entities", {"name": "Library"}, key)
    assert secret["user_id"] == "alice" and shared["user_id"] is None
    link = await _post(
        api,
        "/v1/graph/relations",
        {"source_id": secret["id"], "type": "kept_in", "target_id": shared["id"]},
        alice,
    )
    assert link["user_id"] == "alice"  # touching a private entity makes it private
    for path in (
        f"/v1/graph/entities/{secret['id']}",
        f"/v1/graph/entities/{secret['id']}/relations",
        f"/v1/graph/entities/{secret['id']}/neighbors",
        f"/v1/graph/relations/{link['id']}",
    ):
        for who in (bob, key):  # another user, and the tenant without a user
            response = await api.client.get(path, headers=who)
            assert response.status_code == 404, (path, response.text)
            assert "diary" not in response.text
        assert (await api.client.get(path, headers=alice)).status_code == 200
    # Bob's reads of shared nodes never reach Alice's.
    near = await api.client.get(f"/v1/graph/entities/{shared['id']}/neighbors", headers=bob)
    assert near.json()["items"] == []
    listed = await api.client.get("/v1/graph/entities", headers=bob)
    assert [e["id"] for e in listed.json()["items"]] == [shared["id"]]
    sub = await _post(api, "/v1/graph/traverse", {"start_ids": [shared["id"]]}, bob, status=200)
    assert [e["id"] for e in sub["entities"]] == [shared["id"]] and sub["relations"] == []
    assert (await api.client.get("/v1/graph/stats", headers=bob)).json()["entities"] == 1
    # Bob cannot write through, nor delete, Alice's entity.
    refused = await api.client.post(
        "/v1/graph/relations",
        json={"source_id": shared["id"], "type": "has", "target_id": secret["id"]},
        headers=bob,
    )
    assert refused.status_code == 404
    assert (
        await api.client.delete(f"/v1/graph/entities/{secret['id']}", headers=bob)
    ).status_code == 404
    # Naming another user than X-User-Id is refused, not obeyed.
    other = await api.client.get("/v1/graph/entities", params={"user_id": "alice"}, headers=bob)
    assert other.status_code == 403 and other.json()["field"] == "user_id"
    assert other.json()["code"] == "out_of_scope"


async def test_entity_and_neighbor_lists_page_with_cursors(api: Api) -> None:
    h = await api.key("acme")
    hub = await _post(api, "/v1/graph/entities", {"name": "Hub"}, h)
    ids = [hub["id"]]
    for i in range(7):
        spoke = await _post(api, "/v1/graph/entities", {"name": f"Spoke {i}"}, h)
        ids.append(spoke["id"])
        await _post(
            api,
            "/v1/graph/relations",
            {"source_id": hub["id"], "type": "links", "target_id": spoke["id"]},
            h,
        )
    for path in ("/v1/graph/entities", f"/v1/graph/entities/{hub['id']}/neighbors"):
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            params: dict[str, Any] = {"limit": 3}
            if cursor is not None:
                params["cursor"] = cursor
            page = (await api.client.get(path, params=params, headers=h)).json()
            seen += [e["id"] for e in page["items"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        expected = ids if path == "/v1/graph/entities" else ids[1:]
        assert seen == expected and pages == -(-len(expected) // 3), path
    relations = await api.client.get(
        f"/v1/graph/entities/{hub['id']}/relations", params={"limit": 5}, headers=h
    )
    first = relations.json()
    assert len(first["items"]) == 5 and first["next_cursor"] is not None
    bad = await api.client.get("/v1/graph/entities", params={"cursor": "nope"}, headers=h)
    assert bad.status_code == 422 and bad.json()["field"] == "cursor"
