"""The REST request bodies, generated from the library's verb signatures: do not
edit (``scripts/gen_models.py`` writes it from ``memorybank.surface.BODIES``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from memorybank.server.arguments import Arguments, MessageIn, Timestamp, unset

__all__ = [
    "BranchIn",
    "CheckoutIn",
    "CompactOptions",
    "ConsolidateIn",
    "ContextIn",
    "CoreFactValueIn",
    "DocumentIn",
    "EntityIn",
    "EntityPatch",
    "EntriesIn",
    "EntryOptions",
    "FactIn",
    "FactPatch",
    "FactSearchIn",
    "FeedbackIn",
    "GraphContextOptionsIn",
    "InferIn",
    "InvalidateIn",
    "MergeIn",
    "ObservationsDeleteIn",
    "ObservationsIn",
    "RelationIn",
    "RelationPatch",
    "RewindIn",
    "SearchIn",
    "SessionIn",
    "SessionPatch",
    "SnapshotIn",
    "SummaryIn",
    "ThreadIn",
    "ThreadPatch",
    "TraverseIn",
    "ValueIn",
]


class GraphContextOptionsIn(Arguments):
    """How `build_context(include_graph_context=True)` picks the graph block.

    `max_nodes`/`max_edges`/`max_depth` bound the neighbourhood read around the entities
    the input names; `entity_types` keeps only entities of these types;
    `include_inferred` adds `inferred` relations; `include_history` adds relations that
    no longer hold (with their end date); `as_of` reads the graph as it held in the
    world at that time."""

    max_nodes: int = 20
    max_edges: int = 50
    max_depth: int = 3
    include_inferred: bool = False
    entity_types: list[str] | None = None
    include_history: bool = False
    as_of: Timestamp | None = None


class ContextIn(Arguments):
    """The messages for the next model call on a thread, within a token budget: a system
    message, then the most recent history that fits.

    The arguments of `Memory.build_context` (POST /v1/threads/{thread_id}/context)."""

    max_tokens: int = Field(description="The token budget.")
    agent_id: str = Field(
        description="`agent_id` is required (a `scoped` handle's agent by default);"
    )
    user_id: str | None = Field(
        default_factory=unset,
        description=(
            "`user_id` defaults to the handle's user; on a handle with none (the trusted "
            "form, as for `history`) to the thread's owner, so the context is the one the "
            "thread's own turns see."
        ),
    )
    system_prompt: str | None = Field(default=None, description="The system prompt.")
    current_input: str | None = Field(
        default=None, description="The user's new message (guides what is included)."
    )
    strategy: Literal["recent", "relevant", "hybrid"] = "recent"
    reserve_tokens: int | None = None
    include_system_prompt: bool = True
    include_facts: bool = Field(
        default=False, description="Add the known facts to the system message."
    )
    include_semantic_context: bool = False
    include_graph_context: bool = Field(
        default=False,
        description=(
            "`include_graph_context` adds `memory.graph`'s `Entities:` and `Relationships:` "
            "about what `current_input` names, chosen with `graph_options` (a "
            "`GraphContextOptions`, or a dict of its fields)."
        ),
    )
    graph_options: GraphContextOptionsIn | None = Field(
        default=None,
        description=(
            "`include_graph_context` adds `memory.graph`'s `Entities:` and `Relationships:` "
            "about what `current_input` names, chosen with `graph_options` (a "
            "`GraphContextOptions`, or a dict of its fields)."
        ),
    )
    include_profile: bool = Field(
        default=False,
        description="Add the user's profile (`memory.profile`) as a `User profile:` block.",
    )


class SearchIn(Arguments):
    """The `k` best entries, documents and facts for `query`, best first.

    The arguments of `Memory.search` (POST /v1/search)."""

    query: str = Field(description="What to look for.")
    k: int = Field(default=10, description="How many hits.")
    mode: Literal["hybrid", "semantic", "keyword"] = Field(
        default="hybrid",
        description=(
            '`"hybrid"` (keyword + semantic + conversation context), `"semantic"` (cosine, '
            'needs an embedder) or `"keyword"` (the store\'s full-text search).'
        ),
    )
    thread_id: str | None = Field(
        default=None,
        description=(
            "`thread_id` searches one thread's current branch (no documents, no facts) under "
            "the thread rule: `ThreadForbidden` unless `user_id` is its owner."
        ),
    )
    agent_id: str | None = Field(
        default_factory=unset,
        description=(
            "Only what `agent_id` and `user_id` may see is searched: their own and shared "
            "(`None`) threads, documents and facts (left out: the handle's scope; unscoped on"
            " the root handle)."
        ),
    )
    user_id: str | None = Field(
        default_factory=unset,
        description=(
            "Only what `agent_id` and `user_id` may see is searched: their own and shared "
            "(`None`) threads, documents and facts (left out: the handle's scope; unscoped on"
            " the root handle)."
        ),
    )
    kinds: list[str] = Field(
        default=["entries", "documents"],
        description=(
            'Any of `"entries"`, `"documents"` and `"facts"` (`memory.facts`; current values '
            "only, `include_history=True` adds their earlier values as hits with "
            '`superseded=True`, and is refused with `InvalidInput` unless `"facts"` is among '
            "the kinds); every kind is ranked on one scale."
        ),
    )
    min_score: float | None = Field(
        default=None,
        description=(
            "`min_score` drops weaker hits (on the mode's scale), `filters` keeps hits whose "
            "metadata has exactly these values, `options` tunes hybrid ranking "
            "(`memorybank.recall.SearchOptions`)."
        ),
    )
    filters: dict[str, Any] | None = Field(
        default=None,
        description=(
            "`min_score` drops weaker hits (on the mode's scale), `filters` keeps hits whose "
            "metadata has exactly these values, `options` tunes hybrid ranking "
            "(`memorybank.recall.SearchOptions`)."
        ),
    )
    include_history: bool = False


class ConsolidateIn(Arguments):
    """Merge one owner's duplicate facts and supersede contradicted ones; the report.

    The arguments of `Memory.consolidate` (POST /v1/consolidate)."""

    user_id: str | None = Field(
        default_factory=unset,
        description=(
            "Whose facts (`None`: the shared facts; required on a handle not scoped to a user)."
        ),
    )
    agent_id: str | None = Field(
        default_factory=unset,
        description=(
            "Only that agent's facts (`None`: those shared by every agent; left out: every "
            "agent's, each compared only with its own)."
        ),
    )
    dry_run: bool = Field(default=False, description="Write nothing, return the same report.")


class FeedbackIn(Arguments):
    """Say whether a recalled fact was useful; the fact as it is after.

    The arguments of `Memory.feedback` (POST /v1/feedback)."""

    useful: bool = Field(
        description=(
            "Whether it helped (`True` raises the fact's confidence and importance halfway to"
            " 1, `False`, for a wrong or unhelpful fact, halves them, so it ranks lower in "
            "prompts and, with `decay`, in searches; the rule is in "
            "`memorybank.consolidation._async.feedback`)."
        )
    )
    reason: str | None = Field(default=None, description="Why, kept with a fact's feedback.")
    user_id: str | None = Field(default_factory=unset)
    agent_id: str | None = Field(default_factory=unset)


class ThreadIn(Arguments):
    """Create a thread (id generated unless given). `Conflict` if the id is taken.

    The arguments of `Threads.create` (POST /v1/threads)."""

    agent_id: str | None = Field(default_factory=unset)
    user_id: str | None = Field(default_factory=unset)
    title: str | None = None
    metadata: dict[str, Any] | None = None
    thread_id: str | None = None


class ThreadPatch(Arguments):
    """Change title, metadata (replaced whole) or status. `NotFound` if absent.

    The arguments of `Threads.update` (PATCH /v1/threads/{thread_id})."""

    title: str | None = Field(default_factory=unset)
    metadata: dict[str, Any] = Field(default_factory=unset)
    status: str = Field(default_factory=unset)


class EntryOptions(Arguments):
    """Append one message (a `Message` or provider dict) to the thread.

    The arguments of `Entries.add` (POST /v1/threads/{thread_id}/entries)."""

    token_count: int | None = Field(
        default=None,
        description=(
            "`token_count` defaults to the exact count with the configured tokenizer (message"
            " overhead included)."
        ),
    )
    idempotency_key: str | None = Field(
        default=None,
        description=(
            "A retry with the same `idempotency_key` and the same message returns the stored "
            "entry instead of adding a second one; the key reused with a different message "
            "(role, content, name, tool calls, tool call id, metadata or state) raises "
            "`Conflict` and adds nothing."
        ),
    )
    created_at: Timestamp | None = Field(
        default=None,
        description=(
            "`created_at` may be in the past (imports); order is always the order of adding."
        ),
    )
    branch: str | None = None


class EntriesIn(Arguments):
    """Append several messages in one atomic write: all are stored or none.

    The arguments of `Entries.add_many` (POST /v1/threads/{thread_id}/entries/batch)."""

    messages: list[MessageIn]
    idempotency_key: str | None = Field(
        default=None,
        description=(
            "With `idempotency_key`, a retry of the same messages returns the stored entries "
            "instead of adding them again, and a retry that differs (one message more or "
            "less, any message changed) raises `Conflict` and adds nothing."
        ),
    )
    created_at: Timestamp | None = None
    branch: str | None = None


class BranchIn(Arguments):
    """Fork the current branch into `name` (up to `from_entry`, else all of it).

    The arguments of `Branches.create` (POST /v1/threads/{thread_id}/branches)."""

    name: str
    from_entry: str | None = None


class CheckoutIn(Arguments):
    """Make `name` the thread's current branch. `NotFound` if it does not exist.

    The arguments of `Branches.checkout` (POST /v1/threads/{thread_id}/checkout)."""

    name: str = Field(description="Make `name` the thread's current branch.")


class RewindIn(Arguments):
    """Delete the entries after `entry_id` on the current branch; how many went.

    The arguments of `Branches.rewind` (POST /v1/threads/{thread_id}/rewind)."""

    entry_id: str


class SnapshotIn(Arguments):
    """Save (replace) the run's snapshot: any JSON value. `user_id` becomes its owner.

    The arguments of `Snapshots.save` (PUT /v1/snapshots/{run_id})."""

    value: Any


class ValueIn(Arguments):
    """Store a JSON value under `key`.

    The arguments of `WorkingMemory.set` (PUT /v1/runs/{run_id}/working/{key})."""

    value: Any


class SummaryIn(Arguments):
    """Store a summary. `user_id=None` shares it with every user of the agent.

    The arguments of `Summaries.add` (POST /v1/summaries)."""

    content: str
    agent_id: str = Field(
        description="`agent_id` (required) and `user_id` default to the handle's scope."
    )
    user_id: str | None = Field(
        default_factory=unset,
        description="`agent_id` (required) and `user_id` default to the handle's scope.",
    )


class FactIn(Arguments):
    """Store a fact and return it.

    The arguments of `Facts.add` (POST /v1/facts)."""

    content: str = Field(description="The fact, as one short sentence.")
    agent_id: str | None = Field(
        default_factory=unset,
        description=(
            "Owner (`user_id`) and `agent_id` default to the handle's scope, else `None` (shared)."
        ),
    )
    category: str | None = Field(
        default=None, description="A label such as `preference` or `profile`."
    )
    confidence: float | None = Field(default=None, description="How sure it is, from 0 to 1.")
    source: str | None = None
    user_id: str | None = Field(
        default_factory=unset,
        description=(
            "Owner (`user_id`) and `agent_id` default to the handle's scope, else `None` (shared)."
        ),
    )
    metadata: dict[str, Any] | None = None
    expires_at: Timestamp | None = None
    source_entries: list[str] | None = Field(
        default=None, description="Ids of the entries it came from."
    )
    fact_id: str | None = Field(
        default=None, description="`fact_id` chooses the id (default: a new one);"
    )
    importance: float | None = Field(
        default=None,
        description=(
            "From 0 to 1, how much it matters (`memory.usage`; default: derived from use and "
            "feedback, see `memorybank.importance`)."
        ),
    )


class FactPatch(Arguments):
    """Change the given fields. `NotFound` if the fact is absent (or not visible).

    The arguments of `Facts.update` (PATCH /v1/facts/{fact_id})."""

    content: str = Field(default_factory=unset)
    category: str | None = Field(default_factory=unset)
    confidence: float | None = Field(default_factory=unset)
    source: str | None = Field(default_factory=unset)
    metadata: dict[str, Any] = Field(default_factory=unset)
    expires_at: Timestamp | None = Field(default_factory=unset)
    source_entries: list[str] | None = Field(default_factory=unset)
    supersede: bool = False


class FactSearchIn(Arguments):
    """The `k` facts best matching `query`, best first, scoped like `list`.

    The arguments of `Facts.search` (POST /v1/facts/search)."""

    query: str
    agent_id: str | None = Field(default_factory=unset)
    user_id: str | None = Field(default_factory=unset)
    category: str | None = None
    k: int = 10


class EntityIn(Arguments):
    """Add an entity, or merge into the one of the same owner, type and normalised name.

    The arguments of `Graph.add_entity` (POST /v1/graph/entities)."""

    name: str
    type: str = "concept"
    agent_id: str | None = Field(default_factory=unset)
    user_id: str | None = Field(default_factory=unset)
    aliases: list[str] = Field(default=[])
    observations: list[str] = Field(default=[])
    properties: dict[str, Any] | None = None
    confidence: float = 1.0
    source: str = "user"
    provenance: list[str] = Field(
        default=[], description="`provenance` (entry ids) is recorded for the observations given."
    )


class EntityPatch(Arguments):
    """Replace the given fields; `NotFound` if absent (or not visible).

    The arguments of `Graph.update_entity` (PATCH /v1/graph/entities/{entity_id})."""

    name: str = Field(default_factory=unset)
    type: str = Field(default_factory=unset)
    aliases: list[str] = Field(default_factory=unset)
    observations: list[str] = Field(default_factory=unset)
    properties: dict[str, Any] = Field(default_factory=unset)
    confidence: float = Field(default_factory=unset)


class ObservationsIn(Arguments):
    """Add observations (short text facts) to the entity; known ones are kept once.

    The arguments of `Graph.add_observations` (POST
    /v1/graph/entities/{entity_id}/observations)."""

    observations: list[str]
    provenance: list[str] = Field(default=[])


class ObservationsDeleteIn(Arguments):
    """Remove these observations from the entity (unknown ones are ignored).

    The arguments of `Graph.delete_observations` (POST
    /v1/graph/entities/{entity_id}/observations/delete)."""

    observations: list[str]


class MergeIn(Arguments):
    """Fold `merge` into `keep`: its name and aliases become aliases, observations,
    properties (`keep`'s win) and provenance join, its relations move over; then `merge`
    is deleted. Both must have the same owner (`InvalidInput` otherwise). Merging an
    entity into itself changes nothing and returns it.

    The arguments of `Graph.merge_entities` (POST /v1/graph/entities/{entity_id}/merge)."""

    merge: str = Field(
        description=(
            "Fold `merge` into `keep`: its name and aliases become aliases, observations, "
            "properties (`keep`'s win) and provenance join, its relations move over; then "
            "`merge` is deleted."
        )
    )


class RelationIn(Arguments):
    """Add `source --type--> target`, or extend the open one already there.

    The arguments of `Graph.add_relation` (POST /v1/graph/relations)."""

    source_id: str
    type: str
    target_id: str
    agent_id: str | None = Field(default_factory=unset)
    user_id: str | None = Field(default_factory=unset)
    valid_at: Timestamp | None = Field(
        default=None,
        description=(
            "Of a functional type (`functional_types`), a new relation closes the open "
            "relation of the same owner, source and type at the new one's `valid_at` "
            "(`invalid_at` and `expired_at` set); nothing else is ever closed."
        ),
    )
    invalid_at: Timestamp | None = Field(
        default=None,
        description=(
            "Of a functional type (`functional_types`), a new relation closes the open "
            "relation of the same owner, source and type at the new one's `valid_at` "
            "(`invalid_at` and `expired_at` set); nothing else is ever closed."
        ),
    )
    weight: float = 1.0
    bidirectional: bool = False
    confidence: float = 1.0
    provenance: list[str] = Field(default=[])
    label: str | None = None
    properties: dict[str, Any] | None = None
    source: str = "user"


class RelationPatch(Arguments):
    """Change the given fields; `NotFound` if absent (or not visible). Endpoints, type and
    owner never change (add another relation instead).

    The arguments of `Graph.update_relation` (PATCH /v1/graph/relations/{relation_id})."""

    label: str | None = Field(default_factory=unset)
    weight: float = Field(default_factory=unset)
    properties: dict[str, Any] = Field(default_factory=unset)
    confidence: float = Field(default_factory=unset)
    valid_at: Timestamp | None = Field(default_factory=unset)
    bidirectional: bool = Field(default_factory=unset)


class InvalidateIn(Arguments):
    """Mark the relation as no longer holding from `at` (default: now); it stays in history
    (`include_invalid=True`). Relations inferred from it are deleted. An already invalid
    relation is returned unchanged. `NotFound` if absent.

    The arguments of `Graph.invalidate_relation` (POST
    /v1/graph/relations/{relation_id}/invalidate)."""

    at: Timestamp | None = Field(
        default=None,
        description=(
            "Mark the relation as no longer holding from `at` (default: now); it stays in "
            "history (`include_invalid=True`)."
        ),
    )


class TraverseIn(Arguments):
    """The subgraph within `max_depth` hops of `start_ids` (start first, then by hops),
    with the relations among its entities, bounded by `max_nodes` and `max_edges`
    (`truncated` says a bound cut it). Start ids the caller may not see raise
    `NotFound`.

    The arguments of `Graph.traverse` (POST /v1/graph/traverse)."""

    start_ids: list[str] | str = Field(
        description=(
            "The subgraph within `max_depth` hops of `start_ids` (start first, then by hops),"
            " with the relations among its entities, bounded by `max_nodes` and `max_edges` "
            "(`truncated` says a bound cut it)."
        )
    )
    max_depth: int = Field(
        default=3,
        description=(
            "The subgraph within `max_depth` hops of `start_ids` (start first, then by hops),"
            " with the relations among its entities, bounded by `max_nodes` and `max_edges` "
            "(`truncated` says a bound cut it)."
        ),
    )
    max_nodes: int = Field(
        default=100,
        description=(
            "The subgraph within `max_depth` hops of `start_ids` (start first, then by hops),"
            " with the relations among its entities, bounded by `max_nodes` and `max_edges` "
            "(`truncated` says a bound cut it)."
        ),
    )
    max_edges: int = Field(
        default=500,
        description=(
            "The subgraph within `max_depth` hops of `start_ids` (start first, then by hops),"
            " with the relations among its entities, bounded by `max_nodes` and `max_edges` "
            "(`truncated` says a bound cut it)."
        ),
    )
    agent_id: str | None = Field(default_factory=unset)
    user_id: str | None = Field(default_factory=unset)
    direction: Literal["out", "in", "both"] = "both"
    types: list[str] | str | None = None
    entity_types: list[str] | str | None = None
    min_weight: float | None = None
    min_confidence: float | None = None
    as_of: Timestamp | None = None
    include_invalid: bool = False
    include_inferred: bool = False


class InferIn(Arguments):
    """Materialise `inferred` relations from the valid relations the caller sees; the new
    ones, oldest first. Rules (`RULES`, default all):

    The arguments of `Graph.infer` (POST /v1/graph/infer)."""

    rules: list[str] | None = None
    agent_id: str | None = Field(default_factory=unset)
    user_id: str | None = Field(default_factory=unset)


class DocumentIn(Arguments):
    """Store a document; embed it when an embedder is configured.

    The arguments of `Documents.add` (POST /v1/documents)."""

    content: str
    metadata: dict[str, Any] | None = None
    agent_id: str | None = Field(default_factory=unset)
    user_id: str | None = Field(default_factory=unset)
    embedding: list[float] | None = Field(
        default=None,
        description=(
            "`embedding` stores a vector you computed with the *same* model as the configured"
            " embedder (checked against its dimensions) instead of calling it."
        ),
    )
    importance: float | None = Field(
        default=None,
        description=(
            "From 0 to 1, how much it matters (`memory.usage`; default: derived from use and "
            "feedback, see `memorybank.importance`)."
        ),
    )


class CoreFactValueIn(Arguments):
    """Set `key` to `value` and append it to the key's history, atomically.

    The arguments of `CoreFacts.set` (PUT /v1/core-facts/{key})."""

    value: str


class SessionIn(Arguments):
    """The session of `user_id` with `agent_id` on this channel: created, or reactivated
    when archived. `user_id` and `agent_id` are required (a `scoped` memory's by
    default).

    The arguments of `SessionManager.get_or_create` (POST /v1/sessions)."""

    channel_type: str
    channel_id: str
    user_id: str = Field(
        default_factory=unset,
        description=(
            "The session of `user_id` with `agent_id` on this channel: created, or "
            "reactivated when archived."
        ),
    )
    agent_id: str = Field(
        description=(
            "The session of `user_id` with `agent_id` on this channel: created, or "
            "reactivated when archived."
        )
    )


class SessionPatch(Arguments):
    """Change status, config overrides (replaced whole) or metadata (merged).

    The arguments of `SessionManager.update` (PATCH /v1/sessions/{session_id})."""

    status: Literal["active", "paused", "archived"] | None = None
    config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = Field(
        default=None,
        description=(
            "Internal keys in `metadata` (status, message count, channel, ...) are ignored: "
            "they change only through this manager."
        ),
    )


class CompactOptions(Arguments):
    """Compact `thread_id` if it reached `threshold` tokens (or `message_threshold`).

    The arguments of `CompactionService.compact` (POST /v1/threads/{thread_id}/compact)."""

    strategy: Literal["summary", "sliding-window", "hybrid"] = "summary"
    threshold: int
    keep_recent: int = Field(
        description=(
            "Keeps the `keep_recent` newest entries (more if the cut would separate a tool "
            "result from its call)."
        )
    )
    message_threshold: int | None = None
