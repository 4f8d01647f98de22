"""External vector indexes: vectors searched outside the store, scope checked twice.

``AsyncMemory(url, vector_index=AsyncQdrantIndex(...))`` keeps the store as it
is (threads, records, and their vectors: the store stays the source of truth)
and sends every vector write to the index as well, and every vector search to
the index instead of the store. The hook is one wrapper above the store
(``AsyncIndexedStore``), so every verb that writes or searches vectors
(documents, facts, graph, search, context, import) goes through it unchanged.

Scope is enforced twice. The index filters on the tenant and on the owner
axes of the scope rule (``Visibility``: a name sees its own and shared, ``None``
shared only) inside the index; the store then re-checks every hit against its
own rows (a record must exist and be visible, an entry's thread must exist,
be visible and be the thread asked for), so a stale or wrong payload in the
index can make a hit disappear, never make another user's record appear.

Consistency: the store is written first, the index second. A failed index
write raises ``StoreUnavailable`` after the store write (the vectors are
safe in the store); the failed points are retried before the next index
call, and ``reindex(memory)`` rebuilds a tenant's points from the store.
Deletes (``thread_delete``, ``entry_delete``, ``entry_truncate_after``, ``entry_clear``,
``branch_delete``, ``entry_compact``, ``record_delete``, ``forget_user``) remove the
points after the rows (an entry's point once no branch holds a copy of it); a
failed index delete raises ``StoreUnavailable`` (retrying the verb is safe), and
until then the store re-check hides the orphaned points. A failed index search
falls back to the store's own exact search (logged on the ``memorybank`` logger).
"""

from __future__ import annotations

import abc
import contextlib
import copy
import logging
import math
import re
import warnings
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, Self, cast

from memorybank.errors import (
    ConfigurationError,
    MemoryBankError,
    NotFound,
    StoreClosed,
    StoreUnavailable,
)
from memorybank.rules.kinds import RECORD_KINDS
from memorybank.stores.contract._async.base import AsyncStoreBase
from memorybank.stores.contract._async.store import (
    AsyncStore,
    NewEntry,
    RecordGuard,
    SearchHit,
    VectorItem,
    Visibility,
)
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import searched_kinds, visible
from memorybank.vector_index.points import (
    IndexPoint,
    collection_name,
    payload,
    point_id,
    qdrant_models,
    scope_filter,
)

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

    from memorybank.embeddings.base import Embedder
    from memorybank.records import Thread
    from memorybank.stores.contract.types import Record

__all__ = ["AsyncIndexedStore", "AsyncQdrantIndex", "AsyncVectorIndex", "IndexPoint"]


class _Reindexed(Protocol):
    """What ``reindex`` reads of the memory handle it rebuilds (``AsyncMemory`` is one;
    typed here, below the facade, so that the facade and the index make no cycle)."""

    @property
    def tenant_id(self) -> str: ...

    @property
    def store(self) -> AsyncStore: ...

    @property
    def embedder(self) -> Embedder | None: ...


logger = logging.getLogger("memorybank")

_UPSERT_BATCH = 512
#: Failed index writes kept for a retry; beyond this many the oldest are dropped.
MAX_PENDING = 10_000
_READ_BATCH = 500


class AsyncVectorIndex(abc.ABC):
    """Where vectors are searched when not in the store: the contract of an index.

    An index holds points (``IndexPoint``) per tenant and embedder model and
    filters every search by the scope rule itself. It is never trusted for
    scope: the indexed store re-checks every hit in the store.
    """

    @abc.abstractmethod
    async def upsert(self, tenant: str, points: Sequence[IndexPoint]) -> None:
        """Insert or replace points (by tenant, kind, id and model)."""

    @abc.abstractmethod
    async def search(
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
        """Best ``k`` by cosine among points of ``model_id`` and ``kinds`` that ``visible_to``
        may see (``thread_id``: entries of that thread only), best first."""

    @abc.abstractmethod
    async def delete(self, tenant: str, kind: str, ids: Sequence[str]) -> None:
        """Remove the points of these records (every model)."""

    @abc.abstractmethod
    async def delete_thread(self, tenant: str, thread_id: str) -> None:
        """Remove the points of a thread's entries (every model)."""

    @abc.abstractmethod
    async def delete_user(self, tenant: str, user_id: str) -> None:
        """Remove every point owned by ``user_id`` (records and entries of their threads)."""

    @abc.abstractmethod
    async def delete_tenant(self, tenant: str, *, model_id: str | None = None) -> None:
        """Remove every point of the tenant (of one model when given)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release what the index owns (a client it made from a URL). Idempotent."""

    async def reindex(self, memory: _Reindexed) -> int:
        """Rebuild ``memory``'s tenant in the index from the store; how many points.

        Reads every vector of the memory's embedder model from the store
        (entries of every thread and branch, facts, documents, entities),
        drops the tenant's points of that model and writes them again. The
        recovery after a failed index write, or to fill a new index beside an
        existing store. Searches during the rebuild may miss points.
        """
        embedder = memory.embedder
        if embedder is None:
            raise ConfigurationError("reindex needs the memory's embedder (its model id)")
        store = memory.store
        if isinstance(store, AsyncIndexedStore):
            store = store.inner
        tenant, model_id = memory.tenant_id, embedder.model_id
        points = [p async for p in _stored_points(store, tenant, model_id)]
        await self.delete_tenant(tenant, model_id=model_id)
        for start in range(0, len(points), _UPSERT_BATCH):
            await self.upsert(tenant, points[start : start + _UPSERT_BATCH])
        return len(points)


async def _stored_points(
    store: AsyncStore, tenant: str, model_id: str
) -> AsyncIterator[IndexPoint]:
    """Every vector of ``model_id`` the store holds for ``tenant``, as points."""
    for thread in await store.thread_list(tenant):
        ids: dict[str, None] = {}
        for branch in await store.branch_list(tenant, thread.id):
            _, entries = await store.entry_list(tenant, thread.id, branch=branch.name)
            ids.update(dict.fromkeys(e.id for e in entries))
        for chunk in _chunks(list(ids)):
            found = await store.vector_get(tenant, "entry", chunk, model_id=model_id)
            for entry_id, vector in found.items():
                yield IndexPoint(
                    "entry", entry_id, model_id, vector, thread.id, thread.agent_id, thread.user_id
                )
    for kind in RECORD_KINDS:
        after: tuple[datetime, str] | None = None
        while True:
            page = await store.record_page(tenant, kind, limit=_READ_BATCH, after=after)
            if not page:
                break
            found = await store.vector_get(tenant, kind, [r.id for r in page], model_id=model_id)
            for record in page:
                if record.id in found:
                    yield IndexPoint(
                        kind,
                        record.id,
                        model_id,
                        found[record.id],
                        None,
                        record.agent_id,
                        record.user_id,
                    )
            if len(page) < _READ_BATCH:
                break
            after = (page[-1].created_at, page[-1].id)


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _READ_BATCH):
        yield ids[start : start + _READ_BATCH]


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    """Qdrant client errors become ``StoreUnavailable`` (the index is a server, or a file)."""
    try:
        yield
    except MemoryBankError:
        raise
    except Exception as error:
        raise StoreUnavailable(f"qdrant: {what} failed: {type(error).__name__}: {error}") from error


class AsyncQdrantIndex(AsyncVectorIndex):
    """Vectors in Qdrant: one collection per (prefix, model, dimension), cosine distance.

    Args:
        client_or_url: a Qdrant client you own (``AsyncQdrantClient``, or
            ``QdrantClient`` for the sync ``QdrantIndex``), or where to reach Qdrant:
            an ``http(s)://`` URL, ``":memory:"`` (local mode, in process) or a
            directory path (local mode, persisted). From a URL or path the index
            owns its client and ``close()`` closes it.
        collection_prefix: starts every collection name (letters, digits, ``_``, ``-``).
        api_key: for a Qdrant server URL.

    Points are keyed by a UUID5 of ``(tenant, kind, id)`` and carry ``tenant``,
    ``kind``, ``rid`` (the id), ``thread_id``, ``agent_id``, ``user_id`` (``""``
    for shared) and ``model_id``: scope and identity, never content. On a
    server the scope fields get keyword payload indexes.
    """

    def __init__(
        self,
        client_or_url: AsyncQdrantClient | str,
        *,
        collection_prefix: str = "memorybank",
        api_key: str | None = None,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", collection_prefix):
            raise ConfigurationError(
                "collection_prefix must be 1 to 64 letters, digits, '_' or '-'"
            )
        qdrant_models()  # the extra's error, before anything else
        from qdrant_client import AsyncQdrantClient

        if isinstance(client_or_url, str):
            if client_or_url.startswith(("http://", "https://")):
                client = AsyncQdrantClient(url=client_or_url, api_key=api_key)
            elif client_or_url == ":memory:":
                client = AsyncQdrantClient(location=":memory:")
            else:
                client = AsyncQdrantClient(path=client_or_url)
            self._owns = True
        else:
            client = client_or_url
            self._owns = False
        self.client = client
        self.prefix = collection_prefix
        self._known: dict[str, int] = {}
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the Qdrant index is closed")

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._owns:
                with _translated("close"):
                    await self.client.close()

    async def _collections(self) -> list[str]:
        with _translated("list collections"):
            found = await self.client.get_collections()
        mine = self.prefix + "_"
        return [c.name for c in found.collections if c.name.startswith(mine)]

    async def _exists(self, name: str) -> bool:
        if name in self._known:
            return True
        with _translated("read collection"):
            exists = await self.client.collection_exists(name)
        if exists:
            self._known[name] = 0
        return exists

    async def _ensure(self, name: str, dim: int) -> None:
        if await self._exists(name):
            return
        m = qdrant_models()
        with _translated("create collection"):
            try:
                await self.client.create_collection(
                    name, vectors_config=m.VectorParams(size=dim, distance=m.Distance.COSINE)
                )
            except Exception:
                if not await self.client.collection_exists(name):  # not a concurrent creator
                    raise
            with warnings.catch_warnings():
                # local mode has no payload indexes, and says so with a warning
                warnings.simplefilter("ignore")
                for field in ("tenant", "kind", "rid", "thread_id", "agent_id", "user_id"):
                    await self.client.create_payload_index(
                        name, field, field_schema=m.PayloadSchemaType.KEYWORD
                    )
        self._known[name] = dim

    async def upsert(self, tenant: str, points: Sequence[IndexPoint]) -> None:
        self._check_open()
        m = qdrant_models()
        by_collection: dict[str, dict[str, Any]] = {}
        for point in points:
            vector = [float(x) for x in point.vector]
            if not vector or not math.isfinite(sum(x * x for x in vector)):
                continue
            if sum(x * x for x in vector) == 0:
                continue  # no direction: the store's search never returns it either
            name = collection_name(self.prefix, point.model_id, len(vector))
            pid = point_id(tenant, point.kind, point.id)
            by_collection.setdefault(name, {})[pid] = m.PointStruct(
                id=pid, vector=vector, payload=payload(tenant, point)
            )
        for name, structs in by_collection.items():
            batch = list(structs.values())
            await self._ensure(name, len(batch[0].vector))
            for start in range(0, len(batch), _UPSERT_BATCH):
                with _translated("upsert"):
                    await self.client.upsert(
                        name, points=batch[start : start + _UPSERT_BATCH], wait=True
                    )

    async def search(
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
        self._check_open()
        wanted = searched_kinds(kinds, thread_id)
        query = [float(x) for x in vector]
        if k <= 0 or not wanted or not query or sum(x * x for x in query) == 0:
            return []
        name = collection_name(self.prefix, model_id, len(query))
        if not await self._exists(name):
            return []
        flt = scope_filter(tenant, kinds=wanted, thread_id=thread_id, visible_to=visible_to)
        with _translated("search"):
            found = await self.client.query_points(
                name,
                query=query,
                query_filter=flt,
                limit=k,
                with_payload=["kind", "rid", "thread_id"],
            )
        hits = []
        for point in found.points:
            data = point.payload or {}
            kind, rid, tid = data.get("kind"), data.get("rid"), data.get("thread_id")
            if isinstance(kind, str) and isinstance(rid, str):
                hits.append(
                    SearchHit(kind, rid, float(point.score), tid if isinstance(tid, str) else None)
                )
        return hits

    async def _delete_where(self, what: str, flt: Any) -> None:
        self._check_open()
        m = qdrant_models()
        for name in await self._collections():
            with _translated(what):
                await self.client.delete(
                    name, points_selector=m.FilterSelector(filter=flt), wait=True
                )

    async def delete(self, tenant: str, kind: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        self._check_open()
        m = qdrant_models()
        pids = [point_id(tenant, kind, i) for i in dict.fromkeys(ids)]
        for name in await self._collections():
            with _translated("delete"):
                await self.client.delete(
                    name, points_selector=m.PointIdsList(points=pids), wait=True
                )

    async def delete_thread(self, tenant: str, thread_id: str) -> None:
        flt = scope_filter(tenant, kinds=["entry"], thread_id=thread_id)
        await self._delete_where("delete thread", flt)

    async def delete_user(self, tenant: str, user_id: str) -> None:
        await self._delete_where("forget user", scope_filter(tenant, user_id=user_id))

    async def delete_tenant(self, tenant: str, *, model_id: str | None = None) -> None:
        self._check_open()
        m = qdrant_models()
        names = await self._collections()
        if model_id is not None:
            mine = collection_name(self.prefix, model_id, 1).rsplit("_", 1)[0] + "_"
            names = [n for n in names if n.startswith(mine)]
        for name in names:
            with _translated("delete tenant"):
                await self.client.delete(
                    name, points_selector=m.FilterSelector(filter=scope_filter(tenant)), wait=True
                )


class AsyncIndexedStore(AsyncStore):
    """A store whose vector searches go to an ``AsyncVectorIndex`` (see the module docstring).

    Every verb is the inner store's; ``vector_put`` also writes the index,
    ``vector_search`` asks the index and re-checks the hits in the store, and
    the deleting verbs also delete from the index. Closing closes the inner
    store only (``AsyncMemory.close`` closes the index).
    """

    def __init__(self, inner: AsyncStore, index: AsyncVectorIndex) -> None:
        self.inner = inner
        self.index = index
        # Every verb is forwarded to the inner store's own answer: the wrapper answers each
        # derived group itself (``OVERRIDES``), whether the inner store derives it or not.
        # Not ``ATOMIC``: the index's writes cannot join the inner store's transaction.
        self.capabilities = (inner.capabilities - {Capability.ATOMIC}) | {
            Capability.VECTOR_INDEX,
            Capability.RUN_STATE,
            Capability.TEXT_SEARCH,
            Capability.VECTOR_SEARCH,
        }
        #: Points whose index write failed, retried before the next index call.
        self._pending: dict[tuple[str, str, str, str], IndexPoint] = {}

    def __getattr__(self, name: str) -> Any:  # store-specific attributes (prefix, pool, ...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def close(self) -> None:
        await self.inner.close()

    @contextlib.asynccontextmanager
    async def snapshot(self, tenant: str) -> AsyncIterator[Self]:
        """The inner store's snapshot (``Capability.SNAPSHOT`` is the inner store's), in a
        wrapper of its own: reads go to the inner store's view."""
        async with self.inner.snapshot(tenant) as inner:
            view = copy.copy(self)
            view.inner = inner
            yield view

    # -- vectors ---------------------------------------------------------------

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        await self.inner.vector_put(tenant, items)
        points = await self._points(tenant, items)
        for point in points:
            self._pending[(tenant, point.kind, point.id, point.model_id)] = point
        if len(self._pending) > MAX_PENDING:  # a long outage: reindex() catches up instead
            for key in list(self._pending)[: len(self._pending) - MAX_PENDING]:
                self._pending.pop(key, None)
            logger.warning("vector index: pending points dropped; run index.reindex(memory)")
        await self._flush()

    async def _flush(self) -> None:
        """Write the pending points (this call's and earlier failed ones) to the index."""
        if not self._pending:
            return
        by_tenant: dict[str, list[tuple[tuple[str, str, str, str], IndexPoint]]] = {}
        for key, point in list(self._pending.items()):
            by_tenant.setdefault(key[0], []).append((key, point))
        for tenant, pairs in by_tenant.items():
            try:
                await self.index.upsert(tenant, [p for _, p in pairs])
            except MemoryBankError as error:
                raise StoreUnavailable(
                    "the vectors are stored but the vector index could not be updated"
                    f" ({error}); they are retried on the next vector write, or run"
                    " index.reindex(memory)"
                ) from error
            for key, point in pairs:
                if self._pending.get(key) is point:
                    self._pending.pop(key, None)

    async def _points(self, tenant: str, items: Sequence[VectorItem]) -> list[IndexPoint]:
        """The items with their owners (the record's, or the entry's thread's)."""
        threads: dict[str, Thread | None] = {}
        records: dict[str, dict[str, Record]] = {}
        for item in items:
            if item.kind == "entry":
                if item.thread_id is not None and item.thread_id not in threads:
                    threads[item.thread_id] = await self.inner.thread_get(tenant, item.thread_id)
            else:
                records.setdefault(item.kind, {})
        for kind in records:
            ids = [i.id for i in items if i.kind == kind]
            records[kind] = await self.inner.record_get_many(tenant, kind, ids)
        points = []
        for item in items:
            if item.kind == "entry":
                thread = None if item.thread_id is None else threads.get(item.thread_id)
                if thread is None:
                    continue  # an orphan vector: no search returns it
                owners = (thread.agent_id, thread.user_id)
            else:
                record = records[item.kind].get(item.id)
                if record is None:
                    continue
                owners = (record.agent_id, record.user_id)
            points.append(
                IndexPoint(item.kind, item.id, item.model_id, item.vector, item.thread_id, *owners)
            )
        return points

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
        if k <= 0:
            return []
        limit = k
        try:
            await self._flush()
            for _ in range(4):
                found = await self.index.search(
                    tenant,
                    vector,
                    model_id=model_id,
                    kinds=kinds,
                    k=limit,
                    thread_id=thread_id,
                    visible_to=visible_to,
                )
                kept = await self._confirm(tenant, found, thread_id, visible_to)
                if len(kept) >= k or len(found) < limit:
                    kept.sort(key=lambda h: (-h.score, h.kind, h.id))
                    return kept[:k]
                limit *= 4  # stale points crowded the top: look further
        except StoreUnavailable as error:
            logger.warning("vector index unavailable, searching the store instead: %s", error)
        return await self.inner.vector_search(
            tenant,
            vector,
            model_id=model_id,
            kinds=kinds,
            k=k,
            thread_id=thread_id,
            visible_to=visible_to,
        )

    async def _confirm(
        self,
        tenant: str,
        hits: Sequence[SearchHit],
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> list[SearchHit]:
        """The hits the store agrees with: the row exists, in scope (never trust the index)."""
        threads: dict[str, Thread | None] = {}
        by_kind: dict[str, list[str]] = {}
        for hit in hits:
            if hit.kind == "entry":
                if hit.thread_id is not None and hit.thread_id not in threads:
                    threads[hit.thread_id] = await self.inner.thread_get(tenant, hit.thread_id)
            else:
                by_kind.setdefault(hit.kind, []).append(hit.id)
        records = {
            kind: await self.inner.record_get_many(tenant, kind, ids)
            for kind, ids in by_kind.items()
        }
        kept = []
        for hit in hits:
            if hit.kind == "entry":
                thread = None if hit.thread_id is None else threads.get(hit.thread_id)
                ok = (
                    thread is not None
                    and (thread_id is None or thread.id == thread_id)
                    and visible(visible_to, thread.agent_id, thread.user_id)
                )
            else:
                record = records[hit.kind].get(hit.id)
                ok = (
                    thread_id is None
                    and record is not None
                    and visible(visible_to, record.agent_id, record.user_id)
                )
            if ok:
                kept.append(hit)
        return kept

    # -- deletes: the rows first, then the points ------------------------------------

    async def _index_delete(self, what: str, call: Any) -> None:
        try:
            await call
        except MemoryBankError as error:
            raise StoreUnavailable(
                f"{what} is done in the store but not in the vector index ({error});"
                " retry it (the store re-check hides the points meanwhile)"
            ) from error

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        existed = await self.inner.thread_delete(tenant, thread_id)
        await self._index_delete("delete_thread", self.index.delete_thread(tenant, thread_id))
        return existed

    async def entry_delete(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        removed = await self.inner.entry_delete(tenant, thread_id, entry_ids, branch=branch)
        if removed:
            await self._drop_entry_points("entry_delete", tenant, thread_id, entry_ids)
        return removed

    async def entry_truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        doomed = await self._branch_ids(tenant, thread_id, branch)
        removed = await self.inner.entry_truncate_after(tenant, thread_id, entry_id, branch=branch)
        if removed:
            later = doomed[doomed.index(entry_id) + 1 :] if entry_id in doomed else doomed
            await self._drop_entry_points("entry_truncate_after", tenant, thread_id, later)
        return removed

    async def entry_clear(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        doomed = await self._branch_ids(tenant, thread_id, branch)
        removed = await self.inner.entry_clear(tenant, thread_id, branch=branch)
        if removed:
            await self._drop_entry_points("entry_clear", tenant, thread_id, doomed)
        return removed

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        doomed = await self._branch_ids(tenant, thread_id, name)
        existed = await self.inner.branch_delete(tenant, thread_id, name)
        if existed:
            await self._drop_entry_points("branch_delete", tenant, thread_id, doomed)
        return existed

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
        done = await self.inner.entry_compact(
            tenant,
            thread_id,
            branch=branch,
            through_position=through_position,
            expected_ids=expected_ids,
            summary=summary,
            updated_at=updated_at,
        )
        if done:
            await self._drop_entry_points("entry_compact", tenant, thread_id, expected_ids)
        return done

    async def _branch_ids(self, tenant: str, thread_id: str, branch: str | None) -> list[str]:
        """The ids of a branch's entries in order (none for a missing thread or branch)."""
        try:
            _, entries = await self.inner.entry_list(tenant, thread_id, branch=branch)
        except NotFound:
            return []
        return [e.id for e in entries]

    async def _drop_entry_points(
        self, what: str, tenant: str, thread_id: str, entry_ids: Sequence[str]
    ) -> None:
        """Delete the points of these deleted entries that no branch holds any more (a
        fork copies entries with their ids, and they share the point): one batch read per
        branch."""
        left = list(dict.fromkeys(entry_ids))
        if not left:
            return
        try:
            branches = [b.name for b in await self.inner.branch_list(tenant, thread_id)]
        except NotFound:
            branches = []
        for name in branches:
            if not left:
                break
            held = await self.inner.entry_get_many(tenant, thread_id, left, branch=name)
            left = [i for i in left if i not in held]
        for start in range(0, len(left), _READ_BATCH):
            part = left[start : start + _READ_BATCH]
            await self._index_delete(what, self.index.delete(tenant, "entry", part))

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        removed = await self.inner.record_delete(tenant, kind, record_ids, guard=guard)
        await self._index_delete("record_delete", self.index.delete(tenant, kind, record_ids))
        return removed

    async def forget_user(self, tenant: str, user_id: str) -> int:
        removed = await self.inner.forget_user(tenant, user_id)
        for key in [key for key, p in self._pending.items() if p.user_id == user_id]:
            del self._pending[key]
        await self._index_delete("forget_user", self.index.delete_user(tenant, user_id))
        return removed


def _delegate(name: str) -> property:
    return property(lambda self: getattr(self.inner, name), doc=f"The inner store's ``{name}``.")


# Every other verb of the contract (including ones added later) is the inner store's own
# bound method, whatever its kind (coroutine, async generator, plain).
# The contract is composed of parts (``AsyncThreadStore``, ...): walk all of them.
# Not ``atomic``: the inner store's view would write past the index, so the wrapper keeps
# the contract's default (no ``Capability.ATOMIC``: an import checks all, then writes).
_NOT_FORWARDED = frozenset({"atomic"})
for _part in AsyncStore.__mro__:
    if not issubclass(_part, AsyncStoreBase):
        continue
    for _name, _value in list(vars(_part).items()):
        if (
            callable(_value)
            and not _name.startswith("_")
            and _name not in vars(AsyncIndexedStore)
            and _name not in _NOT_FORWARDED
        ):
            setattr(AsyncIndexedStore, _name, _delegate(_name))
AsyncIndexedStore.__abstractmethods__ = frozenset()


def indexed(store: AsyncStore, index: AsyncVectorIndex) -> AsyncStore:
    """``store`` with its vector searches sent to ``index``."""
    return cast(AsyncStore, cast(Any, AsyncIndexedStore)(store, index))
