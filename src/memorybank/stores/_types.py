"""Plain values of the store contract, shared by the sync and async stores.

They live outside ``_async/`` so the generated sync code uses the very same
classes (one ``UNSET``, one ``Record``), never a generated copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from memorybank.errors import Conflict
from memorybank.records import Entry, Thread, ToolCall

__all__ = [
    "UNSET",
    "AppendResult",
    "NewEntry",
    "Record",
    "RecordGuard",
    "SearchHit",
    "Unset",
    "VectorItem",
    "Visibility",
    "by_kind",
    "searched_kinds",
    "visible",
]


class Unset:
    """Marker type for "argument not given" where ``None`` is a real value."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = Unset()
#: An ``entry_windows`` window ending here (or later) runs to the end of its thread.
LAST_POSITION: Final = 2**62


@dataclass(slots=True)
class NewEntry:
    """An entry to append: validated, token-counted and id'd by ``AsyncMemory``.

    Not frozen (like the records): one is built per appended message, and a frozen
    dataclass's ``__init__`` sets every field through ``object.__setattr__``.

    ``idempotency_key`` is the key to store it under and ``fingerprint`` the
    content hash of the request that carries it (both made by
    ``memorybank._idempotency``); a store compares them as opaque strings
    (see ``AsyncStore.append_entries``).
    """

    id: str
    role: str
    content: str | None
    name: str | None
    tool_calls: tuple[ToolCall, ...]
    tool_call_id: str | None
    metadata: dict[str, Any]
    state: dict[str, Any]
    token_count: int
    created_at: datetime
    idempotency_key: str | None = None
    fingerprint: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    item: dict[str, Any] | None = None


@dataclass(slots=True)
class AppendResult:
    """What ``append_entries`` returns: the stored entries and the thread after the write."""

    entries: list[Entry]
    thread: Thread


@dataclass(slots=True)
class Record:
    """A scoped long-term record: a fact, a document, a core fact or its history.

    Stores keep records opaque: ``kind`` separates them, ``data`` holds the
    kind's own fields (JSON object) that only ``AsyncMemory`` interprets.
    ``key`` is an optional lookup key (core facts); ``expires_at`` is stored
    for the caller to filter on. ``revision`` is stored as given and compared
    by a ``RecordGuard``: a caller that guards its writes of a record bumps it
    on each of them.
    """

    kind: str
    id: str
    agent_id: str | None
    user_id: str | None
    content: str
    data: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    key: str | None = None
    expires_at: datetime | None = None
    revision: int = 0


def by_kind(kinds: Sequence[str], records: Sequence[Record]) -> dict[str, list[Record]]:
    """``records`` (of ``kinds``) under their kind, in the order given; every kind is
    a key, in ``kinds``' order, an empty list when no record has it."""
    grouped: dict[str, list[Record]] = {kind: [] for kind in kinds}
    for record in records:
        grouped[record.kind].append(record)
    return grouped


@dataclass(frozen=True, slots=True)
class RecordGuard:
    """The condition of a compare-and-swap write: it applies only while the stored
    record ``(kind, id)`` has this ``revision`` (``None``: while it does not exist)."""

    kind: str
    id: str
    revision: int | None

    def failed(self) -> Conflict:
        """The error a store raises when this guard does not hold (one message everywhere)."""
        state = "absent" if self.revision is None else f"at revision {self.revision}"
        return Conflict(f"{self.kind} {self.id!r} is no longer {state}: changed concurrently")


@dataclass(frozen=True, slots=True)
class Visibility:
    """Who is asking, per axis: a record (or a thread's entry) is visible when its
    ``agent_id`` is this agent or ``None`` (shared), and its ``user_id`` is this
    user or ``None`` (shared). ``None`` here means "no agent/user": only shared
    records match on that axis. ``UNSET`` on an axis means that axis is not
    checked (the trusted, unscoped call on that axis)."""

    agent_id: str | Unset | None
    user_id: str | Unset | None

    def admits(self, agent_id: str | None, user_id: str | None) -> bool:
        """Whether a record owned by ``agent_id``/``user_id`` is visible (the rule above)."""
        return _axis_admits(self.agent_id, agent_id) and _axis_admits(self.user_id, user_id)


def _axis_admits(asking: str | Unset | None, owner: str | None) -> bool:
    return isinstance(asking, Unset) or owner is None or owner == asking


def visible(visible_to: Visibility | None, agent_id: str | None, user_id: str | None) -> bool:
    """``visible_to.admits(...)``, where ``None`` (no scope given) admits everything."""
    return visible_to is None or visible_to.admits(agent_id, user_id)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result of a store-level search: which record or entry, and its raw score.

    For entries ``kind`` is ``"entry"``, and ``thread_id``/``branch`` locate it.
    Keyword scores are the backend's own relevance (bigger is better; scales
    differ per backend); vector scores are cosine similarities in [-1, 1].
    """

    kind: str
    id: str
    score: float
    thread_id: str | None = None
    branch: str | None = None


@dataclass(frozen=True, slots=True)
class VectorItem:
    """An embedding to store for a record or an entry (``kind="entry"``)."""

    kind: str
    id: str
    model_id: str
    vector: Sequence[float]
    thread_id: str | None = None


def searched_kinds(kinds: Sequence[str], thread_id: str | None) -> list[str]:
    """The kinds a vector search covers, once each: with a thread filter only entries
    (records belong to no thread)."""
    return [kind for kind in dict.fromkeys(kinds) if kind == "entry" or thread_id is None]
