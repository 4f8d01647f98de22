"""Working memory, snapshots, summaries, facts, core facts, documents, search,
sessions and forget-user: the rest of ``/v1``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response

from memorybank.context._async.sessions import AsyncSessionManager
from memorybank.errors import ConfigurationError, InvalidInput, NotFound
from memorybank.memory._async.core_facts import AsyncCoreFacts
from memorybank.server.deps import MemoryDep
from memorybank.server.models import (
    CoreFactOut,
    CoreFactValueIn,
    CoreFactVersion,
    Count,
    DocumentIn,
    DocumentOut,
    FactIn,
    FactOut,
    FactPatch,
    FactSearchIn,
    HitOut,
    Page,
    RunOut,
    SearchIn,
    SessionIn,
    SessionOut,
    SessionPatch,
    SnapshotIn,
    SnapshotOut,
    SummaryIn,
    SummaryOut,
    ValueIn,
    ValueOut,
)
from memorybank.server.pagination import AgentQuery, OwnerDep, PageDep, UserQuery, opt
from memorybank.server.routes import NO_CONTENT, deleted, found

__all__ = ["router"]

_ABSENT = object()


def router() -> APIRouter:
    """The routes of this module."""
    api = APIRouter(prefix="/v1")

    # -- working memory -------------------------------------------------------------

    @api.get("/runs", tags=["working memory"], summary="Runs holding working memory, by id")
    async def working_runs(page: PageDep, memory: MemoryDep) -> Page[RunOut]:
        """``memory.working_runs()``: with ``X-User-Id`` the runs opened for that user,
        without it every run of the tenant; each with its values."""
        fetch = memory.working_runs
        return await page.first_n(lambda n: fetch(limit=n), RunOut.model_validate)

    @api.get("/runs/{run_id}/working", tags=["working memory"], summary="Every key of a run")
    async def working_items(run_id: str, page: PageDep, memory: MemoryDep) -> Page[ValueOut]:
        async def fetch(n: int | None) -> list[tuple[str, Any]]:
            return list((await memory.working(run_id).items()).items())

        return await page.first_n(fetch, lambda i: ValueOut(key=i[0], value=i[1]))

    @api.delete(
        "/runs/{run_id}/working", status_code=204, tags=["working memory"], summary="Clear a run"
    )
    async def working_clear(run_id: str, memory: MemoryDep) -> Response:
        await memory.working(run_id).clear()
        return NO_CONTENT

    @api.get("/runs/{run_id}/working/{key}", tags=["working memory"], summary="Get a value")
    async def working_get(run_id: str, key: str, memory: MemoryDep) -> ValueOut:
        value = await memory.working(run_id).get(key, _ABSENT)
        if value is _ABSENT:
            raise NotFound(f"key {key!r} not found")
        return ValueOut(key=key, value=value)

    @api.put(
        "/runs/{run_id}/working/{key}", status_code=204, tags=["working memory"], summary="Set"
    )
    async def working_set(run_id: str, key: str, body: ValueIn, memory: MemoryDep) -> Response:
        await memory.working(run_id).set(key, **body.arguments())
        return NO_CONTENT

    @api.delete(
        "/runs/{run_id}/working/{key}", status_code=204, tags=["working memory"], summary="Delete"
    )
    async def working_delete(run_id: str, key: str, memory: MemoryDep) -> Response:
        return deleted(await memory.working(run_id).delete(key), f"key {key!r}")

    # -- snapshots -------------------------------------------------------------------

    @api.get("/snapshots", tags=["snapshots"], summary="Saved snapshots the caller may load")
    async def snapshot_list(
        page: PageDep, memory: MemoryDep, user_id: UserQuery = None
    ) -> Page[SnapshotOut]:
        """``memory.snapshots.list()``, in run id order: a user (``X-User-Id`` or
        ``user_id``) sees her own and unowned snapshots, the tenant every one."""
        fetch = memory.snapshots.list
        return await page.first_n(
            lambda n: fetch(user_id=opt(user_id), limit=n), SnapshotOut.model_validate
        )

    @api.put("/snapshots/{run_id}", status_code=204, tags=["snapshots"], summary="Save")
    async def snapshot_save(run_id: str, body: SnapshotIn, memory: MemoryDep) -> Response:
        await memory.snapshots.save(run_id, **body.arguments())
        return NO_CONTENT

    @api.get("/snapshots/{run_id}", tags=["snapshots"], summary="Load (404 when none)")
    async def snapshot_load(run_id: str, memory: MemoryDep) -> ValueOut:
        value = found(await memory.snapshots.load(run_id), f"snapshot {run_id!r}")
        return ValueOut(key=run_id, value=value)

    @api.delete("/snapshots/{run_id}", status_code=204, tags=["snapshots"], summary="Delete")
    async def snapshot_delete(run_id: str, memory: MemoryDep) -> Response:
        return deleted(await memory.snapshots.delete(run_id), f"snapshot {run_id!r}")

    # -- summaries ----------------------------------------------------------------------

    @api.post("/summaries", status_code=201, tags=["summaries"], summary="Store a summary")
    async def summary_add(body: SummaryIn, memory: MemoryDep) -> SummaryOut:
        return SummaryOut.model_validate(await memory.summaries.add(**body.arguments()))

    @api.get("/summaries", tags=["summaries"], summary="An agent's summaries, oldest first")
    async def summary_list(
        page: PageDep,
        memory: MemoryDep,
        agent_id: Annotated[str, Query(description="The agent whose summaries to list.")],
        user_id: UserQuery = None,
    ) -> Page[SummaryOut]:
        """``memory.summaries.list()``: the summaries of ``agent_id`` (required, as when
        adding one: a request has no agent of its own)."""
        fetch = memory.summaries.list
        return await page.first_n(
            lambda n: fetch(agent_id=agent_id, user_id=opt(user_id)), SummaryOut.model_validate
        )

    # -- facts ---------------------------------------------------------------------------

    @api.post("/facts", status_code=201, tags=["facts"], summary="Store a fact")
    async def fact_add(body: FactIn, memory: MemoryDep) -> FactOut:
        return FactOut.model_validate(await memory.facts.add(**body.arguments()))

    @api.get("/facts", tags=["facts"], summary="Facts visible to the caller, oldest first")
    async def fact_list(
        page: PageDep,
        memory: MemoryDep,
        owner: OwnerDep,
        category: str | None = None,
        include_expired: bool = False,
    ) -> Page[FactOut]:
        fetch = memory.facts.list
        return await page.first_n(
            lambda n: fetch(**owner, category=category, include_expired=include_expired),
            FactOut.model_validate,
        )

    @api.post("/facts/search", tags=["facts"], summary="Facts best matching a query")
    async def fact_search(body: FactSearchIn, memory: MemoryDep) -> Page[FactOut]:
        """The best ``k``, best first: a ranking, whole on one page (``next_cursor`` null)."""
        found = await memory.facts.search(**body.arguments())
        return Page[FactOut](items=[FactOut.model_validate(f) for f in found])

    @api.get("/facts/{fact_id}", tags=["facts"], summary="Get a fact")
    async def fact_get(fact_id: str, memory: MemoryDep, agent_id: AgentQuery = None) -> FactOut:
        fact = await memory.facts.get(fact_id, agent_id=opt(agent_id))
        return FactOut.model_validate(found(fact, f"fact {fact_id!r}"))

    @api.patch("/facts/{fact_id}", tags=["facts"], summary="Change (or supersede) a fact")
    async def fact_update(
        fact_id: str, body: FactPatch, memory: MemoryDep, agent_id: AgentQuery = None
    ) -> FactOut:
        fact = await memory.facts.update(fact_id, agent_id=opt(agent_id), **body.arguments())
        return FactOut.model_validate(fact)

    @api.get("/facts/{fact_id}/history", tags=["facts"], summary="Every value, oldest first")
    async def fact_history(
        fact_id: str, page: PageDep, memory: MemoryDep, agent_id: AgentQuery = None
    ) -> Page[FactOut]:
        fetch = memory.facts.history
        return await page.first_n(
            lambda n: fetch(fact_id, agent_id=opt(agent_id)), FactOut.model_validate
        )

    @api.delete("/facts/{fact_id}", status_code=204, tags=["facts"], summary="Delete a fact")
    async def fact_delete(fact_id: str, memory: MemoryDep, agent_id: AgentQuery = None) -> Response:
        done = await memory.facts.delete(fact_id, agent_id=opt(agent_id))
        return deleted(done, f"fact {fact_id!r}")

    # -- core facts --------------------------------------------------------------------

    @api.get("/core-facts", tags=["core facts"], summary="Every current key, sorted")
    async def core_all(page: PageDep, memory: MemoryDep) -> Page[CoreFactOut]:
        async def fetch(n: int | None) -> list[tuple[str, str]]:
            return list((await AsyncCoreFacts(memory=memory).all()).items())

        return await page.first_n(fetch, lambda i: CoreFactOut(key=i[0], value=i[1]))

    @api.get("/core-facts/{key}", tags=["core facts"], summary="Current value")
    async def core_get(key: str, memory: MemoryDep) -> CoreFactOut:
        value = await AsyncCoreFacts(memory=memory).get(key)
        return CoreFactOut(key=key, value=found(value, f"core fact {key!r}"))

    @api.put("/core-facts/{key}", tags=["core facts"], summary="Set a value (kept in history)")
    async def core_set(key: str, body: CoreFactValueIn, memory: MemoryDep) -> CoreFactOut:
        await AsyncCoreFacts(memory=memory).set(key, **body.arguments())
        return CoreFactOut(key=key, value=body.value)

    @api.delete("/core-facts/{key}", status_code=204, tags=["core facts"], summary="Forget")
    async def core_delete(key: str, memory: MemoryDep) -> Response:
        return deleted(await AsyncCoreFacts(memory=memory).delete(key), f"core fact {key!r}")

    @api.get("/core-facts/{key}/history", tags=["core facts"], summary="Every value set")
    async def core_history(key: str, page: PageDep, memory: MemoryDep) -> Page[CoreFactVersion]:
        fetch = AsyncCoreFacts(memory=memory).history
        return await page.first_n(
            lambda n: fetch(key), lambda v: CoreFactVersion(value=v[0], set_at=v[1])
        )

    # -- documents and search -------------------------------------------------------------

    @api.post("/documents", status_code=201, tags=["documents"], summary="Store a document")
    async def document_add(body: DocumentIn, memory: MemoryDep) -> DocumentOut:
        return DocumentOut.model_validate(await memory.documents.add(**body.arguments()))

    @api.get("/documents", tags=["documents"], summary="Documents visible to the caller")
    async def document_list(page: PageDep, memory: MemoryDep, owner: OwnerDep) -> Page[DocumentOut]:
        fetch = memory.documents.list
        return await page.first_n(lambda n: fetch(**owner, limit=n), DocumentOut.model_validate)

    @api.get("/documents/{document_id}", tags=["documents"], summary="Get a document")
    async def document_get(
        document_id: str, memory: MemoryDep, agent_id: AgentQuery = None
    ) -> DocumentOut:
        document = await memory.documents.get(document_id, agent_id=opt(agent_id))
        return DocumentOut.model_validate(found(document, f"document {document_id!r}"))

    @api.delete("/documents/{document_id}", status_code=204, tags=["documents"], summary="Delete")
    async def document_delete(
        document_id: str, memory: MemoryDep, agent_id: AgentQuery = None
    ) -> Response:
        done = await memory.documents.delete(document_id, agent_id=opt(agent_id))
        return deleted(done, f"document {document_id!r}")

    @api.post("/search", tags=["search"], summary="Best entries, documents and facts for a query")
    async def search(body: SearchIn, memory: MemoryDep) -> Page[HitOut]:
        """The best ``k``, best first: a ranking, whole on one page (``next_cursor`` null).
        ``mode="semantic"`` needs the server to have an embedder (else 422, field ``mode``)."""
        try:
            hits = await memory.search(**body.arguments())
        except ConfigurationError as error:  # the request asked for what this server lacks
            raise InvalidInput(str(error), field="mode") from None
        return Page[HitOut](items=[HitOut.model_validate(h) for h in hits])

    # -- sessions ------------------------------------------------------------------------

    @api.post("/sessions", tags=["sessions"], summary="The session of a user on a channel")
    async def session_open(body: SessionIn, memory: MemoryDep) -> SessionOut:
        """A session belongs to a user: the ``X-User-Id`` header's, or the body's
        ``user_id`` on a tenant-wide request (neither: 422 naming both)."""
        if "user_id" not in body.model_fields_set and not isinstance(memory.scope.user_id, str):
            raise InvalidInput(
                "a session belongs to a user: send the X-User-Id header (or user_id in the body)",
                field="user_id",
            )
        session = await AsyncSessionManager(memory).get_or_create(**body.arguments())
        return SessionOut.model_validate(session)

    @api.get("/sessions", tags=["sessions"], summary="Sessions, most recently active first")
    async def session_list(
        page: PageDep,
        memory: MemoryDep,
        owner: OwnerDep,
        status: Literal["active", "paused", "archived"] | None = None,
        channel_type: str | None = None,
    ) -> Page[SessionOut]:
        fetch = AsyncSessionManager(memory).list
        return await page.first_n(
            lambda n: fetch(status=status, limit=n, **owner, channel_type=channel_type),
            SessionOut.model_validate,
        )

    @api.get("/sessions/{session_id}", tags=["sessions"], summary="Get a session")
    async def session_get(session_id: str, memory: MemoryDep) -> SessionOut:
        session = await AsyncSessionManager(memory).get(session_id)
        return SessionOut.model_validate(found(session, f"session {session_id!r}"))

    @api.patch("/sessions/{session_id}", tags=["sessions"], summary="Change a session")
    async def session_update(session_id: str, body: SessionPatch, memory: MemoryDep) -> SessionOut:
        session = await AsyncSessionManager(memory).update(session_id, **body.arguments())
        return SessionOut.model_validate(session)

    @api.delete("/sessions/{session_id}", status_code=204, tags=["sessions"], summary="Delete")
    async def session_delete(session_id: str, memory: MemoryDep) -> Response:
        done = await AsyncSessionManager(memory).delete(session_id)
        return deleted(done, f"session {session_id!r}")

    # -- erasure ------------------------------------------------------------------------------

    @api.delete("/users/{user_id}", tags=["users"], summary="Forget everything of a user")
    async def forget_user(user_id: str, memory: MemoryDep) -> Count:
        """Erases the user's threads, records, snapshots and summaries in the tenant;
        with ``X-User-Id`` only that same user can be forgotten."""
        return Count(count=await memory.forget_user(user_id))

    return api
