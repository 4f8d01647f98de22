"""Plain values of the long-term helpers, shared by their sync and async forms.

The helpers themselves (context builder, compaction, sessions) are written once
under ``_async/`` and generated into ``_sync/``; the values they take and return
live here so both forms use the very same classes. The public classes
``ContextBuilder``, ``CompactionService`` and ``SessionManager`` live here too: each
is the base of its synchronous and its awaitable helper, and calling it makes the
synchronous one for a ``Memory`` and the awaitable one for an ``AsyncMemory``.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memorybank.errors import ConfigurationError, InvalidInput
from memorybank.graph.model import Entity, GraphContextOptions, Relation
from memorybank.importance import HalfLife
from memorybank.records import Entry, Fact
from memorybank.rules.validate import check_limit

__all__ = [
    "CompactionResult",
    "CompactionService",
    "Context",
    "ContextBuilder",
    "ContextError",
    "ContextOptions",
    "Session",
    "SessionManager",
    "SummarizeOptions",
]

Strategy = Literal["recent", "relevant", "hybrid"]
STRATEGIES = ("recent", "relevant", "hybrid")


@dataclass(frozen=True)
class ContextOptions:
    """How ``build_context`` spends a token budget (the Cogitator ``ContextBuilderConfig``).

    Args:
        max_tokens: the whole budget of the request.
        strategy: ``"recent"`` (the longest run of newest entries that fits),
            ``"relevant"`` (entries most similar to the current input) or
            ``"hybrid"`` (up to 30% on similar older entries, the rest recent).
        reserve_tokens: kept free for the reply; default ``max(100, floor(max_tokens * 0.1))``.
        include_system_prompt: put the system prompt first (always kept and counted).
        include_facts: add a ``Known facts:`` block (up to 10% of the budget).
        include_semantic_context: add a ``Relevant context:`` block from the top 5
            documents scoring >= 0.7 (up to 10%); needs an embedder and an input.
        include_graph_context: add knowledge-graph context (up to 15%): an
            ``Entities:`` and a ``Relationships:`` list about what the input
            names (``memory.graph``; see docs/graph.md). Needs an input.
        graph_options: a ``GraphContextOptions`` (bounds, entity types,
            inferred relations, history, ``as_of``); a dict of its fields is
            accepted too. A custom ``graph`` object receives them as keyword
            arguments of its ``context_block``.
        include_profile: add a ``User profile:`` block (up to 10%): the user's
            current facts by attribute (``memory.profile``), before the known
            facts, which then leave them out. Needs a user.
        decay: a ``memorybank.importance.HalfLife``: the known facts and the
            relevant documents are ordered by recency of use and importance too
            (``None``, the default: as without it).
    """

    max_tokens: int
    strategy: Strategy = "recent"
    reserve_tokens: int | None = None
    include_system_prompt: bool = True
    include_facts: bool = False
    include_semantic_context: bool = False
    include_graph_context: bool = False
    graph_options: GraphContextOptions | Mapping[str, Any] = field(default_factory=dict)
    include_profile: bool = False
    decay: HalfLife | None = None

    def __post_init__(self) -> None:
        if self.decay is not None and not isinstance(self.decay, HalfLife):
            raise InvalidInput("decay must be a memorybank.importance.HalfLife", field="decay")

        if not isinstance(self.graph_options, GraphContextOptions | Mapping):
            raise InvalidInput(
                "graph_options must be a GraphContextOptions (or a dict of its fields)",
                field="graph_options",
            )

        check_limit(self.max_tokens, "max_tokens", allow_none=False)
        check_limit(self.reserve_tokens, "reserve_tokens")
        if self.strategy not in STRATEGIES:
            raise InvalidInput(
                f"strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}",
                field="strategy",
            )

    @property
    def reserve(self) -> int:
        """Tokens kept free: ``reserve_tokens`` or ``max(100, floor(max_tokens * 0.1))``."""
        if self.reserve_tokens is not None:
            return self.reserve_tokens
        return max(100, math.floor(self.max_tokens * 0.1))

    @property
    def available(self) -> int:
        """What messages may take: ``max(0, max_tokens - reserve)``."""
        return max(0, self.max_tokens - self.reserve)


@dataclass(frozen=True)
class ContextError:
    """A part of the context that failed and was left out.

    ``source`` is ``"profile"``, ``"facts"``, ``"semantic"``, ``"graph"``, ``"relevance"``
    (scoring history; the strategy fell back to ``recent``) or ``"history"``.
    """

    source: str
    error: BaseException


@dataclass
class Context:
    """What ``build_context`` returns.

    ``messages`` are provider-shaped dicts, oldest first, after one system
    message holding the system prompt and the facts/semantic/graph blocks.
    ``graph`` is the graph block's text; ``graph_entities`` and
    ``graph_relations`` what it shows, in its order (``memory.graph`` only).
    ``token_count`` is their exact cost with the memory's tokenizer (stored
    counts for history entries) and never exceeds ``max_tokens -
    reserve_tokens`` unless the system prompt alone does (then ``warnings``
    says so). ``truncated`` is true when some entries of the thread were left
    out. A part that failed is left out and reported in ``errors``.
    """

    messages: list[dict[str, Any]]
    token_count: int
    truncated: bool
    included_entries: int
    total_entries: int
    entries: list[Entry] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    #: the profile block's lines (``include_profile``)
    profile: list[str] = field(default_factory=list)
    semantic: list[str] = field(default_factory=list)
    graph: str | None = None
    graph_entities: list[Entity] = field(default_factory=list)
    graph_relations: list[Relation] = field(default_factory=list)
    errors: list[ContextError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SummarizeOptions:
    """The second argument of ``summarize``: ``summary_model``/``summary_prompt`` of ``compact``."""

    model: str | None = None
    prompt: str | None = None


Summarize = Callable[[list[dict[str, Any]], SummarizeOptions], str | Awaitable[str]]


@dataclass(frozen=True)
class CompactionResult:
    """What ``compact`` did.

    ``original_messages``/``compacted_messages`` count the thread's entries
    before and after; ``summary_tokens`` is the summary entry's token count (0
    without one). ``action`` is ``"none"``, ``"sliding-window"``,
    ``"summary"`` or ``"reversible"`` (pre-rot compaction).
    """

    thread_id: str
    original_messages: int
    compacted_messages: int
    summary_tokens: int = 0
    action: str = "none"


SessionStatus = Literal["active", "paused", "archived"]


@dataclass
class Session:
    """A user's long-lived conversation with one agent on one channel: a thread with id
    ``session_<channel_type>_<channel_id>_<agent_id>_<user_id>`` (parts percent-encoded).

    ``message_count`` is the thread's entry count when the session was read;
    ``last_active_at`` is the thread's last change (a new entry or an update).
    """

    id: str
    user_id: str
    agent_id: str | None
    channel_type: str
    channel_id: str
    status: SessionStatus
    message_count: int
    config: dict[str, Any]
    metadata: dict[str, Any]
    created_at: datetime
    last_active_at: datetime


# -- the helpers' public classes: a Memory gets the sync subclass, an AsyncMemory the async one


def _helper(memory: object, name: str) -> type:
    """The class of helper ``name`` for ``memory``: the facade names it (the sync one for
    a ``Memory``, the awaitable one for an ``AsyncMemory``), so this module, below the
    facade, imports neither. ``ConfigurationError`` unless a memory."""
    helper_class = getattr(type(memory), "_helper_class", None)
    if helper_class is None:
        raise ConfigurationError("memory must be a memorybank.Memory or AsyncMemory")
    found: type = helper_class(name)
    return found


class ContextBuilder:
    """``ContextBuilder(options, memory=...)``: a reusable context builder.

    Makes a ``memorybank.context._sync.builder.ContextBuilder`` for a ``Memory`` (its
    ``build`` is synchronous) and an ``AsyncContextBuilder`` for an ``AsyncMemory``
    (awaitable ``build``); both are subclasses of this class.
    """

    def __new__(cls, options: ContextOptions, memory: Any, *, graph: Any = None) -> Any:
        if cls is not ContextBuilder:
            return object.__new__(cls)
        return object.__new__(_helper(memory, "context_builder"))


class CompactionService:
    """``CompactionService(memory=..., summarize=...)``: shrinks long threads.

    Synchronous for a ``Memory``, awaitable for an ``AsyncMemory`` (a subclass each);
    ``summarize(messages, options)`` may be sync or async either way.
    """

    def __new__(
        cls,
        *,
        memory: Any,
        summarize: Summarize | None = None,
        pre_rot_threshold: int | None = None,
        recent_to_keep: int = 10,
    ) -> Any:
        if cls is not CompactionService:
            return object.__new__(cls)
        return object.__new__(_helper(memory, "compaction_service"))


class SessionManager:
    """``SessionManager(memory, compaction=None)``: per-user, per-channel sessions.

    Synchronous for a ``Memory``, awaitable for an ``AsyncMemory`` (a subclass each).
    """

    def __new__(cls, memory: Any, compaction: Any = None) -> Any:
        if cls is not SessionManager:
            return object.__new__(cls)
        return object.__new__(_helper(memory, "session_manager"))
