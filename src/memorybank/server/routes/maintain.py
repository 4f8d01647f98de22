"""Memory that maintains itself: ``POST /v1/consolidate``, the consolidation runs, feedback
and a user's profile (``GET /v1/users/{user_id}/profile``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from memorybank.server.deps import MemoryDep
from memorybank.server.models import FactOut, Page
from memorybank.server.models_generated import ConsolidateIn, FeedbackIn
from memorybank.server.pagination import (
    DEFAULT_LIMIT,
    AgentQuery,
    CursorQuery,
    LimitQuery,
    first_n_page,
    opt,
)

_ATTRS = ConfigDict(from_attributes=True)

__all__ = [
    "ConsolidationChangeOut",
    "ConsolidationOut",
    "EntityChangeOut",
    "FeedbackBody",
    "ProfileItemOut",
    "ProfileOut",
    "router",
]


class FeedbackBody(FeedbackIn):
    """``memory.feedback``'s arguments; the fact is named by its id."""

    fact_id: str = Field(description="The fact the feedback is about (a hit's `fact.id`).")

    def arguments(self) -> dict[str, Any]:
        """The library call's keyword arguments (``fact_id`` is passed on its own)."""
        values = super().arguments()
        values.pop("fact_id", None)
        return values


class ConsolidationChangeOut(BaseModel):
    """One fact a run retired in favour of another of the same owner."""

    model_config = _ATTRS

    fact_id: str = Field(description="The retired fact (its last value stays in its history).")
    into: str = Field(description="The fact kept; it gained a version naming the run.")
    reason: str = Field(description="`duplicate` or `contradiction`.")
    why: str = Field(description="The rule that decided it, in words.")
    content: str = Field(description="The retired fact's text.")
    into_content: str = Field(description="The kept fact's text.")
    score: float | None = Field(description="Cosine similarity of a duplicate found by meaning.")
    decided_by: str = Field(
        default="rules",
        description="`rules`, or `judge`: the memory's LLM judge decided it.",
    )


class EntityChangeOut(BaseModel):
    """One graph entity a run merged into another of the same owner and type."""

    model_config = _ATTRS

    entity_id: str = Field(description="The merged entity (no longer in the graph).")
    into: str = Field(description="The entity kept; it gained the other's names and relations.")
    reason: str = Field(description="`alias`: both named one thing.")
    rule: str = Field(description="`name`, `alias`, `embedding` or `judge`.")
    why: str = Field(description="The rule that decided it, in words.")
    name: str = Field(description="The merged entity's name.")
    into_name: str = Field(description="The kept entity's name.")
    type: str = Field(description="The type both have.")
    relations_moved: int = Field(description="Relations re-pointed to the kept entity.")
    score: float | None = Field(description="Cosine similarity of names matched by meaning.")
    decided_by: str = Field(description="`rules`, or `judge`: the memory's LLM judge decided it.")


class JudgeUsageOut(BaseModel):
    """What a run asked the memory's LLM judge (``memorybank.consolidation.JudgeUsage``)."""

    model_config = _ATTRS

    model: str
    cases: int = Field(description="Cases (a fact and its candidates) the rules left undecided.")
    asked: int = Field(description="Cases sent to the judge (the budget may stop it first).")
    calls: int = Field(description="Requests made, retries included.")
    failed: int = Field(description="Cases with no valid answer: each decided nothing.")
    tokens: int = Field(description="Tokens the endpoint reported used.")
    exhausted: bool = Field(description="Whether the budget stopped the run asking.")


class ConsolidationOut(BaseModel):
    """A consolidation run's report (``memorybank.consolidation.ConsolidationReport``)."""

    model_config = _ATTRS
    run_id: str
    user_id: str | None
    agent_id: str | None
    dry_run: bool
    status: str = Field(description="`applying`, `applied`, `undone` or `dry_run`.")
    started_at: datetime
    finished_at: datetime | None
    undone_at: datetime | None
    facts_examined: int
    merged: int
    superseded: int
    changes: list[ConsolidationChangeOut]
    skipped: list[ConsolidationChangeOut]
    judge: JudgeUsageOut | None = Field(
        default=None, description="What the LLM judge was asked (`null`: the memory has none)."
    )
    entities_merged: int = Field(default=0, description="Graph entities merged into another.")
    entity_changes: list[EntityChangeOut] = Field(
        default_factory=list, description="The graph entities merged, in the order applied."
    )


class ProfileItemOut(BaseModel):
    """One current fact of a profile, with its provenance and times."""

    model_config = _ATTRS

    fact_id: str
    content: str
    value: str | None = Field(description="The value a rule read from the fact, if any.")
    source_entries: list[str] = Field(description="The entries the fact came from.")
    merged_from: list[str] = Field(description="Facts consolidation merged into this one.")
    valid_at: datetime = Field(description="When the value holds from.")
    created_at: datetime
    updated_at: datetime
    confidence: float | None
    version: int


class ProfileOut(BaseModel):
    """``memory.profile``: a user's current facts by attribute, newest first in each."""

    model_config = _ATTRS
    user_id: str
    attributes: dict[str, list[ProfileItemOut]]


def router() -> APIRouter:
    """The routes of this module."""
    api = APIRouter(prefix="/v1")

    @api.post("/consolidate", tags=["facts"], summary="Consolidate one owner's facts")
    async def consolidate(body: ConsolidateIn, memory: MemoryDep) -> ConsolidationOut:
        """``memory.consolidate``: duplicates merged, contradicted values superseded, for
        the caller's user (``X-User-Id``, or ``user_id``; ``null``: the shared facts).
        ``dry_run: true`` writes nothing and answers the same report."""
        return ConsolidationOut.model_validate(await memory.consolidate(**body.arguments()))

    @api.post("/feedback", tags=["facts"], summary="Say whether a recalled fact was useful")
    async def feedback(body: FeedbackBody, memory: MemoryDep) -> FactOut:
        """``memory.feedback``: `useful: false` halves the fact's confidence (it was wrong or
        unhelpful), `true` raises it halfway to 1; 404 for a fact the caller may not see."""
        return FactOut.model_validate(await memory.feedback(body.fact_id, **body.arguments()))

    @api.get("/users/{user_id}/profile", tags=["facts"], summary="A user's profile")
    async def profile(user_id: str, memory: MemoryDep, agent_id: AgentQuery = None) -> ProfileOut:
        """``memory.profile``: the user's current facts grouped by attribute (name,
        preferences, plans, ...), each with its provenance and time. A key scoped to
        another user is refused (400, `invalid_input`)."""
        return ProfileOut.model_validate(await memory.profile(user_id, agent_id=opt(agent_id)))

    @api.get("/consolidation/runs", tags=["facts"], summary="Consolidation runs, newest first")
    async def consolidation_runs(
        memory: MemoryDep, limit: LimitQuery = DEFAULT_LIMIT, cursor: CursorQuery = None
    ) -> Page[ConsolidationOut]:
        """The runs the caller may see, each without its list of changes."""

        fetch, out = memory.consolidation.runs, ConsolidationOut.model_validate
        return await first_n_page(lambda n: fetch(limit=n), limit, cursor, out)

    @api.get("/consolidation/runs/{run_id}", tags=["facts"], summary="What a consolidation run did")
    async def consolidation_report(run_id: str, memory: MemoryDep) -> ConsolidationOut:
        """Every change of the run the caller may see, and why; 404 for a run it may not."""
        return ConsolidationOut.model_validate(await memory.consolidation.report(run_id))

    @api.post(
        "/consolidation/runs/{run_id}/undo",
        tags=["facts"],
        summary="Restore the facts a run changed",
    )
    async def consolidation_undo(run_id: str, memory: MemoryDep) -> ConsolidationOut:
        """Exactly the state before the run; 409 when one of its facts changed since."""
        return ConsolidationOut.model_validate(await memory.consolidation.undo(run_id))

    return api
