"""The inspector's edits: a fact's content (a supersede: the old value stays in its
history) and an entity's name, aliases and observations.

Each is a form page (``GET``) and a ``POST`` behind the same protection as the
deletes: the session's CSRF token, and the id typed again. The change is made
through the viewer's ``AsyncMemory`` handle, so the library's validation and
scope rules apply as they do to any caller (a bad value is its
``InvalidInput``, shown as a 422 page, and nothing is written).
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import Response

from memorybank.server.routes import found
from memorybank.server.ui._render import render
from memorybank.server.ui._views import (
    Viewer,
    _checked,
    _context,
    _redirect,
    _required,
    _root,
    viewed,
)

__all__ = ["register"]


def _lines(text: str) -> list[str]:
    """One item a line; blank lines dropped (the library checks each item)."""
    return [line for line in text.replace("\r\n", "\n").split("\n") if line.strip()]


def register(r: APIRouter) -> None:
    """Add the pages of this module to the inspector's router ``r``."""

    @r.get("/fact/edit")
    @viewed
    async def fact_form(request: Request, viewer: Viewer, id: str = "") -> Response:
        fact_id = _required(id)
        fact = found(await viewer.memory.facts.get(fact_id), f"fact {fact_id!r}")
        ctx = _context(request, viewer, "Edit fact", fact=fact)
        return render("fact_edit.html", **ctx)

    @r.post("/fact/edit")
    @viewed
    async def fact_edit(request: Request, viewer: Viewer) -> Response:
        form, fact_id = await _checked(request)
        await viewer.memory.facts.supersede(fact_id, form.get("content", ""))
        return _redirect(f"{_root(request)}/fact?id={quote(fact_id, safe='')}&saved=1")

    @r.get("/entity/edit")
    @viewed
    async def entity_form(request: Request, viewer: Viewer, id: str = "") -> Response:
        entity_id = _required(id)
        entity = found(await viewer.memory.graph.get_entity(entity_id), f"entity {entity_id!r}")
        ctx = _context(request, viewer, "Edit entity", entity=entity)
        return render("entity_edit.html", **ctx)

    @r.post("/entity/edit")
    @viewed
    async def entity_edit(request: Request, viewer: Viewer) -> Response:
        form, entity_id = await _checked(request)
        await viewer.memory.graph.update_entity(
            entity_id,
            name=form.get("name", ""),
            aliases=_lines(form.get("aliases", "")),
            observations=_lines(form.get("observations", "")),
        )
        target = quote(entity_id, safe="")
        return _redirect(f"{_root(request)}/graph?entity={target}&saved=1")
