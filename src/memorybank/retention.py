"""Retention policies: how much conversation history and long-term memory a tenant keeps
(I/O-free types).

Applied by ``memory.prune(policy)`` (``Memory`` and ``AsyncMemory``) and by
``memorybank prune``. A policy belongs to one tenant: the handle's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memorybank.errors import InvalidInput
from memorybank.importance import check_importance
from memorybank.records import Entry
from memorybank.rules.window import drop_orphan_tool_results

__all__ = ["PruneReport", "RetentionPolicy", "doomed_entries"]


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """What a prune removes; ``None`` turns a rule off.

    Attributes:
        max_age: entries whose ``created_at`` is older than this go: the leading
            run of old entries of every branch (entries are ordered by
            position, and an imported entry may carry an older time than its
            predecessor, so pruning stops at the first entry young enough).
        max_entries_per_thread: every branch keeps at most its newest N entries.
        idle_ttl: threads not updated for this long go whole (entries, branches).
        min_importance: long-term memory (facts, documents) whose importance
            (``memorybank.importance``) is below this goes.
        unused_for: long-term memory not used by a search (never used: not
            written) for this long goes.

    Pruning never breaks tool-call pairing: a tool result whose calling
    assistant entry is pruned goes with it, so a branch may keep fewer than
    ``max_entries_per_thread`` entries. The conversation rules keep facts,
    documents and summaries (long-term memory; ``forget_user`` erases them).
    The long-term rules (``min_importance``, ``unused_for``) remove a fact (with its
    history and links) or a document when *every* one of them given holds: with
    both, what is unimportant and unused; with one, what that rule names. Core
    facts, graph entities and summaries are never pruned.
    """

    max_age: timedelta | None = None
    max_entries_per_thread: int | None = None
    idle_ttl: timedelta | None = None
    min_importance: float | None = None
    unused_for: timedelta | None = None

    def __post_init__(self) -> None:
        for name in ("max_age", "idle_ttl", "unused_for"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, timedelta) or value <= timedelta(0)):
                raise InvalidInput(f"{name} must be a positive timedelta or None", field=name)
        n = self.max_entries_per_thread
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise InvalidInput(
                "max_entries_per_thread must be an int >= 0 or None",
                field="max_entries_per_thread",
            )
        if self.min_importance is not None:
            check_importance(self.min_importance, "min_importance")

    @property
    def long_term(self) -> bool:
        """Whether the policy has a long-term rule (facts and documents)."""
        return self.min_importance is not None or self.unused_for is not None

    def doomed(self, importance: float, last_used: datetime, now: datetime) -> bool:
        """Whether a long-term item of this ``importance``, last used (or written) at
        ``last_used``, goes: every long-term rule given holds (``False`` without one)."""
        if not self.long_term:
            return False
        if self.min_importance is not None and importance >= self.min_importance:
            return False
        return self.unused_for is None or last_used < now - self.unused_for


@dataclass(slots=True)
class PruneReport:
    """What a prune removed (or, with ``dry_run``, would remove)."""

    dry_run: bool
    threads_deleted: int = 0
    entries_deleted: int = 0
    threads_examined: int = 0
    #: thread id -> entries removed from it (threads deleted whole are not listed)
    per_thread: dict[str, int] = field(default_factory=dict)
    facts_deleted: int = 0
    documents_deleted: int = 0
    #: the facts and documents the long-term rules removed (or would), as
    #: ``(kind, id, importance, last used or written)``, oldest first per kind
    long_term: list[tuple[str, str, float, datetime]] = field(default_factory=list)


def doomed_entries(
    entries: Sequence[Entry], policy: RetentionPolicy, cutoff: datetime | None
) -> list[str]:
    """Ids of a branch's entries (oldest first) that ``policy`` removes, pairing kept.

    The removed part is a prefix; tool results after it whose call it held go
    too (``drop_orphan_tool_results`` names them), so no kept result lacks its call.
    """
    cut = 0
    if policy.max_entries_per_thread is not None:
        cut = max(cut, len(entries) - policy.max_entries_per_thread)
    if cutoff is not None:
        old = 0
        while old < len(entries) and entries[old].created_at < cutoff:
            old += 1
        cut = max(cut, old)
    if cut <= 0:
        return []
    cut_calls = {call.id for entry in entries[:cut] for call in entry.tool_calls}
    kept = entries[cut:]
    paired = {entry.id for entry in drop_orphan_tool_results(kept)}
    # only the results orphaned by this prune: older orphans are not the policy's business
    orphaned = [e.id for e in kept if e.id not in paired and e.tool_call_id in cut_calls]
    return [entry.id for entry in entries[:cut]] + orphaned
