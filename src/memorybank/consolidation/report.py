"""What a consolidation run returns and keeps: its report and each change (I/O-free)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any, Literal, TypeVar

from memorybank.core.judge import JudgeUsage

__all__ = [
    "ConsolidationChange",
    "ConsolidationReport",
    "EntityChange",
    "JudgeUsage",
    "RunStatus",
]

#: ``"applying"`` while a run writes (or after it was interrupted), ``"applied"`` once
#: done, ``"undone"`` after ``undo``; ``"dry_run"`` for a report nothing was written for.
RunStatus = Literal["applying", "applied", "undone", "dry_run"]

_Change = TypeVar("_Change", "ConsolidationChange", "EntityChange")


def change_from(cls: type[_Change], data: dict[str, Any], **defaults: Any) -> _Change:
    """The change a stored ``to_dict`` tells; keys an older one lacks take ``defaults``."""
    told = {f.name: data[f.name] for f in fields(cls) if f.name in data}
    return cls(**{**defaults, **told})


@dataclass(frozen=True, slots=True)
class ConsolidationChange:
    """One fact retired by a run in favour of another of the same owner.

    Attributes:
        fact_id: the retired fact: no longer returned, its last value kept in
            ``facts.history(fact_id)`` with ``metadata["superseded_by"]``.
        into: the fact that stays; it gains a version whose metadata names the run
            (``consolidation_run``) and the retired fact (``merged_from`` for a
            duplicate, whose provenance it gains; ``supersedes`` for a contradiction).
        reason: ``"duplicate"`` or ``"contradiction"``.
        why: the rule that decided it, in words (scores included).
        content: the retired fact's text; ``into_content``: the kept fact's.
        score: the cosine similarity of a duplicate found by embedding, else ``None``.
        decided_by: ``"rules"`` (``memorybank.consolidation.rules``) or ``"judge"``
            (the memory's LLM judge, ``memorybank.core.judge``).
    """

    fact_id: str
    into: str
    reason: str
    why: str
    content: str
    into_content: str
    score: float | None = None
    decided_by: str = "rules"

    def to_dict(self) -> dict[str, Any]:
        """The change as JSON-ready values (every field, all plain)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class EntityChange:
    """One graph entity merged by a run into another of the same owner and type.

    Attributes:
        entity_id: the merged entity: no longer returned by the graph; its name and
            aliases are the kept entity's aliases now, its relations point at the kept
            entity, and its last value stays in the run (``undo`` restores it).
        into: the entity that stays (``memory.graph.merge_entities(into, entity_id)``).
        reason: always ``"alias"`` (the two name one thing).
        rule: ``"name"``, ``"alias"``, ``"embedding"`` or ``"judge"``
            (``memorybank.consolidation.entity_rules``).
        why: the rule that decided it, in words (scores included).
        name: the merged entity's name; ``into_name``: the kept one's.
        type: the type both have.
        relations_moved: the relations re-pointed from the merged entity to the kept one.
        score: the cosine similarity of an embedding match, else ``None``.
        decided_by: ``"rules"`` or ``"judge"``.
    """

    entity_id: str
    into: str
    reason: str
    rule: str
    why: str
    name: str
    into_name: str
    type: str
    relations_moved: int = 0
    score: float | None = None
    decided_by: str = "rules"

    def to_dict(self) -> dict[str, Any]:
        """The change as JSON-ready values (every field, all plain)."""
        return asdict(self)


@dataclass(slots=True)
class ConsolidationReport:
    """What a run changed (or, for a dry run, would change), and why.

    ``run_id`` names the run for ``memory.consolidation.report`` and ``undo`` (a dry
    run's id is kept nowhere). ``changes`` are in the order they were applied;
    ``skipped`` lists the planned changes a concurrent write made moot (a fact
    changed or went while the run worked: the run left both facts alone).
    ``judge``: what the memory's LLM judge was asked (``None``: no judge); the
    changes it decided have ``decided_by == "judge"``.
    """

    run_id: str
    user_id: str | None
    agent_id: str | None
    dry_run: bool
    status: RunStatus
    started_at: datetime
    finished_at: datetime | None = None
    facts_examined: int = 0
    changes: list[ConsolidationChange] = field(default_factory=list)
    skipped: list[ConsolidationChange] = field(default_factory=list)
    undone_at: datetime | None = None
    judge: JudgeUsage | None = None
    entity_changes: list[EntityChange] = field(default_factory=list)

    @property
    def entities_merged(self) -> int:
        """How many graph entities were merged into another."""
        return len(self.entity_changes)

    @property
    def merged(self) -> int:
        """How many duplicates were merged into another fact."""
        return sum(1 for c in self.changes if c.reason == "duplicate")

    @property
    def superseded(self) -> int:
        """How many contradicted facts were superseded by a later value."""
        return sum(1 for c in self.changes if c.reason == "contradiction")

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values (what the service returns)."""
        return {
            "run_id": self.run_id,
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "dry_run": self.dry_run,
            "status": self.status,
            "started_at": self.started_at.isoformat(),
            "finished_at": None if self.finished_at is None else self.finished_at.isoformat(),
            "undone_at": None if self.undone_at is None else self.undone_at.isoformat(),
            "facts_examined": self.facts_examined,
            "merged": self.merged,
            "superseded": self.superseded,
            "changes": [c.to_dict() for c in self.changes],
            "skipped": [c.to_dict() for c in self.skipped],
            "judge": None if self.judge is None else self.judge.to_dict(),
            "entities_merged": self.entities_merged,
            "entity_changes": [c.to_dict() for c in self.entity_changes],
        }
