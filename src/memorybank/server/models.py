"""Request and response bodies of the HTTP API (pydantic, so ``/openapi.json`` is complete).

Responses mirror the library's records field for field (``memorybank.records``);
requests carry the same arguments as the library's verbs. A field left out of
a request means "not given" (the library's ``UNSET``); ``null`` means ``None``
(e.g. ``user_id: null`` on a fact: shared by every user).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from memorybank.graph.model import GraphContextOptions
from memorybank.records import ROLES
from memorybank.rules import validate as v
from memorybank.server.graph_models import EntityOut, RelationOut
from memorybank.stores.contract.types import UNSET

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
    "SummaryIn",
    "SummaryOut",
    "TenantOut",
    "ThreadIn",
    "ThreadOut",
    "ThreadPatch",
    "ValueIn",
    "ValueOut",
    "given",
]

T = TypeVar("T")
_ATTRS = ConfigDict(from_attributes=True)
_STRICT = ConfigDict(extra="forbid")


def given(model: BaseModel, name: str) -> Any:
    """The request field's value, or ``UNSET`` when the client left it out."""
    return getattr(model, name) if name in model.model_fields_set else UNSET


class Page(BaseModel, Generic[T]):
    """One page of a list. Pass ``next_cursor`` back as ``cursor`` for the next page;
    ``null`` means this was the last page."""

    items: list[T]
    next_cursor: str | None = None


class Count(BaseModel):
    """How many records a call counted, deleted or restored."""

    count: int


# -- threads -------------------------------------------------------------------


class ThreadIn(BaseModel):
    model_config = _STRICT
    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None


class ThreadPatch(BaseModel):
    model_config = _STRICT
    title: str | None = None
    metadata: dict[str, Any] | None = None
    status: Literal["active", "archived"] | None = None


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


#: The message fields the library stores in columns (``rules.validate``'s own list).
MESSAGE_FIELDS: tuple[str, ...] = tuple(sorted(v.MESSAGE_KEYS))
_ROLES: list[str] = sorted(ROLES)


_MESSAGE_SHAPES: list[Any] = [
    {"required": ["role", "content"]},
    *({"required": ["role", name]} for name in ("tool_calls", "refusal", "audio", "function_call")),
    {"required": ["type"]},
]


class MessageIn(BaseModel):
    """A message exactly as the library's ``entries.add`` takes it.

    Either a chat message (``role`` and ``content``; ``content`` a string or a
    list of content parts, objects with a string ``type``) whose other provider
    fields (``refusal``, ``annotations``, ``audio``, ``function_call``, ...) are
    kept verbatim, or a Responses API item (an object with a ``type``:
    ``message``, ``function_call``, ``function_call_output``, ``reasoning``,
    ...) kept whole. ``tool_calls`` take the chat shape ``{"id", "type":
    "function", "function": {"name", "arguments"}}``. The library checks the
    message (roles, pairing, sizes): its ``InvalidInput`` is the 422 answer,
    ``field`` naming the message field.
    """

    # The schema says what the library requires: a chat message has a role and content
    # (an assistant's may carry tool calls, a refusal, audio or a function call instead),
    # a Responses item a type.
    model_config = ConfigDict(extra="allow", json_schema_extra={"anyOf": _MESSAGE_SHAPES})
    role: str | None = Field(
        default=None,
        description=f"One of {', '.join(_ROLES)} (a Responses item may leave it out).",
        json_schema_extra={"enum": [*_ROLES, None]},
    )
    type: str | None = Field(
        default=None, description="A Responses API item's type (a chat message has none)."
    )
    content: str | list[dict[str, Any]] | None = Field(
        default=None, description="The text, or a list of content parts (kept verbatim)."
    )
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    metadata: dict[str, Any] | None = None
    state: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The dict the library's ``entries.add`` takes: the fields as the client sent
        them (one sent as ``null`` stays, as the library keeps it)."""
        return self.model_dump(exclude_unset=True)


_ENTRY_OPTIONS = frozenset({"token_count", "idempotency_key", "created_at", "branch"})


class EntryIn(MessageIn):
    """One message to append, with ``entries.add``'s options beside its fields
    (``idempotency_key``: a retry returns the stored entry)."""

    token_count: int | None = None
    idempotency_key: str | None = None
    created_at: datetime | None = None
    branch: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True, exclude=set(_ENTRY_OPTIONS))


class EntriesIn(BaseModel):
    """Several messages appended in one atomic write (all or none)."""

    model_config = _STRICT
    messages: list[MessageIn]
    idempotency_key: str | None = None
    created_at: datetime | None = None
    branch: str | None = None


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


class BranchIn(BaseModel):
    model_config = _STRICT
    name: str
    from_entry: str | None = None


class BranchOut(BaseModel):
    model_config = _ATTRS
    name: str
    thread_id: str
    created_at: datetime
    from_branch: str | None = None
    from_entry: str | None = None


class CheckoutIn(BaseModel):
    model_config = _STRICT
    name: str


class RewindIn(BaseModel):
    model_config = _STRICT
    entry_id: str


# -- values: working memory, snapshots, core facts ------------------------------


class ValueIn(BaseModel):
    model_config = _STRICT
    value: Any = None


class ValueOut(BaseModel):
    key: str
    value: Any = None


class RunOut(BaseModel):
    """A run holding working memory (``memory.working_runs()``), with its values."""

    run_id: str
    user_id: str | None
    agent_id: str | None
    items: dict[str, Any]


class SnapshotOut(BaseModel):
    """A run's saved snapshot (``memory.snapshots.list()``); ``user_id`` is its owner."""

    run_id: str
    user_id: str | None
    value: Any = None


class CoreFactValueIn(BaseModel):
    model_config = _STRICT
    value: str


class CoreFactOut(BaseModel):
    key: str
    value: str


class CoreFactVersion(BaseModel):
    value: str
    set_at: datetime


# -- summaries ------------------------------------------------------------------


class SummaryIn(BaseModel):
    """A summary of an agent's conversations: REST names no agent otherwise, so
    ``agent_id`` is required (it always was: a body without it was a 422)."""

    model_config = _STRICT
    content: str
    agent_id: str
    user_id: str | None = None


class SummaryOut(BaseModel):
    model_config = _ATTRS
    id: str
    agent_id: str
    user_id: str | None
    content: str
    created_at: datetime


# -- facts ------------------------------------------------------------------------


class FactIn(BaseModel):
    model_config = _STRICT
    content: str
    agent_id: str | None = None
    user_id: str | None = None
    category: str | None = None
    confidence: float | None = None
    source: str | None = None
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = None
    source_entries: list[str] | None = None
    fact_id: str | None = Field(
        default=None, description="A caller-chosen id (an existing one: 409 conflict)."
    )


class FactPatch(BaseModel):
    """Fields to change; ``supersede``: keep the current value in the history."""

    model_config = _STRICT
    content: str | None = None
    category: str | None = None
    confidence: float | None = None
    source: str | None = None
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = None
    source_entries: list[str] | None = None
    supersede: bool = False


class FactSearchIn(BaseModel):
    model_config = _STRICT
    query: str
    k: int = 10
    agent_id: str | None = None
    user_id: str | None = None
    category: str | None = None


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


# -- documents and search ------------------------------------------------------------


class DocumentIn(BaseModel):
    model_config = _STRICT
    content: str
    metadata: dict[str, Any] | None = None
    agent_id: str | None = None
    user_id: str | None = None


class DocumentOut(BaseModel):
    model_config = _ATTRS
    id: str
    content: str
    metadata: dict[str, Any]
    agent_id: str | None
    user_id: str | None
    created_at: datetime
    updated_at: datetime


SearchKind = Literal["entries", "documents", "facts"]
_DEFAULT_KINDS: tuple[SearchKind, ...] = ("entries", "documents")


class SearchIn(BaseModel):
    model_config = _STRICT
    query: str
    k: int = 10
    mode: Literal["hybrid", "semantic", "keyword"] = "hybrid"
    thread_id: str | None = None
    agent_id: str | None = None
    user_id: str | None = None
    kinds: list[SearchKind] = Field(default_factory=lambda: list(_DEFAULT_KINDS))
    min_score: float | None = None
    filters: dict[str, Any] | None = None
    include_history: bool = Field(
        default=False, description="also earlier values of facts (needs 'facts' in kinds)"
    )


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


def _graph_options_model() -> type[BaseModel]:
    """``GraphContextOptions``'s fields, types and defaults as a request model."""
    hints = get_type_hints(GraphContextOptions)
    fields: dict[str, Any] = {
        f.name: (hints[f.name], f.default) for f in dataclasses.fields(GraphContextOptions)
    }
    # ``entity_types`` is a tuple in the library and a JSON list on the wire.
    fields["entity_types"] = (list[str] | None, None)
    model: type[BaseModel] = create_model(
        "GraphContextOptionsIn",
        __config__=_STRICT,
        __doc__=GraphContextOptions.__doc__,
        **fields,
    )
    return model


#: ``build_context``'s ``graph_options`` (``memorybank.graph.GraphContextOptions``).
GraphContextOptionsIn = _graph_options_model()


class ContextIn(BaseModel):
    """``build_context``'s arguments, under its names and with its defaults.

    ``agent_id`` is required (the context is built for one agent). ``user_id``
    left out: the caller's user (``X-User-Id``), else the thread's owner, as
    ``build_context`` on a tenant's handle; ``null``: no user.
    """

    model_config = _STRICT
    max_tokens: int
    agent_id: str
    user_id: str | None = None
    system_prompt: str | None = None
    current_input: str | None = None
    strategy: Literal["recent", "relevant", "hybrid"] = "recent"
    reserve_tokens: int | None = None
    include_system_prompt: bool = True
    include_facts: bool = False
    include_semantic_context: bool = False
    include_graph_context: bool = False
    graph_options: GraphContextOptionsIn | None = None  # type: ignore[valid-type]


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
    graph: str | None = None
    graph_entities: list[EntityOut] = Field(default_factory=list)
    graph_relations: list[RelationOut] = Field(default_factory=list)
    warnings: list[str]
    errors: list[str]


class CompactIn(BaseModel):
    """Sliding-window compaction: drop the entries older than the ``keep_recent`` newest
    once the thread reaches ``threshold`` tokens (or ``message_threshold`` entries)."""

    model_config = _STRICT
    strategy: Literal["sliding-window"] = "sliding-window"
    threshold: int
    keep_recent: int
    message_threshold: int | None = None


class CompactionOut(BaseModel):
    model_config = _ATTRS
    thread_id: str
    original_messages: int
    compacted_messages: int
    summary_tokens: int
    action: str


# -- sessions -----------------------------------------------------------------------


class SessionIn(BaseModel):
    model_config = _STRICT
    channel_type: str
    channel_id: str
    agent_id: str
    user_id: str | None = None


class SessionPatch(BaseModel):
    model_config = _STRICT
    status: Literal["active", "paused", "archived"] | None = None
    config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


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
