"""``AsyncBatchReads``: reads of many threads, entries or records at once (a part of
``AsyncStore``).

Each has a correct default built on the single reads of ``AsyncThreadStore``,
``AsyncEntryStore`` and ``AsyncRecordStore``; a store overrides one with a single
round trip (search and the graph read through them). An override returns exactly
what the default does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Self

from memorybank.errors import NotFound
from memorybank.records import Entry, Thread
from memorybank.stores.contract._async.entry_store import AsyncEntryStore
from memorybank.stores.contract._async.record_store import AsyncRecordStore
from memorybank.stores.contract._async.thread_store import AsyncThreadStore
from memorybank.stores.contract.pages import page_records, pick_records, record_order
from memorybank.stores.contract.types import LAST_POSITION, Visibility

if TYPE_CHECKING:
    from memorybank.stores.contract.items import Record

__all__ = ["AsyncBatchReads"]


class AsyncBatchReads(AsyncThreadStore, AsyncEntryStore, AsyncRecordStore):
    """Batch reads of threads, entries and records, with defaults on the single reads."""

    async def entry_get_many(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> dict[str, Entry]:
        """The entries of ``branch`` (``None``: current) with these ids, keyed by id
        (missing ids and a missing thread: absent). Search resolves its hits with it."""
        found: dict[str, Entry] = {}
        for entry_id in dict.fromkeys(entry_ids):
            entry = await self.entry_get(tenant, thread_id, entry_id, branch=branch)
            if entry is not None:
                found[entry_id] = entry
        return found

    async def thread_get_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """The threads with these ids that exist, keyed by id (missing ids absent). The
        caller checks what it may see, as after ``thread_get``."""
        found: dict[str, Thread] = {}
        for thread_id in dict.fromkeys(thread_ids):
            thread = await self.thread_get(tenant, thread_id)
            if thread is not None:
                found[thread_id] = thread
        return found

    async def entry_get_across(
        self, tenant: str, wanted: Mapping[str, Sequence[str]]
    ) -> dict[tuple[str, str], Entry]:
        """``entry_get_many`` over several threads (thread id -> entry ids), each on its
        current branch, keyed by ``(thread id, entry id)``. Search resolves the hits
        of threads it has already checked with it."""
        found: dict[tuple[str, str], Entry] = {}
        for thread_id, entry_ids in wanted.items():
            got = await self.entry_get_many(tenant, thread_id, entry_ids)
            found.update({(thread_id, eid): entry for eid, entry in got.items()})
        return found

    async def entry_count_many(self, tenant: str, thread_ids: Sequence[str]) -> dict[str, int]:
        """``entry_count`` of several threads (current branches), keyed by thread id
        (missing threads absent). Search sizes a user's threads with it."""
        counts: dict[str, int] = {}
        for thread_id in dict.fromkeys(thread_ids):
            try:
                counts[thread_id] = await self.entry_count(tenant, thread_id)
            except NotFound:
                continue
        return counts

    async def entry_windows(
        self, tenant: str, windows: Sequence[tuple[str, int, int]]
    ) -> list[list[Entry]]:
        """For each ``(thread id, first, last)``: the entries of the thread's current
        branch whose position is within ``first..last``, oldest first (a missing
        thread: empty). Search reads the neighbours of its best hits with it.

        A window ending at ``LAST_POSITION`` or later runs to the thread's end (search
        reads whole threads that way). This default reads such a window with one
        ``entry_list``, and any other, per window, as the page of ``last - first + 1``
        entries that ends at ``last`` when positions are gap-free (after deletions it
        may miss some of the window); a store overrides it with one exact statement."""
        out: list[list[Entry]] = []
        newest: dict[str, int | None] = {}
        for thread_id, first, last in windows:
            try:
                if last >= LAST_POSITION:
                    _, page = await self.entry_list(tenant, thread_id)
                    out.append([e for e in page if e.position >= first])
                    continue
                if thread_id not in newest:
                    _, tail = await self.entry_list(tenant, thread_id, limit=1)
                    newest[thread_id] = tail[-1].position if tail else None
                top = newest[thread_id]
                if top is None or last < first or first > top:
                    out.append([])
                    continue
                _, page = await self.entry_list(
                    tenant, thread_id, limit=last - first + 1, offset=max(0, top - last)
                )
            except NotFound:
                out.append([])
                continue
            out.append([e for e in page if first <= e.position <= last])
        return out

    async def record_get_many(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, Record]:
        """The records of ``kind`` with these ids that exist and that ``visible_to`` may
        see, keyed by id (missing ids absent)."""
        got = {i: await self.record_get(tenant, kind, i) for i in dict.fromkeys(record_ids)}
        return pick_records(got, got.get, visible_to)

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """Records of ``kind`` whose ``key`` is one of ``keys`` and that ``visible_to`` may see,
        oldest first (``created_at``, then id), each once."""
        found: dict[str, Record] = {}
        for key in dict.fromkeys(keys):
            for record in await self.record_list(tenant, kind, key=key, visible_to=visible_to):
                found[record.id] = record
        return sorted(found.values(), key=record_order)

    async def record_list_keys_by_kind(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, list[Record]]:
        """``record_list_keys`` of each of ``kinds`` at once, keyed by kind (each kind
        given once, in order; an empty list when nothing matches). The graph reads the
        relations of a breadth-first level, stored once per direction, with it."""
        return {
            kind: await self.record_list_keys(tenant, kind, keys, visible_to=visible_to)
            for kind in dict.fromkeys(kinds)
        }

    async def record_list_keys_linked(
        self,
        tenant: str,
        links: Mapping[str, str],
        keys: Sequence[str],
        linked_kind: str,
        *,
        visible_to: Visibility | None = None,
    ) -> tuple[dict[str, list[Record]], dict[str, Record]]:
        """``record_list_keys_by_kind`` of the kinds of ``links`` (kind -> data field),
        and the records of ``linked_kind`` those records name: each one whose id is the
        ``data[field]`` (a string) of a record read under a kind with that field, and
        that ``visible_to`` may see, keyed by id. The graph reads a breadth-first level
        (the relations of both directions, and the entities at their far ends) with it."""
        by = await self.record_list_keys_by_kind(tenant, list(links), keys, visible_to=visible_to)
        named: dict[str, None] = {}
        for kind, records in by.items():
            for record in records:
                far = record.data.get(links[kind])
                if isinstance(far, str):
                    named[far] = None
        found = await self.record_get_many(tenant, linked_kind, list(named))
        return by, pick_records(found, found.get, visible_to)

    async def record_list_links(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        field: str,
        targets: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """The ``record_list_keys`` records whose ``data[field]`` is a string equal to one
        of ``targets``: the links from ``keys`` to ``targets`` (the graph reads the
        relations among a closing breadth-first level and the nodes reached with it). A
        store overrides it to filter where the records are, not after reading them all."""
        wanted = set(targets)
        if not wanted:
            return []
        return [
            r
            for r in await self.record_list_keys(tenant, kind, keys, visible_to=visible_to)
            if isinstance(r.data.get(field), str) and r.data[field] in wanted
        ]

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One page of ``record_list``: the oldest ``limit`` records of ``kind`` that
        ``visible_to`` may see and that sort strictly after ``after`` (a ``(created_at,
        id)`` cursor: the last record of the previous page). Cost must not grow with
        the number of records before the cursor on a store that overrides it."""
        records = await self.record_list(tenant, kind, visible_to=visible_to)
        return page_records(records, limit=limit, after=after, visible_to=None)

    # -- one point in time -------------------------------------------------------

    @asynccontextmanager
    async def snapshot(self, tenant: str) -> AsyncIterator[Self]:
        """A read-only view of the store whose reads all see one point in time.

        Used as ``async with store.snapshot(tenant) as view:``; ``view`` has the
        store's read methods (writes through it are refused or not allowed), and
        every read made through it, in any order and for as long as the block
        lasts, sees the store as it was when the block began, whatever other
        writers do meanwhile (they are not held back). A store with a read
        transaction of its own claims ``Capability.SNAPSHOT`` and overrides this
        (SQLite, PostgreSQL, MySQL: one read transaction on a connection of its
        own, closed when the block ends).

        This default yields the store itself: each read sees its own moment. A
        caller that needs one consistent picture of a store without
        ``Capability.SNAPSHOT`` re-reads until what it read is stable
        (``memorybank.dump``'s export does, per thread).
        """
        yield self
