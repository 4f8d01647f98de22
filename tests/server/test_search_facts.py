"""``POST /v1/search`` with ``kinds`` including ``"facts"`` and ``include_history``, on
every store: fact hits serialised with their kind, the caller's scope applied."""

from __future__ import annotations

from tests.server.conftest import Api


async def test_search_returns_fact_hits_in_scope(store_api: Api) -> None:
    api = store_api
    key = await api.key("tenant-f")
    ana, bob = {**key, "X-User-Id": "ana"}, {**key, "X-User-Id": "bob"}
    made = await api.client.post(
        "/v1/facts", json={"content": "Ana's dog is named Biscuit"}, headers=ana
    )
    assert made.status_code == 201, made.text
    fact = made.json()
    await api.client.post("/v1/facts", json={"content": "Bob's dog is named Rex"}, headers=bob)
    moved = await api.client.patch(
        f"/v1/facts/{fact['id']}",
        json={"content": "Ana's dog is named Biscuit Junior", "supersede": True},
        headers=ana,
    )
    assert moved.status_code == 200, moved.text
    body = {"query": "dog named", "kinds": ["entries", "documents", "facts"]}
    found = await api.client.post("/v1/search", json=body, headers=ana)
    assert found.status_code == 200, found.text
    hits = found.json()["items"]
    assert [(h["kind"], h["fact"]["content"], h["superseded"]) for h in hits] == [
        ("fact", "Ana's dog is named Biscuit Junior", False)
    ]
    assert hits[0]["fact"]["id"] == fact["id"] and hits[0]["fact"]["version"] == 2
    assert hits[0]["entry"] is None and hits[0]["document"] is None
    history = await api.client.post(
        "/v1/search", json={**body, "include_history": True}, headers=ana
    )
    assert history.status_code == 200, history.text
    values = {(h["fact"]["content"], h["superseded"]) for h in history.json()["items"]}
    assert values == {
        ("Ana's dog is named Biscuit Junior", False),
        ("Ana's dog is named Biscuit", True),
    }
    # bob sees his fact only; a request naming ana with bob's header is refused
    theirs = await api.client.post("/v1/search", json=body, headers=bob)
    assert [h["fact"]["content"] for h in theirs.json()["items"]] == ["Bob's dog is named Rex"]
    widened = await api.client.post("/v1/search", json={**body, "user_id": "ana"}, headers=bob)
    assert widened.status_code == 403 and widened.json()["field"] == "user_id"
    # the default kinds hold no facts; include_history needs them; unknown kinds are 422
    plain = await api.client.post("/v1/search", json={"query": "dog named"}, headers=ana)
    assert plain.json()["items"] == []
    refused = await api.client.post(
        "/v1/search", json={"query": "dog", "include_history": True}, headers=ana
    )
    assert refused.status_code == 422 and refused.json()["field"] == "include_history"
    unknown = await api.client.post(
        "/v1/search", json={"query": "dog", "kinds": ["fact"]}, headers=ana
    )
    assert unknown.status_code == 422
