"""Export a tenant as a dump, import a dump: the I/O of ``memorybank export/import/migrate``.

The format is ``memorybank.dump.format`` (documented there and in docs/dump-format.md). Both
directions stream: the exporter pages through each thread's entries
(``PAGE`` at a time) and the importer writes one thread's branch a page at a
time, so memory stays bounded by a page and one thread's branch list;
records are read ``PAGE`` at a time too (``record_page``, by ``(created_at, id)``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from memorybank.dump import format as _dump
from memorybank.errors import Conflict, InvalidInput
from memorybank.records import Branch, Entry, Summary, Thread
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.contract.types import UNSET, NewEntry, Record, VectorItem

__all__ = ["PAGE", "ImportReport", "OnConflict", "export_dump", "import_dump"]

#: Entries read or written per store call.
PAGE = 500

T = TypeVar("T")
OnConflict = Literal["skip", "overwrite", "fail"]
Progress = Callable[[str], None]


@dataclass(slots=True)
class ImportReport:
    """What an import did, by line type: ``written`` and ``skipped`` counts."""

    written: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    #: the model of the dump's vectors (``None``: it carries none)
    vector_model: str | None = None
    #: vectors written (the target's model matched) and vectors left out (it did not)
    vectors_written: int = 0
    vectors_dropped: int = 0
    #: what the source store could not enumerate, so the dump lacks it (header ``unlisted``)
    unlisted: list[str] = field(default_factory=list)

    def add(self, counts: dict[str, int], kind: str, n: int = 1) -> None:
        counts[kind] = counts.get(kind, 0) + n


async def _branch_entries(
    store: AsyncStore, tenant: str, thread_id: str, branch: str, total: int
) -> AsyncIterator[Entry]:
    """A branch's entries oldest first, ``PAGE`` at a time (paging counts from the newest)."""
    start = 0
    while start < total:
        size = min(PAGE, total - start)
        _, page = await store.list_entries(
            tenant, thread_id, branch=branch, limit=size, offset=total - start - size
        )
        for entry in page:
            yield entry
        start += size


async def _fork_prefix(
    store: AsyncStore, tenant: str, thread_id: str, branch: Branch, total: int, names: set[str]
) -> tuple[str | None, int]:
    """The last entry a branch shares with its source (same id and position), and how many.

    A branch whose source is gone (deleted) shares nothing: all its entries are dumped.
    """
    if branch.from_branch is None or branch.from_branch not in names:
        return None, 0
    last: str | None = None
    shared = 0
    async for entry in _branch_entries(store, tenant, thread_id, branch.name, total):
        source = await store.get_entry(tenant, thread_id, entry.id, branch=branch.from_branch)
        if source is None or source.position != entry.position:
            break
        last, shared = entry.id, shared + 1
    return last, shared


async def _lines(
    store: AsyncStore,
    tenant: str,
    kind: str,
    items: Sequence[Entry] | Sequence[Record],
    vector_model: str | None,
    progress: Progress | None,
) -> list[str]:
    """The dump lines of a page of entries or records, with their vectors when asked."""
    vectors: dict[str, list[float]] = {}
    if vector_model is not None and items:
        by_kind: dict[str, list[str]] = {}
        for item in items:
            by_kind.setdefault(_vector_kind(item), []).append(item.id)
        for vkind, ids in by_kind.items():
            found = await store.vector_get(tenant, vkind, ids, model_id=vector_model)
            vectors.update({f"{vkind}\x1f{i}": v for i, v in found.items()})
    lines = []
    for item in items:
        line: dict[str, Any] = {"type": kind, kind: item}
        vector = vectors.get(f"{_vector_kind(item)}\x1f{item.id}")
        if vector is not None:
            line["vector"] = vector
        lines.append(_dump.dumps(line))
        if progress is not None:
            progress(kind)
    return lines


def _vector_kind(item: Entry | Record) -> str:
    return item.kind if isinstance(item, Record) else "entry"


async def export_dump(
    store: AsyncStore,
    tenant: str,
    *,
    now: datetime,
    after_thread: str | None = None,
    vector_model: str | None = None,
    progress: Progress | None = None,
) -> AsyncIterator[str]:
    """The dump of ``tenant`` as lines (no newline): header, threads with entries, records.

    ``after_thread`` resumes an interrupted export: threads are written in id
    order and those up to this id are left out (records and summaries follow
    the threads, so a resumed export still carries all of them).
    ``vector_model`` carries the stored vectors of that embedder model (entries,
    facts, documents) as a ``"vector"`` member of their lines.
    """
    listers = {"snapshot": store.snapshot_runs, "working": store.working_runs}
    unlisted = [name for name, runs in listers.items() if await runs(tenant, limit=1) is None]
    yield json.dumps(_dump.header(tenant, now, vector_model=vector_model, unlisted=unlisted))
    threads = sorted(await store.list_threads(tenant), key=lambda t: t.id)
    agents: set[str] = set()
    for thread in threads:
        if thread.agent_id is not None:
            agents.add(thread.agent_id)
        if after_thread is not None and thread.id <= after_thread:
            continue
        branches = await store.list_branches(tenant, thread.id)
        described: list[dict[str, Any]] = []
        forks: list[int] = []
        names = {branch.name for branch in branches}
        for branch in branches:
            total = await store.count_entries(tenant, thread.id, branch=branch.name)
            fork_entry, shared = await _fork_prefix(store, tenant, thread.id, branch, total, names)
            forks.append(shared)
            described.append({**_dump.encode(branch), "entries": total, "fork_entry": fork_entry})
        yield _dump.dumps({"type": "thread", "thread": thread, "branches": described})
        for branch, info, shared in zip(branches, described, forks, strict=True):
            n = 0
            page: list[Entry] = []
            async for entry in _branch_entries(
                store, tenant, thread.id, branch.name, info["entries"]
            ):
                n += 1
                if n > shared:
                    page.append(entry)
                if len(page) >= PAGE:
                    for line in await _lines(store, tenant, "entry", page, vector_model, progress):
                        yield line
                    page = []
            for line in await _lines(store, tenant, "entry", page, vector_model, progress):
                yield line
        if progress is not None:
            progress("thread")
    for kind in _dump.RECORD_KINDS:
        after: tuple[datetime, str] | None = None
        while True:
            chunk = await store.record_page(tenant, kind, limit=PAGE, after=after)
            agents.update(r.agent_id for r in chunk if r.agent_id is not None)
            for line in await _lines(store, tenant, "record", chunk, vector_model, progress):
                yield line
            if len(chunk) < PAGE:
                break
            after = (chunk[-1].created_at, chunk[-1].id)
    for agent in sorted(agents):
        for summary in await store.summary_list(tenant, agent_id=agent, user_id=UNSET):
            yield _dump.dumps({"type": "summary", "summary": summary})
            if progress is not None:
                progress("summary")
    if "snapshot" not in unlisted:
        async for run in _runs(store, tenant, "snapshot"):
            loaded = await store.snapshot_load(tenant, run)
            if loaded is None:  # deleted since it was listed
                continue
            snapshot = {"run_id": run, "user_id": loaded[0], "value": loaded[1]}
            yield _dump.dumps({"type": "snapshot", "snapshot": snapshot})
            if progress is not None:
                progress("snapshot")
    if "working" not in unlisted:
        async for run in _runs(store, tenant, "working"):
            items = await store.working_items(tenant, run)
            if not items:  # cleared since it was listed
                continue
            working = {"run_id": run, "items": dict(sorted(items.items()))}
            yield _dump.dumps({"type": "working", "working": working})
            if progress is not None:
                progress("working")


async def _runs(store: AsyncStore, tenant: str, kind: str) -> AsyncIterator[str]:
    """Every run id with a ``kind`` (``snapshot``/``working``), ``PAGE`` at a time."""
    lister = store.snapshot_runs if kind == "snapshot" else store.working_runs
    after: str | None = None
    while True:
        page = await lister(tenant, after=after, limit=PAGE) or []
        for run in page:
            yield run
        if len(page) < PAGE:
            return
        after = page[-1]


def _run_fields(data: dict[str, Any], kind: str, member: str, cls: type[T]) -> tuple[str, Any, T]:
    """``(run_id, user_id, member)`` of a ``snapshot``/``working`` line, checked."""
    body = data.get(kind)
    if not isinstance(body, dict):
        raise InvalidInput(f"a {kind} line needs a {kind!r} object", field=kind)
    run, owner, value = body.get("run_id"), body.get("user_id"), body.get(member)
    if not isinstance(run, str) or not run:
        raise InvalidInput(f"a {kind} line needs a run_id", field="run_id")
    if owner is not None and not isinstance(owner, str):
        raise InvalidInput(f"a {kind}'s user_id must be a string or null", field="user_id")
    if not isinstance(value, cls):
        raise InvalidInput(f"a {kind}'s {member} must be a {cls.__name__}", field=member)
    return run, owner, value


def _new_entry(entry: Entry) -> NewEntry:
    return NewEntry(
        id=entry.id,
        role=entry.role,
        content=entry.content,
        name=entry.name,
        tool_calls=entry.tool_calls,
        tool_call_id=entry.tool_call_id,
        metadata=entry.metadata,
        state=entry.state,
        token_count=entry.token_count,
        created_at=entry.created_at,
        idempotency_key=entry.idempotency_key,
        extra=entry.extra,
        item=entry.item,
    )


class _Importer:
    """Writes a dump's lines into a store, one thread at a time."""

    def __init__(
        self,
        store: AsyncStore,
        tenant: str,
        on_conflict: OnConflict,
        progress: Progress | None,
        carry: str | None,
    ) -> None:
        self.carry = carry  # the vector model written to the target, None: no vectors
        self.vectors: list[VectorItem] = []
        self.store = store
        self.tenant = tenant
        self.on_conflict = on_conflict
        self.progress = progress
        self.report = ImportReport()
        self.thread: Thread | None = None  # the thread whose entries are being written
        self.branches: list[dict[str, Any]] = []
        self.created: set[str] = set()
        self.pending: list[NewEntry] = []
        self.pending_branch: str | None = None
        self.skipping = False
        self.saved_at = datetime.now(UTC)  # for snapshots: the header's created_at

    def _tick(self, kind: str) -> None:
        if self.progress is not None:
            self.progress(kind)

    async def _flush(self) -> None:
        if self.pending and self.thread is not None and self.pending_branch is not None:
            await self.store.append_entries(
                self.tenant,
                self.thread.id,
                self.pending,
                updated_at=self.thread.updated_at,
                branch=self.pending_branch,
            )
            self.report.add(self.report.written, "entry", len(self.pending))
        self.pending = []
        await self._put_vectors()

    def _vector(self, data: dict[str, Any], kind: str, item_id: str, thread: str | None) -> None:
        vector = data.get("vector")
        if vector is None:
            return
        if self.carry is None:
            self.report.vectors_dropped += 1
            return
        if not isinstance(vector, list):
            raise InvalidInput("a vector must be a list of numbers", field="vector")
        self.vectors.append(VectorItem(kind, item_id, self.carry, vector, thread))

    async def _put_vectors(self) -> None:
        if self.vectors:
            await self.store.vector_put(self.tenant, self.vectors)
            self.report.vectors_written += len(self.vectors)
            self.vectors = []

    async def _complete(self, thread: Thread, branches: list[dict[str, Any]]) -> bool:
        """Whether the target already holds this thread with every branch at full length."""
        have = {b.name for b in await self.store.list_branches(self.tenant, thread.id)}
        for info in branches:
            if info["name"] not in have:
                return False
            count = await self.store.count_entries(self.tenant, thread.id, branch=info["name"])
            if count != info["entries"]:
                return False
        return True

    async def _open_branch(self, name: str) -> None:
        """Create branch ``name`` as dumped (forked at its shared prefix), once."""
        assert self.thread is not None
        if name in self.created:
            return
        info = next((b for b in self.branches if b["name"] == name), None)
        if info is None:
            raise InvalidInput(f"entry on undeclared branch {name!r}", field="branch")
        for earlier in self.branches:  # sources first: branches are dumped oldest first
            if earlier["name"] == name:
                break
            await self._open_branch(earlier["name"])
        source = info.get("from_branch")
        created_at = datetime.fromisoformat(info["created_at"])
        if source is None or source not in self.created:
            source = next(iter(self.created))
            await self.store.create_branch(
                self.tenant,
                self.thread.id,
                name,
                from_branch=source,
                from_entry=None,
                created_at=created_at,
            )
            await self.store.clear_entries(self.tenant, self.thread.id, branch=name)
        else:
            fork = info.get("fork_entry")
            await self.store.create_branch(
                self.tenant,
                self.thread.id,
                name,
                from_branch=source,
                from_entry=fork,
                created_at=created_at,
            )
            if fork is None:
                await self.store.clear_entries(self.tenant, self.thread.id, branch=name)
        self.created.add(name)

    async def _finish_thread(self) -> None:
        await self._flush()
        thread = self.thread
        if thread is None or self.skipping:
            self.thread = None
            return
        for info in self.branches:
            await self._open_branch(info["name"])
        await self.store.update_thread(
            self.tenant,
            thread.id,
            updated_at=thread.updated_at,
            current_branch=thread.current_branch,
        )
        if "main" not in {b["name"] for b in self.branches}:
            await self.store.delete_branch(self.tenant, thread.id, "main")
        self.thread = None
        self._tick("thread")

    async def thread_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        thread = _dump.decode(Thread, data.get("thread"))
        thread.tenant_id = self.tenant
        branches = data.get("branches")
        if not isinstance(branches, list) or not branches:
            raise InvalidInput("a thread line needs its branches", field="branches")
        self.thread, self.branches, self.created = thread, branches, set()
        self.skipping, self.pending_branch = False, None
        existing = await self.store.get_thread(self.tenant, thread.id)
        if existing is not None:
            if self.on_conflict == "fail":
                raise Conflict(f"thread {thread.id!r} already exists in the target")
            # skip keeps a complete thread; a half-written one (interrupted import) is redone
            if self.on_conflict == "skip" and await self._complete(thread, branches):
                self.skipping = True
                self.report.add(self.report.skipped, "thread")
                return
            await self.store.delete_thread(self.tenant, thread.id)
        await self.store.create_thread(
            Thread(
                id=thread.id,
                tenant_id=self.tenant,
                user_id=thread.user_id,
                agent_id=thread.agent_id,
                title=thread.title,
                metadata=thread.metadata,
                status=thread.status,
                created_at=thread.created_at,
                updated_at=thread.updated_at,
                current_branch="main",  # the store's first branch; the dumped one is set last
            )
        )
        self.created.add("main")
        self.report.add(self.report.written, "thread")

    async def entry_line(self, data: dict[str, Any]) -> None:
        entry = _dump.decode(Entry, data.get("entry"))
        if self.thread is None or entry.thread_id != self.thread.id:
            raise InvalidInput("an entry line must follow its thread's line", field="entry")
        if self.skipping:
            self.report.add(self.report.skipped, "entry")
            return
        if entry.branch != self.pending_branch:
            await self._flush()
            await self._open_branch(entry.branch)
            self.pending_branch = entry.branch
        self.pending.append(_new_entry(entry))
        self._vector(data, "entry", entry.id, entry.thread_id)
        if len(self.pending) >= PAGE:
            await self._flush()
        self._tick("entry")

    async def record_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        record = _dump.decode(Record, data.get("record"))
        existing = await self.store.record_get(self.tenant, record.kind, record.id)
        if existing is not None:
            if self.on_conflict == "fail":
                raise Conflict(f"{record.kind} {record.id!r} already exists in the target")
            if self.on_conflict == "skip":
                self.report.add(self.report.skipped, "record")
                return
        await self.store.record_put(self.tenant, [record])
        self._vector(data, record.kind, record.id, None)
        await self._put_vectors()
        self.report.add(self.report.written, "record")
        self._tick("record")

    async def snapshot_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        run, owner, value = _run_fields(data, "snapshot", "value", str)
        if await self.store.snapshot_load(self.tenant, run) is not None:
            if self.on_conflict == "fail":
                raise Conflict(f"the snapshot of run {run!r} already exists in the target")
            if self.on_conflict == "skip":
                self.report.add(self.report.skipped, "snapshot")
                return
        await self.store.snapshot_save(
            self.tenant, run, value, user_id=owner, saved_at=self.saved_at, owner_check=False
        )
        self.report.add(self.report.written, "snapshot")
        self._tick("snapshot")

    async def working_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        run, _, items = _run_fields(data, "working", "items", dict)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in items.items()):
            raise InvalidInput("working memory items must map keys to JSON text", field="items")
        if await self.store.working_items(self.tenant, run):
            if self.on_conflict == "fail":
                raise Conflict(f"working memory of run {run!r} already exists in the target")
            if self.on_conflict == "skip":
                self.report.add(self.report.skipped, "working")
                return
            await self.store.working_clear(self.tenant, run)
        for key, value in items.items():
            await self.store.working_set(self.tenant, run, key, value)
        self.report.add(self.report.written, "working")
        self._tick("working")

    async def summary_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        summary = _dump.decode(Summary, data.get("summary"))
        have = await self.store.summary_list(
            self.tenant, agent_id=summary.agent_id, user_id=summary.user_id
        )
        if any(s.id == summary.id for s in have):
            # summaries have no replace in the contract: overwrite keeps the stored one
            if self.on_conflict == "fail":
                raise Conflict(f"summary {summary.id!r} already exists in the target")
            self.report.add(self.report.skipped, "summary")
            return
        await self.store.summary_add(self.tenant, summary)
        self.report.add(self.report.written, "summary")
        self._tick("summary")


async def import_dump(
    store: AsyncStore,
    tenant: str | None,
    lines: Iterable[str],
    *,
    on_conflict: OnConflict = "fail",
    model_id: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Write a dump's ``lines`` into ``store``; what was written and skipped.

    ``tenant`` ``None`` keeps the dump's tenant. ``on_conflict`` decides for a
    thread, record or summary that already exists: ``"fail"`` raises
    ``Conflict`` (what came before stays written), ``"skip"`` keeps the stored
    one (a thread only when complete: a thread left half-written by an
    interrupted import is written again, so re-running resumes), and
    ``"overwrite"`` replaces it (summaries excepted: kept). A run's snapshot and
    its working memory (version 2) count as one item each; ``overwrite`` replaces
    the working memory whole. Unknown line types of the dump's version are skipped.

    Vectors in the dump are written only when ``model_id`` (the target's
    embedder model) is the dump's ``vector_model``; otherwise they are left
    out and counted in ``vectors_dropped`` (re-embed with ``embed_pending``).
    """
    iterator = iter(lines)
    first = next(iterator, None)
    if first is None:
        raise InvalidInput("the dump is empty", field="header")
    head = _dump.parse_header(first)
    target = tenant if tenant is not None else head.get("tenant")
    if not isinstance(target, str):
        raise InvalidInput("the dump names no tenant; pass one", field="tenant")
    model = head.get("vector_model")
    carry = model if isinstance(model, str) and model == model_id else None
    importer = _Importer(store, target, on_conflict, progress, carry)
    importer.report.vector_model = model if isinstance(model, str) else None
    unlisted = head.get("unlisted")
    importer.report.unlisted = [str(u) for u in unlisted] if isinstance(unlisted, list) else []
    created = head.get("created_at")
    if isinstance(created, str):
        try:
            importer.saved_at = datetime.fromisoformat(created)
        except ValueError as error:
            raise InvalidInput("the header's created_at is not a time", field="header") from error
    handlers = {
        "thread": importer.thread_line,
        "entry": importer.entry_line,
        "record": importer.record_line,
        "summary": importer.summary_line,
        "snapshot": importer.snapshot_line,
        "working": importer.working_line,
    }
    for number, line in enumerate(iterator, start=2):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as error:
            raise InvalidInput(f"line {number} of the dump is not JSON", field="line") from error
        kind = str(data.get("type")) if isinstance(data, dict) else "?"
        handler = handlers.get(kind)
        if handler is None:
            importer.report.add(importer.report.skipped, kind)
            continue
        await handler(data)
    await importer._finish_thread()
    return importer.report
