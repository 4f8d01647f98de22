"""OpenAIEmbedder against a real OpenAI-compatible HTTP server running in a thread."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import math
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("httpx", reason="httpx not installed (pip install memorybank[openai])")

import httpx

from memorybank.embeddings import Embedder, OpenAIEmbedder
from memorybank.errors import (
    ConfigurationError,
    InvalidInput,
    StoreClosed,
    StoreError,
    StoreUnavailable,
)

NATIVE_DIMS = 8
MODEL = "test-embed"


def raw_vector(text: str, dims: int) -> list[float]:
    """The fake model: deterministic, not unit length (the client must normalise)."""
    digest = hashlib.sha256(text.encode()).digest() * (1 + dims * 2 // 32)
    values = struct.unpack(f"<{dims}h", digest[: dims * 2])
    return [3.0 * v / 32768.0 + 0.01 for v in values]


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector]


@dataclass
class Scripted:
    """One planned answer; ``status == 200`` with ``body is None`` means a normal answer."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    delay: float = 0.0


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: list[Scripted] = []
        self.requests: list[Recorded] = []
        self.api_key: str | None = None
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def error(self, status: int, message: str, code: str | None = None) -> None:
                payload = {"error": {"message": message, "type": "test", "code": code}}
                self.send(
                    status, json.dumps(payload).encode(), {"Content-Type": "application/json"}
                )

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                with fake.lock:
                    fake.requests.append(
                        Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    planned = fake.script.pop(0) if fake.script else Scripted()
                if planned.delay:
                    time.sleep(planned.delay)
                if planned.status != 200 or planned.body is not None:
                    self.send(planned.status, planned.body or b"", planned.headers)
                    return
                if self.path != "/v1/embeddings":
                    self.error(404, f"no route {self.path}")
                    return
                if fake.api_key is not None and (
                    self.headers.get("Authorization") != f"Bearer {fake.api_key}"
                ):
                    self.error(401, "Incorrect API key provided", "invalid_api_key")
                    return
                if body.get("model") != MODEL:
                    self.error(
                        404, f"The model {body.get('model')} does not exist", "model_not_found"
                    )
                    return
                texts = body.get("input")
                if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                    self.error(400, "'input' must be a list of strings")
                    return
                dims = int(body.get("dimensions", NATIVE_DIMS))
                data = [
                    {"object": "embedding", "index": i, "embedding": raw_vector(t, dims)}
                    for i, t in enumerate(texts)
                ]
                data.reverse()  # clients must order by "index", not by position
                payload = {"object": "list", "data": data, "model": MODEL, "usage": {}}
                self.send(200, json.dumps(payload).encode(), {"Content-Type": "application/json"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def plan(self, *answers: Scripted) -> None:
        with self.lock:
            self.script.extend(answers)

    def inputs(self) -> list[list[str]]:
        return [r.body.get("input", []) for r in self.requests]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
        fake.thread.join(5)


def make(server: FakeOpenAI, **kwargs: Any) -> OpenAIEmbedder:
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "model": MODEL,
        "backoff": 0.01,
        "max_backoff": 0.05,
        "timeout": 5.0,
    }
    options.update(kwargs)
    return OpenAIEmbedder(**options)


def expected(texts: list[str], dims: int = NATIVE_DIMS) -> Any:
    return [pytest.approx(unit(raw_vector(t, dims)), abs=1e-12) for t in texts]


def error_body(message: str, code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "code": code}}).encode()


TEXTS = ["alpha", "beta", "gamma", "delta", "epsilon"]


# -- happy path -----------------------------------------------------------------------


def test_embed_returns_normalised_vectors_in_order(server: FakeOpenAI) -> None:
    with make(server) as emb:
        vectors = emb.embed(TEXTS)
        assert isinstance(emb, Embedder)
        assert emb.dimensions == NATIVE_DIMS
        assert emb.model_id == f"openai:{MODEL}@{NATIVE_DIMS}"
    assert len(vectors) == len(TEXTS)
    for text, vector in zip(TEXTS, vectors, strict=True):
        assert vector == pytest.approx(unit(raw_vector(text, NATIVE_DIMS)), abs=1e-12)
        assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-12)
    request = server.requests[0]
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": MODEL, "input": TEXTS, "encoding_format": "float"}
    assert "authorization" not in request.headers


def test_batches_requests_and_keeps_order(server: FakeOpenAI) -> None:
    with make(server, batch_size=2) as emb:
        vectors = emb.embed(TEXTS)
    assert server.inputs() == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:5]]
    assert vectors == expected(TEXTS)


def test_empty_input_makes_no_request(server: FakeOpenAI) -> None:
    with make(server) as emb:
        assert emb.embed([]) == []
        assert asyncio.run(emb.aembed([])) == []
    assert server.requests == []


def test_bare_string_is_rejected(server: FakeOpenAI) -> None:
    with make(server) as emb, pytest.raises(InvalidInput):
        emb.embed("hello")
    assert server.requests == []


def test_dimensions_parameter_is_sent(server: FakeOpenAI) -> None:
    with make(server, dimensions=4) as emb:
        assert emb.model_id == f"openai:{MODEL}@4"
        assert server.requests == []  # known without asking
        vectors = emb.embed(["x"])
    assert len(vectors[0]) == 4
    assert server.requests[0].body["dimensions"] == 4


def test_unknown_dimensions_are_probed_once(server: FakeOpenAI) -> None:
    with make(server) as emb:
        assert emb.dimensions == NATIVE_DIMS
        assert emb.dimensions == NATIVE_DIMS
    assert len(server.requests) == 1


def test_known_openai_model_needs_no_request(server: FakeOpenAI) -> None:
    emb = OpenAIEmbedder(base_url=server.base_url, model="text-embedding-3-large")
    assert emb.dimensions == 3072
    assert emb.model_id == "openai:text-embedding-3-large@3072"
    emb.close()
    assert server.requests == []


def test_api_key_from_environment(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    server.api_key = "sk-test"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with make(server) as emb:
        emb.embed(["x"])
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


def test_api_key_required_for_api_openai_com(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIEmbedder()
    OpenAIEmbedder(api_key="sk-x").close()


@pytest.mark.parametrize(
    "options",
    [
        {"batch_size": 0},
        {"max_retries": -1},
        {"dimensions": 0},
        {"timeout": 0},
        {"base_url": "ftp://example.com"},
        {"model": ""},
    ],
)
def test_bad_options(server: FakeOpenAI, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        make(server, **options)


# -- errors and retries -----------------------------------------------------------


def test_429_then_200_honours_retry_after(server: FakeOpenAI) -> None:
    server.plan(Scripted(429, {"Retry-After": "1"}, error_body("Rate limit reached")))
    with make(server) as emb:
        started = time.monotonic()
        vectors = emb.embed(["a", "b"])
        elapsed = time.monotonic() - started
    assert vectors == expected(["a", "b"])
    assert len(server.requests) == 2
    assert elapsed >= 0.95  # backoff alone would be ~0.01 s


def test_retry_after_ms_header(server: FakeOpenAI) -> None:
    server.plan(Scripted(429, {"retry-after-ms": "300"}, error_body("slow down")))
    with make(server) as emb:
        started = time.monotonic()
        emb.embed(["a"])
        assert time.monotonic() - started >= 0.28
    assert len(server.requests) == 2


def test_5xx_retried_then_success(server: FakeOpenAI) -> None:
    server.plan(Scripted(500, body=b"boom"), Scripted(503, body=b"busy"))
    with make(server) as emb:
        assert len(emb.embed(["a"])) == 1
    assert len(server.requests) == 3


def test_5xx_exhaustion_raises_store_unavailable(server: FakeOpenAI) -> None:
    server.plan(*[Scripted(500, body=error_body("internal error")) for _ in range(10)])
    with make(server, max_retries=2) as emb, pytest.raises(StoreUnavailable) as info:
        emb.embed(["a"])
    assert len(server.requests) == 3
    assert "3 attempt" in str(info.value)
    assert "internal error" in str(info.value)


def test_400_is_invalid_input_without_retry(server: FakeOpenAI) -> None:
    server.plan(Scripted(400, body=error_body("'$.input' is invalid")))
    with make(server) as emb, pytest.raises(InvalidInput, match="input' is invalid"):
        emb.embed([""])
    assert len(server.requests) == 1


def test_401_is_configuration_error(server: FakeOpenAI) -> None:
    server.api_key = "sk-right"
    with make(server, api_key="sk-wrong") as emb, pytest.raises(ConfigurationError, match="api"):
        emb.embed(["a"])
    assert len(server.requests) == 1


def test_unknown_model_is_configuration_error(server: FakeOpenAI) -> None:
    with make(server, model="no-such-model") as emb:
        with pytest.raises(ConfigurationError, match="does not exist"):
            emb.embed(["a"])
    assert len(server.requests) == 1


def test_wrong_base_url_is_configuration_error(server: FakeOpenAI) -> None:
    with make(server, base_url=server.base_url + "/oops") as emb:
        with pytest.raises(ConfigurationError, match="404"):
            emb.embed(["a"])


def test_insufficient_quota_is_not_retried(server: FakeOpenAI) -> None:
    server.plan(Scripted(429, body=error_body("You exceeded your quota", "insufficient_quota")))
    with make(server) as emb, pytest.raises(StoreUnavailable, match="quota"):
        emb.embed(["a"])
    assert len(server.requests) == 1


def test_malformed_response_is_store_error(server: FakeOpenAI) -> None:
    server.plan(Scripted(200, {"Content-Type": "application/json"}, b"{not json"))
    with make(server) as emb, pytest.raises(StoreError, match="malformed"):
        emb.embed(["a"])


def test_wrong_vector_count_is_store_error(server: FakeOpenAI) -> None:
    body = json.dumps({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}).encode()
    server.plan(Scripted(200, {"Content-Type": "application/json"}, body))
    with make(server) as emb, pytest.raises(StoreError, match="1 vectors for 2 texts"):
        emb.embed(["a", "b"])


def test_timeout_is_retried(server: FakeOpenAI) -> None:
    server.plan(Scripted(delay=1.5))  # first answer comes too late
    with make(server, timeout=0.3) as emb:
        assert len(emb.embed(["a"])) == 1
    assert len(server.requests) == 2


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_unreachable_server_raises_store_unavailable() -> None:
    emb = OpenAIEmbedder(
        base_url=f"http://127.0.0.1:{_closed_port()}/v1",
        model=MODEL,
        max_retries=2,
        backoff=0.01,
        timeout=2.0,
    )
    started = time.monotonic()
    with emb, pytest.raises(StoreUnavailable) as info:
        emb.embed(["a"])
    assert time.monotonic() - started < 5
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_use_after_close(server: FakeOpenAI) -> None:
    emb = make(server)
    emb.close()
    with pytest.raises(StoreClosed):
        emb.embed(["a"])


# -- async ------------------------------------------------------------------------


def test_aembed_matches_embed(server: FakeOpenAI) -> None:
    async def main() -> list[list[float]]:
        async with make(server, batch_size=2) as emb:
            return await emb.aembed(TEXTS)

    vectors = asyncio.run(main())
    assert vectors == expected(TEXTS)
    assert server.inputs() == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:5]]


def test_aembed_retries_429_then_200(server: FakeOpenAI) -> None:
    server.plan(Scripted(429, {"Retry-After": "0"}, error_body("Rate limit")))

    async def main() -> list[list[float]]:
        async with make(server) as emb:
            return await emb.aembed(["a"])

    assert len(asyncio.run(main())) == 1
    assert len(server.requests) == 2


def test_aembed_exhaustion_raises_store_unavailable(server: FakeOpenAI) -> None:
    server.plan(*[Scripted(502, body=b"bad gateway") for _ in range(10)])

    async def main() -> None:
        async with make(server, max_retries=3) as emb:
            await emb.aembed(["a"])

    with pytest.raises(StoreUnavailable, match="4 attempt"):
        asyncio.run(main())
    assert len(server.requests) == 4


def test_aembed_does_not_block_the_event_loop(server: FakeOpenAI) -> None:
    server.plan(Scripted(delay=0.5))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    async def main() -> None:
        task = asyncio.create_task(ticker())
        async with make(server) as emb:
            await emb.aembed(["a"])
        task.cancel()

    asyncio.run(main())
    assert ticks >= 5  # ~25 when idle: the loop kept running during the request


def test_aembed_unreachable_raises_store_unavailable() -> None:
    async def main() -> None:
        async with OpenAIEmbedder(
            base_url=f"http://127.0.0.1:{_closed_port()}/v1", model=MODEL, max_retries=1, backoff=0
        ) as emb:
            await emb.aembed(["a"])

    with pytest.raises(StoreUnavailable):
        asyncio.run(main())


def test_one_embedder_across_event_loops(server: FakeOpenAI) -> None:
    emb = make(server)
    first = asyncio.run(emb.aembed(["a"]))  # not closed inside this loop...
    gc.collect()  # ...yet no unclosed-socket ResourceWarning: the loop's shutdown closed it

    async def second_loop() -> list[list[float]]:
        try:
            return await emb.aembed(["a"])
        finally:
            await emb.aclose()

    assert asyncio.run(second_loop()) == first
