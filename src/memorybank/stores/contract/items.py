"""The store contract's values that writes and searches pass: ``NewEntry``,
``AppendResult``, ``Record``, ``RecordGuard``, ``SearchHit`` and ``VectorItem``
(``memorybank.stores.contract.types`` exports them too).

Made by ``memorybank.runtime.plain.dataclass`` (a written ``__init__``, nothing compiled at
import), so the append path imports them once at module level rather than on
every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from memorybank.errors import Conflict
from memorybank.records import Entry, Thread, ToolCall
from memorybank.runtime.plain import FACTORY

if TYPE_CHECKING:
    from dataclasses import dataclass, field
else:  # see memorybank.runtime.plain (cold start, and no generated code)
    from memorybank.runtime.plain import dataclass, field

__all__ = [
    "AppendResult",
    "EntryRow",
    "NewEntry",
    "Record",
    "RecordGuard",
    "SearchHit",
    "VectorItem",
]


@dataclass(slots=True)
class NewEntry:
    """An entry to append: validated, token-counted and id'd by ``AsyncMemory``.

    Not frozen (like the records): one is built per appended message, and a frozen
    dataclass's ``__init__`` sets every field through ``object.__setattr__``.

    ``idempotency_key`` is the key to store it under and ``fingerprint`` the
    content hash of the request that carries it (both made by
    ``memorybank.rules.idempotency``); a store compares them as opaque strings
    (see ``AsyncStore.entry_append``).
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

    def __init__(
        self,
        id: str,
        role: str,
        content: str | None,
        name: str | None,
        tool_calls: tuple[ToolCall, ...],
        tool_call_id: str | None,
        metadata: dict[str, Any],
        state: dict[str, Any],
        token_count: int,
        created_at: datetime,
        idempotency_key: str | None = None,
        fingerprint: str | None = None,
        extra: dict[str, Any] = FACTORY,
        item: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.role = role
        self.content = content
        self.name = name
        self.tool_calls = tool_calls
        self.tool_call_id = tool_call_id
        self.metadata = metadata
        self.state = state
        self.token_count = token_count
        self.created_at = created_at
        self.idempotency_key = idempotency_key
        self.fingerprint = fingerprint
        self.extra = {} if extra is FACTORY else extra
        self.item = item


@dataclass(slots=True)
class AppendResult:
    """What ``entry_append`` returns: the stored entries and the thread after the write."""

    entries: list[Entry]
    thread: Thread

    def __init__(
        self,
        entries: list[Entry],
        thread: Thread,
    ) -> None:
        self.entries = entries
        self.thread = thread


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

    def __init__(
        self,
        kind: str,
        id: str,
        agent_id: str | None,
        user_id: str | None,
        content: str,
        data: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
        key: str | None = None,
        expires_at: datetime | None = None,
        revision: int = 0,
    ) -> None:
        self.kind = kind
        self.id = id
        self.agent_id = agent_id
        self.user_id = user_id
        self.content = content
        self.data = data
        self.created_at = created_at
        self.updated_at = updated_at
        self.key = key
        self.expires_at = expires_at
        self.revision = revision


@dataclass(frozen=True, slots=True)
class RecordGuard:
    """The condition of a compare-and-swap write: it applies only while the stored
    record ``(kind, id)`` has this ``revision`` (``None``: while it does not exist)."""

    kind: str
    id: str
    revision: int | None

    def __init__(
        self,
        kind: str,
        id: str,
        revision: int | None,
    ) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "revision", revision)

    def failed(self) -> Conflict:
        """The error a store raises when this guard does not hold (one message everywhere)."""
        state = "absent" if self.revision is None else f"at revision {self.revision}"
        return Conflict(f"{self.kind} {self.id!r} is no longer {state}: changed concurrently")


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

    def __init__(
        self,
        kind: str,
        id: str,
        score: float,
        thread_id: str | None = None,
        branch: str | None = None,
    ) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "score", score)
        object.__setattr__(self, "thread_id", thread_id)
        object.__setattr__(self, "branch", branch)


class EntryRow(NamedTuple):
    """What a hybrid search ranks of an entry: its place and its words, without the
    columns only a result shows (metadata, state, tool calls, token count, key).

    A search reads these for its hundred and more candidates (``search_entry_rows``,
    ``search_window_rows``) and the whole ``Entry`` only for the few it returns (one
    ``entry_get_across``): decoding every column of every candidate was a large part of
    a search's Python. The fields are ``Entry``'s of the same names.
    """

    id: str
    thread_id: str
    branch: str
    position: int
    role: str
    content: str | None
    name: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class VectorItem:
    """An embedding to store for a record or an entry (``kind="entry"``)."""

    kind: str
    id: str
    model_id: str
    vector: Sequence[float]
    thread_id: str | None = None

    def __init__(
        self,
        kind: str,
        id: str,
        model_id: str,
        vector: Sequence[float],
        thread_id: str | None = None,
    ) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "model_id", model_id)
        object.__setattr__(self, "vector", vector)
        object.__setattr__(self, "thread_id", thread_id)
