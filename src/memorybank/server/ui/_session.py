"""The inspector's browser session: the API key in a cookie, and the CSRF token.

The server is stateless (any number of workers on one store), so the session
lives in three cookies, all ``HttpOnly`` (no script reads them), ``SameSite=
Strict`` (no other site's page sends them) and ``Secure`` over HTTPS, scoped to
the inspector's path:

* ``mb_ui_key``: the API key itself; every request re-checks it exactly as the
  ``Authorization: Bearer`` header is checked, so a revoked key logs the
  browser out on its next click;
* ``mb_ui_user``: the optional user to view as (the ``X-User-Id`` of the API);
* ``mb_ui_tenant``: the tenant the admin key views (its ``X-Tenant-Id``);
* ``mb_ui_csrf``: a random token, new at each login, that every POST form
  echoes in a hidden field (double submit: another site can neither read the
  cookie nor, with ``SameSite=Strict``, make the browser send it).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from urllib.parse import parse_qs, urlsplit

from fastapi import Request
from fastapi.responses import Response

__all__ = [
    "CSRF_COOKIE",
    "KEY_COOKIE",
    "TENANT_COOKIE",
    "USER_COOKIE",
    "check_csrf",
    "clear_session",
    "new_csrf_token",
    "read_form",
    "set_cookie",
]

KEY_COOKIE = "mb_ui_key"
USER_COOKIE = "mb_ui_user"
TENANT_COOKIE = "mb_ui_tenant"
CSRF_COOKIE = "mb_ui_csrf"


def new_csrf_token() -> str:
    """A fresh unguessable token (256 bits)."""
    return secrets.token_urlsafe(32)


def set_cookie(response: Response, request: Request, path: str, name: str, value: str) -> None:
    """Set one session cookie (browser-session lifetime, HttpOnly, SameSite=Strict)."""
    response.set_cookie(
        name,
        value,
        path=path,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def clear_session(response: Response, request: Request, path: str) -> None:
    """Drop the key, the user and the CSRF token from the browser."""
    secure = request.url.scheme == "https"
    for name in (KEY_COOKIE, USER_COOKIE, TENANT_COOKIE, CSRF_COOKIE):
        response.delete_cookie(name, path=path, httponly=True, samesite="strict", secure=secure)


async def read_form(request: Request) -> dict[str, str]:
    """The urlencoded body of a form POST (first value of each field).

    The inspector's forms are plain ``application/x-www-form-urlencoded``;
    parsing them here needs no multipart library. The body size is bounded by
    the server's request size limit.
    """
    body = (await request.body()).decode("utf-8", errors="replace")
    return {name: values[0] for name, values in parse_qs(body, keep_blank_values=True).items()}


def check_csrf(request: Request, form: Mapping[str, str]) -> bool:
    """Whether a POST carries the session's CSRF token and comes from this origin."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    sent = form.get("csrf", "")
    if not cookie or not sent or not hmac.compare_digest(cookie.encode(), sent.encode()):
        return False
    # Belt and braces beside the token: a browser names where a POST comes from.
    if request.headers.get("sec-fetch-site", "same-origin") != "same-origin":
        return False
    origin = request.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == request.headers.get("host", "")
