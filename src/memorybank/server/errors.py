"""One error shape for every response of the server, mapped once from the library's tree.

Every error body is ``{"code", "message", "field"?, "request_id"}`` and every
response (errors or not) carries ``X-Request-ID``. The status comes from the
exception class:

=========================  ======  ==========================================
exception                  status  code
=========================  ======  ==========================================
``OutOfScope``             403     ``out_of_scope`` (with ``field``): a
                                   ``user_id``/``agent_id`` other than the caller's
``InvalidInput``           422     ``invalid_input`` (with ``field``)
request validation         422     ``invalid_input`` (``field``: the first bad
                                   parameter's location, e.g. ``body.content``;
                                   ``body`` for a body that is not UTF-8 JSON)
``NotFound``               404     ``not_found``
``ThreadForbidden``        403     ``thread_forbidden``
``Conflict``               409     ``conflict``
``CursorExpired``          410     ``cursor_expired``: a change-feed cursor
                                   older than the events kept
``ExtractionError``        502     ``extraction_error`` (the model's answer)
``StoreUnavailable``       503     ``store_unavailable`` (``Retry-After``)
``ConfigurationError``     503     ``store_unavailable`` (``Retry-After``) when
 from the store's driver           the store refused the server's login
``StoreClosed``            503     ``store_closed`` (``Retry-After``)
``StoreError``             500     ``store_error``
``ConfigurationError``     500     ``configuration_error``
``ApiError``               its     its own (``unauthorized``, ``forbidden``,
                                   ``payload_too_large``, ...)
anything else              500     ``internal_error`` (logged; nothing leaks)
=========================  ======  ==========================================

A 5xx answer never carries the store's own words (a driver's message names
the database's host, port, user and database): its message is a fixed
sentence per code (``public_error``), and the detail goes to the
``memorybank.server`` log with the request id and the route *template*
(never the path: paths name threads and users, which ``forget_user`` must be
able to erase).
"""

from __future__ import annotations

import functools
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memorybank.errors import (
    ConfigurationError,
    Conflict,
    CursorExpired,
    ExtractionError,
    InvalidInput,
    MemoryBankError,
    NotFound,
    OutOfScope,
    StoreClosed,
    StoreError,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.rules import validate as v
from memorybank.server.pagination import paging_last

__all__ = [
    "MISSING_KEY",
    "RETRY_AFTER_SECONDS",
    "ApiError",
    "ErrorBody",
    "RefusedCaller",
    "RequestIdMiddleware",
    "allowed_methods",
    "api_error",
    "error_response",
    "install_error_handlers",
    "library_error",
    "log_failure",
    "public_error",
    "refused_by_store",
    "request_id",
    "route_of",
    "status_of",
    "unauthorized",
]

log = logging.getLogger("memorybank.server")

#: ``Retry-After`` (seconds) sent with 503 when the store is unreachable.
RETRY_AFTER_SECONDS = 1
#: A client's ``X-Request-ID`` is kept when it is this sane; otherwise one is made.
_CLIENT_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")

_STATUS: tuple[tuple[type[MemoryBankError], int], ...] = (
    (OutOfScope, 403),
    (InvalidInput, 422),
    (NotFound, 404),
    (ThreadForbidden, 403),
    (Conflict, 409),
    (CursorExpired, 410),
    (ExtractionError, 502),
    (StoreUnavailable, 503),
    (StoreClosed, 503),
    (StoreError, 500),
    (ConfigurationError, 500),
)


class ErrorBody(BaseModel):
    """The body of every error response."""

    code: str
    message: str
    field: str | None = None
    request_id: str


class ApiError(Exception):
    """An error the server itself raises (auth, limits): status, stable code, message."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers or {}


#: The message of a request without ``Authorization: Bearer <key>``.
MISSING_KEY = "missing API key (Authorization: Bearer <key>)"


def unauthorized(message: str, challenge: str = "Bearer") -> ApiError:
    """401 ``unauthorized`` with the ``WWW-Authenticate`` challenge ``challenge``."""
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": challenge})


#: What a caller is told of a 5xx, by code (the detail is in the log, under the request id).
_PUBLIC_MESSAGES = {
    StoreUnavailable.code: "the store is unavailable; retry after Retry-After seconds",
    StoreClosed.code: "the store is closed (the server is stopping); retry on another node",
    StoreError.code: "the store failed; the server's log has the detail under this request id",
    ConfigurationError.code: "the server is misconfigured; its log has the detail under this"
    " request id",
}


def refused_by_store(error: MemoryBankError) -> bool:
    """Whether ``error`` is a store refusing the server's login (a ``ConfigurationError``
    raised from a driver's exception, not from memorybank's own option checks)."""
    cause = error.__cause__
    return (
        isinstance(error, ConfigurationError)
        and cause is not None
        and not isinstance(cause, MemoryBankError)
    )


def status_of(error: MemoryBankError) -> int:
    """The HTTP status of a library error (500 for a class not in the table)."""
    if refused_by_store(error):
        return 503
    for cls, status in _STATUS:
        if isinstance(error, cls):
            return status
    return 500


def public_error(
    scope: Scope, error: MemoryBankError
) -> tuple[int, str, str, dict[str, str] | None]:
    """What a caller may be told of ``error``: its status, stable code, message and
    headers (``Retry-After`` with a 503); a 5xx is logged (``log_failure`` under ``scope``).

    Below 500 (and for ``extraction_error``, the model's answer) the library's
    own message, which names the caller's input. A store failure or a
    misconfiguration gets a fixed sentence instead: the library's message
    carries the driver's words (host, port, user, database).
    """
    status = status_of(error)
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else None
    if status >= 500:
        log_failure(scope, error)
    if status < 500 or isinstance(error, ExtractionError):
        return status, error.code, str(error), headers
    code = StoreUnavailable.code if status == 503 and refused_by_store(error) else error.code
    return status, code, _PUBLIC_MESSAGES.get(code, "internal server error"), headers


def route_of(scope: Scope) -> str:
    """The route template of a request (``/v1/threads/{thread_id}``), never its path."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    return template if isinstance(template, str) else "unmatched"


def log_failure(scope: Scope, error: BaseException, what: str = "store failure") -> None:
    """Log ``error`` (with its chain: the driver's words) under the request id and route
    template of ``scope``; never the path, which names threads and users."""
    rid = scope.get("state", {}).get("request_id", "-")
    cause = error.__cause__
    log.warning(
        "%s on %s %s (request %s): %r%s",
        what,
        scope.get("method", "-"),
        route_of(scope),
        rid,
        error,
        "" if cause is None else f" (cause: {cause!r})",
    )


def request_id(request: Request) -> str:
    """The id of this request (set by ``RequestIdMiddleware``)."""
    rid = request.scope.get("state", {}).get("request_id")
    return rid if isinstance(rid, str) else "-"


def error_response(
    request: Request,
    status: int,
    code: str,
    message: str,
    *,
    field: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """A JSON error response in the one shape, with the request id."""
    body: dict[str, Any] = {"code": code, "message": message, "request_id": request_id(request)}
    if field is not None:
        body["field"] = field
    request.scope.setdefault("state", {})["error_code"] = code
    return JSONResponse(body, status_code=status, headers=headers)


async def library_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemoryBankError)
    status, code, message, headers = public_error(request.scope, exc)
    field = exc.field if isinstance(exc, InvalidInput) else None
    return error_response(request, status, code, message, field=field, headers=headers)


async def api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(
        request, exc.status, exc.code, exc.message, field=exc.field, headers=exc.headers
    )


#: How a handler asks whether a request refused before its route's dependencies ran
#: must be refused as unauthenticated first (``deps.refused_caller``, given to
#: ``install_error_handlers``): ``None`` when not.
RefusedCaller = Callable[[Request], Awaitable[JSONResponse | None]]


async def _validation_error(
    request: Request, exc: Exception, *, refused_caller: RefusedCaller
) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    refused = await refused_caller(request)
    if refused is not None:
        return refused
    problems = paging_last(request.scope.get("route"), exc.errors())
    problem = v.schema_problems(problems)
    return error_response(request, 422, problem.code, str(problem), field=problem.field)


_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


async def _http_error(
    request: Request, exc: Exception, *, refused_caller: RefusedCaller
) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:  # FastAPI could not decode the body (not UTF-8, ...)
        refused = await refused_caller(request)
        if refused is not None:
            return refused
        return error_response(request, 422, InvalidInput.code, f"body: {exc.detail}", field="body")
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405:
        allow = ", ".join(allowed_methods(request.app, request.scope))
        if request.method == "OPTIONS":  # no route answers OPTIONS: the path's methods
            return Response(status_code=204, headers={"Allow": allow})
        headers = {**(headers or {}), "Allow": allow}
    return error_response(request, exc.status_code, code, str(exc.detail), headers=headers)


#: The order ``Allow`` lists methods in.
_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(app: Any, scope: Scope) -> list[str]:
    """Every method some route of ``app`` answers on the path of ``scope``, with ``OPTIONS``.

    Starlette's own 405 names the methods of the first route matching the path
    only (``GET`` for ``/v1/threads/{thread_id}``, which ``PATCH`` and ``DELETE``
    routes serve too)."""
    methods = {"OPTIONS"}
    for pattern, answered in _route_methods(app.router.routes, ""):
        if pattern.fullmatch(scope["path"]):
            methods |= answered
    rank = {m: i for i, m in enumerate(_METHOD_ORDER)}
    return sorted(methods, key=lambda m: (rank.get(m, len(rank)), m))


def _route_methods(routes: Any, prefix: str) -> list[tuple[re.Pattern[str], set[str]]]:
    """``(path regex, methods)`` of every route under ``routes``, through included routers
    (FastAPI keeps an included router whole, under its prefix)."""
    found: list[tuple[re.Pattern[str], set[str]]] = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            context = getattr(route, "include_context", None)
            found += _route_methods(inner.routes, prefix + getattr(context, "prefix", ""))
            continue
        path, answered = getattr(route, "path_format", None), getattr(route, "methods", None)
        if isinstance(path, str) and answered:
            regex = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(prefix + path))
            found.append((re.compile(regex), set(answered)))
    return found


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    rid = request_id(request)
    log.exception(
        "unhandled error on %s %s (request %s)", request.method, route_of(request.scope), rid
    )
    return error_response(request, 500, "internal_error", "internal server error")


def install_error_handlers(app: FastAPI, refused_caller: RefusedCaller) -> None:
    """Route every error of ``app`` through the one shape above; ``refused_caller``
    answers a request refused before authentication (``deps.refused_caller``)."""
    app.add_exception_handler(MemoryBankError, library_error)
    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(
        RequestValidationError, functools.partial(_validation_error, refused_caller=refused_caller)
    )
    app.add_exception_handler(
        StarletteHTTPException, functools.partial(_http_error, refused_caller=refused_caller)
    )
    app.add_exception_handler(Exception, _unexpected)


class RequestIdMiddleware:
    """Gives every request an id (the client's ``X-Request-ID`` when sane) and echoes it.

    Also enforces the body size limit: a ``Content-Length`` over ``max_body_bytes``
    is refused before the body is read, and a streamed body is cut off (413)
    as soon as it passes the limit.
    """

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = ""
        length: int | None = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                given = value.decode("latin-1")
            elif name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = None
        rid = given if _CLIENT_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        header = (b"x-request-id", rid.encode("latin-1"))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], header]
            await send(message)

        limit = self.max_body_bytes
        if length is not None and length > limit:
            await self._too_large(scope, receive, send_with_id)
            return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # FastAPI re-raises an HTTPException met while reading the body.
                    raise HTTPException(413, f"request body over {limit} bytes")
            return message

        await self.app(scope, limited_receive, send_with_id)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = error_response(
            request, 413, "payload_too_large", f"request body over {self.max_body_bytes} bytes"
        )
        await response(scope, receive, send)
