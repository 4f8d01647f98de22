"""The HTTP service while its database fails: the documented 503, nothing of the
database's internals in any answer, fail fast during the outage, serve again at once after.

Every database here is the suite's own: a closed port (nothing listens), a
PostgreSQL that refuses the server's login (``own_postgres`` with a wrong
password) and ``own_postgres`` stopped and started again. The shared servers
are never touched.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import httpx
import pytest

from memorybank.stores.postgres._async import AsyncPostgresStore
from tests.reliability.conftest import OwnServer, spare_port
from tests.server.conftest import Api, running_api

pytestmark = [pytest.mark.server, pytest.mark.timeout(120)]

FORGED = {"Authorization": "Bearer mb_0123456789ab_forgedsecretforgedsecret"}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
# A path naming a user and a thread: neither may reach the log.
PRIVATE_PATH = "/v1/threads/thread-of-alice-7f3a"


def _prefix() -> str:
    return f"mb_{uuid.uuid4().hex[:8]}_"


def _internals(url: str) -> list[str]:
    """What an answer must never contain: the database's host, port, user, driver words."""
    parts = urlsplit(url)
    return [
        str(parts.hostname),
        f"{parts.port}",
        "postgres",
        "PostgreSQL",
        "password",
        "authentication",
        "connection",
        "psycopg",
    ]


def _assert_clean(response: httpx.Response, url: str) -> None:
    for word in _internals(url):
        assert word.lower() not in response.text.lower(), (word, response.text)
        for name, value in response.headers.items():
            if name not in ("content-length", "date"):
                assert word.lower() not in value.lower(), (word, name, value)


def _assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "1"
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["code"] == "store_unavailable"
    assert body["request_id"] == response.headers["x-request-id"]
    assert set(body) == {"code", "message", "request_id"}


@asynccontextmanager
async def _api_over(url: str, store_timeout: float = 10.0) -> AsyncIterator[Api]:
    store = AsyncPostgresStore.from_url(url, prefix=_prefix(), timeout=store_timeout)
    try:
        async with running_api(store) as api:
            yield api
    finally:
        await store.close()


async def _every_kind_of_route(api: Api, url: str, key: dict[str, str]) -> None:
    """REST (read, write, a malformed body), /readyz, /mcp and /ui: all the one 503."""
    c = api.client
    answers = [
        await c.get(PRIVATE_PATH, headers=key),
        await c.post("/v1/threads", json={"title": "x"}, headers=key),
        await c.post(
            "/v1/threads",
            content=b"{not json",
            headers={**key, "content-type": "application/json"},
        ),
        await c.get("/readyz"),
        await c.post("/mcp", json=TOOLS_LIST, headers={**MCP_ACCEPT, **key}),
    ]
    for answer in answers:
        _assert_unavailable(answer)
        _assert_clean(answer, url)
    token = key["Authorization"].removeprefix("Bearer ")
    c.cookies.set("mb_ui_key", token)
    try:
        page = await c.get("/ui/threads")
    finally:
        c.cookies.clear()
    assert page.status_code == 503 and page.headers["retry-after"] == "1"
    assert "store_unavailable" in page.text and page.headers["x-request-id"] in page.text
    _assert_clean(page, url)
    assert (await c.get("/healthz")).status_code == 200


@pytest.mark.parametrize("key", ["forged", "missing"])
async def test_a_database_that_is_down_is_503_and_says_nothing_of_it(
    key: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"postgresql://postgres:secret@127.0.0.1:{spare_port()}/postgres"
    async with _api_over(url) as api:
        headers = FORGED if key == "forged" else {}
        if key == "missing":  # no key at all: 401 before the store is asked
            answer = await api.client.get(PRIVATE_PATH)
            assert answer.status_code == 401
            _assert_clean(answer, url)
            return
        with caplog.at_level(logging.WARNING, logger="memorybank.server"):
            await _every_kind_of_route(api, url, headers)
            answer = await api.client.get(PRIVATE_PATH, headers=headers)
    # The detail is in the log, under the request id; the path (a user's thread) is not.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert answer.json()["request_id"] in logged
    assert "/v1/threads/{thread_id}" in logged
    assert "thread-of-alice" not in logged


async def test_a_refused_login_is_503_everywhere_and_says_nothing_of_it(
    own_postgres: OwnServer, caplog: pytest.LogCaptureFixture
) -> None:
    parts = urlsplit(own_postgres.url)
    url = own_postgres.url.replace(f":{parts.password}@", ":wrong-password@")
    async with _api_over(url) as api:
        with caplog.at_level(logging.WARNING, logger="memorybank.server"):
            await _every_kind_of_route(api, url, FORGED)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "password authentication failed" in logged  # the operator's clue
    assert "thread-of-alice" not in logged


async def _timed(api: Api, path: str, headers: dict[str, str]) -> tuple[httpx.Response, float]:
    start = time.monotonic()
    answer = await api.client.get(path, headers=headers)
    return answer, time.monotonic() - start


async def test_an_outage_fails_fast_and_the_service_is_back_within_a_second(
    own_postgres: OwnServer,
) -> None:
    # The store's timeout is long: a 503 that waited for the pool would take 30 s.
    async with _api_over(own_postgres.url, store_timeout=30.0) as api:
        key = await api.key("outage")
        made = await api.client.post("/v1/threads", json={"thread_id": "t"}, headers=key)
        assert made.status_code == 201
        assert (await api.client.get("/v1/threads/t", headers=key)).status_code == 200

        await asyncio.to_thread(own_postgres.stop)
        try:
            first, first_seconds = await _timed(api, "/v1/threads/t", key)
            _assert_unavailable(first)
            _assert_clean(first, own_postgres.url)
            assert first_seconds < 5.0  # the outage is found without waiting 30 s
            # While it lasts, every call fails at once, key reads and /readyz included.
            for _ in range(20):
                answer, seconds = await _timed(api, "/v1/threads/t", key)
                _assert_unavailable(answer)
                assert seconds < 1.0
            await asyncio.sleep(2.5)  # past the key cache: the key's record is read now
            for path in ("/v1/threads/t", "/readyz"):
                answer, seconds = await _timed(api, path, key)
                _assert_unavailable(answer)
                _assert_clean(answer, own_postgres.url)
                assert seconds < 1.0
            assert api.app.state.circuit.is_open
        finally:
            await asyncio.to_thread(own_postgres.start)

        back = time.monotonic()  # pg_ctl start -w returns once the server accepts
        while True:
            answer = await api.client.get("/v1/threads/t", headers=key)
            if answer.status_code == 200:
                break
            _assert_unavailable(answer)
            assert time.monotonic() - back < 3.0, "not serving 3 s after the database returned"
            await asyncio.sleep(0.02)
        recovered = time.monotonic() - back
        assert recovered < 1.5, recovered  # the target is 1 s; a little slack for a busy box
        assert (await api.client.get("/readyz")).status_code == 200
        written = await api.client.post("/v1/threads", json={"thread_id": "t2"}, headers=key)
        assert written.status_code == 201
