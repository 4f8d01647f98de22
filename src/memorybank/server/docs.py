"""``/docs`` (Swagger UI) and ``/redoc``: the API's documentation, served whole by the server.

The scripts, styles and icon are the copies the ``fastapi-offline`` package
ships, served under ``DOCS_ASSETS_PATH``; no page loads anything from another
origin. ReDoc's bundle shows a vendor logo from its CDN: the bundle is served
with that one address replaced by an empty image (the logo then hides
itself), and a Content-Security-Policy holds both pages to this origin.
"""

from __future__ import annotations

import functools
from importlib.resources import files

from fastapi import FastAPI, Request, Response
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse

__all__ = ["DOCS_ASSETS_PATH", "DOCS_POLICY", "install_docs"]

#: Where ``/docs`` and ``/redoc`` load their scripts, styles and icon from.
DOCS_ASSETS_PATH = "/docs/assets"
#: Only this server's own assets (inline scripts: the pages' start-up code; ``blob:``:
#: ReDoc's worker and the schema download link).
DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline';"
    " img-src 'self' data: blob:; worker-src 'self' blob:; font-src 'self' data:;"
    " connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


_REDOC_JS = "redoc.standalone.js"
#: What ReDoc's bundle would fetch from elsewhere (its sidebar logo), and what replaces it.
_REDOC_REMOTE = (b'"https://cdn.redoc.ly/redoc/logo-mini.svg"', b'"data:,"')


@functools.cache
def _redoc_bundle() -> bytes:
    """ReDoc's bundle, its one remote address replaced (read once per process)."""
    remote, local = _REDOC_REMOTE
    return (files("fastapi_offline") / "static" / _REDOC_JS).read_bytes().replace(remote, local)


def install_docs(app: FastAPI, *, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Serve the documentation pages of ``app`` (built with ``docs_url=None, redoc_url=None``)."""
    assets = files("fastapi_offline") / "static"

    @app.get(f"{DOCS_ASSETS_PATH}/{_REDOC_JS}", include_in_schema=False)
    async def redoc_bundle() -> Response:
        return Response(_redoc_bundle(), media_type="text/javascript")

    app.mount(DOCS_ASSETS_PATH, StaticFiles(directory=str(assets)), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    def own(request: Request, path: str) -> str:
        return f"{request.scope.get('root_path', '')}{path}"

    def answer(page: HTMLResponse) -> HTMLResponse:
        page.headers["Content-Security-Policy"] = DOCS_POLICY
        return page

    @app.get(docs_url, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        return answer(
            get_swagger_ui_html(
                openapi_url=own(request, openapi_url),
                title=f"{app.title} - Swagger UI",
                swagger_js_url=own(request, f"{DOCS_ASSETS_PATH}/swagger-ui-bundle.js"),
                swagger_css_url=own(request, f"{DOCS_ASSETS_PATH}/swagger-ui.css"),
                swagger_favicon_url=own(request, f"{DOCS_ASSETS_PATH}/favicon.png"),
                # "none": no validity badge fetched from swagger.io.
                swagger_ui_parameters={"validatorUrl": "none"},
            )
        )

    @app.get(redoc_url, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        return answer(
            get_redoc_html(
                openapi_url=own(request, openapi_url),
                title=f"{app.title} - ReDoc",
                redoc_js_url=own(request, f"{DOCS_ASSETS_PATH}/{_REDOC_JS}"),
                redoc_favicon_url=own(request, f"{DOCS_ASSETS_PATH}/favicon.png"),
                with_google_fonts=False,
            )
        )
