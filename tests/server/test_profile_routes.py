"""GET /v1/users/{user_id}/profile: a user's profile over REST, on every store, and
only the caller's own."""

from __future__ import annotations

from tests.server.conftest import Api


async def test_the_profile_route_is_the_users_own(store_api: Api) -> None:
    api = store_api
    key = await api.key("tenant-profile")
    ana, bob = {**key, "X-User-Id": "ana"}, {**key, "X-User-Id": "bob"}
    for content in ("User's name is Ana", "Ana likes green tea"):
        made = await api.client.post("/v1/facts", json={"content": content}, headers=ana)
        assert made.status_code == 201, made.text
    got = await api.client.get("/v1/users/ana/profile", headers=ana)
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["user_id"] == "ana" and list(body["attributes"]) == ["name", "preferences"]
    assert body["attributes"]["name"][0]["content"] == "User's name is Ana"
    # a key acting for bob cannot read ana's profile
    refused = await api.client.get("/v1/users/ana/profile", headers=bob)
    assert refused.status_code == 403 and refused.json()["code"] == "out_of_scope"
    own = await api.client.get("/v1/users/bob/profile", headers=bob)
    assert own.status_code == 200 and own.json()["attributes"] == {}
