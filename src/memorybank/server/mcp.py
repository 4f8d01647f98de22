"""``/mcp``: the MCP server (streamable HTTP) inside ``memorybank serve``'s app.

Same keys as the REST routes: ``Authorization: Bearer <key>`` where the key is
a tenant's API key (``memorybank keys create``); the SDK's token verifier
(``KeyVerifier``) maps it to its tenant, and every tool call acts on
``root.tenant(T).scoped(user_id=U, agent_id=A)`` where ``X-User-Id`` and
``X-Agent-Id`` name ``U`` and ``A``. One scope rule with the stdio server
(``memorybank mcp --user U --agent A``): a principal left out is ``None``,
shared records only on that axis, never the whole tenant (a model-facing surface
is never the tenant's trusted backend); a tool refused a user's thread for that
reason says to send ``X-User-Id`` (``--user`` on stdio).
Without a key, or with a bad or revoked one, the answer is 401 in the one error
shape of every route (``{code, message, request_id}``, code ``unauthorized``)
with the ``WWW-Authenticate: Bearer error="invalid_token"`` challenge MCP
clients read; the admin key does not open ``/mcp`` (it acts in no tenant).

The endpoint is stateless (``stateless_http``, JSON responses): any worker
process answers any request, as for the REST routes. DNS-rebinding protection
(a browser defence for unauthenticated local servers) is off here, since every
request must carry a key.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from memorybank.errors import InvalidInput
from memorybank.mcp.server import HTTP_HEADERS, build_server
from memorybank.memory._async.memory import AsyncMemory
from memorybank.server.deps import bearer, header_id
from memorybank.server.errors import MISSING_KEY, unauthorized
from memorybank.server.keys import KeyRing
from memorybank.server.raw_headers import PADDED

__all__ = ["MCP_PATH", "KeyVerifier", "McpMount"]

MCP_PATH = "/mcp"
_TENANT_CLAIM = "memorybank_tenant"
#: The challenge of a refused ``/mcp`` request: the one MCP clients read (the SDK's).
_CHALLENGE = 'Bearer error="invalid_token", error_description="Authentication required"'


class KeyVerifier(TokenVerifier):
    """The SDK's token verifier on the service's ``KeyRing``: a live key's tenant, or ``None``."""

    def __init__(self, keys: Callable[[], KeyRing]) -> None:
        self._keys = keys

    async def verify_token(self, token: str) -> AccessToken | None:
        info = await self._keys().verify(token)
        if info is None:
            return None
        return AccessToken(
            token=token, client_id=info.id, scopes=[], claims={_TENANT_CLAIM: info.tenant}
        )


def _header(ctx: Context, name: str) -> str | None:
    headers = ctx.headers
    if headers is not None and name == "X-User-Id" and headers.get(PADDED) is not None:
        # sent with whitespace around the id (memorybank.server.raw_headers): never acted on
        # as another id, and never as no user at all (the whole tenant)
        raise InvalidInput("X-User-Id has whitespace around the id", field="X-User-Id")
    return None if headers is None else header_id(headers, name)


class McpMount:
    """The ASGI app answering ``MCP_PATH``: the SDK's streamable-HTTP app for ``root()``'s
    tenants, authenticated by ``keys()`` (both read per request).

    ``async with mount.running():`` belongs in the host app's lifespan (a mounted
    app's own lifespan never runs); each run builds a fresh SDK app, so the host's
    lifespan may be entered more than once.
    """

    def __init__(self, root: Callable[[], AsyncMemory], keys: Callable[[], KeyRing]) -> None:
        def handle_for(ctx: Context) -> AsyncMemory:
            token = get_access_token()
            claims = None if token is None else token.claims
            tenant = None if claims is None else claims.get(_TENANT_CLAIM)
            if not isinstance(tenant, str):  # pragma: no cover - the auth middleware refuses
                raise ToolError("unauthorized: no API key")
            # The stdio server's rule (create_server): a principal left out is "shared
            # records only" on its axis, never the whole tenant.
            user, agent = _header(ctx, "X-User-Id"), _header(ctx, "X-Agent-Id")
            return root().tenant(tenant).scoped(user_id=user, agent_id=agent)

        self.server: MCPServer[Any] = build_server(
            handle_for,
            token_verifier=KeyVerifier(keys),
            # The SDK wants an issuer for its OAuth metadata; API keys have none, and
            # with no resource_server_url no metadata route is served.
            auth=AuthSettings(issuer_url="http://localhost", resource_server_url=None),  # type: ignore[arg-type]
            principals=HTTP_HEADERS,
        )
        self._app: ASGIApp | None = None
        self._keys = keys

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve requests until the block exits.

        The SDK's session manager holds a task group, which must be entered and
        exited by one task; a host's lifespan may start and stop in two (test
        fixtures do), so the manager runs in a task of its own.
        """
        app = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = self.server.session_manager
        started, stop = asyncio.Event(), asyncio.Event()

        async def serve() -> None:
            async with manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(serve())
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():  # it failed to start
            waiting.cancel()
            task.result()
        self._app = app
        try:
            yield
        finally:
            self._app = None
            stop.set()
            await task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:  # pragma: no cover - only outside the host's lifespan
            raise RuntimeError("the /mcp app runs inside the host app's lifespan")
        if scope["type"] == "http":
            # The key is checked here first, so a store failing while it is read raises
            # into the host app's handlers (503 ``store_unavailable``, the JSON shape of
            # every route) and not inside the SDK, which answers a plain-text 500. The
            # SDK's own check that follows is answered from the key ring's caches.
            # A request without a live key is refused here too, in the one error shape
            # of every route (the SDK's own refusal is ``{"error": "invalid_token"}``).
            token = bearer(Headers(scope=scope).get("authorization"))
            if token is None:
                raise unauthorized(MISSING_KEY, _CHALLENGE)
            peer = scope.get("client")
            info = await self._keys().verify(token, client=None if peer is None else str(peer[0]))
            if info is None:
                raise unauthorized(
                    "invalid or revoked API key (/mcp takes a tenant's API key; the admin"
                    " key acts in no tenant)",
                    _CHALLENGE,
                )
        await self._app(scope, receive, send)
