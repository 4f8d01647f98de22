"""Tenants and end users over HTTP, on every store: another tenant's id is a
missing id, ``X-User-Id`` confines the request and fails closed, keys live in
the store."""

from __future__ import annotations

from tests.server.conftest import Api


def without_request_id(body: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in body.items() if k != "request_id"}


async def test_other_tenants_thread_is_missing(store_api: Api) -> None:
    api = store_api
    a, b = await api.key("tenant-a"), await api.key("tenant-b")
    await api.client.post("/v1/threads", json={"thread_id": "shared-name"}, headers=a)
    mine = await api.client.get("/v1/threads/shared-name", headers=a)
    assert mine.status_code == 200 and mine.json()["tenant_id"] == "tenant-a"
    theirs = await api.client.get("/v1/threads/shared-name", headers=b)
    missing = await api.client.get("/v1/threads/no-such-thread", headers=b)
    assert theirs.status_code == missing.status_code == 404
    assert without_request_id(theirs.json()) == {
        "code": "not_found",
        "message": "thread 'shared-name' not found",
    }
    assert without_request_id(missing.json())["code"] == "not_found"
    assert (await api.client.get("/v1/threads", headers=b)).json()["items"] == []


async def test_user_header_fails_closed(store_api: Api) -> None:
    api = store_api
    key = await api.key("tenant-u")
    ana, bob = {**key, "X-User-Id": "ana"}, {**key, "X-User-Id": "bob"}
    made = await api.client.post("/v1/threads", json={"thread_id": "t"}, headers=ana)
    assert made.json()["user_id"] == "ana"  # the header's user owns what it creates
    await api.client.post(
        "/v1/threads/t/entries", json={"role": "user", "content": "hi"}, headers=ana
    )
    for method, path in [
        ("GET", "/v1/threads/t"),
        ("GET", "/v1/threads/t/entries"),
        ("GET", "/v1/threads/t/history"),
        ("POST", "/v1/threads/t/entries"),
        ("DELETE", "/v1/threads/t"),
    ]:
        body = {"role": "user", "content": "x"} if method == "POST" else None
        r = await api.client.request(method, path, json=body, headers=bob)
        assert r.status_code == 403, (method, path, r.text)
        assert r.json()["code"] == "thread_forbidden"
    # A user-scoped request cannot widen itself by naming another user.
    r = await api.client.get("/v1/threads", params={"user_id": "ana"}, headers=bob)
    assert r.status_code == 403 and r.json()["field"] == "user_id"
    # Bob's list holds nothing of Ana's; Ana's holds her thread.
    assert (await api.client.get("/v1/threads", headers=bob)).json()["items"] == []
    assert [
        t["id"] for t in (await api.client.get("/v1/threads", headers=ana)).json()["items"]
    ] == ["t"]
    # Forgetting: only oneself with a user header; the tenant key alone may forget anyone.
    r = await api.client.delete("/v1/users/ana", headers=bob)
    assert r.status_code == 403 and r.json()["code"] == "out_of_scope"
    gone = await api.client.delete("/v1/users/ana", headers=key)
    assert gone.status_code == 200 and gone.json()["count"] >= 1
    assert (await api.client.get("/v1/threads/t", headers=key)).status_code == 404


async def test_cortex_memory_route(store_api: Api) -> None:
    api = store_api
    key = await api.key("tenant-c")
    assert (await api.client.get("/cortex/agents/atlas/memory", headers=key)).json() == []
    messages = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    saved = await api.client.post(
        "/cortex/agents/atlas/memory", json={"messages": messages}, headers=key
    )
    assert saved.status_code == 204
    got = await api.client.get("/cortex/agents/atlas/memory?limit=3", headers=key)
    assert got.json() == [{"role": "user", "content": c} for c in ("m2", "m3", "m4")]
    # The agent's memory is the thread agent:{name}, reachable under /v1 too.
    thread = (await api.client.get("/v1/threads/agent:atlas", headers=key)).json()
    assert thread["agent_id"] == "atlas"
    # Per end user: another thread, owned by that user.
    user = {**key, "X-User-Id": "ana"}
    assert (await api.client.get("/cortex/agents/atlas/memory", headers=user)).json() == []
    other = await api.key("tenant-d")
    assert (await api.client.get("/cortex/agents/atlas/memory", headers=other)).json() == []
    cleared = await api.client.delete("/cortex/agents/atlas/memory", headers=key)
    assert cleared.status_code == 204
    assert (await api.client.get("/cortex/agents/atlas/memory", headers=key)).json() == []
    again = await api.client.delete("/cortex/agents/atlas/memory", headers=key)
    assert again.status_code == 204


async def test_keys_live_in_the_store(store_api: Api) -> None:
    api = store_api
    created = await api.client.post(
        "/v1/admin/keys", json={"tenant": "tenant-k", "label": "ci"}, headers=api.admin
    )
    assert created.status_code == 201
    secret, key_id = created.json()["secret"], created.json()["key"]["id"]
    assert secret.startswith(f"mb_{key_id}_")
    stored = await api.memory.store.record_list("~memorybank-server", "api_key")
    assert [r.id for r in stored if r.id == key_id] == [key_id]
    assert all(secret not in str(r.data) for r in stored)  # only the hash is kept
    headers = {"Authorization": f"Bearer {secret}"}
    assert (await api.client.get("/v1/threads", headers=headers)).status_code == 200
    listed = await api.client.get("/v1/admin/keys?tenant=tenant-k", headers=api.admin)
    assert [k["id"] for k in listed.json()["items"]] == [key_id]
    revoked = await api.client.delete(f"/v1/admin/keys/{key_id}", headers=api.admin)
    assert revoked.json()["revoked_at"] is not None
    assert (await api.client.get("/v1/threads", headers=headers)).status_code == 401
    # The server's own tenant cannot be named by anyone.
    reserved = await api.client.post(
        "/v1/admin/keys", json={"tenant": "~memorybank-server"}, headers=api.admin
    )
    assert reserved.status_code == 422 and reserved.json()["field"] == "tenant"
    admin_in = {**api.admin, "X-Tenant-Id": "~memorybank-server"}
    assert (await api.client.get("/v1/threads", headers=admin_in)).status_code == 422
    # The admin key acts in a tenant it names, and only then.
    assert (await api.client.get("/v1/threads", headers=api.admin)).status_code == 422
    tenant = await api.key("tenant-k2")
    await api.client.post("/v1/threads", json={"thread_id": "k2"}, headers=tenant)
    as_admin = {**api.admin, "X-Tenant-Id": "tenant-k2"}
    found = (await api.client.get("/v1/threads/k2", headers=as_admin)).json()
    assert found["tenant_id"] == "tenant-k2"
