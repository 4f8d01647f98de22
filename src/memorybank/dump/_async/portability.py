"""Export a tenant as a dump, import a dump: the I/O of ``memorybank export/import/migrate``.

The format is docs/dump-format.md (its code: ``memorybank.dump.format``). Both
directions stream: the exporter pages through each thread's entries
(``PAGE`` at a time) and the importer writes one thread's branch a page at a
time, so memory stays bounded by a page and one thread's branch list;
records are read ``PAGE`` at a time too (``record_page``, by ``(created_at, id)``).

Import (``import_dump``, ``ImportReport``) lives in
``memorybank.dump._async.importing`` and is re-exported here.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memorybank.dump import format as _dump
from memorybank.dump._async.importing import ImportReport, OnConflict, Progress, import_dump
from memorybank.errors import NotFound
from memorybank.records import Branch, Entry, Thread
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import UNSET, Record

__all__ = ["PAGE", "ImportReport", "OnConflict", "export_dump", "import_dump"]

#: Entries read per store call.
PAGE = 500


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
