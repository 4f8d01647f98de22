"""AsyncInMemoryStore: the reference store. Volatile, one process, no dependencies.

Every other store must behave exactly like this one (the conformance suite is
run against it first). Records are copied on the way in and out, so callers can
never mutate stored state through a returned dict.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from memorybank.errors import Conflict, NotFound, StoreClosed, ThreadForbidden
from memorybank.events import types as ev
from memorybank.records import Branch, Entry, Thread
from memorybank.runtime.concurrency import AsyncLock
from memorybank.stores.contract import pages
from memorybank.stores.contract._async.search_store import rank_texts
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
from memorybank.stores.contract.appends import new_entry, plan_append
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import best_hits, visible

__all__ = ["AsyncInMemoryStore"]

_Key = tuple[str, str]


def _copy_entry(entry: Entry) -> Entry:
    return dataclasses.replace(
        entry,
        metadata=copy.deepcopy(entry.metadata),
        state=copy.deepcopy(entry.state),
        extra=copy.deepcopy(entry.extra),
        item=copy.deepcopy(entry.item),
    )


def _copy_thread(thread: Thread) -> Thread:
    return dataclasses.replace(thread, metadata=copy.deepcopy(thread.metadata))


class AsyncInMemoryStore(AsyncStore):
    """All data in dicts of this process; gone when it exits. Best for tests."""

    capabilities = frozenset(
        {
            Capability.VOLATILE,
            Capability.TEXT_SEARCH,
            Capability.VECTOR_SEARCH,
            Capability.ATOMIC,
            Capability.EVENTS,
        }
    )

    def __init__(self) -> None:
        self._lock = AsyncLock()
        self._closed = False
        self._threads: dict[_Key, Thread] = {}
        self._branches: dict[_Key, dict[str, Branch]] = {}
        self._entries: dict[tuple[str, str, str], list[Entry]] = {}
        # Payload fingerprints of keyed entries, per thread by entry id (branch copies share
        # ids, so they share the fingerprint); dropped with the thread.
        self._fingerprints: dict[_Key, dict[str, str]] = {}
        self._records: dict[tuple[str, str, str], Record] = {}
        # (tenant, kind, id, model_id) -> (thread_id, unit vector)
        self._vectors: dict[tuple[str, str, str, str], tuple[str | None, list[float]]] = {}
        # The change feed: on while ``_feed_keep`` is set. Events per ``(tenant,)`` (rolled
        # back with the tenant by ``atomic``); numbers and floors never go back.
        self._feed_keep: timedelta | None = None
        self._feed: dict[tuple[str], list[ev.Event]] = {}
        self._feed_seq: dict[str, int] = {}
        self._feed_floor: dict[str, int] = {}
        self._feed_kept = False  # switched on once (until then a cursor is ``no_feed``'s)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")

    async def close(self) -> None:
        self._closed = True

    def _state(self) -> list[dict[Any, Any]]:
        """Every dict of data, each keyed by tuples starting with the tenant."""
        return [
            self._threads, self._branches, self._entries, self._fingerprints, self._records,
            self._vectors, self._feed,
        ]  # fmt: skip

    # -- the change feed --------------------------------------------------------------

    def _emit(
        self,
        tenant: str,
        kind: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        item_id: str | None = None,
        data: dict[str, object] | None = None,
    ) -> None:
        """Record one event (under the lock, with the change)."""
        if self._feed_keep is None:
            return
        seq = self._feed_seq.get(tenant, 0) + 1
        self._feed_seq[tenant] = seq
        self._feed.setdefault((tenant,), []).append(
            ev.Event(
                cursor=str(seq),
                id=f"ev-{seq}",
                kind=kind,
                at=datetime.now(UTC),
                user_id=user_id,
                agent_id=agent_id,
                thread_id=thread_id,
                item_id=item_id,
                data=data,
            )
        )

    def _emit_entries(
        self, tenant: str, thread: Thread, kind: str, entries: Iterable[Entry]
    ) -> None:
        if self._feed_keep is None:
            return
        for entry in entries:
            self._emit(
                tenant, kind, user_id=thread.user_id, agent_id=thread.agent_id,
                thread_id=thread.id, item_id=entry.id,
                data={"branch": entry.branch, "role": entry.role},
            )  # fmt: skip

    def _emit_record(self, tenant: str, record: Record, op: str) -> None:
        kind = ev.RECORD_EVENTS.get((record.kind, op))
        if kind is None or self._feed_keep is None:
            return
        data: dict[str, object] | None = None
        item: str | None = record.id
        if record.kind == "fact_version":
            item, data = record.key, {"version": record.id}
        elif kind == ev.GRAPH_CHANGED:
            data = {"record": record.kind, "op": op}
        self._emit(
            tenant, kind, user_id=record.user_id, agent_id=record.agent_id, item_id=item, data=data
        )

    async def events_enable(self, *, keep: timedelta) -> None:
        async with self._lock:
            self._check_open()
            if self._feed_keep is None:  # the changes while off were not recorded
                for tenant, seq in self._feed_seq.items():
                    self._feed_floor[tenant] = seq + 1
            self._feed_keep, self._feed_kept = keep, True

    async def events_disable(self) -> None:
        async with self._lock:
            self._feed_keep = None

    async def events_keep(self) -> timedelta | None:
        return self._feed_keep

    async def events_list(
        self,
        tenant: str,
        *,
        after: str | None,
        kinds: Sequence[str] | None,
        user_id: str | Unset | None,
        agent_id: str | Unset | None,
        limit: int,
    ) -> list[ev.Event]:
        self._check_open()
        number = ev.cursor_number(after)
        if not self._feed_kept:
            return ev.no_feed(number)
        ev.check_floor(after, number, self._feed_floor.get(tenant, 0))
        found: list[ev.Event] = []
        for event in self._feed.get((tenant,), []):
            if int(event.cursor) <= number or (kinds is not None and event.kind not in kinds):
                continue
            if not isinstance(user_id, Unset) and event.user_id != user_id:
                continue
            if not isinstance(agent_id, Unset) and event.agent_id not in (agent_id, None):
                continue
            found.append(event)
            if len(found) >= limit:
                break
        return found

    async def events_prune(self, tenant: str, *, limit: int) -> int:
        async with self._lock:
            events = self._feed.get((tenant,), [])
            keep = self._feed_keep
            if keep is None or not events:
                return 0
            cutoff = datetime.now(UTC) - keep
            doomed = [e for e in events[:limit] if e.at < cutoff]
            if not doomed:
                return 0
            last = int(doomed[-1].cursor)
            gone = sum(1 for e in events if int(e.cursor) <= last)
            del events[:gone]
            self._feed_floor[tenant] = max(self._feed_floor.get(tenant, 0), last)
            return gone

    @asynccontextmanager
    async def atomic(self, tenant: str) -> AsyncIterator[AsyncStore]:
        """The store itself; when the block raises, the tenant's data is put back as it was
        at its start (a copy taken then). Other users see the writes as they happen, and a
        rollback undoes their writes to the tenant in the meantime too: this store is for
        tests and one process."""
        self._check_open()
        saved = [
            {k: copy.deepcopy(v) for k, v in state.items() if k[0] == tenant}
            for state in self._state()
        ]
        try:
            yield self
        except BaseException:
            for state, kept in zip(self._state(), saved, strict=True):
                for key in [k for k in state if k[0] == tenant]:
                    del state[key]
                state.update(kept)
            raise

    # -- threads -----------------------------------------------------------

    def _thread(self, tenant: str, thread_id: str) -> Thread:
        self._check_open()
        thread = self._threads.get((tenant, thread_id))
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        return thread

    def _branch_name(self, thread: Thread, branch: str | None) -> str:
        return thread.current_branch if branch is None else branch

    async def thread_create(self, thread: Thread) -> Thread:
        async with self._lock:
            self._check_open()
            key = (thread.tenant_id, thread.id)
            if key in self._threads:
                raise Conflict(f"thread {thread.id!r} already exists")
            self._threads[key] = _copy_thread(thread)
            main = Branch(
                name=thread.current_branch, thread_id=thread.id, created_at=thread.created_at
            )
            self._branches[key] = {main.name: main}
            self._entries[(thread.tenant_id, thread.id, main.name)] = []
            self._emit(
                thread.tenant_id, ev.THREAD_CREATED, user_id=thread.user_id,
                agent_id=thread.agent_id, thread_id=thread.id,
            )  # fmt: skip
            return _copy_thread(thread)

    async def thread_get(self, tenant: str, thread_id: str) -> Thread | None:
        self._check_open()
        thread = self._threads.get((tenant, thread_id))
        return None if thread is None else _copy_thread(thread)

    async def thread_list(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        self._check_open()
        found = pages.select_threads(
            (t for (ten, _), t in self._threads.items() if ten == tenant),
            user_id=user_id,
            agent_id=agent_id,
            status=status,
            limit=limit,
        )
        return [_copy_thread(t) for t in found]

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
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            changes: dict[str, Any] = {"updated_at": updated_at}
            if not isinstance(title, Unset):
                changes["title"] = title
            if not isinstance(metadata, Unset):
                changes["metadata"] = copy.deepcopy(metadata)
            if not isinstance(status, Unset):
                changes["status"] = status
            if not isinstance(current_branch, Unset):
                if current_branch not in self._branches[(tenant, thread_id)]:
                    raise NotFound(f"branch {current_branch!r} not found")
                changes["current_branch"] = current_branch
            updated = dataclasses.replace(thread, **changes)
            self._threads[(tenant, thread_id)] = updated
            if any(getattr(thread, k) != v for k, v in changes.items() if k != "updated_at"):
                self._emit(
                    tenant, ev.THREAD_UPDATED, user_id=thread.user_id, agent_id=thread.agent_id,
                    thread_id=thread_id,
                )  # fmt: skip
            return _copy_thread(updated)

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        async with self._lock:
            self._check_open()
            key = (tenant, thread_id)
            thread = self._threads.pop(key, None)
            if thread is None:
                return False
            for name in self._branches.pop(key, {}):
                self._entries.pop((tenant, thread_id, name), None)
            self._emit(
                tenant, ev.THREAD_DELETED, user_id=thread.user_id, agent_id=thread.agent_id,
                thread_id=thread_id,
            )  # fmt: skip
            self._fingerprints.pop(key, None)
            self._drop_thread_vectors(tenant, thread_id)
            return True

    # -- entries -----------------------------------------------------------

    def _rows(self, tenant: str, thread: Thread, branch: str | None) -> list[Entry]:
        return self._entries.get((tenant, thread.id, self._branch_name(thread, branch)), [])

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
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            if not isinstance(owner, Unset) and thread.user_id != owner:
                raise ThreadForbidden()
            name = self._branch_name(thread, branch)
            rows = self._entries.get((tenant, thread_id, name))
            if rows is None:
                raise NotFound(f"branch {name!r} not found")
            prints = self._fingerprints.get((tenant, thread_id), {})
            plan = plan_append(entries, rows, prints, thread_id=thread_id, branch=name)
            # Nothing changed before this point: a Conflict above leaves the branch as it was.
            rows.extend(plan.added)
            self._emit_entries(tenant, thread, ev.ENTRY_ADDED, plan.added)
            if plan.fingerprints:
                self._fingerprints.setdefault((tenant, thread_id), {}).update(plan.fingerprints)
            thread = dataclasses.replace(thread, updated_at=updated_at)
            self._threads[(tenant, thread_id)] = thread
            return AppendResult([_copy_entry(e) for e in plan.entries], _copy_thread(thread))

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
        thread = self._thread(tenant, thread_id)
        rows = self._rows(tenant, thread, branch)
        page = pages.entry_page(
            rows, limit=limit, offset=offset, before=before, after=after, newest_first=newest_first
        )
        return _copy_thread(thread), [_copy_entry(e) for e in page]

    async def entry_get(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        thread = self._threads.get((tenant, thread_id))
        self._check_open()
        if thread is None:
            return None
        for entry in self._rows(tenant, thread, branch):
            if entry.id == entry_id:
                return _copy_entry(entry)
        return None

    async def entry_delete(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            rows = self._rows(tenant, thread, branch)
            doomed = set(entry_ids)
            kept = [e for e in rows if e.id not in doomed]
            removed = len(rows) - len(kept)
            gone = [e.id for e in rows if e.id in doomed]
            self._emit_entries(
                tenant, thread, ev.ENTRY_DELETED, [e for e in rows if e.id in doomed]
            )
            rows[:] = kept
            self._drop_entry_vectors(tenant, thread_id, gone)
            return removed

    async def entry_truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            rows = self._rows(tenant, thread, branch)
            for index, entry in enumerate(rows):
                if entry.id == entry_id:
                    removed = len(rows) - index - 1
                    gone = [e.id for e in rows[index + 1 :]]
                    self._emit_entries(tenant, thread, ev.ENTRY_DELETED, rows[index + 1 :])
                    del rows[index + 1 :]
                    self._drop_entry_vectors(tenant, thread_id, gone)
                    return removed
            raise NotFound(f"entry {entry_id!r} not found on this branch")

    async def entry_clear(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            rows = self._rows(tenant, thread, branch)
            removed = len(rows)
            gone = [e.id for e in rows]
            self._emit_entries(tenant, thread, ev.ENTRY_DELETED, rows)
            rows.clear()
            self._drop_entry_vectors(tenant, thread_id, gone)
            return removed

    async def entry_count(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        thread = self._thread(tenant, thread_id)
        return len(self._rows(tenant, thread, branch))

    # -- branches ----------------------------------------------------------

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
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            branches = self._branches[(tenant, thread_id)]
            if from_branch not in branches:
                raise NotFound(f"branch {from_branch!r} not found")
            if name in branches:
                raise Conflict(f"branch {name!r} already exists")
            source = self._entries[(tenant, thread_id, from_branch)]
            if from_entry is None:
                copied = list(source)
            else:
                ids = [e.id for e in source]
                if from_entry not in ids:
                    raise NotFound(f"entry {from_entry!r} not found on branch {from_branch!r}")
                copied = source[: ids.index(from_entry) + 1]
            new = Branch(
                name=name,
                thread_id=thread_id,
                created_at=created_at,
                from_branch=from_branch,
                from_entry=from_entry,
            )
            branches[name] = new
            self._entries[(tenant, thread_id, name)] = [
                dataclasses.replace(e, branch=name) for e in copied
            ]
            self._emit_entries(
                tenant, thread, ev.ENTRY_ADDED, self._entries[(tenant, thread_id, name)]
            )
            return new

    async def branch_list(self, tenant: str, thread_id: str) -> list[Branch]:
        self._thread(tenant, thread_id)
        return sorted(
            self._branches[(tenant, thread_id)].values(), key=lambda b: (b.created_at, b.name)
        )

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            if name == thread.current_branch:
                raise Conflict(f"cannot delete the current branch {name!r}")
            if self._branches[(tenant, thread_id)].pop(name, None) is None:
                return False
            dropped = self._entries.pop((tenant, thread_id, name), [])
            self._emit_entries(tenant, thread, ev.ENTRY_DELETED, dropped)
            self._drop_entry_vectors(tenant, thread_id, [e.id for e in dropped])
            return True

    # -- erasure -----------------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        async with self._lock:
            self._check_open()
            removed = 0
            for key, thread in list(self._threads.items()):
                if key[0] == tenant and thread.user_id == user_id:
                    for name in self._branches.pop(key, {}):
                        removed += len(self._entries.pop((tenant, key[1], name), []))
                    del self._threads[key]
                    self._fingerprints.pop(key, None)
                    self._drop_thread_vectors(tenant, key[1])
                    removed += 1
            for rkey, record in list(self._records.items()):
                if rkey[0] == tenant and record.user_id == user_id:
                    del self._records[rkey]
                    self._drop_vectors(tenant, record.kind, record.id)
                    removed += 1
            if (tenant,) in self._feed:
                self._feed[(tenant,)] = [e for e in self._feed[(tenant,)] if e.user_id != user_id]
            self._emit(tenant, ev.USER_FORGOTTEN, user_id=user_id)
            return removed

    # -- compaction -----------------------------------------------------------------

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
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            rows = self._entries.get((tenant, thread_id, branch))
            if rows is None:
                raise NotFound(f"branch {branch!r} not found")
            doomed = [e for e in rows if e.position <= through_position]
            if [e.id for e in doomed] != list(expected_ids):
                return False
            kept = [e for e in rows if e.position > through_position]
            self._emit_entries(tenant, thread, ev.ENTRY_DELETED, doomed)
            if summary is not None:
                kept.insert(0, new_entry(summary, thread_id, branch, through_position))
                self._emit_entries(tenant, thread, ev.ENTRY_ADDED, kept[:1])
            rows[:] = kept
            self._drop_entry_vectors(tenant, thread_id, [e.id for e in doomed])
            self._threads[(tenant, thread_id)] = dataclasses.replace(thread, updated_at=updated_at)
            return True

    async def entry_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            rows = self._entries.get((tenant, thread_id, branch), [])
            by_id = {c[0]: c for c in changes}
            changed = 0
            for index, entry in enumerate(rows):
                if entry.id in by_id:
                    _, content, state, tokens = by_id[entry.id]
                    rows[index] = dataclasses.replace(
                        entry, content=content, state=copy.deepcopy(state), token_count=tokens
                    )
                    if rows[index] != entry:  # left as it was: no event (every store)
                        self._emit_entries(tenant, thread, ev.ENTRY_UPDATED, [entry])
                    changed += 1
            return changed

    # -- records ------------------------------------------------------------------------

    def _check_guard(self, tenant: str, guard: RecordGuard | None) -> None:
        if guard is None:
            return
        found = self._records.get((tenant, guard.kind, guard.id))
        if (None if found is None else found.revision) != guard.revision:
            raise guard.failed()

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        async with self._lock:
            self._check_open()
            self._check_guard(tenant, guard)
            for record in records:
                key = (tenant, record.kind, record.id)
                self._emit_record(tenant, record, "updated" if key in self._records else "added")
                self._records[key] = _copy_record(record)

    def _kind(self, tenant: str, kind: str) -> Iterator[Record]:
        return (r for (ten, knd, _), r in self._records.items() if ten == tenant and knd == kind)

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        self._check_open()
        record = self._records.get((tenant, kind, record_id))
        return None if record is None else _copy_record(record)

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        async with self._lock:
            self._check_open()
            self._check_guard(tenant, guard)
            removed = 0
            for record_id in set(record_ids):
                record = self._records.pop((tenant, kind, record_id), None)
                if record is not None:
                    self._emit_record(tenant, record, "deleted")
                    self._drop_vectors(tenant, kind, record_id)
                    removed += 1
            return removed

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
        self._check_open()
        found = pages.select_records(
            self._kind(tenant, kind),
            agent_id=agent_id,
            user_id=user_id,
            key=key,
            visible_to=visible_to,
            limit=limit,
        )
        return [_copy_record(r) for r in found]

    async def record_get_many(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, Record]:
        self._check_open()
        records = self._records
        found = pages.pick_records(record_ids, lambda i: records.get((tenant, kind, i)), visible_to)
        return {i: _copy_record(r) for i, r in found.items()}

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        self._check_open()
        wanted = set(keys)
        if not wanted:
            return []
        found = [
            r
            for (ten, knd, _), r in self._records.items()
            if ten == tenant
            and knd == kind
            and r.key in wanted
            and visible(visible_to, r.agent_id, r.user_id)
        ]
        return [_copy_record(r) for r in sorted(found, key=pages.record_order)]

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        self._check_open()
        found = self._kind(tenant, kind)
        page = pages.page_records(found, limit=limit, after=after, visible_to=visible_to)
        return [_copy_record(r) for r in page]

    # -- search -------------------------------------------------------------------------

    def _documents(
        self,
        tenant: str,
        kinds: Sequence[str],
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> Iterator[tuple[SearchHit, str]]:
        """Every searchable text in scope, as a zero-score hit and its text."""
        if "entry" in kinds:
            for (ten, tid), thread in self._threads.items():
                if ten != tenant or (thread_id is not None and tid != thread_id):
                    continue
                if not visible(visible_to, thread.agent_id, thread.user_id):
                    continue
                for name in self._branches.get((ten, tid), {}):
                    for entry in self._entries.get((ten, tid, name), []):
                        if entry.content:
                            yield SearchHit("entry", entry.id, 0.0, tid, name), entry.content
        if thread_id is None:
            for (ten, kind, rid), record in self._records.items():
                if ten == tenant and kind in kinds and kind != "entry":
                    if visible(visible_to, record.agent_id, record.user_id):
                        yield SearchHit(kind, rid, 0.0), record.content

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
        self._check_open()
        return rank_texts(query, self._documents(tenant, kinds, thread_id, visible_to), k)

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        self._check_open()
        for item in items:
            self._vectors[(tenant, item.kind, item.id, item.model_id)] = (
                item.thread_id,
                _unit(item.vector),
            )

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
        self._check_open()
        query = _unit(vector)
        allowed_threads = {
            tid
            for (ten, tid), thread in self._threads.items()
            if ten == tenant and visible(visible_to, thread.agent_id, thread.user_id)
        }
        hits: list[SearchHit] = []
        for (ten, kind, vid, model), (tid, stored) in self._vectors.items():
            if ten != tenant or model != model_id or kind not in kinds:
                continue
            if kind == "entry":
                if tid not in allowed_threads or (thread_id is not None and tid != thread_id):
                    continue
            else:
                record = self._records.get((tenant, kind, vid))
                if thread_id is not None or record is None:
                    continue
                if not visible(visible_to, record.agent_id, record.user_id):
                    continue
            score = sum(a * b for a, b in zip(query, stored, strict=False))
            hits.append(SearchHit(kind, vid, score, tid))
        return best_hits(hits, k)

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        self._check_open()
        found: dict[str, list[float]] = {}
        for vid in ids:
            stored = self._vectors.get((tenant, kind, vid, model_id))
            if stored is not None:
                found[vid] = list(stored[1])
        return found

    def _drop_vectors(self, tenant: str, kind: str, record_id: str) -> None:
        for vkey in [v for v in self._vectors if v[:3] == (tenant, kind, record_id)]:
            del self._vectors[vkey]

    def _drop_entry_vectors(self, tenant: str, thread_id: str, entry_ids: Sequence[str]) -> None:
        """Drop the vectors of these deleted entries that no branch of the thread still holds."""
        if not entry_ids:
            return
        held = {
            e.id
            for name in self._branches.get((tenant, thread_id), {})
            for e in self._entries.get((tenant, thread_id, name), [])
        }
        gone = set(entry_ids) - held
        if not gone:
            return
        for vkey, (tid, _) in list(self._vectors.items()):
            if vkey[0] == tenant and vkey[1] == "entry" and vkey[2] in gone and tid == thread_id:
                del self._vectors[vkey]

    def _drop_thread_vectors(self, tenant: str, thread_id: str) -> None:
        for vkey, (tid, _) in list(self._vectors.items()):
            if vkey[0] == tenant and vkey[1] == "entry" and tid == thread_id:
                del self._vectors[vkey]


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def _copy_record(record: Record) -> Record:
    return dataclasses.replace(record, data=copy.deepcopy(record.data))
