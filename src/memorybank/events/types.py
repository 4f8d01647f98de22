"""The change feed's values (I/O-free): ``Event``, the event kinds, ``CursorExpired``.

Every change to a tenant's memory, once the feed is on, is recorded in the same
transaction as the change: an ``Event`` with a cursor that orders the tenant's
events in commit order. ``memory.events.list(after=cursor)`` returns the events
after ``cursor``, oldest first, as a plain ``list[Event]``; the last event's
``cursor`` is the next call's ``after`` (an empty list: keep the same cursor).

An event carries ids, no content unless asked: the entry/fact/document id in ``item_id``,
the thread in ``thread_id``, the principal (``user_id``, ``agent_id``) it
belongs to, and in ``data`` a few more ids or small markers (a superseding
fact's id, an entry's role, a branch name). ``user.forgotten`` is one event for
a whole ``forget_user`` and carries nothing but the user id. ``list(content=True)``
fills ``content`` of entry, fact and document events, read when listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from memorybank.errors import CursorExpired, InvalidInput

__all__ = [
    "DOCUMENT_ADDED",
    "DOCUMENT_DELETED",
    "ENTRY_ADDED",
    "ENTRY_DELETED",
    "ENTRY_UPDATED",
    "EVENT_KINDS",
    "FACT_ADDED",
    "FACT_DELETED",
    "FACT_SUPERSEDED",
    "GRAPH_CHANGED",
    "RECORD_EVENTS",
    "THREAD_CREATED",
    "THREAD_DELETED",
    "THREAD_UPDATED",
    "USER_FORGOTTEN",
    "CursorExpired",
    "Event",
    "split_kinds",
]

ENTRY_ADDED: Final = "entry.added"
ENTRY_UPDATED: Final = "entry.updated"
ENTRY_DELETED: Final = "entry.deleted"
THREAD_CREATED: Final = "thread.created"
THREAD_UPDATED: Final = "thread.updated"
THREAD_DELETED: Final = "thread.deleted"
FACT_ADDED: Final = "fact.added"
FACT_SUPERSEDED: Final = "fact.superseded"
FACT_DELETED: Final = "fact.deleted"
DOCUMENT_ADDED: Final = "document.added"
DOCUMENT_DELETED: Final = "document.deleted"
GRAPH_CHANGED: Final = "graph.changed"
USER_FORGOTTEN: Final = "user.forgotten"

#: Every event kind, the values ``kinds=`` filters on.
EVENT_KINDS: frozenset[str] = frozenset(
    {
        ENTRY_ADDED,
        ENTRY_UPDATED,
        ENTRY_DELETED,
        THREAD_CREATED,
        THREAD_UPDATED,
        THREAD_DELETED,
        FACT_ADDED,
        FACT_SUPERSEDED,
        FACT_DELETED,
        DOCUMENT_ADDED,
        DOCUMENT_DELETED,
        GRAPH_CHANGED,
        USER_FORGOTTEN,
    }
)

#: The event a record change makes, by (record kind, operation: "added", "updated" or
#: "deleted"); other record changes make none. The memory store reads it, Redis builds its
#: scripts' table from it, the SQL triggers name the same kinds (``stores.sql.events``).
RECORD_EVENTS: Final[Mapping[tuple[str, str], str]] = {
    ("fact", "added"): FACT_ADDED,
    ("fact_version", "added"): FACT_SUPERSEDED,
    ("fact", "deleted"): FACT_DELETED,
    ("document", "added"): DOCUMENT_ADDED,
    ("document", "deleted"): DOCUMENT_DELETED,
    **{
        (kind, op): GRAPH_CHANGED
        for kind in ("graph_entity", "graph_out")
        for op in ("added", "updated", "deleted")
    },
}


@dataclass(frozen=True, slots=True)
class Event:
    """One change to a tenant's memory, as the change feed records it.

    Attributes:
        cursor: opaque; pass it as ``after`` to read the events that follow this one.
            Cursors order a tenant's events in commit order: a reader that polls
            with ``after`` never misses an event that commits later.
        id: stable unique id of the event (the same on every read and every
            delivery): deduplicate webhook deliveries on it.
        kind: one of ``EVENT_KINDS`` (``"entry.added"``, ``"fact.superseded"``, ...).
        at: when the change was recorded (UTC).
        user_id: the user the changed item belongs to (``None``: no user).
        agent_id: the agent it belongs to, when it has one.
        thread_id: the thread of an entry or thread event.
        item_id: the entry, fact, document or graph item changed (``None`` for
            thread and user events).
        data: a few ids or markers more (never content), or ``None``.
        content: only from ``list(content=True)``: the content of the entry, fact or
            document named, as it is when listed (a later update shows; an item deleted
            since, a deletion, and every other kind: ``None``).
    """

    cursor: str
    id: str
    kind: str
    at: datetime
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    item_id: str | None = None
    data: Mapping[str, object] | None = None
    content: str | None = None


def split_kinds(values: Sequence[str] | None) -> list[str] | None:
    """The kinds of a ``--kinds`` option or a ``kinds`` query parameter: each value one
    kind or several separated by commas (``None``: every kind)."""
    if values is None:
        return None
    return [kind for value in values for kind in value.split(",") if kind]


def cursor_number(after: str | None) -> int:
    """The number a cursor stands for (``None``: 0, before every event); a string that is
    no cursor raises ``InvalidInput`` (field ``after``). For stores, not callers."""
    if after is None:
        return 0
    if not isinstance(after, str) or not after.isdigit() or len(after) > 19:
        raise InvalidInput("after is not a cursor of this change feed", field="after")
    return int(after)


# The rules of a stale cursor, the same on every store (``events_list``).


def no_feed(number: int) -> list[Event]:
    """What ``events_list`` answers where no feed was ever kept (a database without the
    feed's tables, a Redis cluster, a memory store never switched on): nothing after no
    cursor; ``CursorExpired`` after a cursor (``number``, from ``cursor_number``), whose
    events are gone, never a silent gap. For stores, not callers."""
    if number:
        raise CursorExpired("this store keeps no change feed: the cursor is gone")
    return []


def check_floor(after: str | None, number: int, floor: int) -> None:
    """``CursorExpired`` when the cursor ``after`` (its ``number``) is below the tenant's
    ``floor``: the first number the feed still vouches for (events below it were pruned,
    or made while the feed was off). ``after=None`` reads from the oldest kept, never
    expired. For stores, not callers."""
    if after is not None and number < floor:
        raise CursorExpired(
            f"cursor {after} is older than the events kept (from {floor}):"
            " read the state afresh and follow from after=None"
        )
