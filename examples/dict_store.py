"""A store of your own: ``DictStore``, every bit of memory in plain dicts of this process.

Written only against memorybank's public contract (``memorybank.stores.contract``,
``memorybank.errors``), as docs/writing-a-store.md walks through, and proven by the
conformance suite (``tests/stores/test_contract_example.py`` runs ``AsyncContract``
on it). Run it to see memorybank on it:

    python examples/dict_store.py

One ``asyncio.Lock`` makes every write one atomic step (the contract's "Atomicity",
"Idempotency" and "Compare-and-swap" ask for no more in one process). It claims
``VOLATILE`` and ``RUN_LISTING``; it does not implement ``summary_agents``, so it
does not claim ``SUMMARY_AGENT_LISTING`` and the suite skips that one case.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import math
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from memorybank.errors import Conflict, NotFound, StoreClosed, ThreadForbidden
from memorybank.stores.contract import (
    UNSET,
    AppendResult,
    AsyncStore,
    Branch,
    Capability,
    Entry,
    NewEntry,
    Record,
    RecordGuard,
    SearchHit,
    Summary,
    Thread,
    Unset,
    VectorItem,
    Visibility,
    visible,
)

__all__ = ["DictStore"]

_T = TypeVar("_T")
_WORD = re.compile(r"\w+")
#: How the contract stores member ``i >= 1`` of a keyed batch: ``key + SEPARATOR + str(i)``.
_SEPARATOR = "\x1f"


def _copy(value: _T) -> _T:
    """A deep copy of a record (``Thread``, ``Entry``, ``Record``): nothing returned
    aliases stored data."""
    return copy.deepcopy(value)


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def _page(ids: Iterable[str], after: str | None, limit: int | None) -> list[str]:
    found = sorted(i for i in set(ids) if after is None or i > after)
    return found if limit is None else found[:limit]


class DictStore(AsyncStore):
    """All data in dicts of this process, one lock for every write (see the module)."""

    capabilities = frozenset({Capability.VOLATILE, Capability.RUN_LISTING})

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._closed = False
        self._threads: dict[tuple[str, str], Thread] = {}
        # (tenant, thread) -> branch name -> (Branch, entries oldest first)
        self._branches: dict[tuple[str, str], dict[str, tuple[Branch, list[Entry]]]] = {}
        # (tenant, thread) -> entry id -> fingerprint (branch copies share ids)
        self._prints: dict[tuple[str, str], dict[str, str]] = {}
        self._working: dict[tuple[str, str], dict[str, str]] = {}
        self._snapshots: dict[tuple[str, str], tuple[str | None, str]] = {}
        self._summaries: dict[str, list[Summary]] = {}
        self._records: dict[tuple[str, str, str], Record] = {}
        # (tenant, kind, id, model) -> (thread id or None, unit vector)
        self._vectors: dict[tuple[str, str, str, str], tuple[str | None, list[float]]] = {}

    # -- lifecycle -------------------------------------------------------------

    def _open(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")

    async def close(self) -> None:
        self._closed = True

    # -- threads and branches (AsyncThreadStore) ---------------------------------

    def _thread(self, tenant: str, thread_id: str) -> Thread:
        self._open()
        thread = self._threads.get((tenant, thread_id))
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        return thread

    def _rows(self, tenant: str, thread_id: str, branch: str | None) -> list[Entry]:
        thread = self._thread(tenant, thread_id)
        name = thread.current_branch if branch is None else branch
        found = self._branches[(tenant, thread_id)].get(name)
        if found is None:
            raise NotFound(f"branch {name!r} not found")
        return found[1]

    async def thread_create(self, thread: Thread) -> Thread:
        async with self._lock:
            self._open()
            key = (thread.tenant_id, thread.id)
            if key in self._threads:
                raise Conflict(f"thread {thread.id!r} already exists")
            self._threads[key] = _copy(thread)
            main = Branch(
                name=thread.current_branch, thread_id=thread.id, created_at=thread.created_at
            )
            self._branches[key] = {main.name: (main, [])}
            return _copy(thread)

    async def thread_get(self, tenant: str, thread_id: str) -> Thread | None:
        self._open()
        return _copy(self._threads.get((tenant, thread_id)))

    async def thread_list(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        self._open()
        found = [
            t
            for (ten, _), t in self._threads.items()
            if ten == tenant
            and (isinstance(user_id, Unset) or t.user_id == user_id)
            and (isinstance(agent_id, Unset) or t.agent_id == agent_id)
            and (status is None or t.status == status)
        ]
        found.sort(key=lambda t: (t.updated_at, t.id), reverse=True)
        return [_copy(t) for t in found[:limit]]

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
            for name, value in (("title", title), ("metadata", metadata), ("status", status)):
                if not isinstance(value, Unset):
                    changes[name] = copy.deepcopy(value)
            if not isinstance(current_branch, Unset):
                if current_branch not in self._branches[(tenant, thread_id)]:
                    raise NotFound(f"branch {current_branch!r} not found")
                changes["current_branch"] = current_branch
            self._threads[(tenant, thread_id)] = dataclasses.replace(thread, **changes)
            return _copy(self._threads[(tenant, thread_id)])

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        async with self._lock:
            self._open()
            if self._threads.pop((tenant, thread_id), None) is None:
                return False
            del self._branches[(tenant, thread_id)]
            self._prints.pop((tenant, thread_id), None)
            self._drop_entry_vectors(tenant, thread_id, None)
            return True

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
            source = self._rows(tenant, thread_id, from_branch)
            branches = self._branches[(tenant, thread_id)]
            if name in branches:
                raise Conflict(f"branch {name!r} already exists")
            ids = [e.id for e in source]
            if from_entry is not None and from_entry not in ids:
                raise NotFound(f"entry {from_entry!r} not found on branch {from_branch!r}")
            end = len(source) if from_entry is None else ids.index(from_entry) + 1
            branch = Branch(
                name=name,
                thread_id=thread_id,
                created_at=created_at,
                from_branch=from_branch,
                from_entry=from_entry,
            )
            copied = [dataclasses.replace(_copy(e), branch=name) for e in source[:end]]
            branches[name] = (branch, copied)
            return branch

    async def branch_list(self, tenant: str, thread_id: str) -> list[Branch]:
        self._thread(tenant, thread_id)
        found = [b for b, _ in self._branches[(tenant, thread_id)].values()]
        return sorted(found, key=lambda b: (b.created_at, b.name))

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        async with self._lock:
            if name == self._thread(tenant, thread_id).current_branch:
                raise Conflict(f"cannot delete the current branch {name!r}")
            gone = self._branches[(tenant, thread_id)].pop(name, None)
            if gone is None:
                return False
            self._drop_entry_vectors(tenant, thread_id, [e.id for e in gone[1]])
            return True

    # -- entries (AsyncEntryStore) ---------------------------------------------

    def _entry(self, new: NewEntry, thread_id: str, branch: str, position: int) -> Entry:
        return Entry(
            id=new.id,
            thread_id=thread_id,
            branch=branch,
            position=position,
            role=new.role,  # type: ignore[arg-type]  # validated above the store
            content=new.content,
            name=new.name,
            tool_calls=new.tool_calls,
            tool_call_id=new.tool_call_id,
            metadata=copy.deepcopy(new.metadata),
            state=copy.deepcopy(new.state),
            token_count=new.token_count,
            created_at=new.created_at,
            idempotency_key=new.idempotency_key,
            extra=copy.deepcopy(new.extra),
            item=copy.deepcopy(new.item),
        )

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
            rows = self._rows(tenant, thread_id, branch)
            name = thread.current_branch if branch is None else branch
            by_key = {e.idempotency_key: e for e in rows if e.idempotency_key is not None}
            prints = self._prints.setdefault((tenant, thread_id), {})
            new_prints: dict[str, str] = {}
            position = rows[-1].position if rows else 0
            added: list[Entry] = []
            stored: list[Entry] = []
            for new in entries:
                old = by_key.get(new.idempotency_key) if new.idempotency_key else None
                if old is not None:
                    had = prints.get(old.id, new_prints.get(old.id))
                    if had is not None and new.fingerprint is not None and had != new.fingerprint:
                        key = (new.idempotency_key or "").split(_SEPARATOR, 1)[0]
                        raise Conflict(f"idempotency key {key!r} was used with another payload")
                    stored.append(old)
                    continue
                position += 1
                entry = self._entry(new, thread_id, name, position)
                if entry.idempotency_key is not None:
                    by_key[entry.idempotency_key] = entry
                    if new.fingerprint is not None:
                        new_prints[entry.id] = new.fingerprint
                added.append(entry)
                stored.append(entry)
            # Nothing was changed before this line: a Conflict above wrote nothing.
            rows.extend(added)
            prints.update(new_prints)
            thread = dataclasses.replace(thread, updated_at=updated_at)
            self._threads[(tenant, thread_id)] = thread
            return AppendResult([_copy(e) for e in stored], _copy(thread))

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
        try:
            rows = self._rows(tenant, thread_id, branch)
        except NotFound:
            rows = []
        matching = [
            e
            for e in reversed(rows)
            if (before is None or e.created_at < before) and (after is None or e.created_at > after)
        ]
        page = matching[offset:] if limit is None else matching[offset : offset + limit]
        if not newest_first:
            page.reverse()
        return _copy(thread), [_copy(e) for e in page]

    async def entry_get(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        try:
            rows = self._rows(tenant, thread_id, branch)
        except NotFound:
            return None
        return next((_copy(e) for e in rows if e.id == entry_id), None)

    async def _delete(self, tenant: str, thread_id: str, branch: str | None, keep: Any) -> int:
        """Keep the entries of ``branch`` for which ``keep(index, entry)``; how many went."""
        rows = self._rows(tenant, thread_id, branch)
        gone = [e.id for i, e in enumerate(rows) if not keep(i, e)]
        rows[:] = [e for i, e in enumerate(rows) if keep(i, e)]
        self._drop_entry_vectors(tenant, thread_id, gone)
        return len(gone)

    async def entry_delete(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        doomed = set(entry_ids)
        async with self._lock:
            return await self._delete(tenant, thread_id, branch, lambda i, e: e.id not in doomed)

    async def entry_truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        async with self._lock:
            ids = [e.id for e in self._rows(tenant, thread_id, branch)]
            if entry_id not in ids:
                raise NotFound(f"entry {entry_id!r} not found on this branch")
            last = ids.index(entry_id)
            return await self._delete(tenant, thread_id, branch, lambda i, e: i <= last)

    async def entry_clear(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        async with self._lock:
            return await self._delete(tenant, thread_id, branch, lambda i, e: False)

    async def entry_count(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        self._thread(tenant, thread_id)
        try:
            return len(self._rows(tenant, thread_id, branch))
        except NotFound:
            return 0

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
            rows = self._rows(tenant, thread_id, branch)
            doomed = [e.id for e in rows if e.position <= through_position]
            if doomed != list(expected_ids):
                return False
            kept = [e for e in rows if e.position > through_position]
            if summary is not None:
                kept.insert(0, self._entry(summary, thread_id, branch, through_position))
            rows[:] = kept
            self._drop_entry_vectors(tenant, thread_id, doomed)
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
            self._thread(tenant, thread_id)
            try:
                rows = self._rows(tenant, thread_id, branch)
            except NotFound:
                return 0
            by_id = {change[0]: change for change in changes}
            changed = 0
            for i, entry in enumerate(rows):
                if entry.id in by_id:
                    _, content, state, tokens = by_id[entry.id]
                    rows[i] = dataclasses.replace(
                        entry, content=content, state=copy.deepcopy(state), token_count=tokens
                    )
                    changed += 1
            return changed

    # -- run state (AsyncRunStateStore) -----------------------------------------

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        self._open()
        self._working.setdefault((tenant, run_id), {})[key] = value

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        self._open()
        return self._working.get((tenant, run_id), {}).get(key)

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        self._open()
        return self._working.get((tenant, run_id), {}).pop(key, None) is not None

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        self._open()
        return dict(self._working.get((tenant, run_id), {}))

    async def working_clear(self, tenant: str, run_id: str) -> None:
        self._open()
        self._working.pop((tenant, run_id), None)

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        self._open()
        return _page(
            (r for (t, r), kv in self._working.items() if t == tenant and kv), after, limit
        )

    def _owner_allows(self, tenant: str, run_id: str, user_id: str | None) -> None:
        found = self._snapshots.get((tenant, run_id))
        if found is not None and found[0] not in (None, user_id):
            raise ThreadForbidden("snapshot access forbidden")

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
        async with self._lock:
            self._open()
            if owner_check:
                self._owner_allows(tenant, run_id, user_id)
            self._snapshots[(tenant, run_id)] = (user_id, value)

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        self._open()
        return self._snapshots.get((tenant, run_id))

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        async with self._lock:
            self._open()
            if owner_check:
                self._owner_allows(tenant, run_id, user_id)
            return self._snapshots.pop((tenant, run_id), None) is not None

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        self._open()
        return _page((r for t, r in self._snapshots if t == tenant), after, limit)

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        self._open()
        self._summaries.setdefault(tenant, []).append(summary)
        return summary

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        self._open()
        return [
            s
            for s in self._summaries.get(tenant, [])
            if s.agent_id == agent_id
            and (isinstance(user_id, Unset) or s.user_id is None or s.user_id == user_id)
        ]

    # -- records (AsyncRecordStore) ----------------------------------------------

    def _guard_holds(self, tenant: str, guard: RecordGuard | None) -> None:
        if guard is not None:
            found = self._records.get((tenant, guard.kind, guard.id))
            if (None if found is None else found.revision) != guard.revision:
                raise guard.failed()

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        async with self._lock:
            self._open()
            self._guard_holds(tenant, guard)
            for record in records:
                self._records[(tenant, record.kind, record.id)] = _copy(record)

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        self._open()
        return _copy(self._records.get((tenant, kind, record_id)))

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        async with self._lock:
            self._open()
            self._guard_holds(tenant, guard)
            removed = 0
            for record_id in set(record_ids):
                if self._records.pop((tenant, kind, record_id), None) is not None:
                    for key in [k for k in self._vectors if k[:3] == (tenant, kind, record_id)]:
                        del self._vectors[key]
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
        self._open()
        found = [
            r
            for (ten, knd, _), r in self._records.items()
            if (ten, knd) == (tenant, kind)
            and (isinstance(agent_id, Unset) or r.agent_id == agent_id)
            and (isinstance(user_id, Unset) or r.user_id == user_id)
            and (isinstance(key, Unset) or r.key == key)
            and visible(visible_to, r.agent_id, r.user_id)
        ]
        found.sort(key=lambda r: (r.created_at, r.id))
        return [_copy(r) for r in found[:limit]]

    # -- search (AsyncSearchStore) -------------------------------------------------

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
        """Score: the share of the query's words a text holds (an honest toy ranking;
        the contract asks for "best first", not for a particular formula)."""
        self._open()
        words = set(_WORD.findall(query.lower()))
        if not words:
            return []
        texts: list[tuple[SearchHit, str]] = []
        if "entry" in kinds:
            for (ten, tid), thread in self._threads.items():
                if ten != tenant or thread_id not in (None, tid):
                    continue
                if not visible(visible_to, thread.agent_id, thread.user_id):
                    continue
                for name, (_, rows) in self._branches[(ten, tid)].items():
                    texts += [
                        (SearchHit("entry", e.id, 0.0, tid, name), e.content or "") for e in rows
                    ]
        if thread_id is None:
            for (ten, kind, rid), r in self._records.items():
                if ten == tenant and kind in kinds and visible(visible_to, r.agent_id, r.user_id):
                    texts.append((SearchHit(kind, rid, 0.0), r.content))
        hits = []
        for hit, text in texts:
            score = len(words & set(_WORD.findall(text.lower()))) / len(words)
            if score > 0:
                hits.append(dataclasses.replace(hit, score=score))
        hits.sort(key=lambda h: (-h.score, h.kind, h.id, h.branch or ""))
        return hits[:k]

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        async with self._lock:
            self._open()
            for item in items:
                key = (tenant, item.kind, item.id, item.model_id)
                self._vectors[key] = (item.thread_id, _unit(item.vector))

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
        self._open()
        query = _unit(vector)
        hits = []
        for (ten, kind, vid, model), (tid, stored) in self._vectors.items():
            if ten != tenant or model != model_id or kind not in kinds:
                continue
            if kind == "entry":
                thread = self._threads.get((tenant, tid or ""))
                if thread is None or thread_id not in (None, tid):
                    continue
                owner = (thread.agent_id, thread.user_id)
            else:
                record = self._records.get((tenant, kind, vid))
                if record is None or thread_id is not None:
                    continue
                owner = (record.agent_id, record.user_id)
            if len(stored) == len(query) and visible(visible_to, *owner):
                hits.append(
                    SearchHit(
                        kind, vid, sum(a * b for a, b in zip(query, stored, strict=True)), tid
                    )
                )
        hits.sort(key=lambda h: (-h.score, h.kind, h.id))
        return hits[:k]

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        self._open()
        found = {i: self._vectors.get((tenant, kind, i, model_id)) for i in ids}
        return {i: list(v[1]) for i, v in found.items() if v is not None}

    def _drop_entry_vectors(self, tenant: str, thread_id: str, ids: Sequence[str] | None) -> None:
        """Drop the vectors of these entries (all the thread's: ``None``) that no branch
        of the thread still holds (a fork shares its entries' ids, and so their vectors)."""
        held = {
            e.id for _, rows in self._branches.get((tenant, thread_id), {}).values() for e in rows
        }
        for key, (tid, _) in list(self._vectors.items()):
            if key[0] == tenant and key[1] == "entry" and tid == thread_id:
                if (ids is None or key[2] in ids) and key[2] not in held:
                    del self._vectors[key]

    # -- erasure (AsyncStore) --------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        async with self._lock:
            self._open()
            removed = 0
            for key, thread in list(self._threads.items()):
                if key[0] == tenant and thread.user_id == user_id:
                    removed += 1 + sum(len(rows) for _, rows in self._branches[key].values())
                    del self._threads[key], self._branches[key]
                    self._prints.pop(key, None)
                    self._drop_entry_vectors(tenant, key[1], None)
            for key, (owner, _) in list(self._snapshots.items()):
                if key[0] == tenant and owner == user_id:
                    del self._snapshots[key]
                    removed += 1
            kept = [s for s in self._summaries.get(tenant, []) if s.user_id != user_id]
            removed += len(self._summaries.get(tenant, [])) - len(kept)
            self._summaries[tenant] = kept
            for rkey, record in list(self._records.items()):
                if rkey[0] == tenant and record.user_id == user_id:
                    del self._records[rkey]
                    for vkey in [v for v in self._vectors if v[:3] == rkey]:
                        del self._vectors[vkey]
                    removed += 1
            return removed


async def main() -> None:
    from memorybank import AsyncMemory

    async with AsyncMemory(DictStore()) as memory:
        thread = await memory.threads.create(user_id="alice")
        await memory.remember(thread.id, "user", "My dog is called Biscuit")
        await memory.remember(thread.id, "assistant", "A fine name for a dog.")
        print([m["content"] for m in await memory.history(thread.id)])


if __name__ == "__main__":
    asyncio.run(main())
