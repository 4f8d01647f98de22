"""``entry_append``'s rules, decided once for the SQL engines; each engine keeps only how
it writes (``SQLAppends._append``: PostgreSQL's one-statement appends, MySQL's one or two
round trips, SQLite's inserts on its writer thread), each difference saying why.

Decided here, in this order: an id twice in the batch (``Conflict`` before anything is
read); the head read under the thread row's lock (``refusal``: no thread, another owner,
no branch; nothing written); idempotency keys the branch holds (``plan_keyed``: a
replay, or ``Conflict`` when the payload differs, before any write); positions after
the branch's last, gap-free; an id the branch holds, refused by the unique index on
(tenant, thread, branch, id) with the transaction rolled back, then named
(``first_taken``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank.errors import Conflict, NotFound, ThreadForbidden
from memorybank.records import Entry, Thread
from memorybank.rules.entry_ids import check_batch_ids, first_taken
from memorybank.rules.idempotency import clash, key_reused
from memorybank.stores.contract.appends import new_entry
from memorybank.stores.contract.types import UNSET, Unset
from memorybank.stores.sql._async.core import SQLCore
from memorybank.stores.sql.common import row_to_entry
from memorybank.stores.sql.statements import taken_ids_query

if TYPE_CHECKING:
    from memorybank.stores.contract.items import AppendResult, NewEntry

__all__ = ["SQLAppends", "append_branch", "no_branch", "owned", "plan_keyed", "refusal"]


def no_branch(name: str | None) -> NotFound:
    """The refusal of an append to a branch the thread does not have."""
    return NotFound(f"branch {name!r} not found")


def refusal(
    thread_id: str,
    name: str | None,
    *,
    found: bool = True,
    allowed: bool = True,
    branch: bool = True,
) -> Exception | None:
    """Why an append's head read refuses it, in the contract's order: no thread
    (``found``), another owner (``allowed``), no branch ``name`` (``branch``); ``None``."""
    if not found:
        return NotFound(f"thread {thread_id!r} not found")
    if not allowed:
        return ThreadForbidden()
    return None if branch else no_branch(name)


def append_branch(
    thread_id: str,
    thread: Thread | None,
    owner: str | Unset | None,
    branch: str | None,
    has: Callable[[str], bool],
    *,
    allowed: bool | None = None,
) -> tuple[Thread, str] | Exception:
    """``thread`` (as read under its lock) and the branch an append to it writes to, or
    why it is refused (``refusal``'s order). ``has``: whether the thread has a branch of
    that name; ``allowed``: the server's owner verdict, where it gave one (else ``owned``)."""
    if thread is None:
        return NotFound(f"thread {thread_id!r} not found")
    if not (owned(owner, thread.user_id) if allowed is None else allowed):
        return ThreadForbidden()
    name = thread.current_branch if branch is None else branch
    return (thread, name) if has(name) else no_branch(name)


def owned(owner: str | Unset | None, user_id: str | None) -> bool:
    """Whether a thread of ``user_id`` passes the append's owner check (``UNSET``: none)."""
    return isinstance(owner, Unset) or user_id == owner


def plan_keyed(
    entries: Sequence[NewEntry],
    held: Sequence[Sequence[Any]],
    thread_id: str,
    name: str,
    position: int,
    make: Callable[[NewEntry, str, str, int], Entry] = new_entry,
) -> tuple[list[Entry], list[tuple[int, NewEntry]]]:
    """What appending ``entries`` after ``position`` on branch ``name`` returns and writes,
    given ``held``: rows (entry columns, then the fingerprint) of the branch's entries
    under the batch's keys. A key held with another payload: ``key_reused``, before any
    write. A key held, or earlier in the batch: that entry in its place, nothing written.
    The others: ``make``'s entries at the next positions, and (position, entry) to write."""
    existing: dict[str, Entry] = {}
    prints: dict[str, str | None] = {}
    for row in held:
        entry = row_to_entry(row[:-1])
        if entry.idempotency_key is not None:
            existing[entry.idempotency_key] = entry
            prints[entry.idempotency_key] = row[-1]
    for new in entries:
        if new.idempotency_key in prints and clash(prints[new.idempotency_key], new.fingerprint):
            raise key_reused(new.idempotency_key)
    stored: list[Entry] = []
    added: list[tuple[int, NewEntry]] = []
    for new in entries:
        key = new.idempotency_key
        if key is not None and key in existing:
            stored.append(existing[key])
            continue
        position += 1
        entry = make(new, thread_id, name, position)
        if key is not None:
            existing[key] = entry
        stored.append(entry)
        added.append((position, new))
    return stored, added


class SQLAppends(SQLCore):
    """``entry_append`` over the engine's ``_append`` (see the module docstring)."""

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
        """Check the batch's ids, append in one transaction (``_append``); when the
        unique index on entry ids refused it (nothing written), name the id taken."""
        check_batch_ids(entries)
        try:
            return await self._append(tenant, thread_id, entries, updated_at, branch, owner)
        except Conflict as error:
            cause = error.__cause__
            if cause is None or not self._id_refused(cause):
                raise
            ids = [e.id for e in entries]
            d, table = self.dialect, self._table
            rows = await self._select_many(
                [
                    taken_ids_query(
                        d, table("entries"), table("threads"), tenant, thread_id, branch, part
                    )
                    for part in (ids[i : i + 500] for i in range(0, len(ids), 500))
                ]
            )
            raise (first_taken(ids, {row[0]: row[1] for row in rows}) or error) from cause

    @abc.abstractmethod
    async def _append(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        updated_at: datetime,
        branch: str | None,
        owner: str | Unset | None,
    ) -> AppendResult:
        """The append in one transaction, by the rules above (ids checked already)."""

    @abc.abstractmethod
    def _id_refused(self, cause: BaseException) -> bool:
        """Whether ``cause`` (a ``Conflict``'s driver error) is the unique index on entry
        ids refusing an insert."""
