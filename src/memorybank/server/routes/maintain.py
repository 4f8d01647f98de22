"""Memory that maintains itself: ``POST /v1/consolidate``, the consolidation runs, feedback
and a user's profile (``GET /v1/users/{user_id}/profile``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from memorybank.server.deps import MemoryDep
from memorybank.server.models import FactOut, Page
from memorybank.server.models_generated import ConsolidateIn, FeedbackIn
from memorybank.server.pagination import AgentQuery, PageDep, opt
from memorybank.server.responses_generated import ConsolidationOut, ProfileOut

__all__ = ["FeedbackBody", "router"]


class FeedbackBody(FeedbackIn):
    """``memory.feedback``'s arguments; the fact is named by its id."""

    fact_id: str = Field(description="The fact the feedback is about (a hit's `fact.id`).")

    def arguments(self) -> dict[str, Any]:
        """The library call's keyword arguments (``fact_id`` is passed on its own)."""
        values = super().arguments()
        values.pop("fact_id", None)
        return values


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
    async def consolidation_runs(page: PageDep, memory: MemoryDep) -> Page[ConsolidationOut]:
        """The runs the caller may see, each without its list of changes."""
        fetch, out = memory.consolidation.runs, ConsolidationOut.model_validate
        return await page.first_n(lambda n: fetch(limit=n), out)

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
