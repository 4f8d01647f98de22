"""AsyncHTTPStore: the store contract over HTTP, served by ``memorybank serve``.

``Memory("http://host:8080", api_key=KEY)`` (or ``$MEMORYBANK_API_KEY``) opens
one; every contract method is one ``POST /v1/store/{method}`` whose body and
answer are encoded by ``memorybank.stores.http.wire`` (its docstring has the
protocol). The server runs the call on its own store, so every guarantee of
the contract (atomic appends, compare-and-swap, idempotency, ordering) is the
server store's, unchanged: the wire adds no state.

Generated, not written here: the contract's methods (``methods.py``, by
``scripts/gen_wire.py`` from ``AsyncStore``'s signatures: each hands its
arguments to ``_call``) and the wire table they use (``wire.METHODS``, derived
from the same signatures). Hand-written here, because each has logic of its
own: the client's configuration (URL, key, timeout, the httpx client), the one
request ``_call`` (encoding, the retries below, ``_replay_safe`` for the two
writes that may be repeated, turning error bodies back into exceptions),
``close`` and ``capabilities``. Tenants are resolved on the server
(``memorybank.server.store_rpc``), not here.

Tenants: an API key belongs to one tenant of the server, and the ``tenant``
argument of every call is resolved *inside* it (``memorybank.server.store_rpc``):
the default tenant (``"default"``) is the key's tenant itself, and
``memory.tenant("x")`` a namespace of the key's tenant that no other key can
name. Threads come back with the ``tenant_id`` the caller used.

Connections: one ``httpx.AsyncClient`` (a sync ``httpx.Client`` for
``HTTPStore``) pools keep-alive connections; ``timeout`` bounds connecting,
each read and write, and the wait for a pooled connection. Idle connections
are dropped after 4 s, before uvicorn's default 5 s keep-alive closes them
under a request.

Retries (``retries`` more attempts, backing off 50 ms, 100 ms, ... or the
server's ``Retry-After``, at most 2 s):

* a request that never left (connection refused, connect or pool timeout) is
  retried whatever the method: the server cannot have seen it;
* a request whose outcome is unknown (timeout or connection lost after
  sending, or ``503 store_unavailable``) is retried only when repeating it is
  harmless (``Method.idempotent``: reads, ``working_set``, ``working_clear``,
  ``vector_put``, ``snapshot_save``); for ``entry_append`` when every
  entry carries an idempotency key: a replay returns the stored entries and
  writes nothing (the contract's "Idempotency"), so the caller sees the
  result of the first attempt; and for ``record_put`` without a guard (a
  replace by kind and id: the same records again). Never for a guarded
  write, a delete (its count would be wrong) or a create (``Conflict``).

Errors: the server's error body (``{"code", "message", "field"?,
"request_id"}``) becomes the same library exception (``InvalidInput`` with its
``field``, ``NotFound``, ``Conflict``, ``ThreadForbidden``, ...); a refused key
(401/403) is ``ConfigurationError``; transport failures are
``StoreUnavailable`` with the httpx exception as ``__cause__``; after
``close`` every call raises ``StoreClosed``. A client passed in is left open.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memorybank.errors import (
    ConfigurationError,
    InvalidInput,
    StoreClosed,
    StoreError,
    StoreUnavailable,
)
from memorybank.runtime.concurrency import asleep
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.http import wire as _wire
from memorybank.stores.http._async.methods import AsyncHTTPStoreMethods

if TYPE_CHECKING:
    import httpx

    from memorybank.stores.contract.types import NewEntry

__all__ = ["AsyncHTTPStore"]

INSTALL_HINT = "pip install 'memorybank[remote]'"
#: Environment variable read when no ``api_key`` is given.
API_KEY_ENV = "MEMORYBANK_API_KEY"
_BACKOFF = 0.05
_MAX_WAIT = 2.0


def _import_httpx() -> Any:
    try:
        import httpx
    except ImportError as error:
        raise ConfigurationError(f"the http:// store needs httpx: {INSTALL_HINT}") from error
    return httpx


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:  # an HTTP date: not worth parsing for a short backoff
        return None


def _replay_safe(name: str, values: dict[str, Any]) -> bool:
    """Whether repeating this call of a non-idempotent method is harmless all the same."""
    if name == "entry_append":
        # Every entry keyed: a replay is answered from the stored entries, writing nothing.
        entries: Sequence[NewEntry] = values["entries"]
        return bool(entries) and all(e.idempotency_key is not None for e in entries)
    if name == "record_put":
        # A replace of the same records; guarded, a replay would fail its own guard.
        return values["guard"] is None
    return False


class AsyncHTTPStore(AsyncHTTPStoreMethods):
    """A store on a memorybank server. See the module docstring.

    Args:
        url: the server's base URL (``http://host:8080``, or with a path prefix
            behind a reverse proxy).
        api_key: a key made by ``memorybank keys create``; ``None`` reads
            ``$MEMORYBANK_API_KEY``.
        timeout: seconds for connecting, each read and write, and the pool wait.
        retries: further attempts after a failure that may be retried.
        client: an httpx client to use, async for ``AsyncHTTPStore`` (you keep
            owning it; its base URL and headers are ignored: ``url`` and
            ``api_key`` apply).
    """

    capabilities = frozenset(
        {
            Capability.REMOTE,
            Capability.EVENTS,
            Capability.MULTI_PROCESS,
            Capability.RUN_STATE,
            Capability.TEXT_SEARCH,
            Capability.VECTOR_SEARCH,
        }
    )

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        httpx = _import_httpx()
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        if not key:
            raise ConfigurationError(
                f"the http:// store needs an API key: api_key=... or ${API_KEY_ENV}"
            )
        if not key.isascii() or not key.isprintable() or " " in key:
            raise ConfigurationError("api_key must be printable ASCII without spaces")
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"not an http(s) URL: {url!r}")
        if timeout <= 0 or retries < 0:
            raise ConfigurationError("timeout must be positive and retries at least 0")
        self.url = url.rstrip("/")
        self._headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        self._retries = retries
        self._owns_client = client is None
        if client is None:
            client = httpx.AsyncClient(
                timeout=httpx.Timeout(timeout),
                limits=httpx.Limits(
                    max_connections=100, max_keepalive_connections=32, keepalive_expiry=4.0
                ),
            )
        self._client = client
        self._closed = False

    @classmethod
    def from_url(
        cls, url: str, *, api_key: str | None = None, timeout: float = 10.0, retries: int = 2
    ) -> AsyncHTTPStore:
        """A store owning its client, for ``http://host:port`` or ``https://...``."""
        return cls(url, api_key=api_key, timeout=timeout, retries=retries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            await self._client.aclose()

    # -- the change feed ---------------------------------------------------------------

    async def events_enable(self, *, keep: timedelta) -> None:
        """Refused: the feed is switched for the server's whole store, on the server."""
        raise ConfigurationError(
            "the change feed is switched on the server's store (memorybank events --enable"
            " with the server's store URL), not through a tenant's connection"
        )

    async def events_disable(self) -> None:
        """Refused: see ``events_enable``."""
        raise ConfigurationError(
            "the change feed is switched on the server's store (memorybank events --disable"
            " with the server's store URL), not through a tenant's connection"
        )

    # -- the one request ---------------------------------------------------------------

    async def _call(self, name: str, values: dict[str, Any]) -> Any:
        """Call ``name`` on the server with ``values`` (its arguments by name, as
        ``methods.py`` passes them); its decoded result, or the library exception."""
        if self._closed:
            raise StoreClosed("the store is closed")
        httpx = _import_httpx()
        method = _wire.METHODS[name]
        body = _wire.dumps({"v": _wire.WIRE_VERSION, "args": _wire.encode_args(method, values)})
        harmless = method.idempotent or _replay_safe(name, values)
        attempt = 0
        while True:
            wait: float | None = None
            try:
                response = await self._client.post(
                    f"{self.url}/v1/store/{name}", content=body, headers=self._headers
                )
            except httpx.TransportError as error:
                if self._closed:
                    raise StoreClosed("the store is closed") from error
                never_sent = isinstance(
                    error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout
                )
                if attempt >= self._retries or not (harmless or never_sent):
                    raise StoreUnavailable(
                        f"memorybank server {self.url} failed on {name}: {error!r}"
                    ) from error
            except RuntimeError as error:  # httpx: "client has been closed" (ours or yours)
                raise StoreClosed("the store's HTTP client is closed") from error
            else:
                if response.status_code == 200:
                    return self._result(method, response)
                failure = _wire.error_from_body(response.status_code, self._body(response))
                if (
                    not isinstance(failure, StoreUnavailable)
                    or not harmless
                    or attempt >= self._retries
                ):
                    raise failure
                wait = _retry_after(response)
            await asleep(min(_MAX_WAIT, wait if wait is not None else _BACKOFF * 2**attempt))
            attempt += 1

    @staticmethod
    def _body(response: httpx.Response) -> Any:
        try:
            return _wire.loads(response.content)
        except InvalidInput:  # a proxy's HTML page, say
            return None

    def _result(self, method: _wire.Method, response: httpx.Response) -> Any:
        body = self._body(response)
        if (
            not isinstance(body, dict)
            or body.get("v") != _wire.WIRE_VERSION
            or "result" not in body
        ):
            raise StoreError(
                f"memorybank server {self.url} answered {method.name} in an unknown form"
                f" (wire version {_wire.WIRE_VERSION} expected)"
            )
        try:
            return _wire.decode_result(method, body["result"])
        except InvalidInput as error:
            message = f"memorybank server {self.url} sent a bad {method.name} result"
            raise StoreError(message) from error
