"""Templates, filters, static files and the security headers of every inspector page.

Everything the page shows passes through Jinja2 with autoescaping on for every
template, so stored content (messages, tool arguments, metadata) is text,
never markup. The stylesheet and the script are read from the package once:
nothing is fetched at run time, and the Content-Security-Policy allows the
page to load only its own files.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from fastapi.responses import HTMLResponse, Response

__all__ = ["SECURITY_HEADERS", "render", "static_file"]

#: Sent with every inspector response. ``form-action 'self'`` keeps a
#: stored-content injection from posting the page's forms elsewhere.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
        " form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not "no-referrer": with it, browsers send ``Origin: null`` on the page's own POSTs.
    "Referrer-Policy": "same-origin",
}
# Pages show a tenant's private data: never stored by the browser or a proxy.
_PAGE_HEADERS = {**SECURITY_HEADERS, "Cache-Control": "no-store"}
_STATIC = {
    "inspector.css": "text/css; charset=utf-8",
    "inspector.js": "text/javascript",
    "favicon.ico": "image/x-icon",
}


def _when(value: datetime | None) -> str:
    return "—" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _pretty_json_text(text: str) -> str:
    """Tool-call arguments are the model's JSON text: indented when it parses, else verbatim."""
    try:
        return _pretty(json.loads(text))
    except ValueError:
        return text


def _shorten(value: str | None, limit: int = 200) -> str:
    if value is None:
        return "—"
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _media_parts(extra: Any) -> list[dict[str, str | None]]:
    """The content parts of a message that are not text (``image_url``, ``input_audio``,
    ``file``, ...), kept whole in ``entry.extra["content"]``: for each, its type, what to
    show, and a link (an ``http(s)`` image URL; a ``data:`` URL is described, not linked:
    the page loads nothing from elsewhere)."""
    parts = extra.get("content") if isinstance(extra, dict) else None
    shown: list[dict[str, str | None]] = []
    for part in parts if isinstance(parts, list) else ():
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str) or kind in ("text", "input_text"):
            continue
        body = part.get(kind)
        # chat: {"type": "image_url", "image_url": {"url", "detail"}};
        # Responses: {"type": "input_image", "image_url": "...", "detail"}
        image = body if kind == "image_url" else part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if not isinstance(url, str):
            what = body if body is not None else part
            shown.append({"type": kind, "text": _shorten(_compact(what), 160), "href": None})
        elif url.startswith("data:"):
            media = url[5:].split(";", 1)[0].split(",", 1)[0] or "data"
            text = f"{media}, {len(url)} characters inline"
            shown.append({"type": kind, "text": text, "href": None})
        else:
            detail = (image if isinstance(image, dict) else part).get("detail")
            text = _shorten(url, 300) + (f" (detail: {detail})" if detail else "")
            link = url if url.startswith(("https://", "http://")) else None
            shown.append({"type": kind, "text": text, "href": link})
    return shown


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("memorybank.server.ui", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=_when,
        pretty=_pretty,
        compact=_compact,
        pretty_json_text=_pretty_json_text,
        shorten=_shorten,
        media_parts=_media_parts,
    )
    return env


def render(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The page ``template`` rendered with ``context``, with the security headers."""
    html = _environment().get_template(template).render(**context)
    return HTMLResponse(html, status_code=status_code, headers=_PAGE_HEADERS)


@cache
def _read_static(name: str) -> bytes:
    return resources.files("memorybank.server.ui").joinpath("static", name).read_bytes()


def static_file(name: str) -> Response:
    """One of the inspector's own files (404 for any other name)."""
    media_type = _STATIC.get(name)
    if media_type is None:
        return Response(status_code=404, headers=SECURITY_HEADERS)
    headers = {**SECURITY_HEADERS, "Cache-Control": "public, max-age=300"}
    return Response(_read_static(name), media_type=media_type, headers=headers)
