"""Request and response bodies of the HTTP API (pydantic, so ``/openapi.json`` is complete).

Responses are generated from the library's records
(``memorybank.server.responses_generated``, written by ``scripts/gen_models.py`` from
``memorybank.server.responses``): the same fields under the same names and types.
Requests are generated from the library's verbs (``memorybank.server.models_generated``,
written by ``scripts/gen_models.py``): the same arguments under the same names, types
and defaults. A field left out of a request means "not given" (the library's default,
``UNSET`` where it reads the caller's scope); ``null`` means ``None`` (e.g. ``user_id:
null`` on a fact: shared by every user). Hand-written here: the bodies that add HTTP
meaning to a generated one (``EntryIn``: the message's fields at the top level;
``CompactIn``: the one strategy a server without a model runs), the admin bodies, and
the responses no record holds (a page, a count, a key and its value, a message as sent).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from memorybank.server.arguments import MESSAGE_FIELDS, MessageIn
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
from memorybank.server.responses_generated import (
    BranchOut,
    CompactionOut,
    ContextOut,
    DocumentOut,
    EntryOut,
    EventOut,
    FactOut,
    HitOut,
    KeyOut,
    RunOut,
    SessionOut,
    SnapshotOut,
    SummaryOut,
    ThreadOut,
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
    "RunOut",
    "SearchIn",
    "SessionIn",
    "SessionOut",
    "SessionPatch",
    "SnapshotIn",
    "SnapshotOut",
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
_STRICT = ConfigDict(extra="forbid")


class Page(BaseModel, Generic[T]):
    """One page of a list. Pass ``next_cursor`` back as ``cursor`` for the next page;
    ``null`` means this was the last page."""

    items: list[T]
    next_cursor: str | None = None


class Count(BaseModel):
    """How many records a call counted, deleted or restored."""

    count: int


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


# -- values: working memory, snapshots, core facts ------------------------------


class ValueOut(BaseModel):
    key: str
    value: Any = None


class CoreFactOut(BaseModel):
    key: str
    value: str


class CoreFactVersion(BaseModel):
    value: str
    set_at: datetime


# -- compaction ---------------------------------------------------------------------------


class CompactIn(CompactOptions):
    """Sliding-window compaction: drop the entries older than the ``keep_recent`` newest
    once the thread reaches ``threshold`` tokens (or ``message_threshold`` entries).
    The only strategy here: summary compaction needs a model the server does not hold."""

    strategy: Literal["sliding-window"] = "sliding-window"

    def arguments(self) -> dict[str, Any]:
        """``compact``'s arguments: this body's strategy, not the library's default."""
        return {"strategy": self.strategy, **super().arguments()}


# -- admin ------------------------------------------------------------------------------


class KeyIn(BaseModel):
    model_config = _STRICT
    tenant: str
    label: str | None = None


class KeyCreated(BaseModel):
    """A new key: ``secret`` is shown this once and never stored."""

    key: KeyOut
    secret: str


class TenantOut(BaseModel):
    tenant: str
    keys: int
    live_keys: int
