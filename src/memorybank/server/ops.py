"""Operations: Prometheus metrics, JSON access logs, store latency.

``/metrics`` exposes (Prometheus text format, ``prometheus-client``):

* ``memorybank_http_request_duration_seconds{method, route, status}``: request
  latency per route *template* (``/v1/threads/{thread_id}``, never an id);
* ``memorybank_http_errors_total{code}``: error responses by the body's ``code``;
* ``memorybank_store_call_duration_seconds{call}``: latency of each store call;
* ``memorybank_embedding_pending``, ``memorybank_embedding_queue_capacity``
  (gauges) and ``memorybank_embedding_embedded_total``,
  ``memorybank_embedding_failed_total`` (counters): background embedding, every
  tenant (see ``memorybank.core._async.embedding``).

Each app has its own registry. With several worker processes, set
``PROMETHEUS_MULTIPROC_DIR`` (``memorybank serve --workers N`` sets it) and
``/metrics`` adds up every worker's values.

Every request is logged once, as one JSON object, on the
``memorybank.server.access`` logger (method, route template, status, duration,
request id, key id, error code). The path itself is not logged: it names
threads and users, which ``forget_user`` must be able to erase.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memorybank.embeddings.status import EmbeddingStatus
from memorybank.server.errors import route_of
from memorybank.stores.contract._async.store import AsyncStore

__all__ = ["JsonFormatter", "Metrics", "ObservabilityMiddleware", "access_log", "configure_logging"]

access_log = logging.getLogger("memorybank.server.access")

_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The app's Prometheus metrics, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Histogram(
            "memorybank_http_request_duration_seconds",
            "HTTP request latency by route template",
            ["method", "route", "status"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "memorybank_http_errors",
            "Error responses by code",
            ["code"],
            registry=self.registry,
        )
        self.store_calls = Histogram(
            "memorybank_store_call_duration_seconds",
            "Store call latency by method",
            ["call"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.embed_pending = Gauge(
            "memorybank_embedding_pending",
            "Entries and documents stored and not embedded yet (background embedding)",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.embed_capacity = Gauge(
            "memorybank_embedding_queue_capacity",
            "Texts the background embedding queue holds before a write waits",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.embedded = Counter(
            "memorybank_embedding_embedded",
            "Vectors stored by the background embedding worker",
            registry=self.registry,
        )
        self.embed_failed = Counter(
            "memorybank_embedding_failed",
            "Texts the background embedding worker failed on",
            registry=self.registry,
        )
        self._embed_seen = (0, 0)  # (embedded, failed) already added to the counters
        # (method, route template, status) -> its histogram's observe: bounded by
        # the route table times the statuses actually sent.
        self._request_series: dict[tuple[str, str, int], Callable[[float], None]] = {}

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Record one request (the labelled series is looked up once, then kept)."""
        key = (method, route, status)
        observe = self._request_series.get(key)
        if observe is None:
            observe = self.requests.labels(method, route, str(status)).observe
            self._request_series[key] = observe
        observe(seconds)

    def observe_embedding(self, status: EmbeddingStatus) -> None:
        """Bring the embedding series up to ``status`` (every tenant's totals)."""
        self.embed_pending.set(status.pending)
        self.embed_capacity.set(status.capacity)
        embedded, failed = self._embed_seen
        if status.embedded > embedded:
            self.embedded.inc(status.embedded - embedded)
        if status.failed > failed:
            self.embed_failed.inc(status.failed - failed)
        self._embed_seen = (max(embedded, status.embedded), max(failed, status.failed))

    def render(self) -> bytes:
        """The exposition text (every worker's, in multiprocess mode)."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)

    def instrument(self, store: AsyncStore) -> None:
        """Time every contract method of ``store`` (wrapping its bound methods once)."""
        if getattr(store, "_memorybank_timed", False):
            return
        for name in sorted(AsyncStore.__abstractmethods__ - {"close"}):
            method = getattr(store, name)
            setattr(store, name, self._timed(name, method))
        store._memorybank_timed = True  # type: ignore[attr-defined]

    def _timed(
        self, name: str, method: Callable[..., Awaitable[Any]]
    ) -> Callable[..., Awaitable[Any]]:
        observe = self.store_calls.labels(name).observe

        @functools.wraps(method)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                observe(time.perf_counter() - start)

        return timed


class ObservabilityMiddleware:
    """Times each request, counts errors by code and writes the JSON access log line."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            elapsed = time.perf_counter() - start
            template = route_of(scope)
            state = scope.get("state", {})
            code = state.get("error_code")
            self.metrics.observe_request(scope["method"], template, status, elapsed)
            if code is not None:
                self.metrics.errors.labels(code).inc()
            if access_log.isEnabledFor(logging.INFO):
                access_log.info(
                    json.dumps(
                        {
                            "event": "request",
                            "method": scope["method"],
                            "route": template,
                            "status": status,
                            "ms": round(elapsed * 1000, 3),
                            "request_id": state.get("request_id"),
                            "key_id": state.get("key_id"),
                            "code": code,
                        },
                        ensure_ascii=False,
                    )
                )


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, and the message (an access
    log line's fields are merged in rather than nested as text)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        message = record.getMessage()
        if record.name == access_log.name and message.startswith("{"):
            out.update(json.loads(message))
        else:
            out["message"] = message
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure_logging(level: int = logging.INFO) -> None:
    """Send memorybank's and uvicorn's logs to stderr as JSON lines (``serve`` does this)."""
    import time as _time

    handler = logging.StreamHandler()
    formatter = JsonFormatter()
    formatter.converter = _time.gmtime
    handler.setFormatter(formatter)
    for name in ("memorybank", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False
