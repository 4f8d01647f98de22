"""The ASGI application: ``create_app(url)`` serves one store over HTTP.

One ``AsyncMemory`` (one store pool) per process, opened at startup and
closed at shutdown; every request gets a handle confined to its caller's
tenant (and end user) from ``memorybank.server.deps``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from memorybank import __version__
from memorybank._async.memory import AsyncMemory
from memorybank.server.errors import ErrorBody, RequestIdMiddleware, install_error_handlers
from memorybank.server.keys import KeyRing

__all__ = ["ADMIN_KEY_ENV", "DEFAULT_MAX_BODY_BYTES", "create_app"]

#: Environment variable read for the admin key when ``admin_key`` is not given.
ADMIN_KEY_ENV = "MEMORYBANK_ADMIN_KEY"
DEFAULT_MAX_BODY_BYTES = 1_048_576

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in (
        (401, "Missing, bad or revoked API key"),
        (403, "Forbidden (thread of another user, or admin route)"),
        (404, "Not found (also: another tenant's id)"),
        (409, "Conflict"),
        (413, "Request body too large"),
        (422, "Invalid input"),
        (503, "Store unavailable (retry after Retry-After seconds)"),
    )
}


def create_app(
    url: str | None = None,
    *,
    memory: AsyncMemory | None = None,
    admin_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
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
    """
    if admin_key is None:
        admin_key = os.environ.get(ADMIN_KEY_ENV) or None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = memory is None
        mem = AsyncMemory(url) if memory is None else memory
        app.state.memory = mem
        app.state.keys = KeyRing(mem.store)
        try:
            yield
        finally:
            if owned:
                await mem.close()

    app = FastAPI(
        title="memorybank",
        version=__version__,
        description=(
            "Memory for LLM agents over HTTP. Authenticate with `Authorization: Bearer <key>`; "
            "name the end user with `X-User-Id`. Every error is "
            '`{"code", "message", "field"?, "request_id"}`.'
        ),
        lifespan=lifespan,
        responses=_ERRORS,
    )
    app.state.admin_key = admin_key
    install_error_handlers(app)
    app.add_middleware(RequestIdMiddleware, max_body_bytes=max_body_bytes)

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
        await mem.store.get_thread("~readyz", "~readyz")  # any read reaches the store
        return JSONResponse({"status": "ready"})

    return app
