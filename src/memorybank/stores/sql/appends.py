"""The rules of an append, decided once for the SQL engines (``SQLAppends`` in
``memorybank.stores.sql._async.appends`` says which, in what order): which refusal a
head read means, what a batch with idempotency keys writes, the columns of a new entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memorybank.errors import NotFound, ThreadForbidden
from memorybank.records import Entry, Thread
from memorybank.rules.idempotency import clash, key_reused
from memorybank.stores.contract.appends import new_entry
from memorybank.stores.contract.items import NewEntry
from memorybank.stores.contract.types import Unset
from memorybank.stores.sql.common import dump, row_to_entry, to_us, tool_calls_to_json

__all__ = ["AppendItem", "append_branch", "entry_values", "no_branch", "plan_keyed", "refusal"]

#: One caller's part of a combined append (PostgreSQL's and MySQL's write combining, one
#: tenant): thread, branch, owner check, entries and ``updated_at``.
AppendItem = tuple[str, str | None, str | Unset | None, Sequence[NewEntry], datetime]


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
    that name; ``allowed``: the server's owner verdict, where it gave one (else compared here)."""
    if allowed is None:
        allowed = thread is None or isinstance(owner, Unset) or thread.user_id == owner
    name = branch
    if thread is not None and allowed:
        name = thread.current_branch if branch is None else branch
        if has(name):
            return thread, name
    refused = refusal(thread_id, name, found=thread is not None, allowed=allowed, branch=False)
    assert refused is not None  # branch=False: always a refusal, in refusal's order
    return refused


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


def entry_values(new: NewEntry) -> tuple[Any, ...]:
    """A new entry's columns from ``id`` to ``fingerprint`` as SQLite and MySQL bind them
    (JSON text, times in µs); no tool calls and empty objects skip the JSON encoder."""
    calls = (
        None
        if not new.tool_calls and not new.extra and new.item is None
        else tool_calls_to_json(new.tool_calls, new.extra, new.item)
    )
    return (
        new.id,
        new.role,
        new.content,
        new.name,
        calls,
        new.tool_call_id,
        dump(new.metadata) if new.metadata else "{}",
        dump(new.state) if new.state else "{}",
        new.token_count,
        to_us(new.created_at),
        new.idempotency_key,
        None if new.idempotency_key is None else new.fingerprint,
    )
