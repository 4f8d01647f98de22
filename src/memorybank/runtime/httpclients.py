"""The httpx clients of a model endpoint (``LLMExtractor``, ``LLMReranker``, ``LLMJudge``),
and the chat-completions request and answer they share.

One ``httpx.Client`` for sync calls (thread-safe, shared by all threads) and
one ``httpx.AsyncClient`` per event loop (an async client's connections belong
to the loop that opened them), so repeated calls reuse their connections.
A client whose loop has closed is dropped on the next call (its sockets died
with the loop) and never reused.

``close()`` closes the sync client and refuses later calls
(``ConfigurationError``). Async clients belong to their loops: ``aclose()`` on
a loop closes that loop's client and leaves the owner usable (a later call
opens a new one).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

from memorybank.errors import ConfigurationError, ExtractionError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "HttpClients",
    "OwnsClients",
    "chat_endpoint",
    "chat_request",
    "import_httpx",
    "model_json",
]


def chat_endpoint(
    owner: str,
    base_url: object,
    model: object,
    api_key: str | None,
    headers: dict[str, str] | None,
    path: str = "/chat/completions",
) -> tuple[str, dict[str, str]]:
    """The ``{base_url}{path}`` URL and the request headers of an OpenAI-compatible
    endpoint, its arguments checked (``ConfigurationError``).

    ``api_key``: sent as a bearer token; ``None`` reads ``$OPENAI_API_KEY`` (required
    for api.openai.com, optional elsewhere)."""
    if not isinstance(model, str) or not model:
        raise ConfigurationError("model must be a non-empty string")
    parts = urlsplit(base_url) if isinstance(base_url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(f"base_url must be an http(s) URL, got {base_url!r}")
    assert isinstance(base_url, str)
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    if not key and parts.hostname == "api.openai.com":
        raise ConfigurationError(f"{owner} needs an API key: pass api_key= or set $OPENAI_API_KEY")
    sent = {"Content-Type": "application/json", **(headers or {})}
    if key:
        sent["Authorization"] = f"Bearer {key}"
    return base_url.rstrip("/") + path, sent


def import_httpx(owner: str) -> Any:
    """The httpx module; ``ConfigurationError`` naming ``owner`` when it is missing."""
    try:
        import httpx
    except ImportError as exc:
        raise ConfigurationError(f"{owner} needs httpx: `pip install memorybank[openai]`") from exc
    return httpx


def chat_request(
    model: str,
    system: str,
    prompt: str,
    *,
    max_tokens: int | None = None,
    schema: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A chat-completions request at temperature 0: ``system`` and one user ``prompt``;
    the answer's ``max_tokens`` when given, and ``schema`` (its name and the JSON schema)
    as a strict structured-output ``response_format`` when given."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ],
        "temperature": 0,
    }
    if schema is not None:
        name, json_schema = schema
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": json_schema},
        }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def model_json(content: object) -> Any:
    """A model's answer (its message content) as JSON: ``ExtractionError`` unless it is
    text holding JSON."""
    if not isinstance(content, str):
        raise ExtractionError("the model's answer has no text content")
    try:
        return json.loads(content)
    except ValueError as exc:
        raise ExtractionError(f"the model's answer is not JSON: {content[:120]!r}") from exc


class HttpClients:
    """The sync client and the per-loop async clients of one owner (see the module)."""

    def __init__(
        self, httpx_module: Any, *, owner: str, timeout: float, headers: dict[str, str]
    ) -> None:
        self._httpx = httpx_module
        self._owner = owner
        self._timeout = timeout
        self._headers = headers
        self._client: httpx.Client | None = None
        self._aclients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}
        self._lock = threading.Lock()
        self._closed = False

    def check_open(self) -> None:
        if self._closed:
            raise ConfigurationError(f"{self._owner} is closed")

    def sync(self) -> httpx.Client:
        """The sync client, opened on first use."""
        with self._lock:
            self.check_open()
            if self._client is None:
                self._client = self._httpx.Client(timeout=self._timeout, headers=self._headers)
            return self._client

    def for_loop(self) -> httpx.AsyncClient:
        """The running event loop's async client, opened on first use on that loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self.check_open()
            for gone in [other for other in self._aclients if other.is_closed()]:
                del self._aclients[gone]  # its connections died with their loop
            client = self._aclients.get(loop)
            if client is None:
                client = self._httpx.AsyncClient(timeout=self._timeout, headers=self._headers)
                self._aclients[loop] = client
            return client

    def open_loops(self) -> int:
        """How many event loops have an async client (tests read it)."""
        with self._lock:
            return len(self._aclients)

    def close(self) -> None:
        """Close the sync client; later calls raise ``ConfigurationError``."""
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close the running loop's async client (the owner stays usable)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._aclients.pop(loop, None)
        if client is not None:
            await client.aclose()


class OwnsClients:
    """``close``/``aclose`` and both context managers for an owner of ``_clients``."""

    _clients: HttpClients

    def close(self) -> None:
        """Close the sync client; later calls raise ``ConfigurationError``.

        Async clients belong to their event loops: close each with ``aclose()``
        (or ``async with``) before its loop ends. A client whose loop has
        closed is dropped on the next call, its sockets left to the garbage
        collector.
        """
        self._clients.close()

    async def aclose(self) -> None:
        """Close this event loop's client; the owner stays usable (a later call on any
        loop opens a new one)."""
        await self._clients.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
