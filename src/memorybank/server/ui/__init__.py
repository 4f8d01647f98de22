"""The memory inspector: a web page at ``/ui`` showing what an agent remembers.

Mount it on the server with ``app.include_router(router())``. It is served
by the same process, reads through the same ``AsyncMemory`` handle as the API
and logs in with the same API keys: a login form takes a tenant's key (and
optionally a user to view as, the API's ``X-User-Id``) and keeps it in an
``HttpOnly``, ``SameSite=Strict`` cookie; every page re-checks it through
``memorybank.server.deps``, so a page shows one tenant's data and, viewing as
a user, only what that user may see.

Pages (``GET``): threads (search by title or id, filter by user, agent and
status, paged), a thread's entries per branch with tool calls and token
counts, and its token usage over time (server-rendered SVG), a
``build_context`` preview (budget, blocks, the entries that fit and the
messages a model would get), facts with their history and provenance,
documents, summaries, core facts with their history, sessions, working memory,
snapshots, search with every hit's signals, the knowledge graph (entities,
and the subgraph around one drawn as server-rendered SVG), and consolidation runs
(each run's report: the facts and entities it changed and why); a fact shows its
importance, the feedback given on it and its merged-from / superseded-by links. Deleting a thread,
forgetting a user, editing a fact (a supersede), editing an entity and undoing a
consolidation run are
``POST``s where the id is typed again, with a per-session CSRF token.

Server-rendered (Jinja2, autoescaped); one stylesheet and one script ship in
the package, so the page fetches nothing from elsewhere at run time.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from memorybank.server.ui import _consolidation_views, _edit_views, _page, _state_views, _views
from memorybank.server.ui._page import PREFIX, Pages
from memorybank.server.ui._render import static_file

__all__ = ["PREFIX", "router"]


def router() -> APIRouter:
    """The inspector's routes, under ``/ui`` (``PREFIX``), and ``/favicon.ico``;
    excluded from the OpenAPI schema."""
    pages = Pages(prefix=PREFIX, include_in_schema=False)
    for module in (_page, _views, _state_views, _edit_views, _consolidation_views):
        module.register(pages)
    outer = APIRouter(include_in_schema=False)

    @outer.get("/favicon.ico")
    async def favicon() -> Response:
        return static_file("favicon.ico")

    outer.include_router(pages)
    return outer
