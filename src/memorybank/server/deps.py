"""Who is calling, and the memory handle a request may use: FastAPI dependencies.

These names are the contract between the server's routers (``Caller``,
``caller``, ``tenant_caller``, ``admin_caller``, ``tenant_memory``,
``root_memory``, ``key_ring`` and the ``*Dep`` aliases): a router takes
``memory: MemoryDep`` and never sees another tenant, nor another user when
the request names one.

Authentication is ``Authorization: Bearer <key>``: a tenant's API key (see
``memorybank.server.keys``) or the admin key. The end user is named per
request by ``X-User-Id``; the handle is then ``root.tenant(T).scoped(user_id=U)``
and the library's fail-closed ownership applies unchanged. The admin key acts
on a tenant's routes only with ``X-Tenant-Id``.

Each dependency takes the ``Request`` alone and reads its headers itself: a
FastAPI dependency tree costs hundreds of microseconds per request to solve,
more than the store read of the hottest route. The caller is resolved once per
request (kept in the request's scope state), and ``document_auth`` puts the
security scheme and the two headers back into the OpenAPI schema of every
route that uses one of these dependencies.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import unquote_to_bytes

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.openapi.models import HTTPBearer as HTTPBearerModel
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.datastructures import Headers

from memorybank.errors import InvalidInput, MemoryBankError
from memorybank.memory._async.memory import AsyncMemory
from memorybank.rules import validate as v
from memorybank.server.errors import (
    MISSING_KEY,
    ApiError,
    ErrorBody,
    api_error,
    library_error,
    unauthorized,
)
from memorybank.server.keys import KeyRing
from memorybank.server.raw_headers import PADDED
from memorybank.server.schema_limits import state_limits

__all__ = [
    "SECURITY_SCHEME",
    "AdminDep",
    "Caller",
    "CallerDep",
    "MemoryDep",
    "admin_caller",
    "authenticate",
    "bearer",
    "caller",
    "document_auth",
    "header_id",
    "in_tenant",
    "key_ring",
    "memory_of",
    "refused_caller",
    "root_memory",
    "tenant_caller",
    "tenant_memory",
]

#: The name of the bearer scheme in the OpenAPI schema.
SECURITY_SCHEME = "HTTPBearer"
_STATE_KEY = "caller"


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller of one request.

    ``tenant`` is the key's tenant (for the admin key: ``X-Tenant-Id`` when
    given, else ``None``); ``key_id`` the key's public id (``None`` for the
    admin key); ``user_id`` the end user named by ``X-User-Id`` (``None``: the
    request acts for the tenant as a whole).
    """

    tenant: str | None
    key_id: str | None
    is_admin: bool
    user_id: str | None


def root_memory(request: Request) -> AsyncMemory:
    """The process's one ``AsyncMemory`` (unscoped: only the server's code may hold it)."""
    memory: AsyncMemory = request.app.state.memory
    return memory


def key_ring(request: Request) -> KeyRing:
    """The process's ``KeyRing``."""
    keys: KeyRing = request.app.state.keys
    return keys


async def authenticate(
    request: Request, secret: str | None, user_id: str | None, tenant: str | None
) -> Caller:
    """The caller of API key (or admin key) ``secret`` acting for ``user_id``
    (``X-User-Id``) and, for the admin key only, in ``tenant`` (``X-Tenant-Id``).

    401 ``unauthorized`` without a key, or with a bad or revoked one.
    """
    if not secret:
        raise unauthorized(MISSING_KEY)
    state = request.scope.setdefault("state", {})  # the key id goes to the access log
    admin_key: str | None = request.app.state.admin_key
    # Authenticate first: an unauthenticated request learns nothing, not even 422s.
    if admin_key is not None and hmac.compare_digest(secret.encode(), admin_key.encode()):
        state["key_id"] = "admin"
        checked = None if tenant is None else v.check_tenant(tenant, "X-Tenant-Id")
        return Caller(tenant=checked, key_id=None, is_admin=True, user_id=_user(user_id))
    peer = request.client
    info = await key_ring(request).verify(secret, client=None if peer is None else peer.host)
    if info is None:
        raise unauthorized("invalid or revoked API key")
    state["key_id"] = info.id
    return Caller(tenant=info.tenant, key_id=info.id, is_admin=False, user_id=_user(user_id))


def bearer(header: str | None) -> str | None:
    """The credentials of ``Authorization: Bearer <credentials>`` (as FastAPI's ``HTTPBearer``)."""
    if not header:
        return None
    scheme, _, credentials = header.partition(" ")
    credentials = credentials.strip()
    if not scheme or not credentials or scheme.lower() != "bearer":
        return None
    return credentials


async def caller(request: Request) -> Caller:
    """The caller of this request, from ``Authorization``, ``X-User-Id`` and
    ``X-Tenant-Id`` (resolved once per request)."""
    state = request.scope.setdefault("state", {})
    known = state.get(_STATE_KEY)
    if isinstance(known, Caller):
        return known
    headers = request.headers
    problem = _user_header_problem(headers)
    user: str | None = None
    if problem is None:
        try:
            user = header_id(headers, "X-User-Id")
        except InvalidInput as error:
            problem = str(error)
    who = await authenticate(  # first: an unauthenticated caller learns nothing, not even 422s
        request, bearer(headers.get("authorization")), user, headers.get("x-tenant-id")
    )
    if problem is not None:
        raise InvalidInput(problem, field="X-User-Id")
    state[_STATE_KEY] = who
    return who


def _user_header_problem(headers: Headers) -> str | None:
    """Why the request's ``X-User-Id`` is not exactly one id, or ``None`` (its characters are
    checked by ``header_id``). Never normalised: ``" alice"`` is not ``"alice"``."""
    if headers.get(PADDED) is not None:  # see memorybank.server.raw_headers
        return (
            "X-User-Id has whitespace around the id (leading spaces or tabs, or trailing"
            " ones): send the user id exactly, nothing around it"
        )
    if len(headers.getlist("x-user-id")) + len(headers.getlist("x-user-id-encoded")) > 1:
        return (
            "X-User-Id is given more than once: send one user id, in X-User-Id or X-User-Id-Encoded"
        )
    return None


def _user(user_id: str | None) -> str | None:
    return None if user_id is None else v.check_id(user_id, "X-User-Id")


#: Characters of an ``*-Encoded`` header: visible ASCII, ``%`` only before two hex digits.
_PERCENT_ENCODED = re.compile(r"(?:[!-$&-~]|%[0-9A-Fa-f]{2})+")


def header_id(headers: Mapping[str, str], name: str) -> str | None:
    """The id header ``name`` (``X-User-Id``, ``X-Agent-Id``) of a request names, or ``None``.

    The value is the id's UTF-8 bytes (HTTP servers hand header values over as
    Latin-1 text, which is undone here), or, in ``<name>-Encoded``, the id's UTF-8
    bytes percent-encoded (``zo%C3%AB``, what ``encodeURIComponent`` gives) for a
    client that cannot send other bytes than ASCII (``fetch`` in browsers and Node).
    The id is then checked as the library checks every id (``check_id``) and kept
    exactly: never normalised, as the library never normalises an id.
    """
    raw = headers.get(name.lower())
    encoded = headers.get(f"{name.lower()}-encoded")
    if raw is not None and encoded is not None:
        raise InvalidInput(f"send {name} or {name}-Encoded, not both", field=name)
    if encoded is not None:
        if _PERCENT_ENCODED.fullmatch(encoded) is None:
            raise InvalidInput(
                f"{name}-Encoded must be the id's UTF-8 bytes percent-encoded (visible ASCII,"
                " % before two hex digits, as encodeURIComponent gives)",
                field=name,
            )
        data = unquote_to_bytes(encoded)
    elif raw is not None:
        if raw.isascii():
            return v.check_id(raw, name)
        data = raw.encode("latin-1", "replace")
    else:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(
            f"{name} is not UTF-8: send the id's UTF-8 bytes, or percent-encode them in"
            f" {name}-Encoded",
            field=name,
        ) from None
    return v.check_id(text, name)


def in_tenant(who: Caller) -> Caller:
    """``who``, acting in one tenant (the admin key needs ``X-Tenant-Id``: else 422)."""
    if who.tenant is None:
        raise InvalidInput("the admin key needs X-Tenant-Id on tenant routes", field="X-Tenant-Id")
    return who


async def tenant_caller(request: Request) -> Caller:
    """The caller, acting in one tenant (see ``in_tenant``)."""
    return in_tenant(await caller(request))


async def admin_caller(request: Request) -> Caller:
    """The admin: 403 ``forbidden`` for a tenant's key."""
    who = await caller(request)
    if not who.is_admin:
        raise ApiError(403, "forbidden", "this route needs the admin key")
    return who


def memory_of(request: Request, who: Caller) -> AsyncMemory:
    """``root.tenant(T)``, or ``root.tenant(T).scoped(user_id=U)`` when ``X-User-Id`` is given."""
    assert who.tenant is not None
    handle = root_memory(request).tenant(who.tenant)
    return handle if who.user_id is None else handle.scoped(user_id=who.user_id)


async def tenant_memory(request: Request) -> AsyncMemory:
    """The memory handle of this request's caller (see ``memory_of``)."""
    return memory_of(request, await tenant_caller(request))


_AUTH_DEPENDENCIES = frozenset({caller, tenant_caller, admin_caller, tenant_memory})

#: An id in a header, as OpenAPI can say it: visible ASCII, spaces inside only, at most
#: ``MAX_ID_LENGTH`` characters (the server also takes UTF-8 bytes, see ``header_id``).
_ID_SCHEMA: dict[str, Any] = {
    "minLength": 1,
    "maxLength": v.MAX_ID_LENGTH,
    "pattern": "^[!-~](?:[ -~]*[!-~])?$",
}
_AUTH_HEADERS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "x-user-id",
        "The end user this request acts for, exactly (never normalised). Any printable"
        " Unicode id travels as its UTF-8 bytes, or percent-encoded in `X-User-Id-Encoded`"
        " (`zo%C3%AB` for `zoë`) from clients that send only ASCII headers.",
        _ID_SCHEMA,
    ),
    (
        "x-tenant-id",
        "Admin key only: the tenant to act in (not starting with `~`).",
        {**_ID_SCHEMA, "pattern": "^[!-}](?:[ -~]*[!-~])?$"},
    ),
)


def document_auth(
    app: FastAPI, routers: Iterable[APIRouter], errors: Mapping[int, str] | None = None
) -> None:
    """Make ``app.openapi()`` declare, on every route of ``routers`` (included in
    ``app`` without a further prefix) that depends on the caller, the bearer
    security scheme and the ``X-User-Id`` / ``X-Tenant-Id`` headers (which these
    dependencies read from the request, out of FastAPI's sight), and the error
    answers ``errors`` (status: description) such a route may give, in the
    ``ErrorBody`` shape: 413 only on a route with a body. A route that depends
    on no caller (``/healthz``) documents only what it declares itself."""
    build = app.openapi
    routes = [r for router in routers for r in router.routes if isinstance(r, APIRoute)]

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        bearer = HTTPBearerModel(description="An API key (`mb_...`) or the admin key.")
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})[SECURITY_SCHEME] = bearer.model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        error_ref = {"$ref": "#/components/schemas/ErrorBody"}
        components.setdefault("schemas", {}).setdefault(
            "ErrorBody", ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        )
        for route in routes:
            if not _depends_on(route.dependant):
                continue
            for method in route.methods or ():
                operation = schema.get("paths", {}).get(route.path_format, {}).get(method.lower())
                if operation is None:
                    continue
                answers = operation.setdefault("responses", {})
                for status, text in (errors or {}).items():
                    if status == 413 and "requestBody" not in operation:
                        continue
                    answers[str(status)] = {
                        "description": text,
                        "content": {"application/json": {"schema": error_ref}},
                    }
                operation["security"] = [{SECURITY_SCHEME: []}]
                parameters = operation.setdefault("parameters", [])
                names = {p.get("name") for p in parameters}
                for name, text, limits in _AUTH_HEADERS:
                    if name not in names:
                        parameters.append(_header_parameter(name, text, limits))
        state_limits(schema)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _depends_on(dependant: Dependant, calls: Container[object] = _AUTH_DEPENDENCIES) -> bool:
    """Whether ``dependant`` depends (at any depth) on one of ``calls`` (by default: the
    caller's dependencies, i.e. the route needs a key)."""
    return any(d.call in calls or _depends_on(d, calls) for d in dependant.dependencies)


def _header_parameter(name: str, description: str, limits: dict[str, Any]) -> dict[str, Any]:
    title = "-".join(part.capitalize() for part in name.split("-"))
    return {
        "name": name,
        "in": "header",
        "required": False,
        "schema": {"type": "string", **limits, "description": description, "title": title},
        "description": description,
    }


CallerDep = Annotated[Caller, Depends(tenant_caller)]
AdminDep = Annotated[Caller, Depends(admin_caller)]
MemoryDep = Annotated[AsyncMemory, Depends(tenant_memory)]


async def refused_caller(request: Request) -> JSONResponse | None:
    """The answer for a request refused before its route's dependencies ran (a body
    that is not JSON, or not UTF-8), when the route needs a key: authenticate now,
    so a caller without a valid key gets 401 and learns nothing from a 422.
    ``None``: the caller is authenticated (or the route is public)."""
    route = request.scope.get("route")
    state = request.scope.get("state", {})
    if "caller" in state or not isinstance(route, APIRoute):
        return None
    if not _depends_on(route.dependant):
        return None
    try:
        who = await caller(request)
        if not who.is_admin and _depends_on(route.dependant, (admin_caller,)):
            await admin_caller(request)  # 403 for a tenant's key, as after parsing
    except ApiError as error:
        return await api_error(request, error)
    except InvalidInput:
        return None  # a good key with a bad header: the 422 stands
    except MemoryBankError as error:
        return await library_error(request, error)
    return None
