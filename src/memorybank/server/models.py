"""Request and response bodies of the HTTP API (pydantic, so ``/openapi.json`` is complete).

Responses mirror the library's records field for field (``memorybank.records``).
Requests are generated from the library's verbs (``memorybank.server.models_generated``,
written by ``scripts/gen_models.py``): the same arguments under the same names, types
and defaults. A field left out of a request means "not given" (the library's default,
``UNSET`` where it reads the caller's scope); ``null`` means ``None`` (e.g. ``user_id:
null`` on a fact: shared by every user). Hand-written here: the bodies that add HTTP
meaning to a generated one (``EntryIn``: the message's fields at the top level;
``CompactIn``: the one strategy a server without a model runs) and the admin bodies.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from memorybank.server.arguments import MESSAGE_FIELDS, MessageIn
from memorybank.server.graph_models import EntityOut, RelationOut
from memorybank.server.models_generated import (
    BranchIn,
    CheckoutIn,
    CompactOptions,
    ContextIn,
    CoreFactValueIn,
    DocumentIn,
    EntriesIn,
    EntryOptions,
    FactIn,
    FactPatch,
    FactSearchIn,
    GraphContextOptionsIn,
    RewindIn,
    SearchIn,
    SessionIn,
    SessionPatch,
    SnapshotIn,
    SummaryIn,
    ThreadIn,
    ThreadPatch,
    ValueIn,
)

__all__ = [
    "MESSAGE_FIELDS",
    "BranchIn",
    "BranchOut",
    "CheckoutIn",
    "CompactIn",
    "CompactionOut",
    "ContextIn",
    "ContextOut",
    "CoreFactOut",
    "CoreFactValueIn",
    "CoreFactVersion",
    "Count",
    "DocumentIn",
    "DocumentOut",
    "EntriesIn",
    "EntryIn",
    "EntryOut",
    "EventOut",
    "FactIn",
    "FactOut",
    "FactPatch",
    "FactSearchIn",
    "GraphContextOptionsIn",
    "HitOut",
    "KeyCreated",
    "KeyIn",
    "KeyOut",
    "MessageIn",
    "MessageOut",
    "Page",
    "RewindIn",
    "SearchIn",
    "SessionIn",
    "SessionOut",
    "SessionPatch",
    "SnapshotIn",
    "SummaryIn",
    "SummaryOut",
    "TenantOut",
    "ThreadIn",
    "ThreadOut",
    "ThreadPatch",
    "ValueIn",
    "ValueOut",
]

T = TypeVar("T")
_ATTRS = ConfigDict(from_attributes=True)
_STRICT = ConfigDict(extra="forbid")


class Page(BaseModel, Generic[T]):
    """One page of a list. Pass ``next_cursor`` back as ``cursor`` for the next page;
    ``null`` means this was the last page."""

    items: list[T]
    next_cursor: str | None = None


class Count(BaseModel):
    """How many records a call counted, deleted or restored."""

    count: int


# -- threads -------------------------------------------------------------------


class ThreadOut(BaseModel):
    model_config = _ATTRS
    id: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    title: str | None
    metadata: dict[str, Any]
    status: str
    created_at: datetime
    updated_at: datetime
    current_branch: str


# -- entries -------------------------------------------------------------------


class EntryIn(MessageIn, EntryOptions):
    """One message to append: its fields at the top level (``MessageIn``), with
    ``entries.add``'s options beside them (``idempotency_key``: a retry returns the
    stored entry)."""

    model_config = MessageIn.model_config

    def arguments(self) -> dict[str, Any]:
        """``entries.add``'s options the client sent."""
        return self.model_dump(exclude_unset=True, include=set(EntryOptions.model_fields))

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True, exclude=set(EntryOptions.model_fields))


class ToolCallOut(BaseModel):
    model_config = _ATTRS
    id: str
    name: str
    arguments: str


class EntryOut(BaseModel):
    """A stored entry (``memorybank.Entry``): ``content`` is the text; ``extra`` the
    chat message's other provider fields (and its parts, under ``content``);
    ``item`` a whole Responses item."""

    model_config = _ATTRS
    id: str
    thread_id: str
    branch: str
    position: int
    role: str
    content: str | None
    name: str | None
    tool_calls: list[ToolCallOut]
    tool_call_id: str | None
    metadata: dict[str, Any]
    state: dict[str, Any]
    token_count: int
    created_at: datetime
    idempotency_key: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    item: dict[str, Any] | None = None


class MessageOut(BaseModel):
    """A provider-shaped message, exactly ``Entry.to_message()``: a chat message
    (``name``/``tool_calls``/``tool_call_id`` only when set, provider fields as
    given, ``content`` the parts when given as parts) or a Responses item."""

    model_config = ConfigDict(extra="allow")
    role: str | None = None
    type: str | None = None
    content: Any = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


# -- branches --------------------------------------------------------------------


class BranchOut(BaseModel):
    model_config = _ATTRS
    name: str
    thread_id: str
    created_at: datetime
    from_branch: str | None = None
    from_entry: str | None = None


# -- values: working memory, snapshots, core facts ------------------------------


class ValueOut(BaseModel):
    key: str
    value: Any = None


class RunOut(BaseModel):
    """A run holding working memory (``memory.working_runs()``), with its values."""

    model_config = _ATTRS
    run_id: str
    user_id: str | None
    agent_id: str | None
    items: dict[str, Any]


class SnapshotOut(BaseModel):
    """A run's saved snapshot (``memory.snapshots.list()``); ``user_id`` is its owner."""

    model_config = _ATTRS
    run_id: str
    user_id: str | None
    value: Any = None


class CoreFactOut(BaseModel):
    key: str
    value: str


class CoreFactVersion(BaseModel):
    value: str
    set_at: datetime


# -- summaries ------------------------------------------------------------------


class SummaryOut(BaseModel):
    model_config = _ATTRS
    id: str
    agent_id: str
    user_id: str | None
    content: str
    created_at: datetime


# -- facts ------------------------------------------------------------------------


class FactOut(BaseModel):
    model_config = _ATTRS
    id: str
    agent_id: str | None
    user_id: str | None
    content: str
    category: str | None
    confidence: float | None
    source: str | None
    metadata: dict[str, Any]
    source_entries: list[str]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    version: int


# -- the change feed ---------------------------------------------------------------


class EventOut(BaseModel):
    """One change (``memorybank.events.Event``): ids; content only when asked."""

    model_config = _ATTRS
    cursor: str
    id: str
    kind: str
    at: datetime
    user_id: str | None
    agent_id: str | None
    thread_id: str | None
    item_id: str | None
    data: dict[str, Any] | None
    content: str | None = None


# -- documents and search ------------------------------------------------------------


class DocumentOut(BaseModel):
    model_config = _ATTRS
    id: str
    content: str
    metadata: dict[str, Any]
    agent_id: str | None
    user_id: str | None
    created_at: datetime
    updated_at: datetime


class HitOut(BaseModel):
    model_config = _ATTRS
    kind: Literal["entry", "document", "fact"]
    score: float
    signals: dict[str, float]
    entry: EntryOut | None = None
    document: DocumentOut | None = None
    fact: FactOut | None = None
    superseded: bool = False


# -- context and compaction ------------------------------------------------------------


class ContextOut(BaseModel):
    """What ``build_context`` chose: the messages for the model call, and why
    (``graph``: the graph block's text; ``graph_entities``/``graph_relations``
    what it shows)."""

    model_config = _ATTRS
    messages: list[dict[str, Any]]
    token_count: int
    truncated: bool
    included_entries: int
    total_entries: int
    entries: list[EntryOut]
    facts: list[FactOut]
    semantic: list[str]
    profile: list[str] = Field(default_factory=list)
    graph: str | None = None
    graph_entities: list[EntityOut] = Field(default_factory=list)
    graph_relations: list[RelationOut] = Field(default_factory=list)
    warnings: list[str]
    errors: list[str]


class CompactIn(CompactOptions):
    """Sliding-window compaction: drop the entries older than the ``keep_recent`` newest
    once the thread reaches ``threshold`` tokens (or ``message_threshold`` entries).
    The only strategy here: summary compaction needs a model the server does not hold."""

    strategy: Literal["sliding-window"] = "sliding-window"

    def arguments(self) -> dict[str, Any]:
        """``compact``'s arguments: this body's strategy, not the library's default."""
        return {"strategy": self.strategy, **super().arguments()}


class CompactionOut(BaseModel):
    model_config = _ATTRS
    thread_id: str
    original_messages: int
    compacted_messages: int
    summary_tokens: int
    action: str


# -- sessions -----------------------------------------------------------------------


class SessionOut(BaseModel):
    model_config = _ATTRS
    id: str
    user_id: str
    agent_id: str | None
    channel_type: str
    channel_id: str
    status: str
    message_count: int
    config: dict[str, Any]
    metadata: dict[str, Any]
    created_at: datetime
    last_active_at: datetime


# -- admin ------------------------------------------------------------------------------


class KeyIn(BaseModel):
    model_config = _STRICT
    tenant: str
    label: str | None = None


class KeyOut(BaseModel):
    model_config = _ATTRS
    id: str
    tenant: str
    label: str | None
    created_at: datetime
    revoked_at: datetime | None = None


class KeyCreated(BaseModel):
    """A new key: ``secret`` is shown this once and never stored."""

    key: KeyOut
    secret: str


class TenantOut(BaseModel):
    tenant: str
    keys: int
    live_keys: int
