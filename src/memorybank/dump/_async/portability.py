"""Export a tenant as a dump, import a dump: the I/O of ``memorybank export/import/migrate``.

The format is ``memorybank.dump.format`` (documented there and in docs/dump-format.md). Both
directions stream: the exporter pages through each thread's entries
(``PAGE`` at a time) and the importer writes one thread's branch a page at a
time, so memory stays bounded by a page and one thread's branch list;
records are read ``PAGE`` at a time too (``record_page``, by ``(created_at, id)``).

Import (``import_dump``, ``ImportReport``) lives in
``memorybank.dump._async.importing`` and is re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from memorybank.dump import format as _dump
from memorybank.dump._async.importing import ImportReport, OnConflict, Progress, import_dump
from memorybank.records import Branch, Entry
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.contract.types import UNSET, Record

__all__ = ["PAGE", "ImportReport", "OnConflict", "export_dump", "import_dump"]

#: Entries read per store call.
PAGE = 500


async def _branch_entries(
    store: AsyncStore, tenant: str, thread_id: str, branch: str, total: int
) -> AsyncIterator[Entry]:
    """A branch's entries oldest first, ``PAGE`` at a time (paging counts from the newest)."""
    start = 0
    while start < total:
        size = min(PAGE, total - start)
        _, page = await store.entry_list(
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
        source = await store.entry_get(tenant, thread_id, entry.id, branch=branch.from_branch)
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
    """
    listers = {
        "summary": store.summary_agents,
        "snapshot": store.snapshot_runs,
        "working": store.working_runs,
    }
    unlisted = [name for name, runs in listers.items() if await runs(tenant, limit=1) is None]
    checksum = _dump.Checksum()
    head = json.dumps(_dump.header(tenant, now, vector_model=vector_model, unlisted=unlisted))
    checksum.add(head)
    yield head
    async for kind, line in _body(store, tenant, after_thread, vector_model, unlisted):
        checksum.add(line, kind)
        yield line
        if progress is not None:
            progress(kind)
    yield json.dumps(_dump.trailer(checksum))


async def _body(
    store: AsyncStore,
    tenant: str,
    after_thread: str | None,
    vector_model: str | None,
    unlisted: Sequence[str],
) -> AsyncIterator[tuple[str, str]]:
    """The dump's lines after its header, each with its type."""
    threads = sorted(await store.thread_list(tenant), key=lambda t: t.id)
    agents: set[str] = set()  # for a store that cannot list the agents of its summaries
    for thread in threads:
        if thread.agent_id is not None:
            agents.add(thread.agent_id)
        if after_thread is not None and thread.id <= after_thread:
            continue
        branches = await store.branch_list(tenant, thread.id)
        described: list[dict[str, Any]] = []
        forks: list[int] = []
        names = {branch.name for branch in branches}
        for branch in branches:
            total = await store.entry_count(tenant, thread.id, branch=branch.name)
            fork_entry, shared = await _fork_prefix(store, tenant, thread.id, branch, total, names)
            forks.append(shared)
            described.append({**_dump.encode(branch), "entries": total, "fork_entry": fork_entry})
        yield "thread", _dump.dumps({"type": "thread", "thread": thread, "branches": described})
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
                    for line in await _lines(store, tenant, "entry", page, vector_model):
                        yield "entry", line
                    page = []
            for line in await _lines(store, tenant, "entry", page, vector_model):
                yield "entry", line
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
