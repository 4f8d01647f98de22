"""The inspector's edits: a fact's content (a supersede: the old value stays in its
history) and an entity's name, aliases and observations.

Each is a form page (``GET``) and a ``POST`` behind the same protection as the
deletes: the session's CSRF token, and the id typed again. The change is made
through the viewer's ``AsyncMemory`` handle, so the library's validation and
scope rules apply as they do to any caller (a bad value is its
``InvalidInput``, shown as a 422 page, and nothing is written).
"""

from __future__ import annotations

from fastapi.responses import Response

from memorybank.server.ui._page import Pages, Viewer, checked, go, one, show

__all__ = ["register"]


def _lines(text: str) -> list[str]:
    """One item a line; blank lines dropped (the library checks each item)."""
    return [line for line in text.replace("\r\n", "\n").split("\n") if line.strip()]


def register(r: Pages) -> None:
    """Add the pages of this module to the inspector's router ``r``."""

    @r.page("/fact/edit")
    async def fact_form(viewer: Viewer, id: str = "") -> Response:
        fact = await one("fact", id, viewer.memory.facts.get)
        return show(viewer, "fact_edit.html", "Edit fact", fact=fact)

    @r.form("/fact/edit")
    async def fact_edit(viewer: Viewer) -> Response:
        form, fact_id = await checked(viewer)
        await viewer.memory.facts.supersede(fact_id, form.get("content", ""))
        return go(viewer, "/fact", id=fact_id, saved="1")

    @r.page("/entity/edit")
    async def entity_form(viewer: Viewer, id: str = "") -> Response:
        entity = await one("entity", id, viewer.memory.graph.get_entity)
        return show(viewer, "entity_edit.html", "Edit entity", entity=entity)

    @r.form("/entity/edit")
    async def entity_edit(viewer: Viewer) -> Response:
        form, entity_id = await checked(viewer)
        await viewer.memory.graph.update_entity(
            entity_id,
            name=form.get("name", ""),
            aliases=_lines(form.get("aliases", "")),
            observations=_lines(form.get("observations", "")),
        )
        return go(viewer, "/graph", entity=entity_id, saved="1")
