"""AsyncHTTPStore: the store contract over HTTP, served by ``memorybank serve``.

``Memory("http://host:8080", api_key=KEY)`` (or ``$MEMORYBANK_API_KEY``) opens
one; every contract method is one ``POST /v1/store/{method}`` whose body and
answer are encoded by ``memorybank.stores.http.wire`` (its docstring has the
protocol). The server runs the call on its own store, so every guarantee of
the contract (atomic appends, compare-and-swap, idempotency, ordering) is the
server store's, unchanged: the wire adds no state.

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
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank.errors import (
    ConfigurationError,
    InvalidInput,
    StoreClosed,
    StoreError,
    StoreUnavailable,
)
from memorybank.records import Branch, Entry, Summary, Thread
from memorybank.runtime.concurrency import asleep
from memorybank.stores.contract._async.store import (
    UNSET,
    AppendResult,
    AsyncStore,
    NewEntry,
    Record,
    RecordGuard,
    SearchHit,
    Unset,
    VectorItem,
    Visibility,
)
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.http import wire as _wire

if TYPE_CHECKING:
    import httpx

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


class AsyncHTTPStore(AsyncStore):
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
            Capability.MULTI_PROCESS,
            Capability.RUN_LISTING,
            Capability.SUMMARY_AGENT_LISTING,
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

    # -- the one request ---------------------------------------------------------------

    async def _call(self, name: str, values: dict[str, Any], *, retry: bool = False) -> Any:
        """Call ``name`` on the server; its decoded result, or the library exception.

        ``retry``: repeating the call is harmless even when ``name`` is not
        idempotent in general (an append whose entries all carry keys).
        """
        if self._closed:
            raise StoreClosed("the store is closed")
        httpx = _import_httpx()
        method = _wire.METHODS[name]
        body = _wire.dumps({"v": _wire.WIRE_VERSION, "args": _wire.encode_args(method, values)})
        harmless = retry or method.idempotent
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

    # -- threads -------------------------------------------------------------------------

    async def thread_create(self, thread: Thread) -> Thread:
        created: Thread = await self._call("thread_create", {"thread": thread})
        return created

    async def thread_get(self, tenant: str, thread_id: str) -> Thread | None:
        thread: Thread | None = await self._call(
            "thread_get", {"tenant": tenant, "thread_id": thread_id}
        )
        return thread

    async def thread_list(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        threads: list[Thread] = await self._call(
            "thread_list",
            {
                "tenant": tenant,
                "user_id": user_id,
                "agent_id": agent_id,
                "status": status,
                "limit": limit,
            },
        )
        return threads

    async def thread_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        updated_at: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        status: str | Unset = UNSET,
        current_branch: str | Unset = UNSET,
    ) -> Thread:
        thread: Thread = await self._call(
            "thread_update",
            {
                "tenant": tenant,
                "thread_id": thread_id,
                "updated_at": updated_at,
                "title": title,
                "metadata": metadata,
                "status": status,
                "current_branch": current_branch,
            },
        )
        return thread

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        deleted: bool = await self._call(
            "thread_delete", {"tenant": tenant, "thread_id": thread_id}
        )
        return deleted

    # -- entries -------------------------------------------------------------------------

    async def entry_append(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        *,
        updated_at: datetime,
        branch: str | None = None,
        owner: str | Unset | None = UNSET,
    ) -> AppendResult:
        result: AppendResult = await self._call(
            "entry_append",
            {
                "tenant": tenant,
                "thread_id": thread_id,
                "entries": entries,
                "updated_at": updated_at,
                "branch": branch,
                "owner": owner,
            },
            # Every entry keyed: a replay is answered from the stored entries, writing nothing.
            retry=bool(entries) and all(e.idempotency_key is not None for e in entries),
        )
        return result

    async def entry_list(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        newest_first: bool = False,
    ) -> tuple[Thread, list[Entry]]:
        page: tuple[Thread, list[Entry]] = await self._call(
            "entry_list",
            {
                "tenant": tenant,
                "thread_id": thread_id,
                "branch": branch,
                "limit": limit,
                "offset": offset,
                "before": before,
                "after": after,
                "newest_first": newest_first,
            },
        )
        return page

    async def entry_get(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        entry: Entry | None = await self._call(
            "entry_get",
            {"tenant": tenant, "thread_id": thread_id, "entry_id": entry_id, "branch": branch},
        )
        return entry

    async def entry_delete(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        count: int = await self._call(
            "entry_delete",
            {"tenant": tenant, "thread_id": thread_id, "entry_ids": entry_ids, "branch": branch},
        )
        return count

    async def entry_truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        count: int = await self._call(
            "entry_truncate_after",
            {"tenant": tenant, "thread_id": thread_id, "entry_id": entry_id, "branch": branch},
        )
        return count

    async def entry_clear(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        count: int = await self._call(
            "entry_clear", {"tenant": tenant, "thread_id": thread_id, "branch": branch}
        )
        return count

    async def entry_count(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        count: int = await self._call(
            "entry_count", {"tenant": tenant, "thread_id": thread_id, "branch": branch}
        )
        return count

    # -- branches ------------------------------------------------------------------------

    async def branch_create(
        self,
        tenant: str,
        thread_id: str,
        name: str,
        *,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Branch:
        branch: Branch = await self._call(
            "branch_create",
            {
                "tenant": tenant,
                "thread_id": thread_id,
                "name": name,
                "from_branch": from_branch,
                "from_entry": from_entry,
                "created_at": created_at,
            },
        )
        return branch

    async def branch_list(self, tenant: str, thread_id: str) -> list[Branch]:
        branches: list[Branch] = await self._call(
            "branch_list", {"tenant": tenant, "thread_id": thread_id}
        )
        return branches

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        deleted: bool = await self._call(
            "branch_delete", {"tenant": tenant, "thread_id": thread_id, "name": name}
        )
        return deleted

    # -- working memory ------------------------------------------------------------------

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        await self._call(
            "working_set", {"tenant": tenant, "run_id": run_id, "key": key, "value": value}
        )

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        value: str | None = await self._call(
            "working_get", {"tenant": tenant, "run_id": run_id, "key": key}
        )
        return value

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        deleted: bool = await self._call(
            "working_delete", {"tenant": tenant, "run_id": run_id, "key": key}
        )
        return deleted

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        items: dict[str, str] = await self._call(
            "working_items", {"tenant": tenant, "run_id": run_id}
        )
        return items

    async def working_clear(self, tenant: str, run_id: str) -> None:
        await self._call("working_clear", {"tenant": tenant, "run_id": run_id})

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str] | None:
        runs: list[str] | None = await self._call(
            "working_runs", {"tenant": tenant, "after": after, "limit": limit}
        )
        return runs

    # -- snapshots -----------------------------------------------------------------------

    async def snapshot_save(
        self,
        tenant: str,
        run_id: str,
        value: str,
        *,
        user_id: str | None,
        saved_at: datetime,
        owner_check: bool = True,
    ) -> None:
        await self._call(
            "snapshot_save",
            {
                "tenant": tenant,
                "run_id": run_id,
                "value": value,
                "user_id": user_id,
                "saved_at": saved_at,
                "owner_check": owner_check,
            },
        )

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        snapshot: tuple[str | None, str] | None = await self._call(
            "snapshot_load", {"tenant": tenant, "run_id": run_id}
        )
        return snapshot

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str] | None:
        runs: list[str] | None = await self._call(
            "snapshot_runs", {"tenant": tenant, "after": after, "limit": limit}
        )
        return runs

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        deleted: bool = await self._call(
            "snapshot_delete",
            {"tenant": tenant, "run_id": run_id, "user_id": user_id, "owner_check": owner_check},
        )
        return deleted

    # -- summaries -----------------------------------------------------------------------

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        added: Summary = await self._call("summary_add", {"tenant": tenant, "summary": summary})
        return added

    async def summary_agents(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str] | None:
        agents: list[str] | None = await self._call(
            "summary_agents", {"tenant": tenant, "after": after, "limit": limit}
        )
        return agents

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        summaries: list[Summary] = await self._call(
            "summary_list", {"tenant": tenant, "agent_id": agent_id, "user_id": user_id}
        )
        return summaries

    # -- compaction ----------------------------------------------------------------------

    async def entry_compact(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        through_position: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> bool:
        applied: bool = await self._call(
            "entry_compact",
            {
                "tenant": tenant,
                "thread_id": thread_id,
                "branch": branch,
                "through_position": through_position,
                "expected_ids": expected_ids,
                "summary": summary,
                "updated_at": updated_at,
            },
        )
        return applied

    async def entry_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        count: int = await self._call(
            "entry_update",
            {"tenant": tenant, "thread_id": thread_id, "branch": branch, "changes": changes},
        )
        return count

    # -- records -------------------------------------------------------------------------

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        await self._call(
            "record_put",
            {"tenant": tenant, "records": records, "guard": guard},
            # A replace of the same records; guarded, a replay would fail its own guard.
            retry=guard is None,
        )

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        record: Record | None = await self._call(
            "record_get", {"tenant": tenant, "kind": kind, "record_id": record_id}
        )
        return record

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        count: int = await self._call(
            "record_delete",
            {"tenant": tenant, "kind": kind, "record_ids": record_ids, "guard": guard},
        )
        return count

    async def record_list(
        self,
        tenant: str,
        kind: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        key: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        records: list[Record] = await self._call(
            "record_list",
            {
                "tenant": tenant,
                "kind": kind,
                "agent_id": agent_id,
                "user_id": user_id,
                "key": key,
                "visible_to": visible_to,
                "limit": limit,
            },
        )
        return records

    async def record_get_many(
        self, tenant: str, kind: str, record_ids: Sequence[str]
    ) -> dict[str, Record]:
        found: dict[str, Record] = await self._call(
            "record_get_many", {"tenant": tenant, "kind": kind, "record_ids": record_ids}
        )
        return found

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        records: list[Record] = await self._call(
            "record_list_keys",
            {"tenant": tenant, "kind": kind, "keys": keys, "visible_to": visible_to},
        )
        return records

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        records: list[Record] = await self._call(
            "record_page",
            {
                "tenant": tenant,
                "kind": kind,
                "limit": limit,
                "after": after,
                "visible_to": visible_to,
            },
        )
        return records

    # -- search --------------------------------------------------------------------------

    async def text_search(
        self,
        tenant: str,
        query: str,
        *,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        hits: list[SearchHit] = await self._call(
            "text_search",
            {
                "tenant": tenant,
                "query": query,
                "kinds": kinds,
                "k": k,
                "thread_id": thread_id,
                "visible_to": visible_to,
            },
        )
        return hits

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        await self._call("vector_put", {"tenant": tenant, "items": items})

    async def vector_search(
        self,
        tenant: str,
        vector: Sequence[float],
        *,
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        hits: list[SearchHit] = await self._call(
            "vector_search",
            {
                "tenant": tenant,
                "vector": vector,
                "model_id": model_id,
                "kinds": kinds,
                "k": k,
                "thread_id": thread_id,
                "visible_to": visible_to,
            },
        )
        return hits

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        vectors: dict[str, list[float]] = await self._call(
            "vector_get", {"tenant": tenant, "kind": kind, "ids": ids, "model_id": model_id}
        )
        return vectors

    # -- erasure -------------------------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        count: int = await self._call("forget_user", {"tenant": tenant, "user_id": user_id})
        return count
