"""The inspector's pages of per-user and per-run state: core facts (with their history),
sessions, working memory and snapshots.

Like every page they read through the viewer's ``AsyncMemory`` handle only
(``root.tenant(T)``, or ``.scoped(user_id=U)`` when viewing as a user), so the
library's scope rules decide what each shows: a user's view lists her core
facts, her sessions, the runs she opened and the snapshots she may load.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, cast

from fastapi.responses import Response

from memorybank.context._async.sessions import STATUSES, AsyncSessionManager
from memorybank.memory._async.core_facts import AsyncCoreFacts
from memorybank.server.ui._page import Pages, Viewer, known, listing, show
from memorybank.stores.contract._async.store import UNSET

if TYPE_CHECKING:
    from memorybank.context.values import SessionStatus

__all__ = ["register"]

_MAX_PAGE = 1_000  # these pages list from the start: keep a deep page bounded


def register(r: Pages) -> None:
    """Add the pages of this module to the inspector's router ``r``."""

    @r.page("/core-facts")
    async def core_facts(viewer: Viewer, user: str = "") -> Response:
        """One user's core facts (the tenant-wide set without a user), each with its history."""

        owner = UNSET if viewer.user_id else (user or None)  # ids exactly as typed
        facts = AsyncCoreFacts(memory=viewer.memory, user_id=owner)
        current = await facts.all()
        rows = [(key, value, await facts.history(key)) for key, value in current.items()]
        # Users with recent threads, to suggest (none when viewing as one).
        users = [] if viewer.user_id else await known(viewer.memory, "user_id")
        per_user = []  # on the tenant-wide view: every known user's set, one click away
        if owner is None:
            for name in users:
                keys = await AsyncCoreFacts(memory=viewer.memory, user_id=name).all()
                per_user.append((name, len(keys)))
        return show(
            viewer,
            "core_facts.html",
            "Core facts",
            user=user,
            owner=facts.user_id,
            users=users,
            rows=rows,
            per_user=per_user,
        )

    @r.page("/sessions")
    async def sessions(
        viewer: Viewer,
        user: str = "",
        agent: str = "",
        status: str = "",
        page: str = "",
    ) -> Response:
        rows = functools.partial(
            AsyncSessionManager(viewer.memory).list,
            status=cast("SessionStatus", status) if status in STATUSES else None,
            user_id=viewer.user_filter(user),
            agent_id=agent or UNSET,
        )
        filters = {"user": user, "agent": agent, "status": status, "statuses": STATUSES}
        title, template = "Sessions", "sessions.html"
        return await listing(viewer, title, template, page, rows, deepest=_MAX_PAGE, **filters)

    @r.page("/working")
    async def working(viewer: Viewer, page: str = "") -> Response:
        """Every run holding working memory that the viewer could open, with its values."""

        runs = viewer.memory.working_runs
        title, template = "Working memory", "working.html"
        return await listing(viewer, title, template, page, runs, deepest=_MAX_PAGE)

    @r.page("/snapshots")
    async def snapshots(viewer: Viewer, page: str = "") -> Response:
        """The saved snapshots the viewer may load, with their values."""

        saved = viewer.memory.snapshots.list
        title, template = "Snapshots", "snapshots.html"
        return await listing(viewer, title, template, page, saved, deepest=_MAX_PAGE)
