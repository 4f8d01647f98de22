"""LangGraph checkpointer and store on memorybank records (async source of the sync twins).

Layout, all records of the memory handle's tenant, owned by its scope
(``user_id``/``agent_id`` of a ``memory.scoped`` handle; ids are digests that
include the scope, so two users' ``thread_id`` "1" never meet):

- ``lg.cp``: one per checkpoint, the checkpoint *without* its channel values,
  its metadata, its parent id (``key``: the thread).
- ``lg.blob``: one per (channel, version); a checkpoint refers to versions, so
  a channel that did not change between steps is not written again (the
  official savers keep a full state copy per checkpoint).
- ``lg.write``: one per pending write (``key``: its checkpoint).
- ``lg.head``: the newest checkpoint id per (thread, namespace), written in the
  same atomic ``record_put`` as the checkpoint, so ``get_tuple`` of the latest
  checkpoint reads two records instead of the whole thread.

The long-term store (``AsyncMemorybankStoreBase``) keeps one ``lg.item`` record
per item and one ``lg.vec`` vector per indexed text (see its docstring).

Values are serialized with the saver's ``serde`` (LangGraph's msgpack by
default) and kept base64 in the record's JSON ``data``; ``content`` stays empty
so keyword indexes never see them.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from memorybank.errors import Conflict
from memorybank.integrations.langgraph.embed import embedder_for
from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores.contract.types import UNSET, Record, RecordGuard, Unset, VectorItem

CHECKPOINT = "lg.cp"
BLOB = "lg.blob"
WRITE = "lg.write"
HEAD = "lg.head"

_RecordList = list[Record]
_ResultList = list[Result]


def _pack(typed: tuple[str, bytes]) -> list[str]:
    return [typed[0], base64.b64encode(typed[1]).decode("ascii")]


def _unpack(packed: Any) -> tuple[str, bytes]:
    return str(packed[0]), base64.b64decode(packed[1])


def _ns(config: RunnableConfig) -> str:
    return str(config["configurable"].get("checkpoint_ns", ""))


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


class _Records:
    """Record plumbing shared by the saver and the store: ids that include the
    handle's scope, records owned by it, listings confined to it."""

    memory: AsyncMemory

    def _digest(self, *parts: str) -> str:
        scope = self.memory.scope
        owner = [None if isinstance(x, Unset) else x for x in (scope.user_id, scope.agent_id)]
        return hashlib.sha256(json.dumps([owner, *parts]).encode()).hexdigest()

    def _record(self, kind: str, record_id: str, key: str, data: dict[str, Any]) -> Record:
        scope = self.memory.scope
        now = self.memory.now()
        return Record(
            kind=kind,
            id=record_id,
            agent_id=scope.owner(UNSET, "agent_id"),
            user_id=scope.owner(UNSET),
            content="",
            data=data,
            created_at=now,
            updated_at=now,
            key=key,
        )

    async def _list(self, kind: str, key: str | None) -> _RecordList:
        scope = self.memory.scope
        return await self.memory.store.record_list(
            self.memory.tenant_id,
            kind,
            agent_id=scope.agent_id,
            user_id=scope.user_id,
            key=UNSET if key is None else key,
        )

    async def _delete(self, kind: str, ids: Sequence[str]) -> None:
        if ids:
            await self.memory.store.record_delete(self.memory.tenant_id, kind, ids)


class AsyncMemorybankSaver(_Records, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer storing into an ``AsyncMemory`` (any memorybank store).

    Args:
        memory: the handle to write through; its tenant and scope (a
            ``memory.scoped(user_id=...)`` handle) confine every checkpoint.
        serde: LangGraph serializer (default: LangGraph's own).

    Beyond the base interface it implements ``acopy_thread`` (a copy of every
    checkpoint, write and blob under the new thread id: LangGraph threads are
    not memorybank threads, so there is no branch to fork), ``adelete_for_runs``
    and ``aprune`` (``"keep_latest"`` per namespace, or ``"delete"``).
    """

    def __init__(self, memory: AsyncMemory, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self.memory = memory

    async def _tuple(self, record: Record) -> CheckpointTuple:
        """The full tuple of one stored checkpoint: its blobs and pending writes."""
        data = record.data
        thread_id, ns, checkpoint_id = data["thread_id"], data["ns"], data["id"]
        checkpoint: Checkpoint = self.serde.loads_typed(_unpack(data["checkpoint"]))
        values: dict[str, Any] = {}
        store, tenant = self.memory.store, self.memory.tenant_id
        for channel, version in checkpoint["channel_versions"].items():
            blob_id = self._digest(thread_id, ns, channel, str(version))
            blob = await store.record_get(tenant, BLOB, blob_id)
            if blob is not None and blob.data["value"][0] != "empty":
                values[channel] = self.serde.loads_typed(_unpack(blob.data["value"]))
        writes = await self._list(WRITE, self._digest(thread_id, ns, checkpoint_id))
        writes.sort(key=lambda w: (w.data["task_path"], w.data["task_id"], w.data["idx"]))
        parent = data["parent"]
        return CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.serde.loads_typed(_unpack(data["metadata"])),
            parent_config=_config(thread_id, ns, parent) if parent else None,
            pending_writes=[
                (
                    w.data["task_id"],
                    w.data["channel"],
                    self.serde.loads_typed(_unpack(w.data["value"])),
                )
                for w in writes
            ],
        )

    # -- the checkpointer ------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint of ``config`` (its ``checkpoint_id``, else the thread's newest)."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = _ns(config)
        store, tenant = self.memory.store, self.memory.tenant_id
        checkpoint_id = get_checkpoint_id(config)
        if not checkpoint_id:
            head = await store.record_get(tenant, HEAD, self._digest(thread_id, ns))
            if head is None:
                return None
            checkpoint_id = str(head.data["id"])
        record = await store.record_get(
            tenant, CHECKPOINT, self._digest(thread_id, ns, checkpoint_id)
        )
        return None if record is None else await self._tuple(record)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and namespace and id when
        given), else of every thread; ``filter`` matches metadata keys exactly,
        ``before`` keeps older checkpoint ids, ``limit`` the first N."""
        thread_id = None if config is None else str(config["configurable"]["thread_id"])
        ns = None if config is None else config["configurable"].get("checkpoint_ns")
        wanted = None if config is None else get_checkpoint_id(config)
        before_id = None if before is None else get_checkpoint_id(before)
        records = await self._list(
            CHECKPOINT, None if thread_id is None else self._digest(thread_id)
        )
        records.sort(key=lambda r: (r.data["thread_id"], r.data["ns"], r.data["id"]), reverse=True)
        records.sort(key=lambda r: r.data["id"], reverse=True)
        left = limit
        for record in records:
            data = record.data
            if (ns is not None and data["ns"] != ns) or (wanted and data["id"] != wanted):
                continue
            if before_id and data["id"] >= before_id:
                continue
            if filter:
                metadata = self.serde.loads_typed(_unpack(data["metadata"]))
                if not all(metadata.get(k) == v for k, v in filter.items()):
                    continue
            if left is not None:
                if left <= 0:
                    return
                left -= 1
            yield await self._tuple(record)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint and the blobs of the channels that changed (``new_versions``)."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = _ns(config)
        stripped = checkpoint.copy()
        values: dict[str, Any] = stripped.pop("channel_values")  # type: ignore[misc]
        thread_key = self._digest(thread_id)
        records = [
            self._record(
                BLOB,
                self._digest(thread_id, ns, channel, str(version)),
                thread_key,
                {
                    "thread_id": thread_id,
                    "ns": ns,
                    "channel": channel,
                    "version": str(version),
                    "value": _pack(
                        self.serde.dumps_typed(values[channel])
                        if channel in values
                        else ("empty", b"")
                    ),
                },
            )
            for channel, version in new_versions.items()
        ]
        full_metadata = get_checkpoint_metadata(config, metadata)
        run_id = full_metadata.get("run_id")
        records.append(
            self._record(
                CHECKPOINT,
                self._digest(thread_id, ns, checkpoint["id"]),
                thread_key,
                {
                    "thread_id": thread_id,
                    "ns": ns,
                    "id": checkpoint["id"],
                    "parent": config["configurable"].get("checkpoint_id"),
                    "run_id": None if run_id is None else str(run_id),
                    "checkpoint": _pack(self.serde.dumps_typed(stripped)),
                    "metadata": _pack(self.serde.dumps_typed(full_metadata)),
                },
            )
        )
        head_id = self._digest(thread_id, ns)
        store, tenant = self.memory.store, self.memory.tenant_id
        while True:
            # the head moves forward only, as a compare-and-swap with the checkpoint
            # write: of two concurrent puts on one namespace the newer id wins
            head = await store.record_get(tenant, HEAD, head_id)
            if head is not None and str(head.data["id"]) >= checkpoint["id"]:
                await store.record_put(tenant, records)
                break
            moved = replace(
                self._record(
                    HEAD,
                    head_id,
                    thread_key,
                    {"thread_id": thread_id, "ns": ns, "id": checkpoint["id"]},
                ),
                revision=0 if head is None else head.revision + 1,
            )
            guard = RecordGuard(HEAD, head_id, None if head is None else head.revision)
            try:
                await store.record_put(tenant, [*records, moved], guard=guard)
                break
            except Conflict:
                continue
        return _config(thread_id, ns, checkpoint["id"])

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes; special channels (errors, interrupts) replace,
        ordinary writes already stored are kept (LangGraph's rule)."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = _ns(config)
        checkpoint_id = str(config["configurable"]["checkpoint_id"])
        key = self._digest(thread_id, ns, checkpoint_id)
        existing = {r.id for r in await self._list(WRITE, key)}
        records = []
        for idx, (channel, value) in enumerate(writes):
            index = WRITES_IDX_MAP.get(channel, idx)
            record_id = self._digest(thread_id, ns, checkpoint_id, task_id, str(index))
            if index >= 0 and record_id in existing:
                continue
            records.append(
                self._record(
                    WRITE,
                    record_id,
                    key,
                    {
                        "thread_id": thread_id,
                        "ns": ns,
                        "task_id": task_id,
                        "task_path": task_path,
                        "idx": index,
                        "channel": channel,
                        "value": _pack(self.serde.dumps_typed(value)),
                    },
                )
            )
        if records:
            await self.memory.store.record_put(self.memory.tenant_id, records)

    async def _drop(self, checkpoints: Sequence[Record]) -> None:
        """Delete these checkpoints with their pending writes."""
        for record in checkpoints:
            data = record.data
            writes = await self._list(
                WRITE, self._digest(data["thread_id"], data["ns"], data["id"])
            )
            await self._delete(WRITE, [w.id for w in writes])
        await self._delete(CHECKPOINT, [r.id for r in checkpoints])

    async def _reset_heads(self, thread_ids: Sequence[str]) -> None:
        """Point each namespace's head at its newest surviving checkpoint (or drop it),
        and drop the blobs no surviving checkpoint refers to."""
        for thread_id in thread_ids:
            key = self._digest(thread_id)
            survivors = await self._list(CHECKPOINT, key)
            newest: dict[str, str] = {}
            used: set[str] = set()
            for record in survivors:
                data = record.data
                if data["id"] > newest.get(data["ns"], ""):
                    newest[data["ns"]] = data["id"]
                checkpoint = self.serde.loads_typed(_unpack(data["checkpoint"]))
                for channel, version in checkpoint["channel_versions"].items():
                    used.add(self._digest(thread_id, data["ns"], channel, str(version)))
            heads = await self._list(HEAD, key)
            await self._delete(HEAD, [h.id for h in heads if h.data["ns"] not in newest])
            fixed = [
                replace(
                    self._record(HEAD, h.id, key, {**h.data, "id": newest[h.data["ns"]]}),
                    revision=h.revision + 1,
                )
                for h in heads
                if h.data["ns"] in newest and h.data["id"] != newest[h.data["ns"]]
            ]
            if fixed:
                await self.memory.store.record_put(self.memory.tenant_id, fixed)
            blobs = await self._list(BLOB, key)
            await self._delete(BLOB, [b.id for b in blobs if b.id not in used])

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, write and blob of ``thread_id`` (all namespaces)."""
        key = self._digest(str(thread_id))
        await self._drop(await self._list(CHECKPOINT, key))
        for kind in (BLOB, HEAD):
            await self._delete(kind, [r.id for r in await self._list(kind, key)])

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) whose metadata ``run_id`` is listed."""
        runs = {str(r) for r in run_ids}
        if not runs:
            return
        doomed = [r for r in await self._list(CHECKPOINT, None) if r.data["run_id"] in runs]
        await self._drop(doomed)
        await self._reset_heads(sorted({r.data["thread_id"] for r in doomed}))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, pending write and blob of one thread under another id."""
        source, target = str(source_thread_id), str(target_thread_id)
        key, target_key = self._digest(source), self._digest(target)
        copies: _RecordList = []
        checkpoints = await self._list(CHECKPOINT, key)
        for record in checkpoints:
            data = record.data
            copies.append(
                self._record(
                    CHECKPOINT,
                    self._digest(target, data["ns"], data["id"]),
                    target_key,
                    {**data, "thread_id": target},
                )
            )
            write_key = self._digest(target, data["ns"], data["id"])
            for write in await self._list(WRITE, self._digest(source, data["ns"], data["id"])):
                w = write.data
                copies.append(
                    self._record(
                        WRITE,
                        self._digest(target, w["ns"], data["id"], w["task_id"], str(w["idx"])),
                        write_key,
                        {**w, "thread_id": target},
                    )
                )
        for blob in await self._list(BLOB, key):
            b = blob.data
            blob_id = self._digest(target, b["ns"], b["channel"], b["version"])
            copies.append(self._record(BLOB, blob_id, target_key, {**b, "thread_id": target}))
        for head in await self._list(HEAD, key):
            copies.append(
                self._record(
                    HEAD,
                    self._digest(target, head.data["ns"]),
                    target_key,
                    {**head.data, "thread_id": target},
                )
            )
        if copies:
            await self.memory.store.record_put(self.memory.tenant_id, copies)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"keep_latest"``: keep each namespace's newest checkpoint (with its writes
        and the blobs it refers to); ``"delete"``: delete the threads."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}")
        for thread_id in thread_ids:
            if strategy == "delete":
                await self.adelete_thread(thread_id)
                continue
            checkpoints = await self._list(CHECKPOINT, self._digest(str(thread_id)))
            newest: dict[str, str] = {}
            for record in checkpoints:
                if record.data["id"] > newest.get(record.data["ns"], ""):
                    newest[record.data["ns"]] = record.data["id"]
            await self._drop([r for r in checkpoints if r.data["id"] != newest[r.data["ns"]]])
        if strategy == "keep_latest":
            await self._reset_heads([str(t) for t in thread_ids])


# -- the long-term store ----------------------------------------------------------

ITEM = "lg.item"
VECTOR = "lg.vec"


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter rule: equality, nested objects, ``$eq $ne $gt $gte $lt $lte``."""
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if value is None:
        return False
    try:
        if op == "$gt":
            return bool(value > operand)
        if op == "$gte":
            return bool(value >= operand)
        if op == "$lt":
            return bool(value < operand)
        if op == "$lte":
            return bool(value <= operand)
    except TypeError:
        return False
    raise ValueError(f"unsupported filter operator {op!r}")


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(want == "*" or have == want for have, want in pairs)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    # stored vectors are unit length (memorybank normalizes): the dot product is the cosine
    return float(sum(x * y for x, y in zip(a, b, strict=False)))


class AsyncMemorybankStoreBase(_Records, BaseStore):
    """LangGraph's ``BaseStore`` on memorybank records (``abatch``; see the public
    ``memorybank.integrations.langgraph.AsyncMemorybankStore``).

    One record per item (``lg.item``, id from scope + namespace + key, ``key``:
    the first namespace label, which narrows a search to its subtree), one
    vector per indexed field (``lg.vec``, the store's own vector table, tagged
    with the embedder's model id). ``expires_at`` carries the TTL.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: AsyncMemory,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.memory = memory
        self.index_config = index
        self.ttl_config = ttl
        self._embedder = None if index is None else embedder_for(index, memory.embedder)
        fields = (index or {}).get("fields") or ["$"]
        self._fields = [(f, f if f == "$" else tokenize_path(f)) for f in fields]

    def _item_id(self, namespace: Sequence[str], key: str) -> str:
        return self._digest("item", *namespace, "\x00", key)

    def _live(self, record: Record, now: datetime) -> bool:
        omit = bool((self.ttl_config or {}).get("omit_expired", False))
        return not (omit and record.expires_at is not None and record.expires_at <= now)

    def _refreshed(self, record: Record, now: datetime) -> Record | None:
        """The record with its TTL restarted, or ``None`` when it has none."""
        minutes = record.data.get("ttl")
        if minutes is None:
            return None
        return replace(record, expires_at=now + timedelta(minutes=float(minutes)))

    @staticmethod
    def _item_fields(record: Record) -> dict[str, Any]:
        data = record.data
        return {
            "namespace": tuple(data["namespace"]),
            "key": data["key"],
            "value": data["value"],
            "created_at": record.created_at,
            "updated_at": record.updated_at,
        }

    async def abatch(self, ops: Iterable[Op]) -> _ResultList:
        """Run ``ops`` in order; each result in its op's place (puts: ``None``)."""
        results: _ResultList = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._namespaces(op))
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            else:
                raise ValueError(f"unknown operation {type(op).__name__}")
        return results

    async def _touch(self, records: Sequence[Record], refresh: bool, now: datetime) -> None:
        if refresh:
            touched = [r for r in (self._refreshed(rec, now) for rec in records) if r is not None]
            if touched:
                await self.memory.store.record_put(self.memory.tenant_id, touched)

    async def _get(self, op: GetOp) -> Item | None:
        now = self.memory.now()
        record = await self.memory.store.record_get(
            self.memory.tenant_id, ITEM, self._item_id(op.namespace, op.key)
        )
        if record is None or not self._live(record, now):
            return None
        await self._touch([record], op.refresh_ttl, now)
        return Item(**self._item_fields(record))

    async def _put(self, op: PutOp) -> None:
        validate_op_namespace(op)
        store, tenant = self.memory.store, self.memory.tenant_id
        item_id = self._item_id(op.namespace, op.key)
        old = await store.record_get(tenant, ITEM, item_id)
        old_vectors = [] if old is None else list(old.data.get("vectors", []))
        if op.value is None:
            await store.record_delete(tenant, ITEM, [item_id])
            await self._delete(VECTOR, old_vectors)
            return
        now = self.memory.now()
        minutes = op.ttl  # BaseStore.put resolved the default (TTLConfig.default_ttl)
        texts: dict[str, str] = {}
        if self._embedder is not None and op.index is not False:
            paths = self._fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
            for path, tokens in paths:
                found = get_text_at_path(op.value, tokens)
                for i, text in enumerate(found):
                    texts[path if len(found) == 1 else f"{path}.{i}"] = text
        vector_ids = [self._digest("vector", item_id, path) for path in texts]
        record = replace(
            self._record(ITEM, item_id, self._digest("ns0", op.namespace[0]), {}),
            data={
                "namespace": list(op.namespace),
                "key": op.key,
                "value": dict(op.value),
                "ttl": minutes,
                "vectors": vector_ids,
            },
            created_at=now if old is None else old.created_at,
            updated_at=now,
            expires_at=None if minutes is None else now + timedelta(minutes=float(minutes)),
        )
        await store.record_put(tenant, [record])
        await self._delete(VECTOR, [v for v in old_vectors if v not in vector_ids])
        if texts and self._embedder is not None:
            vectors = await self._embedder.aembed(list(texts.values()))
            model = self._embedder.model_id
            await store.vector_put(
                tenant,
                [
                    VectorItem(kind=VECTOR, id=vid, model_id=model, vector=vec)
                    for vid, vec in zip(vector_ids, vectors, strict=True)
                ],
            )

    async def _candidates(self, prefix: Sequence[str], now: datetime) -> _RecordList:
        key = self._digest("ns0", prefix[0]) if prefix else None
        n = len(prefix)
        return [
            r
            for r in await self._list(ITEM, key)
            if tuple(r.data["namespace"][:n]) == tuple(prefix) and self._live(r, now)
        ]

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        now = self.memory.now()
        found = [
            r
            for r in await self._candidates(op.namespace_prefix, now)
            if not op.filter
            or all(_matches(r.data["value"].get(k), v) for k, v in op.filter.items())
        ]
        # newest first without a query (as LangGraph's database stores)
        found.sort(key=lambda r: r.updated_at, reverse=True)
        scored: list[tuple[float | None, Record]] = [(None, r) for r in found]
        if op.query and self._embedder is not None:
            (query,) = await self._embedder.aembed([op.query])
            ids = [v for r in found for v in r.data.get("vectors", [])]
            stored = await self.memory.store.vector_get(
                self.memory.tenant_id, VECTOR, ids, model_id=self._embedder.model_id
            )
            ranked, unranked = [], []
            for record in found:
                scores = [
                    _cosine(query, stored[v]) for v in record.data.get("vectors", []) if v in stored
                ]
                if scores:
                    ranked.append((max(scores), record))
                else:
                    unranked.append((None, record))
            ranked.sort(key=lambda pair: pair[0], reverse=True)
            scored = [*ranked, *unranked]
        page = scored[op.offset : op.offset + op.limit]
        await self._touch([r for _, r in page], op.refresh_ttl, now)
        return [SearchItem(**self._item_fields(r), score=s) for s, r in page]

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        now = self.memory.now()
        spaces = {
            tuple(r.data["namespace"]) for r in await self._list(ITEM, None) if self._live(r, now)
        }
        if op.match_conditions:
            spaces = {
                s for s in spaces if all(_namespace_matches(c, s) for c in op.match_conditions)
            }
        if op.max_depth is not None:
            spaces = {s[: op.max_depth] for s in spaces}
        return sorted(spaces)[op.offset : op.offset + op.limit]

    async def asweep_ttl(self) -> int:
        """Delete the expired items (with their vectors) of this handle's scope; how many."""
        now = self.memory.now()
        expired = [
            r
            for r in await self._list(ITEM, None)
            if r.expires_at is not None and r.expires_at <= now
        ]
        await self._delete(VECTOR, [v for r in expired for v in r.data.get("vectors", [])])
        await self._delete(ITEM, [r.id for r in expired])
        return len(expired)
