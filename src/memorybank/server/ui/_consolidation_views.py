"""The inspector's pages of memory that maintains itself: consolidation runs (the list,
one run's report: every fact and entity it changed and why, and its undo behind the
same confirmation as the deletes), and a fact's importance, feedback and consolidation
links (merged from, supersedes, superseded by) beside its history.

They read through the viewer's ``AsyncMemory`` handle (``memory.consolidation``,
``memory.usage``), so a user's view shows only the runs over her facts and shared
ones; the feedback records are read with the handle's own scope.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import Response

from memorybank.server.ui._render import render
from memorybank.server.ui._views import (
    Viewer,
    _checked,
    _context,
    _int,
    _listing,
    _redirect,
    _required,
    _root,
    viewed,
)

__all__ = ["register"]

_MAX_PAGE = 1_000


def register(r: APIRouter) -> None:
    """Add the pages of this module to the inspector's router ``r``."""

    @r.get("/consolidation")
    @viewed
    async def runs(request: Request, viewer: Viewer, page: str = "", undone: str = "") -> Response:
        number = _int(page, 1, 1, _MAX_PAGE)
        rows = await viewer.memory.consolidation.runs()
        notice = f"Run {undone} was undone." if undone else None
        title, template = "Consolidation runs", "consolidation_runs.html"
        return _listing(request, viewer, title, template, rows, number, notice=notice)

    @r.get("/consolidation/run")
    @viewed
    async def run(request: Request, viewer: Viewer, id: str = "") -> Response:
        report = await viewer.memory.consolidation.report(_required(id))
        ctx = _context(request, viewer, "Consolidation run", report=report)
        return render("consolidation_run.html", **ctx)

    @r.get("/consolidation/undo")
    @viewed
    async def undo_confirm(request: Request, viewer: Viewer, id: str = "") -> Response:
        report = await viewer.memory.consolidation.report(_required(id))
        root = _root(request)
        target = quote(report.run_id, safe="")
        ctx = _context(
            request,
            viewer,
            "Undo consolidation run",
            warning="This puts every fact and graph entity the run changed back as it "
            "was before it. It is refused if one of them changed since.",
            details=[
                ("Run", report.run_id),
                ("User", report.user_id or "shared"),
                ("Facts merged", str(report.merged)),
                ("Facts superseded", str(report.superseded)),
                ("Entities merged", str(report.entities_merged)),
            ],
            action=f"{root}/consolidation/undo",
            hidden=[("id", report.run_id)],
            expected=report.run_id,
            button="Undo run",
            cancel=f"{root}/consolidation/run?id={target}",
        )
        return render("confirm.html", **ctx)

    @r.post("/consolidation/undo")
    @viewed
    async def undo(request: Request, viewer: Viewer) -> Response:
        _, run_id = await _checked(request, "undone")
        await viewer.memory.consolidation.undo(run_id)
        target = quote(run_id, safe="")
        return _redirect(f"{_root(request)}/consolidation/run?id={target}")
