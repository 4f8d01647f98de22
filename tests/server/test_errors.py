"""The one error shape, request ids, status mapping, body limit, store outages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from tests.server.conftest import Api, fresh_store, running_api


def assert_error(response: object, status: int, code: str, field: str | None = None) -> None:
    from httpx import Response

    assert isinstance(response, Response)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code
    assert isinstance(body["message"], str) and body["message"]
    assert body["request_id"] == response.headers["x-request-id"]
    assert body.get("field") == field
    assert set(body) <= {"code", "message", "field", "request_id"}


async def test_request_id_on_every_response(api: Api) -> None:
    ok = await api.client.get("/healthz")
    assert len(ok.headers["x-request-id"]) == 32
    kept = await api.client.get("/healthz", headers={"X-Request-ID": "trace-42.a:b"})
    assert kept.headers["x-request-id"] == "trace-42.a:b"
    # An unsafe id is replaced, never echoed into the response headers.
    replaced = await api.client.get("/healthz", headers={"X-Request-ID": "a b<script>"})
    assert replaced.headers["x-request-id"] != "a b<script>"
    assert_error(await api.client.get("/v1/threads"), 401, "unauthorized")


async def test_library_errors_map_to_statuses(api: Api) -> None:
    key = await api.key("errors")
    c = api.client
    # InvalidInput from the library: 422 with the library's field.
    bad_role = await c.post("/v1/threads", json={"thread_id": "t1"}, headers=key)
    assert bad_role.status_code == 201
    r = await c.post("/v1/threads/t1/entries", json={"role": "robot", "content": "x"}, headers=key)
    assert_error(r, 422, "invalid_input", "role")
    r = await c.post("/v1/threads", json={"thread_id": "x\u0000y"}, headers=key)
    assert_error(r, 422, "invalid_input", "thread_id")
    # Request validation (wrong JSON types, bad query values): 422, same shape.
    r = await c.post("/v1/threads/t1/entries", json={"role": 5}, headers=key)
    assert_error(r, 422, "invalid_input", "body.role")
    r = await c.get("/v1/threads/t1/entries?limit=0", headers=key)
    assert_error(r, 422, "invalid_input", "query.limit")
    r = await c.post(
        "/v1/threads/t1/entries",
        content=b"{not json",
        headers={**key, "content-type": "application/json"},
    )
    assert r.status_code == 422 and r.json()["code"] == "invalid_input"
    r = await c.post("/v1/threads", json={"unknown": 1}, headers=key)
    assert_error(r, 422, "invalid_input", "body.unknown")
    # NotFound: 404.
    assert_error(await c.get("/v1/threads/none", headers=key), 404, "not_found")
    assert_error(await c.get("/no/such/route"), 404, "not_found")
    # Conflict: a taken id, and an idempotency key reused for another message.
    assert_error(
        await c.post("/v1/threads", json={"thread_id": "t1"}, headers=key), 409, "conflict"
    )
    first = {"role": "user", "content": "a", "idempotency_key": "k1"}
    one = await c.post("/v1/threads/t1/entries", json=first, headers=key)
    again = await c.post("/v1/threads/t1/entries", json=first, headers=key)
    assert one.status_code == again.status_code == 201
    assert one.json()["id"] == again.json()["id"]  # a retry stores nothing twice
    other = {**first, "content": "b"}
    r = await c.post("/v1/threads/t1/entries", json=other, headers=key)
    assert_error(r, 409, "conflict")
    # The same key as an Idempotency-Key header is the same request.
    header = {**key, "Idempotency-Key": "k1"}
    plain = {"role": "user", "content": "a"}
    by_header = await c.post("/v1/threads/t1/entries", json=plain, headers=header)
    assert by_header.json()["id"] == one.json()["id"]
    r = await c.post("/v1/threads/t1/entries", json=other, headers=header)
    assert_error(r, 409, "conflict")
    r = await c.post(
        "/v1/threads/t1/entries", json={**plain, "idempotency_key": "k2"}, headers=header
    )
    assert_error(r, 409, "conflict")  # two different keys for one request
    # ThreadForbidden: 403.
    await c.post("/v1/threads", json={"thread_id": "owned", "user_id": "u1"}, headers=key)
    r = await c.get("/v1/threads/owned", headers={**key, "X-User-Id": "u2"})
    assert_error(r, 403, "thread_forbidden")
    # A method the route does not have.
    assert (await c.put("/v1/threads", headers=key)).status_code == 405


async def test_body_limit_is_413(tmp_path: Path) -> None:
    async with (
        fresh_store("memory", tmp_path) as store,
        running_api(store, max_body_bytes=200) as api,
    ):
        key = await api.key("limits")
        small = await api.client.post("/v1/threads", json={"title": "x" * 50}, headers=key)
        assert small.status_code == 201
        big = await api.client.post("/v1/threads", json={"title": "x" * 500}, headers=key)
        assert_error(big, 413, "payload_too_large")

        async def chunks() -> AsyncIterator[
            bytes
        ]:  # no Content-Length: the limit still holds mid-stream
            for _ in range(10):
                yield b'{"title": "' + b"x" * 50

        streamed = await api.client.post(
            "/v1/threads", content=chunks(), headers={**key, "content-type": "application/json"}
        )
        assert_error(streamed, 413, "payload_too_large")
        metrics = (await api.client.get("/metrics")).text
        assert 'memorybank_http_errors_total{code="payload_too_large"} 2.0' in metrics


async def test_store_outage_is_503_with_retry_after(tmp_path: Path) -> None:
    async with fresh_store("memory", tmp_path) as store, running_api(store) as api:
        key = await api.key("outage")
        ready = await api.client.get("/readyz")
        assert ready.status_code == 200
        await store.close()  # the store goes away under the running server
        down = await api.client.get("/v1/threads/t", headers=key)
        assert_error(down, 503, "store_closed")
        assert down.headers["retry-after"] == "1"
        assert_error(await api.client.get("/readyz"), 503, "store_closed")
        assert (await api.client.get("/healthz")).status_code == 200


async def test_metrics_count_routes_and_errors(api: Api) -> None:
    key = await api.key("metrics")
    await api.client.get("/v1/threads/abc", headers=key)
    await api.client.get("/v1/threads", headers=key)
    text = (await api.client.get("/metrics")).text
    assert 'route="/v1/threads/{thread_id}"' in text  # the template, never the id
    assert "abc" not in text
    assert 'memorybank_http_errors_total{code="not_found"}' in text
    assert 'memorybank_store_call_duration_seconds_count{call="thread_get"}' in text
