"""The inspector's pages: parse the query, call the caller's ``AsyncMemory`` handle, render.

Every page resolves the caller from the session cookie through the server's
own dependencies (``memorybank.server.deps``: the same key check, tenant and
``X-User-Id`` scoping as ``Authorization: Bearer``), so a page reads through
``root.tenant(T)`` or ``root.tenant(T).scoped(user_id=U)`` and nothing else.
Pages only read; the writes (delete a thread, forget a user, edit a fact or an
entity: ``_edit_views``) are POSTs that need the session's CSRF token and the
target's id typed again.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from memorybank.errors import InvalidInput, MemoryBankError, NotFound, StoreError
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Branch, Entry, Thread
from memorybank.server import deps
from memorybank.server.errors import (
    ApiError,
    public_error,
    refused_by_store,
    request_id,
)
from memorybank.server.routes import deleted, found
from memorybank.server.ui._fact_extras import fact_extras, importance_of
from memorybank.server.ui._graph_svg import EDGE_FONT, LINE_HEIGHT, NODE_FONT, draw
from memorybank.server.ui._render import render, static_file
from memorybank.server.ui._session import (
    CSRF_COOKIE,
    KEY_COOKIE,
    TENANT_COOKIE,
    USER_COOKIE,
    check_csrf,
    clear_session,
    new_csrf_token,
    read_form,
    set_cookie,
)
from memorybank.server.ui._usage_svg import chart
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.webhooks.registry import Webhooks

if TYPE_CHECKING:
    from memorybank.context.values import ContextOptions, Strategy
    from memorybank.recall._async.search import SearchMode

__all__ = ["PAGE_SIZE", "PREFIX", "Viewer", "build_router"]

#: Where the inspector is mounted.
PREFIX = "/ui"
#: Rows per page of every listing.
PAGE_SIZE = 50
_MAX_PAGE = 10_000
_MAX_TOKENS = 10_000_000
_TIMELINE = 200  # newest entries listed in or out of a previewed context
_CHART_ENTRIES = 2000  # newest entries of a branch the token chart plots
_FORK_SCAN = 20_000  # newest entries of a parent branch searched for a fork point's page
_NAV = (  # href, label, and the page paths it is the section of
    ("/threads", "Threads", "/thread"),
    ("/search", "Search", "/search"),
    ("/facts", "Facts", "/fact"),
    ("/documents", "Documents", "/document"),
    ("/summaries", "Summaries", "/summaries"),
    ("/core-facts", "Core facts", "/core-facts"),
    ("/sessions", "Sessions", "/session"),
    ("/working", "Working memory", "/working"),
    ("/snapshots", "Snapshots", "/snapshot"),
    ("/graph", "Graph", "/graph"),
    ("/consolidation", "Consolidation", "/consolidation"),
    ("/forget", "Forget user", "/forget"),
    ("/webhooks", "Webhooks", "/webhooks"),
)
_GRAPH_MAX_DEPTH = 3
_GRAPH_MAX_NODES = 60  # what a picture can show legibly
_GRAPH_MAX_EDGES = 150
_STRATEGIES = ("recent", "relevant", "hybrid")
_MODES = ("hybrid", "keyword", "semantic")
_KINDS = {
    "entries,documents": ("entries and documents", ("entries", "documents")),
    "entries,documents,facts": ("entries, documents and facts", ("entries", "documents", "facts")),
    "entries": ("entries", ("entries",)),
    "documents": ("documents", ("documents",)),
    "facts": ("facts", ("facts",)),
}


@dataclass(frozen=True, slots=True)
class Viewer:
    """The logged-in caller of one page: tenant, viewed-as user, CSRF token, memory handle."""

    tenant: str
    user_id: str | None
    csrf: str
    memory: AsyncMemory
    is_admin: bool = False


@dataclass(frozen=True, slots=True)
class ForkPoint:
    """Where a branch was taken from: the entry, and the branch and page that show it.

    ``branch`` is the parent when the entry is still on it, else the forked branch's
    own copy (the parent was rewound past it or deleted); ``None`` when neither holds it.
    """

    entry_id: str
    from_branch: str
    branch: str | None = None
    page: int = 1
    position: int | None = None


async def _page_of(memory: AsyncMemory, thread_id: str, branch: str, entry_id: str) -> int | None:
    """The thread page (newest first, ``PAGE_SIZE`` a page) holding ``entry_id`` on
    ``branch``, scanning its newest ``_FORK_SCAN`` entries; ``None`` if not there."""
    step = 1000
    for offset in range(0, _FORK_SCAN, step):
        rows = await memory.entries.list(
            thread_id, branch=branch, limit=step, offset=offset, order="desc"
        )
        for index, row in enumerate(rows, start=offset):
            if row.id == entry_id:
                return index // PAGE_SIZE + 1
        if len(rows) < step:
            return None
    return None


async def _fork_point(memory: AsyncMemory, thread_id: str, b: Branch, names: set[str]) -> ForkPoint:
    assert b.from_branch is not None and b.from_entry is not None
    for where in (b.from_branch, b.name):
        if where not in names:
            continue
        entry = await memory.entries.get(thread_id, b.from_entry, branch=where)
        if entry is None:
            continue
        page = await _page_of(memory, thread_id, where, entry.id)
        return ForkPoint(b.from_entry, b.from_branch, where, page or 1, entry.position)
    return ForkPoint(b.from_entry, b.from_branch)


T = TypeVar("T")
View = Callable[["Viewer"], Awaitable[Response]]


def _root(request: Request) -> str:
    return str(request.scope.get("root_path", "")) + PREFIX


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(location, status_code=303)


def _to_login(request: Request, *, expired: bool = False) -> Response:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    location = f"{_root(request)}/login?next={quote(here, safe='')}"
    response = _redirect(location + ("&expired=1" if expired else ""))
    if expired:
        clear_session(response, request, _root(request))
    return response


def _safe_next(request: Request, target: str) -> str:
    """Where to go after login: only a page of the inspector (no open redirect)."""
    root = _root(request)
    if target.startswith(root + "/") and "//" not in target and "\\" not in target:
        return target
    return f"{root}/threads"


async def _authenticate(
    request: Request, key: str, user_id: str | None, tenant: str | None
) -> deps.Caller:
    """The caller of ``key`` exactly as the API resolves ``Authorization: Bearer <key>``
    with ``X-User-Id: user_id`` and ``X-Tenant-Id: tenant`` (heeded for the admin key only)."""
    return deps.in_tenant(await deps.authenticate(request, key, user_id, tenant))


async def _viewer(request: Request) -> Viewer | Response:
    key = request.cookies.get(KEY_COOKIE)
    if not key:
        return _to_login(request)
    try:
        who = await _authenticate(
            request,
            key,
            request.cookies.get(USER_COOKIE) or None,
            request.cookies.get(TENANT_COOKIE) or None,
        )
    except (ApiError, InvalidInput):  # revoked key, or a cookie that no longer parses
        return _to_login(request, expired=True)
    memory = deps.memory_of(request, who)
    assert who.tenant is not None  # tenant_caller guarantees it
    csrf = request.cookies.get(CSRF_COOKIE, "")
    return Viewer(who.tenant, who.user_id, csrf, memory, is_admin=who.is_admin)


def _context(request: Request, viewer: Viewer | None, title: str, **extra: Any) -> dict[str, Any]:
    path = request.url.path.removeprefix(_root(request))
    active = next((href for href, _, section in _NAV if path.startswith(section)), "")
    base: dict[str, Any] = {
        "root": _root(request),
        "nav": _NAV,
        "viewer": viewer,
        "title": title,
        "active": active,
        "notice": None,
        "error": None,
        "pager": None,
    }
    base.update(extra)
    return base


def _error_page(request: Request, viewer: Viewer | None, error: MemoryBankError) -> Response:
    # A store failure shows the API's fixed sentence and the request id, never the
    # driver's words (host, port, user): those go to the log.
    status, code, message, headers = public_error(request.scope, error)
    title = {404: "Not found", 403: "Forbidden", 422: "Invalid input"}.get(status, "Error")
    field = getattr(error, "field", None)
    if status >= 500:
        body = f"{message} ({code}, request {request_id(request)})"
    else:
        body = f"{message} (field: {field})" if field else message
    response = render("message.html", status, **_context(request, viewer, title, body=body))
    response.headers.update(headers or {})
    return response


class _Refused(Exception):
    """A write the page refuses (403, nothing changed): the message says why."""


async def _page(request: Request, view: View) -> Response:
    """Authenticate, run ``view``, and turn a library error into an HTML error page
    (a ``_Refused`` write into the refusal page)."""
    try:
        viewer = await _viewer(request)
    except MemoryBankError as exc:  # the store, asked about the key, failed
        return _error_page(request, None, exc)
    if isinstance(viewer, Response):
        return viewer
    try:
        return await view(viewer)
    except MemoryBankError as exc:
        return _error_page(request, viewer, exc)
    except _Refused as exc:
        return _refused(request, viewer, str(exc))


def viewed(route: Callable[..., Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:
    """A page route ``route(request, viewer, **query)`` run through ``_page``: FastAPI
    sees its signature without ``viewer``, which ``_page`` resolves."""
    signature = inspect.signature(route)

    @functools.wraps(route)
    async def page(request: Request, **query: Any) -> Response:
        return await _page(request, lambda viewer: route(request, viewer, **query))

    kept = [p for p in signature.parameters.values() if p.name != "viewer"]
    page.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]
    return page


def _int(value: str | None, default: int, low: int, high: int) -> int:
    """A lenient integer query parameter: out-of-range or garbage falls back or clamps."""
    try:
        number = int(value) if value not in (None, "") else default
    except ValueError:
        return default
    return min(max(number, low), high)


def _budget_field(name: str, value: str, low: int) -> str | None:
    """Why a token count typed in the context preview is refused, or ``None`` (empty is the
    default; a count is a whole number from ``low`` to ``_MAX_TOKENS``)."""
    text = value.strip()
    if not text:
        return None
    try:
        number = int(text)
    except ValueError:
        number = None
    if number is None or not low <= number <= _MAX_TOKENS:
        return f"{name} must be a whole number from {low} to {_MAX_TOKENS}, not {text!r}."
    return None


def _budget_notes(options: ContextOptions, budget: dict[str, int], total_entries: int) -> list[str]:
    """Warnings about a budget that leaves the history no room (the preview shows them above
    the result, as ``build_context`` itself truncates silently)."""
    if options.available == 0:
        how = "" if options.reserve_tokens is not None else ", the default max(100, 10%)"
        return [
            f"The reserve ({options.reserve} tokens{how}) "
            f"leaves no room: max_tokens {options.max_tokens} minus the reserve is 0, so "
            "no message fits. Raise max_tokens above the reserve or lower reserve_tokens."
        ]
    if total_entries and budget["history_budget"] == 0:
        return [
            f"The system message ({budget['system']} tokens) takes all {options.available} "
            "available tokens: no history entry fits. Raise max_tokens, lower the reserve, "
            "or turn blocks off."
        ]
    return []


def _opt(value: str | None) -> str | Unset:
    """A filter field: empty means "no filter" (``UNSET``); an id is taken exactly as typed
    (ids compare exactly: ``"bob "`` is not ``"bob"``)."""
    return value if value else UNSET


def _pager(request: Request, page: int, has_next: bool) -> dict[str, Any]:
    def link(n: int) -> str:
        url = request.url.include_query_params(page=n)
        return f"{url.path}?{url.query}"

    return {
        "page": page,
        "previous": link(page - 1) if page > 1 else None,
        "next": link(page + 1) if has_next else None,
    }


def _cut(rows: list[T], page: int) -> tuple[list[T], bool]:
    """Page ``page`` of ``rows`` (``PAGE_SIZE`` a page), and whether a next page exists."""
    start = (page - 1) * PAGE_SIZE
    return rows[start : start + PAGE_SIZE], len(rows) > page * PAGE_SIZE


def _listing(
    request: Request,
    viewer: Viewer,
    title: str,
    template: str,
    rows: Sequence[object],
    number: int,
    **extra: Any,
) -> Response:
    """Page ``number`` of ``rows`` (as ``rows``, with its pager) in ``template``."""
    shown, more = _cut(list(rows), number)
    pager = _pager(request, number, more)
    return render(template, **_context(request, viewer, title, rows=shown, pager=pager, **extra))


def _login_page(
    request: Request, csrf: str, next: str, error: str | None, status: int = 200
) -> Response:
    """The login form (``error`` above it), setting the CSRF cookie it echoes."""
    ctx = _context(request, None, "Log in", csrf=csrf, next=next, error=error)
    response = render("login.html", status, **ctx)
    set_cookie(response, request, _root(request), CSRF_COOKIE, csrf)
    return response


async def _list_threads(
    memory: AsyncMemory,
    *,
    q: str,
    user: str | Unset,
    agent: str | Unset,
    status: str | None,
    page: int,
) -> tuple[list[Thread], bool]:
    """One page of threads (newest first) matching the filters; whether more follow.

    The store pages threads by ``limit`` only, so a page is cut from the first
    ``page * PAGE_SIZE + 1`` matches; with a text search the scan widens until
    that many matched or the tenant has no more threads.
    """
    needle = q.casefold()
    want = page * PAGE_SIZE + 1
    limit = want
    while True:
        rows = await memory.threads.list(user_id=user, agent_id=agent, status=status, limit=limit)
        matched = (
            [t for t in rows if needle in t.id.casefold() or needle in (t.title or "").casefold()]
            if needle
            else rows
        )
        if len(matched) >= want or len(rows) < limit:
            break
        limit *= 4
    return _cut(matched, page)


def _required(value: str | None) -> str:
    """The ``id`` query or form field (ids go in the query: they may hold ``/``, ``?``, ...)."""
    if not value:
        raise InvalidInput("id is required", field="id")
    return value


def _confirmed(form: dict[str, str], expected: str) -> bool:
    """Whether the typed confirmation is the id, exactly (no trimming: ids are exact)."""
    return form.get("confirm", "") == expected


async def _checked(
    request: Request, nothing_was: str = "changed", field: str = "id"
) -> tuple[dict[str, str], str]:
    """The form of a confirmed change and its target (the form's ``field``: an id is
    required), once the CSRF token and the typed target match; else ``_Refused``
    (nothing was ``nothing_was``)."""
    form = await read_form(request)
    target = _required(form.get("id")) if field == "id" else form.get(field, "")
    if not check_csrf(request, form):
        raise _Refused("The form expired or came from another page.")
    if not target or not _confirmed(form, target):
        raise _Refused(f"The typed id did not match; nothing was {nothing_was}.")
    return form, target


def build_router() -> APIRouter:
    """The inspector's routes under ``PREFIX`` (see ``memorybank.server.ui.router``)."""
    r = APIRouter(prefix=PREFIX, include_in_schema=False)

    @r.get("/static/{name}")
    async def static(name: str) -> Response:
        return static_file(name)

    @r.get("")
    @r.get("/")
    async def home(request: Request) -> Response:
        return _redirect(f"{_root(request)}/threads")

    # -- session ---------------------------------------------------------------

    @r.get("/login")
    async def login_form(request: Request, next: str = "", expired: str = "") -> Response:
        csrf = request.cookies.get(CSRF_COOKIE) or new_csrf_token()
        error = "Your key is no longer valid; log in again." if expired else None
        return _login_page(request, csrf, next, error)

    @r.post("/login")
    async def login(request: Request) -> Response:
        form = await read_form(request)
        csrf = request.cookies.get(CSRF_COOKIE) or new_csrf_token()
        target = form.get("next", "")

        def again(message: str, status: int) -> Response:
            return _login_page(request, csrf, target, message, status)

        if not check_csrf(request, form):
            return again("The login form expired; please try again.", 403)
        key = form.get("key", "").strip()
        user = form.get("user_id", "") or None  # ids exactly as typed
        tenant = form.get("tenant", "") or None
        try:
            await _authenticate(request, key, user, tenant)
        except ApiError:
            return again("This key is not valid (unknown or revoked).", 401)
        except InvalidInput as exc:
            return again(f"{exc} (field: {exc.field})", 422)
        response = _redirect(_safe_next(request, target))
        root = _root(request)
        set_cookie(response, request, root, KEY_COOKIE, key)
        for name, value in ((USER_COOKIE, user), (TENANT_COOKIE, tenant)):
            if value is None:
                response.delete_cookie(name, path=root, httponly=True, samesite="strict")
            else:
                set_cookie(response, request, root, name, value)
        # A new token per session: one seen before login is worthless after it.
        set_cookie(response, request, root, CSRF_COOKIE, new_csrf_token())
        return response

    @r.post("/logout")
    async def logout(request: Request) -> Response:
        form = await read_form(request)
        if not check_csrf(request, form):
            body = "The form expired or came from another page; you are still logged in."
            ctx = _context(request, None, "Not logged out", body=body)
            return render("message.html", 403, **ctx)
        response = _redirect(f"{_root(request)}/login")
        clear_session(response, request, _root(request))
        return response

    # -- threads -----------------------------------------------------------------

    @r.get("/threads")
    @viewed
    async def threads(
        request: Request,
        viewer: Viewer,
        q: str = "",
        user: str = "",
        agent: str = "",
        status: str = "",
        page: str = "",
        deleted: str = "",
    ) -> Response:
        number = _int(page, 1, 1, _MAX_PAGE)
        rows, more = await _list_threads(
            viewer.memory,
            q=q.strip(),
            user=UNSET if viewer.user_id else _opt(user),
            agent=_opt(agent),
            status=status if status in ("active", "archived") else None,
            page=number,
        )
        ctx = _context(
            request,
            viewer,
            "Threads",
            threads=rows,
            q=q,
            user=user,
            agent=agent,
            status=status,
            pager=_pager(request, number, more),
            notice=f"Thread {deleted} was deleted." if deleted else None,
        )
        return render("threads.html", **ctx)

    @r.get("/thread")
    @viewed
    async def thread(
        request: Request, viewer: Viewer, id: str = "", branch: str = "", page: str = ""
    ) -> Response:
        thread_id = _required(id)
        memory = viewer.memory
        found = await memory.threads.require(thread_id)
        name = branch or found.current_branch
        number = _int(page, 1, 1, _MAX_PAGE)
        branches = await memory.branches.list(thread_id)
        names = {b.name for b in branches}
        forks = {
            b.name: await _fork_point(memory, thread_id, b, names)
            for b in branches
            if b.from_branch is not None and b.from_entry is not None
        }
        entries = await memory.entries.list(
            thread_id, branch=name, limit=PAGE_SIZE, offset=(number - 1) * PAGE_SIZE
        )
        total = await memory.entries.count(thread_id, branch=name)
        plotted = await memory.entries.list(thread_id, branch=name, limit=_CHART_ENTRIES)
        ctx = _context(
            request,
            viewer,
            found.title or found.id,
            thread=found,
            branch=name,
            branches=branches,
            forks=forks,
            entries=entries,
            total=total,
            tokens_on_page=sum(e.token_count for e in entries),
            usage=chart(plotted),
            chart_limit=_CHART_ENTRIES,
            pager=_pager(request, number, number * PAGE_SIZE < total),
        )
        return render("thread.html", **ctx)

    @r.get("/thread/context")
    @viewed
    async def context(
        request: Request,
        viewer: Viewer,
        id: str = "",
        input: str = "",
        system_prompt: str = "",
        agent: str = "",
        max_tokens: str = "",
        reserve_tokens: str = "",
        strategy: str = "recent",
        facts: str = "",
        semantic: str = "",
        graph: str = "",
    ) -> Response:
        from memorybank.context.values import ContextOptions

        thread_id = _required(id)
        found = await viewer.memory.threads.require(thread_id)
        who = agent or found.agent_id or ""
        chosen: Strategy = (
            "relevant" if strategy == "relevant" else "hybrid" if strategy == "hybrid" else "recent"
        )
        refused = [
            message
            for message in (
                _budget_field("max_tokens", max_tokens, 1),
                _budget_field("reserve_tokens", reserve_tokens, 0),
            )
            if message
        ]
        reserve = _int(reserve_tokens, 0, 0, _MAX_TOKENS) if reserve_tokens.strip() else None
        options = ContextOptions(
            max_tokens=_int(max_tokens, 4000, 1, _MAX_TOKENS),
            strategy=chosen,
            reserve_tokens=reserve,
        )
        form = {
            "input": input,
            "system_prompt": system_prompt,
            "agent": who,
            "max_tokens": max_tokens.strip() if refused else options.max_tokens,
            "reserve_tokens": reserve_tokens.strip() if refused or reserve is None else reserve,
            "strategy": chosen,
            "facts": bool(facts),
            "semantic": bool(semantic),
            "graph": bool(graph),
        }
        ctx = None
        error = None
        budget: dict[str, int] = {
            "max_tokens": options.max_tokens,
            "reserve": options.reserve,
            "available": options.available,
        }
        timeline: list[tuple[Entry, bool]] = []
        notes: list[str] = []
        if refused:
            error = " ".join(refused)
        elif who:
            ctx = await viewer.memory.build_context(
                thread_id,
                max_tokens=options.max_tokens,
                reserve_tokens=reserve,
                strategy=chosen,
                agent_id=who,
                user_id=found.user_id,  # the thread's owner: what its agent turns see
                system_prompt=system_prompt or None,
                current_input=input or None,
                include_facts=bool(facts),
                include_semantic_context=bool(semantic),
                include_graph_context=bool(graph),
            )
            # Why each entry is in or out: the newest ones of the branch beside the choice.
            chosen_ids = {e.id for e in ctx.entries}
            recent = await viewer.memory.entries.list(thread_id, limit=_TIMELINE)
            timeline = [(e, e.id in chosen_ids) for e in reversed(recent)]
            history_tokens = sum(e.token_count for e in ctx.entries)
            budget["system"] = ctx.token_count - history_tokens
            budget["history_budget"] = max(0, options.available - budget["system"])
            budget["history"] = history_tokens
            notes = _budget_notes(options, budget, ctx.total_entries)
        else:
            error = "This thread has no agent: name the agent the context is built for."
        page_ctx = _context(
            request,
            viewer,
            "build_context preview",
            thread=found,
            form=form,
            strategies=_STRATEGIES,
            ctx=ctx,
            error=error,
            budget=budget,
            budget_notes=notes,
            timeline=timeline,
            timeline_limit=_TIMELINE,
        )
        return render("context.html", status_code=400 if refused else 200, **page_ctx)

    @r.get("/thread/delete")
    @viewed
    async def delete_confirm(request: Request, viewer: Viewer, id: str = "") -> Response:
        thread_id = _required(id)
        found = await viewer.memory.threads.require(thread_id)
        count = await viewer.memory.entries.count(thread_id)
        root = _root(request)
        ctx = _context(
            request,
            viewer,
            "Delete thread",
            warning="This deletes the thread with all its entries and branches. "
            "It cannot be undone.",
            details=[
                ("Thread", found.id),
                ("Title", found.title or "(untitled)"),
                ("User", found.user_id or "—"),
                ("Entries on the current branch", str(count)),
            ],
            action=f"{root}/thread/delete",
            hidden=[("id", found.id)],
            expected=found.id,
            button="Delete thread",
            cancel=f"{root}/thread?id={quote(found.id, safe='')}",
        )
        return render("confirm.html", **ctx)

    @r.post("/thread/delete")
    @viewed
    async def delete(request: Request, viewer: Viewer) -> Response:
        _, thread_id = await _checked(request, "deleted")
        deleted(await viewer.memory.threads.delete(thread_id), f"thread {thread_id!r}")
        return _redirect(f"{_root(request)}/threads?deleted={quote(thread_id, safe='')}")

    # -- long-term memory --------------------------------------------------------

    @r.get("/facts")
    @viewed
    async def facts(
        request: Request,
        viewer: Viewer,
        user: str = "",
        agent: str = "",
        category: str = "",
        expired: str = "",
        page: str = "",
    ) -> Response:
        number = _int(page, 1, 1, _MAX_PAGE)
        rows = await viewer.memory.facts.list(
            user_id=UNSET if viewer.user_id else _opt(user),
            agent_id=_opt(agent),
            category=category.strip() or None,
            include_expired=bool(expired),
        )
        shown, more = _cut(rows, number)
        ctx = _context(
            request,
            viewer,
            "Facts",
            facts=shown,
            usage=await importance_of(viewer.memory, shown),
            user=user,
            agent=agent,
            category=category,
            expired=bool(expired),
            pager=_pager(request, number, more),
        )
        return render("facts.html", **ctx)

    @r.get("/fact")
    @viewed
    async def fact(request: Request, viewer: Viewer, id: str = "", saved: str = "") -> Response:
        fact_id = _required(id)
        current = await viewer.memory.facts.get(fact_id)
        history = await viewer.memory.facts.history(fact_id)
        if current is None and not history:
            raise NotFound(f"fact {fact_id!r} not found")
        notice = (
            f"Saved as version {current.version}; the earlier value stays in the history."
            if saved and current is not None
            else None
        )
        extras = await fact_extras(viewer.memory, fact_id, history)
        ctx = _context(
            request, viewer, "Fact", fact=current, history=history, notice=notice, **extras
        )
        return render("fact.html", **ctx)

    @r.get("/documents")
    @viewed
    async def documents(request: Request, viewer: Viewer, page: str = "") -> Response:
        number = _int(page, 1, 1, _MAX_PAGE)
        rows = await viewer.memory.documents.list(limit=number * PAGE_SIZE + 1)
        return _listing(request, viewer, "Documents", "documents.html", rows, number)

    @r.get("/document")
    @viewed
    async def document(request: Request, viewer: Viewer, id: str = "") -> Response:
        document_id = _required(id)
        document = await viewer.memory.documents.get(document_id)
        document = found(document, f"document {document_id!r}")
        return render("document.html", **_context(request, viewer, "Document", document=document))

    @r.get("/summaries")
    @viewed
    async def summaries(
        request: Request, viewer: Viewer, agent: str = "", user: str = ""
    ) -> Response:
        recent = await viewer.memory.threads.list(limit=500)
        agents = sorted({t.agent_id for t in recent if t.agent_id})
        rows = []
        if agent:
            rows = await viewer.memory.summaries.list(
                agent_id=agent, user_id=UNSET if viewer.user_id else _opt(user)
            )
        ctx = _context(
            request,
            viewer,
            "Summaries",
            agents=agents,
            agent=agent,
            user=user,
            summaries=rows,
        )
        return render("summaries.html", **ctx)

    @r.get("/search")
    @viewed
    async def search(
        request: Request,
        viewer: Viewer,
        q: str = "",
        mode: str = "hybrid",
        kinds: str = "entries,documents",
        thread: str = "",
        k: str = "",
        history: str = "",
    ) -> Response:
        chosen_mode: SearchMode = (
            "keyword" if mode == "keyword" else "semantic" if mode == "semantic" else "hybrid"
        )
        chosen_kinds = kinds if kinds in _KINDS else "entries,documents"
        # Earlier values are facts' only: the box means nothing for other kinds.
        with_history = bool(history) and "facts" in _KINDS[chosen_kinds][1]
        count = _int(k, 10, 1, 100)
        hits = []
        error = None
        if q.strip():
            try:
                hits = await viewer.memory.search(
                    q,
                    k=count,
                    mode=chosen_mode,
                    thread_id=thread or None,
                    kinds=_KINDS[chosen_kinds][1],
                    include_history=with_history,
                )
            except MemoryBankError as exc:  # e.g. semantic mode without an embedder
                if isinstance(exc, StoreError) or refused_by_store(exc):
                    raise  # the error page: the store's words stay in the log
                error = str(exc)
        ctx = _context(
            request,
            viewer,
            "Search",
            q=q,
            mode=chosen_mode,
            modes=_MODES,
            kinds=chosen_kinds,
            kind_choices=[(value, label) for value, (label, _) in _KINDS.items()],
            history=bool(history),
            thread=thread,
            k=count,
            hits=hits,
            error=error,
        )
        return render("search.html", **ctx)

    @r.get("/graph")
    @viewed
    async def graph(
        request: Request,
        viewer: Viewer,
        entity: str = "",
        q: str = "",
        depth: str = "",
        page: str = "",
        saved: str = "",
    ) -> Response:
        """Entities (found by name), and the subgraph around one, drawn as SVG."""

        hops = _int(depth, 2, 1, _GRAPH_MAX_DEPTH)
        number = _int(page, 1, 1, _MAX_PAGE)
        matches = await viewer.memory.graph.find_entities(
            q.strip() or None, limit=min(number * PAGE_SIZE + 1, 10_000)
        )
        shown, more = _cut(matches, number)
        drawing = centre = None
        if entity:
            centre = found(
                await viewer.memory.graph.get_entity(_required(entity)), f"entity {entity!r}"
            )
            subgraph = await viewer.memory.graph.traverse(
                [centre.id],
                max_depth=hops,
                max_nodes=_GRAPH_MAX_NODES,
                max_edges=_GRAPH_MAX_EDGES,
            )
            drawing = draw(subgraph, centre.id)
        ctx = _context(
            request,
            viewer,
            "Knowledge graph",
            entities=shown,
            q=q,
            depth=hops,
            max_depth=_GRAPH_MAX_DEPTH,
            centre=centre,
            drawing=drawing,
            edge_font=EDGE_FONT,
            node_font=NODE_FONT,
            line_height=LINE_HEIGHT,
            pager=_pager(request, number, more),
            notice="The entity was saved." if saved and centre is not None else None,
        )
        return render("graph.html", **ctx)

    # -- webhooks (read only: the admin routes manage them) ------------------------

    @r.get("/webhooks")
    @viewed
    async def webhooks(request: Request, viewer: Viewer) -> Response:
        if viewer.user_id is not None:
            raise _Refused("Webhooks are the tenant's: log in without a user to see them.")
        registry: Webhooks = request.app.state.webhooks
        found = await registry.list(viewer.tenant)
        return render("webhooks.html", **_context(request, viewer, "Webhooks", webhooks=found))

    # -- forget a user -------------------------------------------------------------

    @r.get("/forget")
    @viewed
    async def forget_form(request: Request, viewer: Viewer) -> Response:
        return render("forget.html", **_context(request, viewer, "Forget a user"))

    @r.get("/forget/confirm")
    @viewed
    async def forget_confirm(request: Request, viewer: Viewer, user: str = "") -> Response:
        target = user  # exactly as typed: "bob " is another user than "bob"
        if not target:
            raise InvalidInput("name the user to forget", field="user")
        root = _root(request)
        ctx = _context(
            request,
            viewer,
            "Forget a user",
            warning=f"This erases everything derived from user {target} in tenant "
            f"{viewer.tenant}: threads, entries, facts, documents, snapshots and "
            "summaries. It cannot be undone.",
            details=[],
            action=f"{root}/forget",
            hidden=[("user", target)],
            expected=target,
            button="Forget this user",
            cancel=f"{root}/forget",
        )
        return render("confirm.html", **ctx)

    @r.post("/forget")
    @viewed
    async def forget(request: Request, viewer: Viewer) -> Response:
        # The user exactly as typed, as on the confirmation page.
        _, target = await _checked(request, "erased", field="user")
        gone = await viewer.memory.forget_user(target)
        ctx = _context(
            request,
            viewer,
            "User forgotten",
            body=f"User {target} was forgotten: {gone} records erased.",
        )
        return render("message.html", **ctx)

    return r


def _refused(request: Request, viewer: Viewer, message: str) -> Response:
    ctx = _context(request, viewer, "Nothing was changed", body=message)
    return render("message.html", 403, **ctx)
