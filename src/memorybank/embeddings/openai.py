"""Embeddings from the OpenAI API or any OpenAI-compatible ``/embeddings`` endpoint.

Uses httpx (``pip install memorybank[openai]``): a sync ``httpx.Client`` for
:meth:`OpenAIEmbedder.embed` and an ``httpx.AsyncClient`` for
:meth:`OpenAIEmbedder.aembed`. Requests are batched, and retried with
exponential backoff plus jitter on 429, 5xx, timeouts and connection errors,
honouring ``Retry-After`` / ``retry-after-ms``.

Errors: 400/413/422 -> :class:`~memorybank.errors.InvalidInput`; 401/403/404 ->
:class:`~memorybank.errors.ConfigurationError` (bad key, unknown model, wrong
base_url); retries exhausted or quota exhausted ->
:class:`~memorybank.errors.StoreUnavailable`; anything else unexpected ->
:class:`~memorybank.errors.StoreError`; use after close ->
:class:`~memorybank.errors.StoreClosed`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import threading
import time
from collections.abc import AsyncGenerator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from memorybank.embeddings.base import check_texts
from memorybank.errors import (
    ConfigurationError,
    InvalidInput,
    StoreClosed,
    StoreError,
    StoreUnavailable,
)
from memorybank.runtime.httpclients import chat_endpoint, import_httpx

if TYPE_CHECKING:
    import httpx

__all__ = ["KNOWN_DIMENSIONS", "OpenAIEmbedder"]

#: Native output width of OpenAI's embedding models (used before the first response).
KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_RETRY_STATUS = frozenset({408, 429})
_MAX_RETRY_AFTER = 60.0


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked us to wait, if it said so."""
    ms = response.headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:500] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if body.get("message"):
            return str(body["message"])
    return json.dumps(body)[:500]


def _error_code(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code") or body["error"].get("type")
        return str(code) if code is not None else None
    return None


async def _close_at_loop_shutdown(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Registered with the running loop on first iteration; closes ``client`` when the
    loop finalises its async generators (``loop.shutdown_asyncgens()``)."""
    try:
        yield
    finally:
        await client.aclose()


class _Retry(Exception):
    """Internal: this attempt failed in a way worth retrying."""

    def __init__(self, message: str, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


class OpenAIEmbedder:
    """Embeddings over HTTP from ``{base_url}/embeddings`` (OpenAI's wire format).

    ``api_key`` falls back to ``$OPENAI_API_KEY``; it is required for
    api.openai.com and optional for other (self-hosted) endpoints. ``dimensions``
    asks a text-embedding-3 model for shortened vectors; when it is not given the
    width is known for OpenAI's models and learned from the first response for
    others (reading :attr:`dimensions` or :attr:`model_id` before any embed then
    makes one small request). ``batch_size`` texts go in one request;
    ``max_retries`` retries follow a failed attempt, waiting
    ``backoff * 2**attempt`` seconds (capped at ``max_backoff``, with jitter) or
    what ``Retry-After`` says. ``timeout`` is per request, in seconds.

    Call :meth:`close` / :meth:`aclose` (or use ``with`` / ``async with``) when
    done; close the async client inside the event loop that used it.
    """

    def __init__(
        self,
        *,
        base_url: str = "https://api.openai.com/v1",
        model: str = "text-embedding-3-small",
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 128,
        max_retries: int = 4,
        timeout: float = 30.0,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._httpx = import_httpx("OpenAIEmbedder")
        self._url, self._headers = chat_endpoint(
            "OpenAIEmbedder", base_url, model, api_key, headers, path="/embeddings"
        )
        if dimensions is not None and (
            isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1
        ):
            raise ConfigurationError(f"dimensions must be a positive int, got {dimensions!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be a positive int, got {batch_size!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigurationError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if not timeout > 0 or backoff < 0 or max_backoff < 0:
            raise ConfigurationError("timeout must be > 0, backoff and max_backoff >= 0")
        self._model = model
        self._requested_dimensions = dimensions
        self._dimensions = dimensions if dimensions is not None else KNOWN_DIMENSIONS.get(model)
        self._batch_size = batch_size
        self._max_retries = max_retries
        self._timeout = float(timeout)
        self._backoff = float(backoff)
        self._max_backoff = float(max_backoff)
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None
        self._aclient_loop: asyncio.AbstractEventLoop | None = None
        self._aclient_guard: AsyncGenerator[None, None] | None = None
        self._lock = threading.Lock()
        self._closed = False

    # -- identity -------------------------------------------------------------------

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self.embed(["dimension probe"])
        assert self._dimensions is not None
        return self._dimensions

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}@{self.dimensions}"

    # -- request building and response parsing ---------------------------------------

    def _payload(self, batch: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._requested_dimensions is not None:
            payload["dimensions"] = self._requested_dimensions
        return payload

    def _delay(self, attempt: int, hint: float | None) -> float:
        if hint is not None:
            return min(hint, _MAX_RETRY_AFTER)
        base = min(self._max_backoff, self._backoff * (2.0**attempt))
        return base / 2 + random.uniform(0, base / 2)  # "equal jitter"

    def _check(self, response: httpx.Response, batch: list[str]) -> list[list[float]]:
        """Vectors from a response, or raise (``_Retry`` for a retryable failure)."""
        status = response.status_code
        if status == 200:
            return self._parse(response, len(batch))
        message = f"{self._url} answered {status}: {_error_message(response)}"
        if status == 429 and _error_code(response) == "insufficient_quota":
            raise StoreUnavailable(message)  # retrying cannot help
        if status in _RETRY_STATUS or status >= 500:
            raise _Retry(message, _retry_after(response))
        if status in (400, 413, 422):
            raise InvalidInput(message, field="texts")
        if status in (401, 403):
            raise ConfigurationError(f"{message} (check api_key / $OPENAI_API_KEY)")
        if status == 404:
            raise ConfigurationError(f"{message} (check model={self._model!r} and base_url)")
        raise StoreError(message)

    def _parse(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            body = response.json()
            items = sorted(body["data"], key=lambda item: int(item.get("index", 0)))
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(f"{self._url} returned a malformed embeddings response") from exc
        if len(vectors) != expected:
            raise StoreError(f"{self._url} returned {len(vectors)} vectors for {expected} texts")
        width = len(vectors[0]) if vectors else 0
        if width == 0 or any(len(v) != width for v in vectors):
            raise StoreError(f"{self._url} returned vectors of inconsistent width")
        if self._dimensions is None:
            self._dimensions = width
        elif width != self._dimensions:
            raise StoreError(
                f"{self._url} returned {width}-dimensional vectors, expected {self._dimensions}"
            )
        out = []
        for vector in vectors:
            norm = math.sqrt(math.fsum(x * x for x in vector))
            if not math.isfinite(norm) or norm == 0.0:
                raise StoreError(f"{self._url} returned a zero or non-finite vector")
            out.append([x / norm for x in vector])
        return out

    def _exhausted(self, last: _Retry) -> StoreUnavailable:
        attempts = self._max_retries + 1
        err = StoreUnavailable(f"embedding request failed after {attempts} attempt(s): {last}")
        err.__cause__ = last.__cause__ or last
        return err

    # -- sync -----------------------------------------------------------------------

    def _sync_client(self) -> httpx.Client:
        if self._closed:
            raise StoreClosed("OpenAIEmbedder is closed")
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._httpx.Client(headers=self._headers, timeout=self._timeout)
        assert self._client is not None
        return self._client

    def _post(self, batch: list[str]) -> list[list[float]]:
        client = self._sync_client()
        httpx = self._httpx
        payload = self._payload(batch)
        last: _Retry | None = None
        for attempt in range(self._max_retries + 1):
            if attempt:
                time.sleep(self._delay(attempt - 1, last.delay if last else None))
            try:
                response = client.post(self._url, json=payload)
                return self._check(response, batch)
            except _Retry as exc:
                last = exc
            except httpx.TransportError as exc:
                last = _Retry(f"{type(exc).__name__}: {exc}")
                last.__cause__ = exc
        assert last is not None
        raise self._exhausted(last)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` with one request per ``batch_size`` texts."""
        batch = check_texts(texts)
        out: list[list[float]] = []
        for start in range(0, len(batch), self._batch_size):
            out.extend(self._post(batch[start : start + self._batch_size]))
        return out

    def close(self) -> None:
        """Close the sync client (and forget the async one; see :meth:`aclose`)."""
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- async ----------------------------------------------------------------------

    async def _async_client(self) -> httpx.AsyncClient:
        if self._closed:
            raise StoreClosed("OpenAIEmbedder is closed")
        loop = asyncio.get_running_loop()
        client = self._aclient
        if client is None or client.is_closed or self._aclient_loop is not loop:
            # A client's connections belong to the loop that opened them, so each event
            # loop gets its own client, closed by the loop's shutdown_asyncgens() (which
            # asyncio.run() calls) unless aclose() closes it first.
            client = self._httpx.AsyncClient(headers=self._headers, timeout=self._timeout)
            guard = _close_at_loop_shutdown(client)
            await guard.__anext__()
            self._aclient, self._aclient_loop, self._aclient_guard = client, loop, guard
        assert client is not None
        return client

    async def _apost(self, batch: list[str]) -> list[list[float]]:
        client = await self._async_client()
        httpx = self._httpx
        payload = self._payload(batch)
        last: _Retry | None = None
        for attempt in range(self._max_retries + 1):
            if attempt:
                await asyncio.sleep(self._delay(attempt - 1, last.delay if last else None))
            try:
                response = await client.post(self._url, json=payload)
                return self._check(response, batch)
            except _Retry as exc:
                last = exc
            except httpx.TransportError as exc:
                last = _Retry(f"{type(exc).__name__}: {exc}")
                last.__cause__ = exc
        assert last is not None
        raise self._exhausted(last)

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async :meth:`embed`; batches are sent one after another."""
        batch = check_texts(texts)
        out: list[list[float]] = []
        for start in range(0, len(batch), self._batch_size):
            out.extend(await self._apost(batch[start : start + self._batch_size]))
        return out

    async def aclose(self) -> None:
        """Close both clients. Call it in the event loop that ran :meth:`aembed`."""
        self._closed = True
        guard, self._aclient_guard = self._aclient_guard, None
        self._aclient = None
        if guard is not None and self._aclient_loop is asyncio.get_running_loop():
            await guard.aclose()  # closes the client
        # A client opened in another loop is closed when that loop shuts down.
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self._model!r}, url={self._url!r})"
