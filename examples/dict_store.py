"""A store of your own: ``DictStore``, all memory in plain dicts of this process.

Only the contract's required methods (``REQUIRED``), public names only; working memory,
snapshots, summaries, keyword and vector search come from the contract's derived defaults.
``tests/stores/test_contract_example.py`` runs the whole conformance suite on it; run it
(``python examples/dict_store.py``) to see memorybank on it. One ``asyncio.Lock`` makes every
write one atomic step: in one process, the contract's atomicity asks no more.
"""
# ruff: noqa: I001  (the contract's names packed in three lines, not one a line)

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from memorybank.errors import Conflict, NotFound, StoreClosed, ThreadForbidden
from memorybank.stores.contract import (
    UNSET, AppendResult, AsyncStore, Branch, Capability, Entry, NewEntry, Record, RecordGuard,
    Thread, Unset, Visibility, entry_page, new_entry, plan_append, select_records, select_threads,
)  # fmt: skip

__all__ = ["DictStore"]

_T = TypeVar("_T")


def _copy(value: _T) -> _T:  # nothing returned aliases stored data
    return copy.deepcopy(value)


# fmt: off  (signatures by hand, a few lines each, so the store reads on a few screens)
# fmt: off
# Signatures by hand, a few lines each, so that the whole store reads on a few screens.
class DictStore(AsyncStore):
    """All data in dicts of this process, one lock for every write (see the module)."""

    capabilities = frozenset({Capability.VOLATILE})

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._closed = False
        self._threads: dict[tuple[str, str], Thread] = {}
        # (tenant, thread) -> branch name -> (Branch, entries oldest first)
        self._branches: dict[tuple[str, str], dict[str, tuple[Branch, list[Entry]]]] = {}
        # (tenant, thread) -> entry id -> fingerprint of its request (branch copies share ids)
        self._prints: dict[tuple[str, str], dict[str, str]] = {}
        self._records: dict[tuple[str, str, str], Record] = {}

    async def close(self) -> None:
        self._closed = True

    def _open(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")

    def _thread(self, tenant: str, thread_id: str) -> Thread:
        self._open()
        thread = self._threads.get((tenant, thread_id))
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        return thread

    def _rows(self, tenant: str, thread_id: str, branch: str | None) -> tuple[str, list[Entry]]:
        thread = self._thread(tenant, thread_id)
        name = thread.current_branch if branch is None else branch
        found = self._branches[(tenant, thread_id)].get(name)
        if found is None:
            raise NotFound(f"branch {name!r} not found")
        return name, found[1]

    # -- threads and branches ------------------------------------------------------

    async def thread_create(self, thread: Thread) -> Thread:
        async with self._lock:
            key = (thread.tenant_id, thread.id)
            if key in self._threads:
                raise Conflict(f"thread {thread.id!r} already exists")
            self._threads[key] = _copy(thread)
            main = Branch(thread.current_branch, thread.id, thread.created_at)
            self._branches[key] = {main.name: (main, [])}
            return _copy(thread)

    async def thread_get(self, tenant: str, thread_id: str) -> Thread | None:
        self._open()
        return _copy(self._threads.get((tenant, thread_id)))

    async def thread_list(self, tenant: str, *, user_id: str | Unset | None = UNSET,
                          agent_id: str | Unset | None = UNSET, status: str | None = None,
                          limit: int | None = None) -> list[Thread]:
        self._open()
        mine = (t for (ten, _), t in self._threads.items() if ten == tenant)
        return _copy(select_threads(mine, user_id=user_id, agent_id=agent_id, status=status,
                                    limit=limit))

    async def thread_update(self, tenant: str, thread_id: str, *, updated_at: datetime,
                            title: str | Unset | None = UNSET,
                            metadata: dict[str, Any] | Unset = UNSET, status: str | Unset = UNSET,
                            current_branch: str | Unset = UNSET) -> Thread:
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            given: dict[str, Any] = {"title": title, "metadata": metadata, "status": status}
            changes = {k: v for k, v in given.items() if not isinstance(v, Unset)}
            if not isinstance(current_branch, Unset):
                self._rows(tenant, thread_id, current_branch)  # NotFound for another name
                changes["current_branch"] = current_branch
            thread = dataclasses.replace(thread, updated_at=updated_at, **_copy(changes))
            self._threads[(tenant, thread_id)] = thread
            return _copy(thread)

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        async with self._lock:
            if await self.thread_get(tenant, thread_id) is None:
                return False
            self._drop((tenant, thread_id))
            return True

    def _drop(self, key: tuple[str, str]) -> None:
        del self._threads[key], self._branches[key]
        self._prints.pop(key, None)

    async def branch_create(self, tenant: str, thread_id: str, name: str, *, from_branch: str,
                            from_entry: str | None, created_at: datetime) -> Branch:
        async with self._lock:
            _, source = self._rows(tenant, thread_id, from_branch)
            branches = self._branches[(tenant, thread_id)]
            if name in branches:
                raise Conflict(f"branch {name!r} already exists")
            ids = [e.id for e in source]
            if from_entry is not None and from_entry not in ids:
                raise NotFound(f"entry {from_entry!r} not found on branch {from_branch!r}")
            end = len(source) if from_entry is None else ids.index(from_entry) + 1
            branch = Branch(name, thread_id, created_at, from_branch, from_entry)
            copies = [dataclasses.replace(_copy(e), branch=name) for e in source[:end]]
            branches[name] = (branch, copies)
            return branch

    async def branch_list(self, tenant: str, thread_id: str) -> list[Branch]:
        self._thread(tenant, thread_id)
        found = [b for b, _ in self._branches[(tenant, thread_id)].values()]
        return sorted(found, key=lambda b: (b.created_at, b.name))

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        async with self._lock:
            if name == self._thread(tenant, thread_id).current_branch:
                raise Conflict(f"cannot delete the current branch {name!r}")
            return self._branches[(tenant, thread_id)].pop(name, None) is not None

    # -- entries -------------------------------------------------------------------

    async def entry_append(self, tenant: str, thread_id: str, entries: Sequence[NewEntry], *,
                           updated_at: datetime, branch: str | None = None,
                           owner: str | Unset | None = UNSET) -> AppendResult:
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            if not isinstance(owner, Unset) and thread.user_id != owner:
                raise ThreadForbidden()
            name, rows = self._rows(tenant, thread_id, branch)
            prints = self._prints.setdefault((tenant, thread_id), {})
            # The contract's rules (ids, idempotency keys, positions); raises before any write.
            plan = plan_append(entries, rows, prints, thread_id=thread_id, branch=name)
            rows.extend(plan.added)
            prints.update(plan.fingerprints)
            thread = dataclasses.replace(thread, updated_at=updated_at)
            self._threads[(tenant, thread_id)] = thread
            return AppendResult(_copy(plan.entries), _copy(thread))

    async def entry_list(self, tenant: str, thread_id: str, *, branch: str | None = None,
                         limit: int | None = None, offset: int = 0,
                         before: datetime | None = None, after: datetime | None = None,
                         newest_first: bool = False) -> tuple[Thread, list[Entry]]:
        thread = self._thread(tenant, thread_id)
        rows = self._branches[(tenant, thread_id)].get(branch or thread.current_branch)
        page = entry_page(rows[1] if rows else [], limit=limit, offset=offset, before=before,
                          after=after, newest_first=newest_first)
        return _copy(thread), _copy(page)

    async def _keep(self, tenant: str, thread_id: str, branch: str | None,
                    keep: Callable[[int, Entry], bool]) -> int:  # how many went
        async with self._lock:
            _, rows = self._rows(tenant, thread_id, branch)
            before = len(rows)
            rows[:] = [e for i, e in enumerate(rows) if keep(i, e)]
            return before - len(rows)

    async def entry_delete(self, tenant: str, thread_id: str, entry_ids: Sequence[str], *,
                           branch: str | None = None) -> int:
        doomed = set(entry_ids)
        return await self._keep(tenant, thread_id, branch, lambda i, e: e.id not in doomed)

    async def entry_truncate_after(self, tenant: str, thread_id: str, entry_id: str, *,
                                   branch: str | None = None) -> int:
        ids = [e.id for e in self._rows(tenant, thread_id, branch)[1]]
        if entry_id not in ids:
            raise NotFound(f"entry {entry_id!r} not found on this branch")
        last = ids.index(entry_id)
        return await self._keep(tenant, thread_id, branch, lambda i, e: i <= last)

    async def entry_compact(self, tenant: str, thread_id: str, *, branch: str,
                            through_position: int, expected_ids: Sequence[str],
                            summary: NewEntry | None, updated_at: datetime) -> bool:
        async with self._lock:
            thread = self._thread(tenant, thread_id)
            _, rows = self._rows(tenant, thread_id, branch)
            if [e.id for e in rows if e.position <= through_position] != list(expected_ids):
                return False
            kept = [e for e in rows if e.position > through_position]
            if summary is not None:
                kept.insert(0, new_entry(summary, thread_id, branch, through_position))
            rows[:] = kept
            self._threads[(tenant, thread_id)] = dataclasses.replace(thread, updated_at=updated_at)
            return True

    async def entry_update(self, tenant: str, thread_id: str, *, branch: str,
                           changes: Sequence[tuple[str, str | None, dict[str, Any], int]]) -> int:
        async with self._lock:
            self._thread(tenant, thread_id)
            rows = self._branches[(tenant, thread_id)].get(branch, (None, []))[1]
            by_id = {change[0]: change for change in changes}
            for i, e in enumerate(rows):
                if e.id in by_id:
                    _, content, state, tokens = by_id[e.id]
                    rows[i] = dataclasses.replace(e, content=content, state=_copy(state),
                                                  token_count=tokens)
            return sum(1 for e in rows if e.id in by_id)

    # -- records -------------------------------------------------------------------

    def _guard(self, tenant: str, guard: RecordGuard | None) -> None:
        self._open()
        found = None if guard is None else self._records.get((tenant, guard.kind, guard.id))
        if guard is not None and (None if found is None else found.revision) != guard.revision:
            raise guard.failed()

    async def record_put(self, tenant: str, records: Sequence[Record], *,
                         guard: RecordGuard | None = None) -> None:
        async with self._lock:
            self._guard(tenant, guard)
            self._records.update({(tenant, r.kind, r.id): _copy(r) for r in records})

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        self._guard(tenant, None)
        return _copy(self._records.get((tenant, kind, record_id)))

    async def record_delete(self, tenant: str, kind: str, record_ids: Sequence[str], *,
                            guard: RecordGuard | None = None) -> int:
        async with self._lock:
            self._guard(tenant, guard)
            gone = [self._records.pop((tenant, kind, i), None) for i in set(record_ids)]
            return sum(r is not None for r in gone)

    async def record_list(self, tenant: str, kind: str, *, agent_id: str | Unset | None = UNSET,
                          user_id: str | Unset | None = UNSET, key: str | Unset | None = UNSET,
                          visible_to: Visibility | None = None,
                          limit: int | None = None) -> list[Record]:
        self._guard(tenant, None)
        mine = (r for (ten, knd, _), r in self._records.items() if (ten, knd) == (tenant, kind))
        return _copy(select_records(mine, agent_id=agent_id, user_id=user_id, key=key,
                                    visible_to=visible_to, limit=limit))

    # -- erasure -------------------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        async with self._lock:
            self._guard(tenant, None)
            owner = (tenant, user_id)
            threads = [k for k, t in self._threads.items() if (k[0], t.user_id) == owner]
            records = [k for k, r in self._records.items() if (k[0], r.user_id) == owner]
            entries = sum(len(rows) for k in threads for _, rows in self._branches[k].values())
            for k in threads:
                self._drop(k)
            for r in records:
                del self._records[r]
            return len(threads) + entries + len(records)
# fmt: on


async def main() -> None:
    from memorybank import AsyncMemory

    async with AsyncMemory(DictStore()) as memory:
        thread = await memory.threads.create(user_id="alice")
        await memory.remember(thread.id, "user", "My dog is called Biscuit")
        await memory.remember(thread.id, "assistant", "A fine name for a dog.")
        print([m["content"] for m in await memory.history(thread.id)])


if __name__ == "__main__":
    asyncio.run(main())
