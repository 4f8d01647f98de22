"""The contract's list semantics, written once for stores that filter in this process (the
in-memory store, a store of your own): which threads ``thread_list`` returns and in what
order, which entries make ``entry_list``'s page, which records ``record_list`` keeps, and
which ``record_get_many`` and ``record_page`` return. The SQL stores and Redis say the
same in their queries; the conformance suite holds all of them to one outcome.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from memorybank.records import Entry, Thread
from memorybank.stores.contract.items import Record
from memorybank.stores.contract.types import UNSET, Unset, Visibility, visible

__all__ = [
    "entry_page", "page_records", "pick_records", "record_matches", "record_order",
    "select_records", "select_threads", "thread_matches",
]  # fmt: skip


def thread_matches(
    t: Thread, user_id: str | Unset | None, agent_id: str | Unset | None, status: str | None
) -> bool:
    """Whether ``thread_list``'s filters keep ``t`` (an unset filter keeps every thread)."""
    return (
        (isinstance(user_id, Unset) or t.user_id == user_id)
        and (isinstance(agent_id, Unset) or t.agent_id == agent_id)
        and (status is None or t.status == status)
    )


def record_matches(
    owner: tuple[str | None, str | None, str | None],
    agent_id: str | Unset | None,
    user_id: str | Unset | None,
    key: str | Unset | None,
    visible_to: Visibility | None,
) -> bool:
    """Whether ``record_list``'s filters keep a record of ``owner`` (its agent, user and
    key): each given one matches exactly, and ``visible_to`` may see it."""
    agent, user, found_key = owner
    return (
        (isinstance(agent_id, Unset) or agent == agent_id)
        and (isinstance(user_id, Unset) or user == user_id)
        and (isinstance(key, Unset) or found_key == key)
        and visible(visible_to, agent, user)
    )


def select_threads(
    threads: Iterable[Thread],
    *,
    user_id: str | Unset | None = UNSET,
    agent_id: str | Unset | None = UNSET,
    status: str | None = None,
    limit: int | None = None,
) -> list[Thread]:
    """``thread_list``'s answer from one tenant's ``threads``: the matching ones, most
    recently updated first (ties: id descending), at most ``limit``."""
    found = [t for t in threads if thread_matches(t, user_id, agent_id, status)]
    found.sort(key=lambda t: (t.updated_at, t.id), reverse=True)
    return found if limit is None else found[:limit]


def entry_page(
    rows: Sequence[Entry],
    *,
    limit: int | None = None,
    offset: int = 0,
    before: datetime | None = None,
    after: datetime | None = None,
    newest_first: bool = False,
) -> list[Entry]:
    """``entry_list``'s page of a branch's ``rows`` (oldest first): skip the ``offset``
    newest that match ``before``/``after``, keep the next ``limit``."""
    page: list[Entry] = []
    skipped = 0
    for entry in reversed(rows):
        if limit is not None and len(page) >= limit:
            break
        if (before is not None and not entry.created_at < before) or (
            after is not None and not entry.created_at > after
        ):
            continue
        if skipped < offset:
            skipped += 1
            continue
        page.append(entry)
    return page if newest_first else page[::-1]


def select_records(
    records: Iterable[Record],
    *,
    agent_id: str | Unset | None = UNSET,
    user_id: str | Unset | None = UNSET,
    key: str | Unset | None = UNSET,
    visible_to: Visibility | None = None,
    limit: int | None = None,
) -> list[Record]:
    """``record_list``'s answer from one kind's ``records``: the matching ones, oldest
    first (``created_at``, then id), at most ``limit``."""
    found = [
        r
        for r in records
        if record_matches((r.agent_id, r.user_id, r.key), agent_id, user_id, key, visible_to)
    ]
    found.sort(key=record_order)
    return found if limit is None else found[:limit]


def record_order(record: Record) -> tuple[datetime, str]:
    """The order of records in every answer: oldest first (``created_at``, then id)."""
    return (record.created_at, record.id)


def pick_records(
    ids: Iterable[str], get: Callable[[str], Record | None], visible_to: Visibility | None
) -> dict[str, Record]:
    """``record_get_many``'s answer: the record ``get`` finds for each of ``ids`` (each
    once, in their order) that exists and that ``visible_to`` may see, keyed by id."""
    return {
        i: r
        for i in dict.fromkeys(ids)
        if (r := get(i)) is not None and visible(visible_to, r.agent_id, r.user_id)
    }


def page_records(
    records: Iterable[Record],
    *,
    limit: int,
    after: tuple[datetime, str] | None,
    visible_to: Visibility | None,
) -> list[Record]:
    """``record_page``'s answer from one kind's ``records``: the oldest ``limit`` that
    ``visible_to`` may see and that sort strictly after the cursor ``after``."""
    found = [
        r
        for r in records
        if (after is None or (r.created_at, r.id) > after)
        and visible(visible_to, r.agent_id, r.user_id)
    ]
    return heapq.nsmallest(limit, found, key=record_order)
