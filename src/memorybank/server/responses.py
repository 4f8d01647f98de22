"""The REST response bodies, declared as the library records they are made from.

``scripts/gen_models.py`` reads ``RESPONSES`` and writes one pydantic model per record
to ``memorybank.server.responses_generated``: the record's fields (``Response.fields``),
with the record's types as JSON gives them (a tuple is a list, a ``Mapping`` an object,
a nested record its own response), read from it by attribute. What is said here is only
what the record cannot say: the body's name and description, the fields it leaves out
or adds (a record's properties), and its schema's choices. Every field of a response is
always sent; the schema marks as optional only the fields named ``optional`` (with the
record's default) or in ``defaults``. The server never imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from memorybank.consolidation.profile import Profile, ProfileItem
from memorybank.consolidation.report import ConsolidationChange, ConsolidationReport, EntityChange
from memorybank.context.values import CompactionResult, Context, Session
from memorybank.core.judge import JudgeUsage
from memorybank.embeddings.status import EmbeddingStatus
from memorybank.events.types import Event
from memorybank.graph.model import Entity, GraphStats, Path, Relation, Subgraph
from memorybank.records import (
    Branch,
    Document,
    Entry,
    Fact,
    Hit,
    SavedSnapshot,
    Summary,
    Thread,
    ToolCall,
    WorkingRun,
)
from memorybank.server.keys import KeyInfo
from memorybank.webhooks.registry import WebhookInfo

__all__ = ["RESPONSES", "Response"]


@dataclass(frozen=True, slots=True)
class Response:
    """The response body made from ``record``: ``model`` names it (default: the record's
    name and ``Out``).

    ``doc``: its description; ``only``: its fields, in this order, properties of the
    record included (default: the record's fields, less ``without``); ``optional``:
    fields the schema does not require, each with the record's default (``None`` if the
    record has none); ``defaults``: others, with the default given; ``types``: a field's
    type where the schema says less than the record (a ``Literal`` sent as a plain
    string); ``described``: a field's description.
    """

    record: type
    model: str = ""
    doc: str = ""
    only: tuple[str, ...] = ()
    without: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)
    described: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The body's model name."""
        return self.model or f"{self.record.__name__}Out"

    def fields(self) -> tuple[str, ...]:
        """The body's fields, in order."""
        if self.only:
            return self.only
        return tuple(f.name for f in fields(self.record) if f.name not in self.without)


_STATUS = {"status": "str"}
_CHANGE = {
    "why": "The rule that decided it, in words.",
    "decided_by": "`rules`, or `judge`: the memory's LLM judge decided it.",
}

#: Every response made from a record, a record before the responses that nest it.
RESPONSES: tuple[Response, ...] = (
    Response(Thread, types=_STATUS),
    Response(ToolCall),
    Response(
        Entry,
        doc="""A stored entry (``memorybank.Entry``): ``content`` is the text; ``extra`` the
        chat message's other provider fields (and its parts, under ``content``);
        ``item`` a whole Responses item.""",
        optional=("idempotency_key", "extra", "item"),
        types={"role": "str"},
    ),
    Response(Branch, optional=("from_branch", "from_entry")),
    Response(
        WorkingRun,
        "RunOut",
        doc="A run holding working memory (``memory.working_runs()``), with its values.",
    ),
    Response(
        SavedSnapshot,
        "SnapshotOut",
        doc="A run's saved snapshot (``memory.snapshots.list()``); ``user_id`` is its owner.",
        defaults={"value": None},
    ),
    Response(Summary),
    Response(Fact, optional=("expires_at",)),
    Response(
        Event,
        doc="One change (``memorybank.events.Event``): ids; content only when asked.",
        optional=("content",),
    ),
    Response(Document),
    Response(Hit, optional=("entry", "document", "fact", "superseded")),
    Response(
        Entity,
        doc="An entity (``memorybank.graph.Entity``; ``agent_id``/``user_id`` null: shared).",
        without=("tenant_id",),
    ),
    Response(
        Relation,
        doc="A relation (``memorybank.graph.Relation``) with its four times.",
        without=("tenant_id",),
        optional=("support",),
    ),
    Response(Subgraph, doc="What a traversal reached; ``truncated``: a bound cut it."),
    Response(
        Path,
        doc="A shortest path: ``entities[0]`` the source, ``entities[-1]`` the target.",
        only=("entities", "relations", "hops", "cost"),
    ),
    Response(GraphStats, doc="Counts of what the caller can see."),
    Response(
        Context,
        doc="""What ``build_context`` chose: the messages for the model call, and why
        (``graph``: the graph block's text; ``graph_entities``/``graph_relations``
        what it shows).""",
        only=(
            *("messages", "token_count", "truncated", "included_entries", "total_entries"),
            *("entries", "facts", "semantic", "profile", "graph", "graph_entities"),
            *("graph_relations", "warnings", "errors"),
        ),
        optional=("profile", "graph", "graph_entities", "graph_relations"),
        types={"errors": "list[ErrorText]"},
    ),
    Response(CompactionResult, "CompactionOut"),
    Response(Session, types=_STATUS),
    Response(KeyInfo, "KeyOut", optional=("revoked_at",)),
    Response(
        WebhookInfo,
        "WebhookOut",
        doc="""An endpoint and its delivery state (``memorybank.webhooks.WebhookInfo``):
        ``state`` ``active`` or ``paused`` (``paused_reason`` says why), ``failures`` the
        consecutive failed deliveries, ``cursor`` the feed cursor of the last event delivered.""",
    ),
    Response(
        ConsolidationChange,
        doc="One fact a run retired in favour of another of the same owner.",
        optional=("decided_by",),
        described={
            "fact_id": "The retired fact (its last value stays in its history).",
            "into": "The fact kept; it gained a version naming the run.",
            "reason": "`duplicate` or `contradiction`.",
            "content": "The retired fact's text.",
            "into_content": "The kept fact's text.",
            "score": "Cosine similarity of a duplicate found by meaning.",
            **_CHANGE,
        },
    ),
    Response(
        EntityChange,
        doc="One graph entity a run merged into another of the same owner and type.",
        described={
            "entity_id": "The merged entity (no longer in the graph).",
            "into": "The entity kept; it gained the other's names and relations.",
            "reason": "`alias`: both named one thing.",
            "rule": "`name`, `alias`, `embedding` or `judge`.",
            "name": "The merged entity's name.",
            "into_name": "The kept entity's name.",
            "type": "The type both have.",
            "relations_moved": "Relations re-pointed to the kept entity.",
            "score": "Cosine similarity of names matched by meaning.",
            **_CHANGE,
        },
    ),
    Response(
        JudgeUsage,
        doc="What a run asked the memory's LLM judge (``memorybank.consolidation.JudgeUsage``).",
        described={
            "cases": "Cases (a fact and its candidates) the rules left undecided.",
            "asked": "Cases sent to the judge (the budget may stop it first).",
            "calls": "Requests made, retries included.",
            "failed": "Cases with no valid answer: each decided nothing.",
            "tokens": "Tokens the endpoint reported used.",
            "exhausted": "Whether the budget stopped the run asking.",
        },
    ),
    Response(
        ConsolidationReport,
        "ConsolidationOut",
        doc="A consolidation run's report (``memorybank.consolidation.ConsolidationReport``).",
        only=(
            *("run_id", "user_id", "agent_id", "dry_run", "status", "started_at"),
            *("finished_at", "undone_at", "facts_examined", "merged", "superseded"),
            *("changes", "skipped", "judge", "entities_merged", "entity_changes"),
        ),
        optional=("judge", "entity_changes"),
        defaults={"entities_merged": 0},
        types=_STATUS,
        described={
            "status": "`applying`, `applied`, `undone` or `dry_run`.",
            "judge": "What the LLM judge was asked (`null`: the memory has none).",
            "entities_merged": "Graph entities merged into another.",
            "entity_changes": "The graph entities merged, in the order applied.",
        },
    ),
    Response(
        ProfileItem,
        doc="One current fact of a profile, with its provenance and times.",
        described={
            "value": "The value a rule read from the fact, if any.",
            "source_entries": "The entries the fact came from.",
            "merged_from": "Facts consolidation merged into this one.",
            "valid_at": "When the value holds from.",
        },
    ),
    Response(
        Profile,
        doc="``memory.profile``: a user's current facts by attribute, newest first in each.",
    ),
    Response(
        EmbeddingStatus,
        doc="The tenant's embedding backlog in this server process"
        " (``memory.embedding.status()``).",
        described={
            "mode": "When vectors are computed: in the write, or after it by a worker.",
            "model_id": "The embedder's model (null: no embedder).",
            "pending": "Entries and documents stored and not embedded yet.",
            "capacity": "Texts the queue holds before a write waits (all tenants).",
            "embedded": "Vectors stored by the worker since the process started.",
            "failed": "Texts the embedder failed on (kept for the next start).",
            "resuming": "The worker is resuming work a stopped process left.",
            "last_error": "The newest failure, as `ErrorType: message`.",
        },
    ),
)
