"""The store contract over HTTP: what ``AsyncHTTPStore`` (``Memory("http://...")``) calls.

``POST /v1/store/{method}`` runs one method of the server's store for the
caller's tenant. The callable
methods are ``memorybank.stores.http.wire.METHODS``
(an explicit table: every contract method but ``close``; any other name is
404); the body is ``{"v": 1, "args": {...}}``, decoded and validated by the
wire codec, and the answer ``{"v": 1, "result": ...}``. Errors are the
server's one error shape, so the client raises the very library exception the
store raised.

Tenancy. A key belongs to one tenant ``T``; the ``tenant`` argument of a call
(and a created thread's ``tenant_id``) names a tenant *inside* ``T``
(``server_tenant``):

* ``"default"`` (what ``Memory(...)`` uses) is ``T`` itself, so the remote
  library and the REST routes see the same threads;
* any other name ``x`` (``memory.tenant(x)``) is ``T + "\\x1f" + x``. No id
  holds ``"\\x1f"`` (ids are printable), so the name splits back uniquely
  and no key's tenant (nor ``keys.RESERVED_TENANT``) can equal it: a key
  reaches its own tenant's namespaces and nothing else;
* when that is longer than 255 characters (the stores' id width), it is
  ``"\\x1f"`` and the 64 hex digits of its BLAKE2b-256, again a form no
  readable name takes.

Threads come back with the ``tenant_id`` the client sent, so the server's
naming never shows. The admin key acts as a tenant with ``X-Tenant-Id``, as
on every tenant route.

Who. The store sees no end user: it is the trusted layer under
``AsyncMemory``, which does the ownership checks in the client's process. A
request naming one (``X-User-Id``) is refused (403 ``forbidden``) rather than
served wider than asked; use the REST routes for per-user access.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response

from memorybank.errors import InvalidInput
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Thread
from memorybank.rules import validate as v
from memorybank.server.deps import Caller, CallerDep, root_memory
from memorybank.server.errors import ApiError
from memorybank.stores.contract.types import AppendResult
from memorybank.stores.http import wire as _wire

__all__ = ["SEPARATOR", "router", "server_tenant"]

#: Joins a key's tenant and a client's tenant name (never in an id: not printable).
SEPARATOR = "\x1f"
_DEFAULT = "default"

_BODY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["v", "args"],
    "properties": {
        "v": {"type": "integer", "enum": [_wire.WIRE_VERSION]},
        "args": {"type": "object", "description": "the method's arguments by name"},
    },
}
_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["v", "result"],
    "properties": {"v": {"type": "integer"}, "result": {"description": "the method's result"}},
}


def server_tenant(key_tenant: str, tenant: str) -> str:
    """The server's tenant for a client's ``tenant`` under a key of ``key_tenant``.

    Injective in ``(key_tenant, tenant)`` and never a name a key can have (see
    the module docstring).
    """
    if tenant == _DEFAULT:
        return key_tenant
    joined = key_tenant + SEPARATOR + tenant
    if len(joined) <= v.MAX_ID_LENGTH:
        return joined
    import hashlib  # on first use: only for very long names

    return SEPARATOR + hashlib.blake2b(joined.encode(), digest_size=32).hexdigest()


#: Methods whose result holds threads (their ``tenant_id`` is set back to the client's).
_THREAD_RESULTS = frozenset(
    {
        "thread_create",
        "thread_get",
        "thread_list",
        "thread_update",
        "entry_append",
        "entry_list",
    }
)


def _as_client(value: Any, client_tenant: str) -> Any:
    """``value`` with every thread's ``tenant_id`` set back to the client's name."""
    if isinstance(value, Thread):
        return dataclasses.replace(value, tenant_id=client_tenant)
    if isinstance(value, AppendResult):
        return AppendResult(value.entries, _as_client(value.thread, client_tenant))
    if isinstance(value, tuple):  # entry_list: (thread, entries)
        return (_as_client(value[0], client_tenant), value[1])
    if isinstance(value, list):  # thread_list
        return [_as_client(item, client_tenant) for item in value]
    return value  # thread_get's None


def _request_args(body: bytes, method: _wire.Method) -> dict[str, Any]:
    raw = _wire.loads(body)
    if not isinstance(raw, dict):
        raise InvalidInput('the body must be {"v": 1, "args": {...}}', field="body")
    if raw.get("v") != _wire.WIRE_VERSION:
        raise InvalidInput(
            f"unsupported wire version {raw.get('v')!r} (this server speaks {_wire.WIRE_VERSION})",
            field="v",
        )
    unknown = raw.keys() - {"v", "args"}
    if unknown:
        raise InvalidInput(f"unknown body fields {sorted(unknown)}", field="body")
    return _wire.decode_args(method, raw.get("args"))


def router() -> APIRouter:
    """``POST /v1/store/{method}``: the remote store's endpoint (see the module docstring)."""
    api = APIRouter(prefix="/v1/store", tags=["store"])

    @api.post(
        "/{method}",
        summary="Call one store-contract method (the protocol of AsyncHTTPStore)",
        description="The body's `args` are the path's method's arguments by name (every"
        " method but `thread_create` takes `tenant`), encoded as"
        " `memorybank.stores.http.wire` encodes them: they depend on the path, so the"
        " schema states the envelope only. A missing or malformed argument is a 422"
        " whose `field` names it. `AsyncHTTPStore` is the client; see docs/http-store.md.",
        response_class=Response,
        responses={200: {"content": {"application/json": {"schema": _RESULT_SCHEMA}}}},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _BODY_SCHEMA}},
            }
        },
    )
    async def call(
        method: Annotated[
            str,
            Path(
                description="a store-contract method (``memorybank.stores.http.wire.METHODS``)",
                json_schema_extra={"enum": sorted(_wire.METHODS)},
            ),
        ],
        request: Request,
        who: CallerDep,
        root: Annotated[AsyncMemory, Depends(root_memory)],
    ) -> Response:
        spec = _wire.METHODS.get(method)
        if spec is None:
            raise ApiError(404, "not_found", f"no store method {method!r}")
        if who.user_id is not None:
            raise ApiError(
                403,
                "forbidden",
                "the store protocol acts for the whole tenant: send no X-User-Id",
            )
        kwargs = _request_args(await request.body(), spec)
        client_tenant = _bind_tenant(who, spec, kwargs)
        # The table decides what is callable; getattr only ever sees one of its names.
        result = await getattr(root.store, spec.name)(**kwargs)
        if spec.name in _THREAD_RESULTS:
            result = _as_client(result, client_tenant)
        body = {"v": _wire.WIRE_VERSION, "result": _wire.encode_result(spec, result)}
        return Response(_wire.dumps(body), media_type="application/json")

    return api


def _bind_tenant(who: Caller, spec: _wire.Method, kwargs: dict[str, Any]) -> str:
    """Put the call in the caller's tenant space; the client's tenant name, for threads."""
    assert who.tenant is not None  # tenant_caller guarantees it
    if spec.name == "thread_create":
        thread: Thread = kwargs["thread"]
        client: str = thread.tenant_id
        kwargs["thread"] = dataclasses.replace(thread, tenant_id=server_tenant(who.tenant, client))
        return client
    if all(p.name != "tenant" for p in spec.params):  # events_keep: a store setting
        return ""
    client = str(kwargs["tenant"])
    kwargs["tenant"] = server_tenant(who.tenant, client)
    return client
