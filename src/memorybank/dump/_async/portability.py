"""Export a tenant as a dump, import a dump: the I/O of ``memorybank export/import/migrate``.

The format is ``memorybank.dump.format`` (documented there and in docs/dump-format.md). Both
directions stream: the exporter pages through each thread's entries
(``PAGE`` at a time) and the importer writes one thread's branch a page at a
time, so memory stays bounded by a page and one thread's branch list;
records are read ``PAGE`` at a time too (``record_page``, by ``(created_at, id)``).

Import validates before it writes (see ``import_dump``): a first pass checks
every line with the rules the library's own writes follow
(``memorybank.dump.checks``), the cross-line structure (entries after their
thread, fork entries present) and the trailer, spooling the lines to a
temporary file; only a dump that passes is written, by a second pass over that
file. This is the simplest design that keeps "nothing of an invalid dump is
written" the same on every store (a staging area would need per-store tables
and a commit step the store contract lacks), and it keeps memory bounded (the
spool is on disk). What can still stop an import half-way is the target
itself: a conflict under ``on_conflict="fail"`` or the store failing; re-run
with ``on_conflict="skip"`` to resume.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any, Literal

from memorybank.dump import checks as _checks
from memorybank.dump import format as _dump
from memorybank.errors import Conflict, InvalidInput, NotFound
from memorybank.records import Branch, Entry, Thread
from memorybank.rules import validate as v
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import UNSET, NewEntry, Record, VectorItem

__all__ = ["PAGE", "ImportReport", "OnConflict", "export_dump", "import_dump"]

#: Entries read or written per store call.
PAGE = 500

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
    #: what the caller should know (an old dump without a trailer)
    warnings: list[str] = field(default_factory=list)
    #: why the dump was taken as partial (``allow_partial``: cut, or disagreeing with its
    #: trailer); ``None``: it was complete
    partial: str | None = None

    def add(self, counts: dict[str, int], kind: str, n: int = 1) -> None:
        counts[kind] = counts.get(kind, 0) + n


async def _branch_entries(
    store: AsyncStore, tenant: str, thread_id: str, branch: str, total: int
) -> AsyncIterator[Entry]:
    """A branch's first ``total`` entries oldest first, ``PAGE`` at a time (paging counts
    from the newest). An entry read twice (the branch grew between two pages, on a store
    without a snapshot) is given once: positions only increase."""
    start = 0
    last: int | None = None
    while start < total:
        size = min(PAGE, total - start)
        _, page = await store.entry_list(
            tenant, thread_id, branch=branch, limit=size, offset=total - start - size
        )
        for entry in page:
            if last is None or entry.position > last:
                last = entry.position
                yield entry
        start += size


async def _fork_prefix(
    store: AsyncStore, tenant: str, thread_id: str, branch: Branch, totals: dict[str, int]
) -> tuple[str | None, int]:
    """The last entry a branch shares with its source (the same id and position at the
    same place), and how many: the two branches are compared a page of each at a time.

    A branch whose source is gone (deleted) shares nothing: all its entries are dumped.
    """
    source = branch.from_branch
    if source is None or source not in totals:
        return None, 0
    mine_total, their_total = totals[branch.name], totals[source]
    last: str | None = None
    shared = 0
    while shared < min(mine_total, their_total):
        size = min(PAGE, mine_total - shared, their_total - shared)
        _, mine = await store.entry_list(
            tenant, thread_id, branch=branch.name, limit=size, offset=mine_total - shared - size
        )
        _, theirs = await store.entry_list(
            tenant, thread_id, branch=source, limit=size, offset=their_total - shared - size
        )
        if len(mine) < size or len(theirs) < size:
            size = 0  # a branch shorter than counted (changed meanwhile): compare what came
        for entry, other in zip(mine, theirs, strict=False):
            if other.id != entry.id or other.position != entry.position:
                return last, shared
            last, shared = entry.id, shared + 1
        if size == 0:
            break
    return last, shared


async def _lines(
    store: AsyncStore,
    tenant: str,
    kind: str,
    items: Sequence[Entry] | Sequence[Record],
    vector_model: str | None,
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
    """The dump of ``tenant`` as lines (no newline): header, threads with entries, records,
    summaries, snapshots, working memory, and the trailer (counts and checksum).

    ``after_thread`` resumes an interrupted export: threads are written in id
    order and those up to this id are left out (records and summaries follow
    the threads, so a resumed export still carries all of them).
    ``vector_model`` carries the stored vectors of that embedder model (entries,
    facts, documents) as a ``"vector"`` member of their lines.

    Consistency (docs/dump-format.md): every read goes through ``store.snapshot``.
    On a store with ``Capability.SNAPSHOT`` that is one read transaction, so the
    dump is the tenant at one point in time, streamed as it is read. On any other
    store each thread is read until it is stable (``_stable_thread``): its lines go
    to a temporary file and are given only when the thread's branches and their
    heads were the same before and after and every fork entry was read; a thread
    deleted meanwhile is left out. Writers are never held back by the export.
    """
    async with store.snapshot(tenant) as view:
        consistent = Capability.SNAPSHOT in store.capabilities
        listers = {
            "summary": view.summary_agents,
            "snapshot": view.snapshot_runs,
            "working": view.working_runs,
        }
        unlisted = [name for name, runs in listers.items() if await runs(tenant, limit=1) is None]
        checksum = _dump.Checksum()
        head = json.dumps(_dump.header(tenant, now, vector_model=vector_model, unlisted=unlisted))
        checksum.add(head)
        yield head
        body = _body(view, tenant, after_thread, vector_model, unlisted, consistent)
        async for kind, line in body:
            checksum.add(line, kind)
            yield line
            if progress is not None:
                progress(kind)
        yield json.dumps(_dump.trailer(checksum))


#: Reads of one thread on a store without a snapshot before it is dumped as last read,
#: each branch whole (``_stable_thread``).
ATTEMPTS = 8


@dataclass(slots=True)
class _Shape:
    """What a thread's dump depends on: its row, its branches and each branch's head
    (entry count, last entry id and position). Equal shapes before and after reading a
    thread: no write changed it in between (entries are only appended at the head)."""

    thread: Thread
    branches: list[Branch]
    heads: dict[str, tuple[int, str | None, int | None]]

    def same(self, other: _Shape | None) -> bool:
        def key(s: _Shape) -> Any:
            names = [(b.name, b.from_branch, b.from_entry) for b in s.branches]
            return s.thread.current_branch, names, s.heads

        return other is not None and key(self) == key(other)


async def _shape(store: AsyncStore, tenant: str, thread_id: str) -> _Shape | None:
    """The thread's shape now; ``None`` when it is gone."""
    thread = await store.thread_get(tenant, thread_id)
    if thread is None:
        return None
    heads: dict[str, tuple[int, str | None, int | None]] = {}
    try:
        branches = await store.branch_list(tenant, thread_id)
        for branch in branches:
            count = await store.entry_count(tenant, thread_id, branch=branch.name)
            _, last = await store.entry_list(tenant, thread_id, branch=branch.name, limit=1)
            tail = last[-1] if last else None
            heads[branch.name] = (
                count,
                None if tail is None else tail.id,
                None if tail is None else tail.position,
            )
    except NotFound:
        return None
    return _Shape(thread, branches, heads)


async def _thread_lines(
    store: AsyncStore,
    tenant: str,
    shape: _Shape,
    vector_model: str | None,
    *,
    prefixes: dict[str, tuple[str | None, int]],
    seen: set[tuple[str, str]],
    counts: dict[str, int],
) -> AsyncIterator[str]:
    """A thread's entry lines, branch after branch (oldest branch first), each without
    the prefix it shares with its source (``prefixes``: fork entry and length, by
    branch; a branch not there is dumped whole).

    Fills ``counts`` (entries read per branch) and ``seen`` (``(branch, entry id)`` of
    the fork entries read), what the thread's line says and ``_stable_thread`` checks.
    """
    thread_id = shape.thread.id
    wanted = {fork for fork, _ in prefixes.values() if fork is not None}
    for branch in shape.branches:
        shared = prefixes.get(branch.name, (None, 0))[1]
        n = 0
        page: list[Entry] = []
        total = shape.heads[branch.name][0]
        async for entry in _branch_entries(store, tenant, thread_id, branch.name, total):
            n += 1
            if entry.id in wanted:
                seen.add((branch.name, entry.id))
            if n > shared:
                page.append(entry)
            if len(page) >= PAGE:
                for line in await _lines(store, tenant, "entry", page, vector_model):
                    yield line
                page = []
        for line in await _lines(store, tenant, "entry", page, vector_model):
            yield line
        counts[branch.name] = n


def _thread_line(
    shape: _Shape, counts: dict[str, int], prefixes: dict[str, tuple[str | None, int]]
) -> str:
    """The thread's line: the thread and its branches, each with its entry count and the
    entry it forks from its source at (``None``: dumped whole)."""
    thread = shape.thread
    names = [b.name for b in shape.branches]
    if thread.current_branch not in names and names:  # (a dump read whole, in pieces)
        thread = dataclasses.replace(thread, current_branch="main" if "main" in names else names[0])
    described = [
        {
            **_dump.encode(b),
            "entries": counts.get(b.name, 0),
            "fork_entry": prefixes.get(b.name, (None, 0))[0],
        }
        for b in shape.branches
    ]
    return _dump.dumps({"type": "thread", "thread": thread, "branches": described})


async def _snapshot_thread(
    store: AsyncStore, tenant: str, thread: Thread, vector_model: str | None
) -> AsyncIterator[tuple[str, str]]:
    """A thread read in a snapshot: its line, then its entries, streamed."""
    shape = await _shape(store, tenant, thread.id)
    if shape is None:
        return
    prefixes = await _prefixes(store, tenant, shape)
    totals = {name: head[0] for name, head in shape.heads.items()}
    yield "thread", _thread_line(shape, totals, prefixes)
    lines = _thread_lines(
        store, tenant, shape, vector_model, prefixes=prefixes, seen=set(), counts={}
    )
    async for line in lines:
        yield "entry", line


async def _prefixes(
    store: AsyncStore, tenant: str, shape: _Shape
) -> dict[str, tuple[str | None, int]]:
    """Each branch's fork entry and shared length (``_fork_prefix``)."""
    totals = {name: head[0] for name, head in shape.heads.items()}
    return {
        b.name: await _fork_prefix(store, tenant, shape.thread.id, b, totals)
        for b in shape.branches
    }


async def _stable_thread(
    store: AsyncStore, tenant: str, thread: Thread, vector_model: str | None
) -> AsyncIterator[tuple[str, str]]:
    """A thread read on a store without a snapshot, until what was read is one state.

    Each attempt reads the thread's shape, spools its entry lines to a temporary file
    and reads the shape again; the lines are given when both shapes are equal, every
    branch gave as many entries as its count and every fork entry was read on its
    source branch. A thread gone meanwhile is left out. After ``ATTEMPTS`` unstable
    reads (a thread written to without pause) the last read is given with every branch
    whole (no fork entry: each imports as a branch of its own), which still imports.
    """
    for attempt in range(ATTEMPTS):
        whole = attempt == ATTEMPTS - 1
        shape = await _shape(store, tenant, thread.id)
        if shape is None:
            return
        seen: set[tuple[str, str]] = set()
        counts: dict[str, int] = {}
        prefixes: dict[str, tuple[str | None, int]] = {}
        with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n") as spool:
            try:
                if not whole:
                    prefixes = await _prefixes(store, tenant, shape)
                lines = _thread_lines(
                    store, tenant, shape, vector_model, prefixes=prefixes, seen=seen, counts=counts
                )
                async for line in lines:
                    spool.write(line)
                    spool.write("\n")
            except NotFound:  # deleted meanwhile: the next shape says so
                continue
            if not whole:
                after = await _shape(store, tenant, thread.id)
                totals = {name: head[0] for name, head in shape.heads.items()}
                complete = counts == totals and all(
                    (b.from_branch, prefixes[b.name][0]) in seen
                    for b in shape.branches
                    if b.from_branch is not None and prefixes[b.name][0] is not None
                )
                if not (shape.same(after) and complete):
                    continue
            yield "thread", _thread_line(shape, counts, prefixes)
            spool.seek(0)
            for text in spool:
                yield "entry", text.rstrip("\n")
            return


async def _body(
    store: AsyncStore,
    tenant: str,
    after_thread: str | None,
    vector_model: str | None,
    unlisted: Sequence[str],
    consistent: bool,
) -> AsyncIterator[tuple[str, str]]:
    """The dump's lines after its header, each with its type."""
    threads = sorted(await store.thread_list(tenant), key=lambda t: t.id)
    agents: set[str] = set()  # for a store that cannot list the agents of its summaries
    read = _snapshot_thread if consistent else _stable_thread
    for thread in threads:
        if thread.agent_id is not None:
            agents.add(thread.agent_id)
        if after_thread is not None and thread.id <= after_thread:
            continue
        async for item in read(store, tenant, thread, vector_model):
            yield item
    for kind in _dump.RECORD_KINDS:
        after: tuple[datetime, str] | None = None
        while True:
            chunk = await store.record_page(tenant, kind, limit=PAGE, after=after)
            agents.update(r.agent_id for r in chunk if r.agent_id is not None)
            for line in await _lines(store, tenant, "record", chunk, vector_model):
                yield "record", line
            if len(chunk) < PAGE:
                break
            after = (chunk[-1].created_at, chunk[-1].id)
    if "summary" not in unlisted:
        agents = set()
        async for agent in _runs(store, tenant, "summary"):
            agents.add(agent)
    for agent in sorted(agents):
        for summary in await store.summary_list(tenant, agent_id=agent, user_id=UNSET):
            yield "summary", _dump.dumps({"type": "summary", "summary": summary})
    if "snapshot" not in unlisted:
        async for run in _runs(store, tenant, "snapshot"):
            loaded = await store.snapshot_load(tenant, run)
            if loaded is None:  # deleted since it was listed
                continue
            snapshot = {"run_id": run, "user_id": loaded[0], "value": loaded[1]}
            yield "snapshot", _dump.dumps({"type": "snapshot", "snapshot": snapshot})
    if "working" not in unlisted:
        async for run in _runs(store, tenant, "working"):
            items = await store.working_items(tenant, run)
            if not items:  # cleared since it was listed
                continue
            working = {"run_id": run, "items": dict(sorted(items.items()))}
            yield "working", _dump.dumps({"type": "working", "working": working})


async def _runs(store: AsyncStore, tenant: str, kind: str) -> AsyncIterator[str]:
    """Every run id with a ``kind`` (``snapshot``/``working``), or agent id with a summary
    (``summary``), ``PAGE`` at a time."""
    listers = {
        "summary": store.summary_agents,
        "snapshot": store.snapshot_runs,
        "working": store.working_runs,
    }
    lister = listers[kind]
    after: str | None = None
    while True:
        page = await lister(tenant, after=after, limit=PAGE) or []
        for run in page:
            yield run
        if len(page) < PAGE:
            return
        after = page[-1]


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
            await self.store.entry_append(
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
        vector = _checks.check_vector(data)
        if vector is None:
            return
        if self.carry is None:
            self.report.vectors_dropped += 1
            return
        self.vectors.append(VectorItem(kind, item_id, self.carry, vector, thread))

    async def _put_vectors(self) -> None:
        if self.vectors:
            await self.store.vector_put(self.tenant, self.vectors)
            self.report.vectors_written += len(self.vectors)
            self.vectors = []

    async def _complete(self, thread: Thread, branches: list[dict[str, Any]]) -> bool:
        """Whether the target already holds this thread with every branch at full length."""
        have = {b.name for b in await self.store.branch_list(self.tenant, thread.id)}
        for info in branches:
            if info["name"] not in have:
                return False
            count = await self.store.entry_count(self.tenant, thread.id, branch=info["name"])
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
            await self.store.branch_create(
                self.tenant,
                self.thread.id,
                name,
                from_branch=source,
                from_entry=None,
                created_at=created_at,
            )
            await self.store.entry_clear(self.tenant, self.thread.id, branch=name)
        else:
            fork = info.get("fork_entry")
            await self.store.branch_create(
                self.tenant,
                self.thread.id,
                name,
                from_branch=source,
                from_entry=fork,
                created_at=created_at,
            )
            if fork is None:
                await self.store.entry_clear(self.tenant, self.thread.id, branch=name)
        self.created.add(name)

    async def _finish_thread(self) -> None:
        await self._flush()
        thread = self.thread
        if thread is None or self.skipping:
            self.thread = None
            return
        for info in self.branches:
            await self._open_branch(info["name"])
        await self.store.thread_update(
            self.tenant,
            thread.id,
            updated_at=thread.updated_at,
            current_branch=thread.current_branch,
        )
        if "main" not in {b["name"] for b in self.branches}:
            await self.store.branch_delete(self.tenant, thread.id, "main")
        self.thread = None
        self._tick("thread")

    async def thread_line(self, data: dict[str, Any]) -> None:
        await self._finish_thread()
        thread = _checks.check_thread(data)
        thread.tenant_id = self.tenant
        branches = _checks.check_branches(data, thread)
        self.thread, self.branches, self.created = thread, branches, set()
        self.skipping, self.pending_branch = False, None
        existing = await self.store.thread_get(self.tenant, thread.id)
        if existing is not None:
            if self.on_conflict == "fail":
                raise Conflict(f"thread {thread.id!r} already exists in the target")
            # skip keeps a complete thread; a half-written one (interrupted import) is redone
            if self.on_conflict == "skip" and await self._complete(thread, branches):
                self.skipping = True
                self.report.add(self.report.skipped, "thread")
                return
            await self.store.thread_delete(self.tenant, thread.id)
        await self.store.thread_create(
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
        entry = _checks.check_entry(data)
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
        record = _checks.check_record(data)
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
        run, owner, value = _checks.check_snapshot(data)
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
        run, items = _checks.check_working(data)
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
        summary = _checks.check_summary(data)
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


class _Checker:
    """The first pass of an import: every line checked, nothing written (see the module
    docstring). Keeps what crosses lines: the current thread's branches and the entries its
    forks start from, the line counts and the checksum."""

    def __init__(self, version: int, allow_partial: bool) -> None:
        self.version = version
        self.allow_partial = allow_partial
        self.checksum = _dump.Checksum()
        self.trailer: dict[str, Any] | None = None
        self.threads: set[str] = set()
        self.thread: Thread | None = None
        self.thread_line = 0
        self.branches: dict[str, dict[str, Any]] = {}
        self.wanted: set[str] = set()  # the fork entries of the current thread's branches
        self.seen: dict[str, tuple[str, int]] = {}  # fork entry -> (branch, ordinal on it)
        self.counts: dict[str, int] = {}  # entry lines per branch of the current thread
        self.dropped: str | None = None  # a cut last line left out (``allow_partial``)

    def line(self, number: int, data: dict[str, Any]) -> str:
        """Check one body line; its type."""
        if self.trailer is not None:
            raise InvalidInput("a line follows the dump's trailer", field="type")
        kind = data.get("type")
        if kind == _dump.TRAILER and self.version >= _dump.TRAILER_VERSION:
            self.end_thread()
            self.trailer = data
            return _dump.TRAILER
        if kind not in _dump.LINE_TYPES:
            raise InvalidInput(
                f"unknown line type {kind!r} (a dump of version {self.version} holds"
                f" {', '.join(_dump.LINE_TYPES)})",
                field="type",
            )
        if kind == "thread":
            self.end_thread()
            thread = _checks.check_thread(data)
            branches = _checks.check_branches(data, thread)
            if thread.id in self.threads:
                raise InvalidInput(f"thread {thread.id!r} appears twice", field="thread.id")
            self.threads.add(thread.id)
            self.thread, self.thread_line = thread, number
            self.branches = {info["name"]: info for info in branches}
            self.wanted = {b["fork_entry"] for b in branches if b.get("fork_entry") is not None}
            self.seen, self.counts = {}, {}
        elif kind == "entry":
            entry = _checks.check_entry(data)
            _checks.check_vector(data)
            if self.thread is None or entry.thread_id != self.thread.id:
                raise InvalidInput(
                    f"entry {entry.id!r} of thread {entry.thread_id!r} does not follow"
                    " its thread's line",
                    field="entry.thread_id",
                )
            if entry.branch not in self.branches:
                raise InvalidInput(
                    f"entry {entry.id!r} is on branch {entry.branch!r}, which its thread's"
                    " line does not list",
                    field="entry.branch",
                )
            ordinal = self.counts[entry.branch] = self.counts.get(entry.branch, 0) + 1
            if entry.id in self.wanted:
                self.seen.setdefault(entry.id, (entry.branch, ordinal))
        else:
            self.end_thread()
            if kind == "record":
                _checks.check_record(data)
                _checks.check_vector(data)
            elif kind == "summary":
                _checks.check_summary(data)
            elif kind == "snapshot":
                _checks.check_snapshot(data)
            else:
                _checks.check_working(data)
        return str(kind)

    def _holds(self, branch: str, entry: str, upto: int | None, depth: int = 0) -> bool:
        """Whether ``branch`` will hold ``entry`` once imported (within its first ``upto``
        dumped entries when given): dumped on it, or in the prefix it forks with."""
        found = self.seen.get(entry)
        if found is not None and found[0] == branch:
            return upto is None or found[1] <= upto
        info = self.branches.get(branch)
        if info is None or depth > len(self.branches):
            return False
        fork, source = info.get("fork_entry"), info.get("from_branch")
        if fork is None or source is None or not self._holds(source, fork, None, depth + 1):
            return False
        if entry == fork:
            return True
        # entry is in the shared prefix if it comes before the fork entry on the source
        where, fork_at = self.seen.get(entry), self.seen.get(fork)
        if where is not None and fork_at is not None and where[0] == fork_at[0]:
            return where[1] <= fork_at[1]
        return False

    def end_thread(self) -> None:
        """The current thread is complete: every branch's fork entry must be in the dump."""
        if self.thread is None:
            return
        for name, info in self.branches.items():
            fork, source = info.get("fork_entry"), info.get("from_branch")
            if fork is not None and source is not None and not self._holds(source, fork, None):
                raise _checks.DumpLineError(
                    self.thread_line,
                    f"thread {self.thread.id!r}: branch {name!r} forks from {source!r} at entry"
                    f" {fork!r}, and that fork entry is missing from the dump (a dump cut"
                    " short, or edited)",
                    field="fork_entry",
                )
        self.thread, self.branches, self.wanted, self.seen = None, {}, set(), {}


def _spool() -> IO[str]:
    """Where the first pass keeps the checked lines for the second (a temporary file)."""
    return tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n")


async def import_dump(
    store: AsyncStore,
    tenant: str | None,
    lines: Iterable[str],
    *,
    on_conflict: OnConflict = "fail",
    model_id: str | None = None,
    progress: Progress | None = None,
    allow_partial: bool = False,
    plan: Callable[[dict[str, int]], None] | None = None,
) -> ImportReport:
    """Write a dump's ``lines`` into ``store``; what was written and skipped.

    Two passes. The first checks every line (``memorybank.dump.checks``: the
    rules of the library's own writes), the order of threads and entries, that
    every branch's fork entry is there, and the trailer's counts and checksum,
    writing nothing and keeping the lines in a temporary file; an invalid dump
    raises ``InvalidInput`` (``DumpLineError`` with the line number) and
    nothing of it is written. The second writes. Validating the whole dump
    first is the simplest design that keeps "nothing of an invalid dump is
    written" on every store: a staging area would need a second tenant or
    table per store and a commit step the contract does not have. Its cost is
    one more read of the dump (from the temporary file) and one more parse of
    each line.

    ``tenant`` ``None`` keeps the dump's tenant; either way a reserved tenant
    (``~...``, the server's) is refused. A version 3 dump must end with its
    trailer and agree with it: otherwise ``InvalidInput(field="trailer")``,
    unless ``allow_partial`` (then what is there is written, a cut last line
    left out, and ``report.partial`` says why). Version 1 and 2 dumps have no
    trailer: they import with a warning in ``report.warnings``.

    ``on_conflict`` decides for a thread, record or summary that already
    exists: ``"fail"`` raises ``Conflict`` (what came before stays written),
    ``"skip"`` keeps the stored one (a thread only when complete: a thread
    left half-written by an interrupted import is written again, so re-running
    resumes), and ``"overwrite"`` replaces it (summaries excepted: kept). A
    run's snapshot and its working memory (version 2) count as one item each;
    ``overwrite`` replaces the working memory whole.

    Vectors in the dump are written only when ``model_id`` (the target's
    embedder model) is the dump's ``vector_model``; otherwise they are left
    out and counted in ``vectors_dropped`` (re-embed with ``embed_pending``).
    ``progress`` is called with each line's type as it is written, ``plan`` once
    before writing with the counts of lines per type.
    """
    iterator = iter(lines)
    first = next(iterator, None)
    if first is None:
        raise InvalidInput("the dump is empty", field="header")
    first = first.rstrip("\r\n")
    head = _dump.parse_header(first)
    target = tenant if tenant is not None else head.get("tenant")
    if target is None:
        raise InvalidInput("the dump names no tenant; pass one", field="tenant")
    target = v.check_tenant(target, "tenant")
    version = int(head["version"])
    model = head.get("vector_model")
    carry = model if isinstance(model, str) and model == model_id else None
    report = ImportReport()
    report.vector_model = model if isinstance(model, str) else None
    unlisted = head.get("unlisted")
    report.unlisted = [str(u) for u in unlisted] if isinstance(unlisted, list) else []
    saved_at = datetime.now(UTC)  # for snapshots: the header's created_at
    created = head.get("created_at")
    if isinstance(created, str):
        try:
            saved_at = v.check_time(datetime.fromisoformat(created), "header.created_at")
        except ValueError as error:
            raise InvalidInput("the header's created_at is not a time", field="header") from error
    checker = _Checker(version, allow_partial)
    checker.checksum.add(first)
    with _spool() as spool:
        _check_all(checker, iterator, spool, report)
        if plan is not None:
            plan(dict(checker.checksum.counts))
        spool.seek(0)
        importer = _Importer(store, target, on_conflict, progress, carry)
        importer.report = report
        importer.saved_at = saved_at
        handlers = {
            "thread": importer.thread_line,
            "entry": importer.entry_line,
            "record": importer.record_line,
            "summary": importer.summary_line,
            "snapshot": importer.snapshot_line,
            "working": importer.working_line,
        }
        for number, text in enumerate(spool, start=2):
            try:
                data = _checks.parse_line(text)
                handler = handlers.get(str(data.get("type")))
                if handler is not None:
                    await handler(data)
            except InvalidInput as error:  # checked in the first pass: a store-side refusal
                raise _checks.DumpLineError(number, str(error), field=error.field) from error
        await importer._finish_thread()
    return report


def _check_all(
    checker: _Checker, lines: Iterator[str], spool: IO[str], report: ImportReport
) -> None:
    """The first pass (see ``import_dump``): check every line into ``spool``, then the
    trailer."""
    pending: tuple[int, InvalidInput] | None = None  # a line that is not JSON: the last?
    number = 1
    for number, raw in enumerate(lines, start=2):
        if pending is not None:
            raise _checks.DumpLineError(pending[0], str(pending[1]), field=pending[1].field)
        text = raw.rstrip("\r\n")
        if "\n" in text or "\r" in text:
            raise _checks.DumpLineError(number, "a line break inside a line", field="line")
        try:
            data = _checks.parse_line(text) if text.strip() else None
        except InvalidInput as error:
            if error.field == "line" and checker.allow_partial and checker.trailer is None:
                pending = (number, error)  # taken as the cut end if no line follows
                continue
            raise _checks.DumpLineError(number, str(error), field=error.field) from error
        if data is None:
            if checker.trailer is None:
                checker.checksum.add(text)
            continue
        try:
            kind = checker.line(number, data)
        except _checks.DumpLineError:
            raise
        except InvalidInput as error:
            raise _checks.DumpLineError(number, str(error), field=error.field) from error
        if kind == _dump.TRAILER:
            continue
        checker.checksum.add(text, kind)
        spool.write(text)
        spool.write("\n")
    if pending is not None:
        checker.dropped = f"line {pending[0]} (not JSON: cut in the middle) was left out"
    checker.end_thread()
    _check_trailer(checker, number, report)


def _check_trailer(checker: _Checker, last: int, report: ImportReport) -> None:
    """The trailer's verdict: fine, a warning (old dump), partial (allowed) or an error."""
    if checker.version < _dump.TRAILER_VERSION:
        report.warnings.append(
            f"this version {checker.version} dump has no trailer: whether it is complete"
            " cannot be checked (dumps of version 3 and later can)"
        )
        return
    problem: str | None = None
    trailer = checker.trailer
    if trailer is None:
        problem = (
            f"the dump has no trailer (its last line, {last}, is not the 'end' line): it was"
            " cut short"
        )
    else:
        counts = trailer.get("counts")
        have = checker.checksum.counts
        if not isinstance(counts, dict):
            problem = "the trailer has no counts"
        else:
            wrong = [
                f"{kind}: {counts.get(kind, 0)} announced, {have.get(kind, 0)} found"
                for kind in sorted(set(counts) | set(have))
                if counts.get(kind, 0) != have.get(kind, 0)
            ]
            if wrong:
                problem = "the dump's lines disagree with its trailer (" + "; ".join(wrong) + ")"
            elif trailer.get("sha256") != checker.checksum.hexdigest():
                problem = "the dump's checksum disagrees with its trailer: a line was changed"
    if checker.dropped is not None:
        problem = f"{problem}; {checker.dropped}" if problem else checker.dropped
    if problem is None:
        return
    if not checker.allow_partial:
        raise InvalidInput(
            f"{problem}. Nothing was written; --allow-partial (allow_partial=True) imports"
            " what is there",
            field="trailer",
        )
    report.partial = problem
