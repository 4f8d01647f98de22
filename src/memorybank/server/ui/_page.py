"""What every inspector page goes through: the session (log in, log out) and its caller,
the page frame, paging, links, and the typed-id confirmation of a change.

A page is declared on a ``Pages`` router (``@r.page(path)``, ``@r.form(path)`` for a
form's ``POST``) as ``route(viewer, **query)``: the ``Viewer`` is the request and its
caller, resolved from the session cookie through the server's own dependencies
(``memorybank.server.deps``: the same key check, tenant and ``X-User-Id`` scoping as
``Authorization: Bearer``), and a library error becomes an HTML error page. ``show``
renders a template inside the frame (navigation, viewer, notice, error, pager).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from memorybank.errors import InvalidInput, MemoryBankError
from memorybank.memory._async.memory import AsyncMemory
from memorybank.server import deps
from memorybank.server.errors import ApiError, public_error, request_id
from memorybank.server.routes import found
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
from memorybank.stores.contract._async.store import UNSET, Unset

#: Where the inspector is mounted.
PREFIX = "/ui"
#: Rows per page of every listing.
PAGE_SIZE = 50
#: The deepest page a listing goes to.
MAX_PAGE = 10_000
_KNOWN = 500  # recent threads read to suggest users or agents in a filter
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

T = TypeVar("T")
Route = Callable[..., Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Viewer:
    """One page's request and its logged-in caller: tenant, viewed-as user, CSRF token,
    memory handle."""

    request: Request
    tenant: str
    user_id: str | None
    csrf: str
    memory: AsyncMemory
    is_admin: bool = False

    def user_filter(self, user: str) -> str | Unset:
        """A page's user filter: none when viewing as a user (the handle is hers), else the
        field as typed (empty means "no filter"; ids compare exactly: ``"bob "`` is not
        ``"bob"``)."""
        return UNSET if self.user_id or not user else user


class Refused(Exception):
    """A write the page refuses (403, nothing changed): the message says why."""


def root(request: Request) -> str:
    """The inspector's own path (under the app's root path)."""
    return str(request.scope.get("root_path", "")) + PREFIX


def link(at: Request | Viewer, path: str, **query: str) -> str:
    """The inspector page ``path`` with ``query`` (values escaped whole: ids may hold
    ``/``, ``?``, ``&``, ...)."""
    params = "&".join(f"{name}={quote(value, safe='')}" for name, value in query.items())
    return root(_request(at)) + path + (f"?{params}" if params else "")


def _request(at: Request | Viewer) -> Request:
    return at.request if isinstance(at, Viewer) else at


def go(at: Request | Viewer, path: str, **query: str) -> RedirectResponse:
    """See other (``link(at, path, **query)``): where a form's ``POST`` leads."""
    return RedirectResponse(link(at, path, **query), status_code=303)


def show(
    at: Request | Viewer, template: str, title: str, *, status_code: int = 200, **extra: Any
) -> Response:
    """``template`` rendered in the page frame (navigation, the viewer if logged in) with
    ``extra``."""
    request = _request(at)
    viewer = at if isinstance(at, Viewer) else None
    path = request.url.path.removeprefix(root(request))
    active = next((href for href, _, section in _NAV if path.startswith(section)), "")
    context: dict[str, Any] = {
        "root": root(request),
        "nav": _NAV,
        "viewer": viewer,
        "title": title,
        "active": active,
        "notice": None,
        "error": None,
        "pager": None,
    }
    context.update(extra)
    return render(template, status_code, **context)


def _to_login(request: Request, *, expired: bool = False) -> Response:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    response = go(request, "/login", next=here, **({"expired": "1"} if expired else {}))
    if expired:
        clear_session(response, request, root(request))
    return response


async def authenticate(
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
        who = await authenticate(
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
    return Viewer(request, who.tenant, who.user_id, csrf, memory, is_admin=who.is_admin)


def _error_page(at: Request | Viewer, error: MemoryBankError) -> Response:
    # A store failure shows the API's fixed sentence and the request id, never the
    # driver's words (host, port, user): those go to the log.
    request = _request(at)
    status, code, message, headers = public_error(request.scope, error)
    title = {404: "Not found", 403: "Forbidden", 422: "Invalid input"}.get(status, "Error")
    field = getattr(error, "field", None)
    if status >= 500:
        body = f"{message} ({code}, request {request_id(request)})"
    else:
        body = f"{message} (field: {field})" if field else message
    response = show(at, "message.html", title, status_code=status, body=body)
    response.headers.update(headers or {})
    return response


def _viewed(route: Route) -> Route:
    """The page ``route(viewer, **query)`` as an endpoint ``(request, **query)``: it
    authenticates, runs ``route``, and turns a library error into an HTML error page (a
    ``Refused`` write into the refusal page)."""
    signature = inspect.signature(route)

    @functools.wraps(route)
    async def page(request: Request, **query: Any) -> Response:
        try:
            viewer = await _viewer(request)
        except MemoryBankError as exc:  # the store, asked about the key, failed
            return _error_page(request, exc)
        if isinstance(viewer, Response):
            return viewer
        try:
            return await route(viewer, **query)
        except MemoryBankError as exc:
            return _error_page(viewer, exc)
        except Refused as exc:
            title = "Nothing was changed"
            return show(viewer, "message.html", title, status_code=403, body=str(exc))

    first = inspect.Parameter(
        "request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request
    )
    kept = [p for p in signature.parameters.values() if p.name != "viewer"]
    page.__signature__ = signature.replace(parameters=[first, *kept])  # type: ignore[attr-defined]
    return page


class Pages(APIRouter):
    """The inspector's router: its pages need a logged-in viewer (see ``_viewed``)."""

    def page(self, path: str) -> Callable[[Route], Route]:
        """Declare the ``GET`` page ``route(viewer, **query)`` at ``path``."""
        return lambda route: self.get(path)(_viewed(route))

    def form(self, path: str) -> Callable[[Route], Route]:
        """Declare the ``POST`` of a form, ``route(viewer)``, at ``path``."""
        return lambda route: self.post(path)(_viewed(route))


def number(value: str | None, default: int, low: int, high: int) -> int:
    """A lenient integer query parameter: out-of-range or garbage falls back or clamps."""
    try:
        n = int(value) if value not in (None, "") else default
    except ValueError:
        return default
    return min(max(n, low), high)


def paged(viewer: Viewer, rows: Sequence[T], page: int) -> tuple[list[T], dict[str, Any]]:
    """Page ``page`` of ``rows`` (``PAGE_SIZE`` a page), and its pager."""
    start = (page - 1) * PAGE_SIZE
    more = len(rows) > page * PAGE_SIZE
    return list(rows[start : start + PAGE_SIZE]), pager(viewer, page, more)


def pager(viewer: Viewer, page: int, has_next: bool) -> dict[str, Any]:
    """The links to the pages before and after ``page``."""

    def to(n: int) -> str:
        url = viewer.request.url.include_query_params(page=n)
        return f"{url.path}?{url.query}"

    return {
        "page": page,
        "previous": to(page - 1) if page > 1 else None,
        "next": to(page + 1) if has_next else None,
    }


async def listing(
    viewer: Viewer,
    title: str,
    template: str,
    page: str,
    rows: Callable[..., Awaitable[Sequence[object]]],
    *,
    deepest: int = MAX_PAGE,
    **extra: Any,
) -> Response:
    """The ``page`` asked for (at most ``deepest``) of ``rows(limit=...)`` (the rows that
    page needs, and one to tell if a next follows), as ``rows`` in ``template``."""
    n = number(page, 1, 1, deepest)
    shown, pages = paged(viewer, await rows(limit=n * PAGE_SIZE + 1), n)
    return show(viewer, template, title, rows=shown, pager=pages, **extra)


async def known(memory: AsyncMemory, field: Literal["user_id", "agent_id"]) -> list[str]:
    """The users or agents with recent threads, to suggest in a filter."""
    recent = await memory.threads.list(limit=_KNOWN)
    return sorted({value for t in recent if (value := getattr(t, field))})


def required(value: str | None) -> str:
    """The ``id`` query or form field (ids go in the query: they may hold ``/``, ``?``, ...)."""
    if not value:
        raise InvalidInput("id is required", field="id")
    return value


async def one(what: str, id: str, get: Callable[[str], Awaitable[T | None]]) -> T:
    """The ``what`` (e.g. ``"fact"``) of the required ``id``, read by ``get``; else 404."""
    return found(await get(required(id)), f"{what} {id!r}")


async def checked(
    viewer: Viewer, nothing_was: str = "changed", field: str = "id"
) -> tuple[dict[str, str], str]:
    """The form of a confirmed change and its target (the form's ``field``: an id is
    required), once the CSRF token and the typed target match; else ``Refused``
    (nothing was ``nothing_was``)."""
    form = await read_form(viewer.request)
    target = required(form.get("id")) if field == "id" else form.get(field, "")
    if not check_csrf(viewer.request, form):
        raise Refused("The form expired or came from another page.")
    # The typed confirmation is the target exactly (no trimming: ids are exact).
    if not target or form.get("confirm", "") != target:
        raise Refused(f"The typed id did not match; nothing was {nothing_was}.")
    return form, target


def confirm(viewer: Viewer, title: str, target: str, field: str = "id", **page: Any) -> Response:
    """The page asking for ``target`` typed again (sent as ``field``) before a change:
    ``page`` gives its ``warning``, ``details``, ``action``, ``button`` and ``cancel``."""
    hidden = [(field, target)]
    return show(viewer, "confirm.html", title, hidden=hidden, expected=target, **page)


def _safe_next(request: Request, target: str) -> str:
    """Where to go after login, under the inspector's root: only one of its pages (no open
    redirect)."""
    home = root(request)
    if target.startswith(home + "/") and "//" not in target and "\\" not in target:
        return target.removeprefix(home)
    return "/threads"


def _login_page(
    request: Request, csrf: str, next: str, error: str | None, status: int = 200
) -> Response:
    """The login form (``error`` above it), setting the CSRF cookie it echoes."""
    context = {"csrf": csrf, "next": next, "error": error}
    response = show(request, "login.html", "Log in", status_code=status, **context)
    set_cookie(response, request, root(request), CSRF_COOKIE, csrf)
    return response


def register(r: Pages) -> None:
    """Add the inspector's own files, its home and the session's log in and log out to ``r``."""

    @r.get("/static/{name}")
    async def static(name: str) -> Response:
        return static_file(name)

    @r.get("")
    @r.get("/")
    async def home(request: Request) -> Response:
        return go(request, "/threads")

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
            await authenticate(request, key, user, tenant)
        except ApiError:
            return again("This key is not valid (unknown or revoked).", 401)
        except InvalidInput as exc:
            return again(f"{exc} (field: {exc.field})", 422)
        response = go(request, _safe_next(request, target))
        home = root(request)
        set_cookie(response, request, home, KEY_COOKIE, key)
        for name, value in ((USER_COOKIE, user), (TENANT_COOKIE, tenant)):
            if value is None:
                response.delete_cookie(name, path=home, httponly=True, samesite="strict")
            else:
                set_cookie(response, request, home, name, value)
        # A new token per session: one seen before login is worthless after it.
        set_cookie(response, request, home, CSRF_COOKIE, new_csrf_token())
        return response

    @r.post("/logout")
    async def logout(request: Request) -> Response:
        form = await read_form(request)
        if not check_csrf(request, form):
            body = "The form expired or came from another page; you are still logged in."
            return show(request, "message.html", "Not logged out", status_code=403, body=body)
        response = go(request, "/login")
        clear_session(response, request, root(request))
        return response
