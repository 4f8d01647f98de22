"""The inspector's pages of memory that maintains itself: consolidation runs (the list,
one run's report: every fact and entity it changed and why, and its undo behind the
same confirmation as the deletes), and a fact's importance, feedback and consolidation
links (merged from, supersedes, superseded by) beside its history.

They read through the viewer's ``AsyncMemory`` handle (``memory.consolidation``,
``memory.usage``), so a user's view shows only the runs over her facts and shared
ones; the feedback records are read with the handle's own scope.
"""

from __future__ import annotations

from fastapi.responses import Response

from memorybank.server.ui._page import (
    Pages,
    Viewer,
    checked,
    confirm,
    go,
    link,
    listing,
    required,
    show,
)

__all__ = ["register"]

_MAX_PAGE = 1_000


def register(r: Pages) -> None:
    """Add the pages of this module to the inspector's router ``r``."""

    @r.page("/consolidation")
    async def runs(viewer: Viewer, page: str = "", undone: str = "") -> Response:
        every = viewer.memory.consolidation.runs
        notice = f"Run {undone} was undone." if undone else None
        title, template = "Consolidation runs", "consolidation_runs.html"
        return await listing(
            viewer,
            title,
            template,
            page,
            lambda **_: every(),
            deepest=_MAX_PAGE,
            notice=notice,
        )

    @r.page("/consolidation/run")
    async def run(viewer: Viewer, id: str = "") -> Response:
        report = await viewer.memory.consolidation.report(required(id))
        return show(viewer, "consolidation_run.html", "Consolidation run", report=report)

    @r.page("/consolidation/undo")
    async def undo_confirm(viewer: Viewer, id: str = "") -> Response:
        report = await viewer.memory.consolidation.report(required(id))
        return confirm(
            viewer,
            "Undo consolidation run",
            report.run_id,
            warning="This puts every fact and graph entity the run changed back as it "
            "was before it. It is refused if one of them changed since.",
            details=[
                ("Run", report.run_id),
                ("User", report.user_id or "shared"),
                ("Facts merged", str(report.merged)),
                ("Facts superseded", str(report.superseded)),
                ("Entities merged", str(report.entities_merged)),
            ],
            action=link(viewer, "/consolidation/undo"),
            button="Undo run",
            cancel=link(viewer, "/consolidation/run", id=report.run_id),
        )

    @r.form("/consolidation/undo")
    async def undo(viewer: Viewer) -> Response:
        _, run_id = await checked(viewer, "undone")
        await viewer.memory.consolidation.undo(run_id)
        return go(viewer, "/consolidation/run", id=run_id)
