"""The memory inspector: a web page at ``/ui`` showing what an agent remembers.

Mount it on the server with ``app.include_router(router())``. It is served
by the same process, reads through the same ``AsyncMemory`` handle as the API
and logs in with the same API keys: a login form takes a tenant's key (and
optionally a user to view as, the API's ``X-User-Id``) and keeps it in an
``HttpOnly``, ``SameSite=Strict`` cookie; every page re-checks it through
``memorybank.server.deps``, so a page shows one tenant's data and, viewing as
a user, only what that user may see.

Pages (all ``GET``, read-only): threads (search by title or id, filter by
user, agent and status, paged), a thread's entries per branch with tool calls
and token counts, a ``build_context`` preview (budget, blocks, the entries
that fit and the messages a model would get), facts with their history and
provenance, documents, summaries, search with every hit's signals, and the
knowledge graph (entities, and the subgraph around one drawn as server-rendered
SVG). Deleting a thread and forgetting a user
are ``POST``s behind a confirmation page where the id is typed again, with a
per-session CSRF token.

Server-rendered (Jinja2, autoescaped); one stylesheet and one script ship in
the package, so the page fetches nothing from elsewhere at run time.
"""

from __future__ import annotations

from fastapi import APIRouter

from memorybank.server.ui._views import PREFIX, build_router

__all__ = ["PREFIX", "router"]


def router() -> APIRouter:
    """The inspector's routes, under ``/ui`` (``PREFIX``); excluded from the OpenAPI schema."""
    return build_router()
