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
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memorybank import _validate as v
from memorybank._async.memory import AsyncMemory
from memorybank.errors import InvalidInput
from memorybank.server.errors import ApiError
from memorybank.server.keys import KeyRing, check_tenant

__all__ = [
    "AdminDep",
    "Caller",
    "CallerDep",
    "MemoryDep",
    "admin_caller",
    "caller",
    "key_ring",
    "root_memory",
    "tenant_caller",
    "tenant_memory",
]

_bearer = HTTPBearer(auto_error=False, description="An API key (`mb_...`) or the admin key.")


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


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})


def root_memory(request: Request) -> AsyncMemory:
    """The process's one ``AsyncMemory`` (unscoped: only the server's code may hold it)."""
    memory: AsyncMemory = request.app.state.memory
    return memory


def key_ring(request: Request) -> KeyRing:
    """The process's ``KeyRing``."""
    keys: KeyRing = request.app.state.keys
    return keys


async def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    x_user_id: Annotated[
        str | None, Header(description="The end user this request acts for.")
    ] = None,
    x_tenant_id: Annotated[
        str | None, Header(description="Admin key only: the tenant to act in.")
    ] = None,
) -> Caller:
    """The caller: 401 ``unauthorized`` without a key, or with a bad or revoked one."""
    if credentials is None or not credentials.credentials:
        raise _unauthorized("missing API key (Authorization: Bearer <key>)")
    secret = credentials.credentials
    state = request.scope.setdefault("state", {})  # the key id goes to the access log
    admin_key: str | None = request.app.state.admin_key
    # Authenticate first: an unauthenticated request learns nothing, not even 422s.
    if admin_key is not None and hmac.compare_digest(secret.encode(), admin_key.encode()):
        state["key_id"] = "admin"
        tenant = None if x_tenant_id is None else check_tenant(x_tenant_id, "X-Tenant-Id")
        return Caller(tenant=tenant, key_id=None, is_admin=True, user_id=_user(x_user_id))
    info = await key_ring(request).verify(secret)
    if info is None:
        raise _unauthorized("invalid or revoked API key")
    state["key_id"] = info.id
    return Caller(tenant=info.tenant, key_id=info.id, is_admin=False, user_id=_user(x_user_id))


def _user(header: str | None) -> str | None:
    return None if header is None else v.check_id(header, "X-User-Id")


async def tenant_caller(who: Annotated[Caller, Depends(caller)]) -> Caller:
    """A caller acting in one tenant (the admin key needs ``X-Tenant-Id``: else 422)."""
    if who.tenant is None:
        raise InvalidInput("the admin key needs X-Tenant-Id on tenant routes", field="X-Tenant-Id")
    return who


async def admin_caller(who: Annotated[Caller, Depends(caller)]) -> Caller:
    """The admin: 403 ``forbidden`` for a tenant's key."""
    if not who.is_admin:
        raise ApiError(403, "forbidden", "this route needs the admin key")
    return who


async def tenant_memory(
    request: Request, who: Annotated[Caller, Depends(tenant_caller)]
) -> AsyncMemory:
    """``root.tenant(T)``, or ``root.tenant(T).scoped(user_id=U)`` when ``X-User-Id`` is given."""
    assert who.tenant is not None
    handle = root_memory(request).tenant(who.tenant)
    return handle if who.user_id is None else handle.scoped(user_id=who.user_id)


CallerDep = Annotated[Caller, Depends(tenant_caller)]
AdminDep = Annotated[Caller, Depends(admin_caller)]
MemoryDep = Annotated[AsyncMemory, Depends(tenant_memory)]
