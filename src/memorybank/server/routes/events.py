"""The change feed over REST: ``GET /v1/events`` (a long poll with ``wait``)."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import StringConstraints

from memorybank.events.types import EVENT_KINDS, split_kinds
from memorybank.memory._async.events import MAX_EVENTS, MAX_WAIT
from memorybank.server.deps import MemoryDep
from memorybank.server.models import EventOut, Page

__all__ = ["router"]


#: A cursor: the event's number (``memorybank.events.types.cursor_number`` reads it).
_CURSOR = r"^[0-9]{1,19}$"
_KIND = "|".join(re.escape(kind) for kind in sorted(EVENT_KINDS))
#: One event kind, or several separated by commas.
_KINDS = rf"^({_KIND})(,({_KIND}))*$"


def router() -> APIRouter:
    """The ``/v1/events`` route."""
    api = APIRouter(prefix="/v1")

    @api.get(
        "/events", tags=["events"], summary="The tenant's changes after a cursor, oldest first"
    )
    async def events_list(
        memory: MemoryDep,
        after: Annotated[
            str | None,
            Query(
                pattern=_CURSOR,
                description="The last event's `cursor` read; none: the oldest.",
            ),
        ] = None,
        kinds: Annotated[
            list[Annotated[str, StringConstraints(pattern=_KINDS)]] | None,
            Query(description="Only these kinds (repeat the parameter, or comma-separated)."),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_EVENTS, description="At most this many.")] = 100,
        wait: Annotated[
            float,
            Query(ge=0, le=MAX_WAIT, description="Seconds to wait for an event when none is new."),
        ] = 0.0,
        content: Annotated[
            bool,
            Query(
                description="Each event's `content`: of the entry, fact or document it names,"
                " read now (none once deleted)."
            ),
        ] = False,
    ) -> Page[EventOut]:
        """``memory.events.list``: with ``X-User-Id`` only that user's events.

        ``next_cursor`` is the cursor to pass as ``after`` next: the last event's, or the
        given ``after`` when nothing is new (never null once an event was read). A cursor
        older than the events kept answers 410 ``cursor_expired``.
        """
        wanted = split_kinds(kinds)
        events = await memory.events.list(
            after=after, kinds=wanted, limit=limit, wait=wait, content=content
        )
        items = [EventOut.model_validate(e) for e in events]
        return Page[EventOut](items=items, next_cursor=events[-1].cursor if events else after)

    return api
