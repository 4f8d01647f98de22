"""Frozen records returned by memorybank.

Records are plain values: stores build them, ``Memory`` returns them, and
changing a returned record never changes what is stored. They are slotted but
not frozen dataclasses: a frozen dataclass costs ~9x more to construct, and
reading "last N" builds N of them on every call. Every time is a timezone-aware
UTC ``datetime`` with microsecond precision on every store.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "ROLES",
    "Branch",
    "Document",
    "Entry",
    "Fact",
    "Hit",
    "Message",
    "Role",
    "SavedSnapshot",
    "Summary",
    "Thread",
    "ThreadStatus",
    "ToolCall",
    "WorkingRun",
]

Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "developer", "user", "assistant", "tool"})
ThreadStatus = Literal["active", "archived"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by an assistant message.

    ``arguments`` is the JSON text the model produced, kept verbatim.
    """

    id: str
    name: str
    arguments: str = "{}"

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI chat shape: ``{"id", "type": "function", "function": {...}}``."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class Message:
    """A message to store: what ``entries.add`` takes (a provider dict works too).

    Only an assistant message with ``tool_calls`` may omit ``content``; a ``tool``
    message needs ``tool_call_id``. ``metadata`` is yours to filter on; ``state``
    is custom per-event data (the AG-Kit "state"). ``extra`` and ``item`` are
    the provider payload kept verbatim (see ``Entry``); a provider dict fills
    them itself, so they are rarely set by hand.
    """

    role: Role
    content: str | None = None
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    state: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    item: Mapping[str, Any] | None = None


@dataclass(slots=True)
class Thread:
    """A conversation. ``user_id`` is its owner: a thread with an owner fails closed."""

    id: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    title: str | None
    metadata: dict[str, Any]
    status: ThreadStatus
    created_at: datetime
    updated_at: datetime
    current_branch: str = "main"


@dataclass(slots=True)
class Entry:
    """One stored message of a thread's branch.

    ``position`` orders the entries of a branch: strictly increasing in the order
    they were added (deletes may leave gaps). ``created_at`` is informational and
    may be set in the past for imports; it never changes the order.
    ``idempotency_key`` is the key it was stored under: the caller's key, or
    ``key + "\x1f" + str(i)`` for message ``i >= 1`` of an ``add_many`` batch.

    Provider shapes. ``content`` is always the message's *text* (what keyword
    search indexes and summaries read); the provider payload beyond the columns
    is kept verbatim, so ``to_message()`` returns exactly what was given:

    * ``extra``: the chat message's other fields (``refusal``, ``annotations``,
      ``audio``, ``function_call``, ...) and, when ``content`` was a list of
      parts, that list under ``"content"`` (``content`` then holds the text
      parts joined by newlines).
    * ``item``: a whole Responses API item (a dict with a ``"type"``:
      ``message``, ``function_call``, ``function_call_output``, ``reasoning``,
      ...), returned as is; its columns are derived from it (see docs/concepts.md,
      "Responses API items"): ``function_call``-like items are assistant entries with one
      tool call (``call_id``), their ``*_output`` items tool entries, so
      windows keep pairs whole.
    """

    id: str
    thread_id: str
    branch: str
    position: int
    role: Role
    content: str | None
    name: str | None
    tool_calls: tuple[ToolCall, ...]
    tool_call_id: str | None
    metadata: dict[str, Any]
    state: dict[str, Any]
    token_count: int
    created_at: datetime
    idempotency_key: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    item: dict[str, Any] | None = None

    def to_message(self) -> dict[str, Any]:
        """The provider-shaped dict for this entry: exactly what was stored.

        A Responses item comes back as the item (a fresh deep copy). A chat
        message always has ``role`` and ``content`` (``None`` only for an
        assistant message that just calls tools; the list of parts when it was
        given as parts); ``name``, ``tool_calls`` and ``tool_call_id`` are
        present only when set, because providers reject empty values for them;
        ``extra`` fields are added back as given.
        """
        if self.item is not None:
            return copy.deepcopy(self.item)
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name is not None:
            message["name"] = self.name
        if self.tool_calls:
            message["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        if self.extra:
            message.update(copy.deepcopy(self.extra))
        return message


@dataclass(slots=True)
class Branch:
    """A line of a thread's history. Every thread starts on ``"main"``.

    A branch created from an entry starts with a copy of the history up to and
    including that entry (``from_branch``/``from_entry`` record where it forked).
    """

    name: str
    thread_id: str
    created_at: datetime
    from_branch: str | None = None
    from_entry: str | None = None


@dataclass(slots=True)
class Summary:
    """A compressed summary of past conversations for an agent (and user)."""

    id: str
    agent_id: str
    user_id: str | None
    content: str
    created_at: datetime


@dataclass(slots=True)
class Document:
    """A searchable piece of knowledge (not part of a conversation).

    ``agent_id``/``user_id`` scope it like a fact: ``None`` shares it with every
    agent/user of the tenant. Its embedding (when an embedder is configured) is
    stored beside it, tagged with the embedder's ``model_id``.
    """

    id: str
    content: str
    metadata: dict[str, Any]
    agent_id: str | None
    user_id: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(slots=True)
class Hit:
    """One search result: the matched entry, document or fact, its score and its signals.

    Exactly one of ``entry``/``document``/``fact`` is set (``kind`` says which).
    ``score`` is on the scale of the search mode (hybrid: fused score; semantic:
    cosine similarity; keyword: the store's relevance), the same for every kind.
    ``signals`` holds the raw value of every signal that matched (``"keyword"``,
    ``"semantic"``, ``"speaker"``, ``"date"``, ``"time_word"``, ``"context"`` for a
    score inherited from neighbouring entries or the session; with a reranker,
    ``"rerank"`` its score and ``"hybrid"`` the hit's own hybrid score, see
    ``memorybank.rerank``). ``superseded`` is true for an earlier value of a
    fact (``search(..., include_history=True)``): its ``fact`` carries the fact's
    id and the ``version`` it had then.
    """

    kind: Literal["entry", "document", "fact"]
    score: float
    signals: dict[str, float]
    entry: Entry | None = None
    document: Document | None = None
    fact: Fact | None = None
    superseded: bool = False

    def _record(self) -> Entry | Document | Fact | None:
        if self.entry is not None:
            return self.entry
        return self.document if self.document is not None else self.fact

    @property
    def id(self) -> str:
        """The id of the matched entry, document or fact."""
        record = self._record()
        assert record is not None
        return record.id

    @property
    def content(self) -> str | None:
        """The text of the matched entry, document or fact."""
        record = self._record()
        return None if record is None else record.content


@dataclass(slots=True)
class Fact:
    """A long-term fact an agent knows, shared across threads.

    ``user_id=None`` shares it with every user of the agent, ``agent_id=None``
    with every agent. ``source_entries`` lists the ids of the entries it came
    from (provenance). A fact whose ``expires_at`` has passed is never
    returned. ``version`` counts supersessions: ``facts.history(id)`` lists
    every earlier value.
    """

    id: str
    agent_id: str | None
    user_id: str | None
    content: str
    category: str | None
    confidence: float | None
    source: str | None
    metadata: dict[str, Any]
    source_entries: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    version: int = 1


@dataclass(slots=True)
class SavedSnapshot:
    """A run's saved snapshot, as ``memory.snapshots.list()`` returns it.

    ``user_id`` is its owner (``None``: unowned, loadable by every user of the tenant).
    """

    run_id: str
    user_id: str | None
    value: Any


@dataclass(slots=True)
class WorkingRun:
    """A run holding working memory, as ``memory.working_runs()`` returns it.

    ``run_id`` is the id the run was opened with; a run opened by a handle scoped
    to an agent only (no user) is stored under a digest of its principal and
    is listed, to the unscoped handle alone, by that digest (``~`` and hex)
    with ``user_id`` and ``agent_id`` ``None``.
    """

    run_id: str
    user_id: str | None
    agent_id: str | None
    items: dict[str, Any]
