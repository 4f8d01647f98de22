"""The inspector's pages of per-user and per-run state: core facts (with their history),
sessions, working memory and snapshots.

Like every page they read through the viewer's ``AsyncMemory`` handle only
(``root.tenant(T)``, or ``.scoped(user_id=U)`` when viewing as a user), so the
library's scope rules decide what each shows: a user's view lists her core
facts, her sessions, the runs she opened and the snapshots she may load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from fastapi import APIRouter, Request
from fastapi.responses import Response

from memorybank.context._async.sessions import STATUSES, AsyncSessionManager
from memorybank.memory._async.core_facts import AsyncCoreFacts
from memorybank.server.ui._render import render
from memorybank.server.ui._views import (
    PAGE_SIZE,
    Viewer,
    _context,
    _int,
    _listing,
    _opt,
    viewed,
)
from memorybank.stores.contract._async.store import UNSET

if TYPE_CHECKING:
    from memorybank.context.values import SessionStatus

__all__ = ["register"]

_MAX_PAGE = 1_000  # these pages list from the start: keep a deep page bounded
_KNOWN_USERS = 500  # recent threads read to suggest users in a filter


async def _users(viewer: Viewer) -> list[str]:
    """Users with recent threads, to suggest in a user filter (none when viewing as one)."""
    if viewer.user_id:
        return []
    recent = await viewer.memory.threads.list(limit=_KNOWN_USERS)
    return sorted({t.user_id for t in recent if t.user_id})


def register(r: APIRouter) -> None:
    """Add the pages of this module to the inspector's router ``r``."""

    @r.get("/core-facts")
    @viewed
    async def core_facts(request: Request, viewer: Viewer, user: str = "") -> Response:
        """One user's core facts (the tenant-wide set without a user), each with its history."""

        owner = UNSET if viewer.user_id else (user or None)  # ids exactly as typed
        facts = AsyncCoreFacts(memory=viewer.memory, user_id=owner)
        current = await facts.all()
        rows = [(key, value, await facts.history(key)) for key, value in current.items()]
        users = await _users(viewer)
        per_user = []  # on the tenant-wide view: every known user's set, one click away
        if owner is None:
            for name in users:
                keys = await AsyncCoreFacts(memory=viewer.memory, user_id=name).all()
                per_user.append((name, len(keys)))
        ctx = _context(
            request,
            viewer,
            "Core facts",
            user=user,
            owner=facts.user_id,
            users=users,
            rows=rows,
            per_user=per_user,
        )
        return render("core_facts.html", **ctx)

    @r.get("/sessions")
    @viewed
    async def sessions(
        request: Request,
        viewer: Viewer,
        user: str = "",
        agent: str = "",
        status: str = "",
        page: str = "",
    ) -> Response:
        number = _int(page, 1, 1, _MAX_PAGE)
        found = await AsyncSessionManager(viewer.memory).list(
            status=cast("SessionStatus", status) if status in STATUSES else None,
            limit=number * PAGE_SIZE + 1,
            user_id=UNSET if viewer.user_id else _opt(user),
            agent_id=_opt(agent),
        )
        filters = {"user": user, "agent": agent, "status": status, "statuses": STATUSES}
        return _listing(request, viewer, "Sessions", "sessions.html", found, number, **filters)

    @r.get("/working")
    @viewed
    async def working(request: Request, viewer: Viewer, page: str = "") -> Response:
        """Every run holding working memory that the viewer could open, with its values."""

        number = _int(page, 1, 1, _MAX_PAGE)
        runs = await viewer.memory.working_runs(limit=number * PAGE_SIZE + 1)
        return _listing(request, viewer, "Working memory", "working.html", runs, number)

    @r.get("/snapshots")
    @viewed
    async def snapshots(request: Request, viewer: Viewer, page: str = "") -> Response:
        """The saved snapshots the viewer may load, with their values."""

        number = _int(page, 1, 1, _MAX_PAGE)
        saved = await viewer.memory.snapshots.list(limit=number * PAGE_SIZE + 1)
        return _listing(request, viewer, "Snapshots", "snapshots.html", saved, number)
