"""The change feed over REST: ``GET /v1/events`` (a long poll with ``wait``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from memorybank.memory._async.events import MAX_EVENTS, MAX_WAIT
from memorybank.server.deps import MemoryDep
from memorybank.server.models import EventOut, Page

__all__ = ["router"]


def router() -> APIRouter:
    """The ``/v1/events`` route."""
    api = APIRouter(prefix="/v1")

    @api.get(
        "/events", tags=["events"], summary="The tenant's changes after a cursor, oldest first"
    )
    async def events_list(
        memory: MemoryDep,
        after: Annotated[
            str | None, Query(description="The last event's `cursor` read; none: the oldest.")
        ] = None,
        kinds: Annotated[
            list[str] | None,
            Query(description="Only these kinds (repeat the parameter, or comma-separated)."),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_EVENTS, description="At most this many.")] = 100,
        wait: Annotated[
            float,
            Query(ge=0, le=MAX_WAIT, description="Seconds to wait for an event when none is new."),
        ] = 0.0,
    ) -> Page[EventOut]:
        """``memory.events.list``: with ``X-User-Id`` only that user's events.

        ``next_cursor`` is the cursor to pass as ``after`` next: the last event's, or the
        given ``after`` when nothing is new (never null once an event was read). A cursor
        older than the events kept answers 410 ``cursor_expired``.
        """
        wanted = None if kinds is None else [k for part in kinds for k in part.split(",") if k]
        events = await memory.events.list(after=after, kinds=wanted, limit=limit, wait=wait)
        items = [EventOut.model_validate(e) for e in events]
        return Page[EventOut](items=items, next_cursor=events[-1].cursor if events else after)

    return api
