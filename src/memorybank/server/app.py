"""The ASGI application: ``create_app(url)`` serves one store over HTTP.

One ``AsyncMemory`` (one store pool) per process, opened at startup and
closed at shutdown; every request gets a handle confined to its caller's
tenant (and end user) from ``memorybank.server.deps``.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.types import Message

from memorybank import __version__
from memorybank.consolidation.config import CONSOLIDATE_EVERY_ENV, judge_from
from memorybank.consolidation.config import consolidate_every as every_from
from memorybank.embeddings.base import Embedder
from memorybank.embeddings.named import EMBEDDER_ENV, embedder_named
from memorybank.embeddings.status import EMBED_ENV, EMBED_LEASE_ENV, EmbedMode, embed_mode
from memorybank.embeddings.status import embed_lease as embed_lease_seconds
from memorybank.errors import ConfigurationError
from memorybank.memory._async.memory import AsyncMemory
from memorybank.server import store_rpc, ui
from memorybank.server.circuit import StoreCircuit
from memorybank.server.deps import document_auth, refused_caller
from memorybank.server.docs import install_docs
from memorybank.server.errors import ErrorBody, RequestIdMiddleware, install_error_handlers
from memorybank.server.keys import DEFAULT_CACHE_SECONDS, KeyRing
from memorybank.server.ops import Metrics, ObservabilityMiddleware
from memorybank.server.routes import (
    admin,
    cortex,
    embedding,
    events,
    graph,
    maintain,
    records,
    threads,
)
from memorybank.server.routes import webhooks as webhook_routes
from memorybank.server.supervise import exit_with_master
from memorybank.stores.contract._async.leases import lease_from_text
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.webhooks.delivery import DEFAULT_WEBHOOK_LEASE, WebhookWorker
from memorybank.webhooks.registry import Webhooks

if TYPE_CHECKING:
    from memorybank.core.judge import LLMJudge
    from memorybank.server.mcp import McpMount

__all__ = [
    "ADMIN_KEY_ENV",
    "DEFAULT_MAX_BODY_BYTES",
    "EMBED_ENV",
    "KEY_CACHE_ENV",
    "MAX_BODY_ENV",
    "WEBHOOKS_ENV",
    "WEBHOOK_LEASE_ENV",
    "app_from_env",
    "create_app",
]

#: Environment variable read for the admin key when ``admin_key`` is not given.
ADMIN_KEY_ENV = "MEMORYBANK_ADMIN_KEY"
DEFAULT_MAX_BODY_BYTES = 1_048_576
#: Environment variable read by ``app_from_env`` for ``max_body_bytes``.
MAX_BODY_ENV = "MEMORYBANK_MAX_BODY_BYTES"
#: Environment variable read by ``app_from_env`` for ``key_cache_seconds``.
KEY_CACHE_ENV = "MEMORYBANK_KEY_CACHE_SECONDS"
#: Environment variable read by ``app_from_env`` for ``webhooks`` (``on``, the default, or ``off``).
WEBHOOKS_ENV = "MEMORYBANK_WEBHOOKS"
#: Environment variable read by ``app_from_env`` for ``webhook_lease`` (seconds).
WEBHOOK_LEASE_ENV = "MEMORYBANK_WEBHOOK_LEASE"

#: The error answers of every route that needs a key (see ``document_auth``).
_ERRORS: dict[int, str] = {
    401: "Missing, bad or revoked API key",
    403: "Forbidden (thread of another user, a user_id other than X-User-Id's, or admin route)",
    404: "Not found (also: another tenant's id)",
    409: "Conflict",
    413: "Request body too large",
    422: "Invalid input",
    503: "Store unavailable (retry after Retry-After seconds)",
}


def create_app(
    url: str | None = None,
    *,
    memory: AsyncMemory | None = None,
    admin_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    mcp: bool = True,
    embedder: Embedder | None = None,
    key_cache_seconds: float = DEFAULT_CACHE_SECONDS,
    embed: EmbedMode = "background",
    embed_lease: float | None = None,
    webhooks: bool = True,
    webhook_lease: float = DEFAULT_WEBHOOK_LEASE,
    judge: LLMJudge | None = None,
    consolidate_every: float | None = None,
) -> FastAPI:
    """The memorybank HTTP API over the store at ``url`` (or over ``memory``).

    Args:
        url: the store URL (``None``: ``$MEMORYBANK_URL``, else the embedded
            SQLite default, as ``AsyncMemory()``). Opened at startup, closed
            at shutdown. Ignored when ``memory`` is given.
        memory: an open ``AsyncMemory`` to serve instead (you keep owning it:
            it is not closed at shutdown).
        admin_key: the key that manages keys and tenants (``None``:
            ``$MEMORYBANK_ADMIN_KEY``; unset: no admin routes work).
        max_body_bytes: largest request body; larger ones get 413.
        mcp: serve the MCP tools (streamable HTTP) at ``/mcp`` with the same
            keys, when the ``mcp`` extra is installed (see ``memorybank.server.mcp``).
        embedder: embeds what is written and powers semantic search (``None``:
            keyword search only). Ignored when ``memory`` is given.
        key_cache_seconds: how long a verified API key is trusted without
            reading its record: the longest a key revoked by another process
            (``memorybank keys revoke``, another worker) keeps working here.
            ``0``: read on every request. Revocations through this process's
            admin routes take effect at once either way.
        embed: ``"background"`` (the default): a write returns once stored and a
            worker adds the vectors (``GET /v1/embedding/status``, ``/metrics``);
            what a stopped process left pending is resumed at startup.
            ``"inline"``: every write embeds before it answers. Ignored when
            ``memory`` is given (its own ``embed`` applies).
        embed_lease: seconds a worker holds a journal record it embeds, so several
            workers and nodes never embed one record twice (``None``:
            ``DEFAULT_LEASE``; see ``AsyncMemory(embed_lease=...)``). Ignored when
            ``memory`` is given.
        webhooks: run a webhook delivery worker in this process
            (``memorybank.webhooks.delivery.WebhookWorker``: each endpoint registered under
            ``/v1/admin/webhooks`` is delivered by one worker at a time, whatever the
            number of processes and nodes). ``False``: this process only manages them.
        webhook_lease: seconds the worker holds an endpoint it delivers: a killed
            node's endpoints are taken over by another when it runs out. Keep it
            longer than one delivery's timeout (10 s).
        judge: an ``LLMJudge`` for ``POST /v1/consolidate`` and the background runs (see
            ``memorybank.consolidation.config``; ``None``: the rules alone). Closed at
            shutdown. Ignored when ``memory`` is given.
        consolidate_every: seconds between two background consolidation ticks (``None``:
            no background consolidation): each tenant served (or with a key) is looked
            after by one process or node at a time (``AsyncMemory(consolidate=
            "background")``). Ignored when ``memory`` is given.
    """
    if admin_key is None:
        admin_key = os.environ.get(ADMIN_KEY_ENV) or None
    lease = embed_lease_seconds(None) if embed_lease is None else embed_lease

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = memory is None
        mem = (
            AsyncMemory(
                url,
                embedder=embedder,
                embed=embed,
                embed_lease=lease,
                judge=judge,
                consolidate="off" if consolidate_every is None else "background",
                consolidate_every=consolidate_every or 3600.0,
            )
            if memory is None
            else memory
        )
        metrics.instrument(mem.store)
        await mem.embedding.start()  # resume what a stopped process left pending
        circuit = _circuit(mem.store)
        app.state.circuit = circuit
        app.state.memory = mem
        app.state.keys = KeyRing(mem.store, cache_seconds=key_cache_seconds)
        app.state.webhooks = Webhooks(mem.store)
        worker = WebhookWorker(mem, lease=webhook_lease) if webhooks else None
        app.state.webhook_worker = worker
        if owned and consolidate_every is not None:
            for info in await app.state.keys.list():  # the tenants to look after
                mem.tenant(info.tenant)
            await mem.__aenter__()  # starts background consolidation
        await _warm_routes(app)
        if worker is not None:
            await worker.start()
        try:
            async with AsyncExitStack() as stack:
                if mcp_mount is not None:  # a mounted app's own lifespan never runs
                    await stack.enter_async_context(mcp_mount.running())
                yield
        finally:
            if worker is not None:
                await worker.stop()
            await circuit.stop()
            if owned:
                await mem.close()
                if judge is not None:
                    await judge.aclose()

    app = FastAPI(
        title="memorybank",
        version=__version__,
        description=(
            "Memory for LLM agents over HTTP. Authenticate with `Authorization: Bearer <key>`; "
            "name the end user with `X-User-Id`. Every error is "
            '`{"code", "message", "field"?, "request_id"}`.'
        ),
        lifespan=lifespan,
        docs_url=None,  # served by install_docs, with their assets
        redoc_url=None,
    )
    metrics = Metrics()
    app.state.admin_key = admin_key
    app.state.metrics = metrics
    install_error_handlers(app, refused_caller)
    # The last added runs first: timing and the access log see every response,
    # including a 413 the body limit sends before routing.
    app.add_middleware(RequestIdMiddleware, max_body_bytes=max_body_bytes)
    app.add_middleware(ObservabilityMiddleware, metrics=metrics)

    # Routing tries routes in order, each costing a few microseconds: the probes
    # first (hit often, exact paths), then the reference routes (the hot path).
    @app.get("/healthz", tags=["ops"], summary="The process is up (no key needed)")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/readyz",
        tags=["ops"],
        summary="The store answers (no key needed)",
        responses={503: {"model": ErrorBody}},
    )
    async def readyz(request: Request) -> JSONResponse:
        mem: AsyncMemory = request.app.state.memory
        await mem.store.thread_get("~readyz", "~readyz")  # any read reaches the store
        return JSONResponse({"status": "ready"})

    @app.get(
        "/metrics",
        tags=["ops"],
        summary="Prometheus metrics (no key needed)",
        response_class=PlainTextResponse,
    )
    async def metrics_text(request: Request) -> PlainTextResponse:
        mem: AsyncMemory = request.app.state.memory
        metrics.observe_embedding(mem.embedding.totals())
        return PlainTextResponse(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    routers = [
        module.router()
        for module in (
            cortex,
            threads,
            records,
            maintain,
            embedding,
            graph,
            events,
            admin,
            webhook_routes,
            store_rpc,
            ui,
        )
    ]
    for api in routers:
        app.include_router(api)

    document_auth(app, routers, _ERRORS)
    install_docs(app)
    mcp_mount = _mount_mcp(app) if mcp else None

    return app


def _circuit(store: AsyncStore) -> StoreCircuit:
    """The store's circuit, made and wired on first use (a store served twice keeps one)."""
    known = getattr(store, "_memorybank_circuit", None)
    if isinstance(known, StoreCircuit):
        return known
    circuit = StoreCircuit(store)
    circuit.instrument()
    store._memorybank_circuit = circuit  # type: ignore[attr-defined]
    return circuit


def _mount_mcp(app: FastAPI) -> McpMount | None:
    """Route ``/mcp`` to the MCP tools; ``None`` (no route) without the ``mcp`` extra."""
    if importlib.util.find_spec("mcp") is None:
        return None
    from starlette.routing import Route

    from memorybank.server.mcp import MCP_PATH, McpMount

    mount = McpMount(lambda: app.state.memory, lambda: app.state.keys)
    # A plain route (not a Mount): /mcp answers without a redirect to /mcp/.
    app.router.routes.append(Route(MCP_PATH, endpoint=mount))
    return mount


async def _warm_routes(app: FastAPI) -> None:
    """Route one request that matches nothing, before serving.

    FastAPI prepares each included route (its parameters' models) on the first
    request that reaches it: seconds for this route table on a busy machine,
    which the first client would otherwise wait for (and time out on). A path
    that matches no route walks them all; nothing else happens (404)."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/~warm-up",
        "raw_path": b"/~warm-up",
        "root_path": "",
        "query_string": b"",
        "headers": [],
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        return None

    await app.router(scope, receive, send)


def app_from_env() -> FastAPI:
    """``create_app`` configured by the environment: ``$MEMORYBANK_URL``,
    ``$MEMORYBANK_ADMIN_KEY``, ``$MEMORYBANK_MAX_BODY_BYTES``, ``$MEMORYBANK_EMBEDDER``
    (``local``, ``openai`` or ``none``, see ``memorybank.embeddings.named``),
    ``$MEMORYBANK_KEY_CACHE_SECONDS``, ``$MEMORYBANK_EMBED`` (``background``, the
    default, or ``inline``), ``$MEMORYBANK_EMBED_LEASE`` (seconds),
    ``$MEMORYBANK_WEBHOOKS`` (``on``, the default, or ``off``: no delivery worker here),
    ``$MEMORYBANK_WEBHOOK_LEASE`` (seconds, 30 by default), the
    judge's ``$MEMORYBANK_JUDGE_URL``, ``$MEMORYBANK_JUDGE_MODEL`` and
    ``$MEMORYBANK_JUDGE_API_KEY`` and ``$MEMORYBANK_CONSOLIDATE_EVERY``
    (``memorybank.consolidation.config``). The factory
    ``memorybank serve`` hands uvicorn, so every worker process builds its own app."""
    exit_with_master()  # a worker of `serve --workers N` ends with its master
    raw = os.environ.get(MAX_BODY_ENV)
    ttl = os.environ.get(KEY_CACHE_ENV)
    return create_app(
        os.environ.get("MEMORYBANK_URL") or None,
        max_body_bytes=int(raw) if raw else DEFAULT_MAX_BODY_BYTES,
        embedder=embedder_named(os.environ.get(EMBEDDER_ENV)),
        key_cache_seconds=float(ttl) if ttl else DEFAULT_CACHE_SECONDS,
        embed=embed_mode(os.environ.get(EMBED_ENV)),
        embed_lease=embed_lease_seconds(os.environ.get(EMBED_LEASE_ENV)),
        webhooks=_switch(os.environ.get(WEBHOOKS_ENV), WEBHOOKS_ENV),
        webhook_lease=lease_from_text(
            os.environ.get(WEBHOOK_LEASE_ENV), WEBHOOK_LEASE_ENV, DEFAULT_WEBHOOK_LEASE
        ),
        judge=judge_from(),
        consolidate_every=every_from(os.environ.get(CONSOLIDATE_EVERY_ENV)),
    )


def _switch(raw: str | None, name: str) -> bool:
    """An on/off environment variable (unset: on)."""
    value = (raw or "on").strip().lower()
    if value in ("on", "1", "true", "yes"):
        return True
    if value in ("off", "0", "false", "no"):
        return False
    raise ConfigurationError(f"${name} must be on or off, got {raw!r}")
