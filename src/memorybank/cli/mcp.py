"""``memorybank mcp``: the MCP server (``memorybank.mcp.server``) on a store.

Registered on ``memorybank.cli.app`` by ``register``. Over stdio (the default,
what desktop clients launch) nothing but the protocol is written to standard
output; over HTTP it serves streamable HTTP at ``http://HOST:PORT/mcp``.
"""

from __future__ import annotations

import enum
from typing import Annotated

import typer

import memorybank
from memorybank.cli.common import (
    EmbedderOption,
    TenantOption,
    UrlOption,
    _errors,
    chosen_embedder,
)
from memorybank.memory._sync.memory import DEFAULT_TENANT

__all__ = ["mcp", "register"]


class Transport(enum.StrEnum):
    """MCP transport."""

    stdio = "stdio"
    http = "http"


def mcp(
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
    transport: Annotated[
        Transport, typer.Option("--transport", help="stdio (desktop clients) or streamable HTTP.")
    ] = Transport.stdio,
    user_id: Annotated[
        str | None,
        typer.Option("--user", help="Act for this user (default: shared records only)."),
    ] = None,
    agent_id: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Act for this agent (default: shared records only; get_context needs one).",
        ),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="HTTP only: interface.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP only: TCP port.")] = 8000,
    embedder: EmbedderOption = None,
) -> None:
    """Serve memory to MCP clients: the reference memory server's nine graph tools plus
    remember, recall, history, get_context, add_fact, list_facts and forget.

    The tools act for --user/--agent only (their own records and shared
    ones). With --embedder, what the tools write is embedded and recall is
    hybrid (keyword plus semantic), as under `memorybank serve`. With
    --transport http the endpoint is http://HOST:PORT/mcp, without
    authentication: keep it on loopback, or use `memorybank serve`, whose /mcp
    takes the service's API keys.
    """
    import importlib.util

    if importlib.util.find_spec("mcp") is None:  # pragma: no cover - the extra is missing
        typer.echo("memorybank mcp needs the mcp extra: pip install 'memorybank[mcp]'", err=True)
        raise typer.Exit(1)
    chosen = chosen_embedder(embedder)  # a bad name fails here, before serving
    import anyio

    from memorybank.mcp.server import create_server

    async def run() -> None:
        async with memorybank.AsyncMemory(url, tenant_id=tenant, embedder=chosen) as memory:
            server = create_server(memory, user_id=user_id, agent_id=agent_id)
            if transport is Transport.stdio:
                await server.run_stdio_async()
            else:
                await server.run_streamable_http_async(host=host, port=port)

    with _errors():
        anyio.run(run)


def register(app: typer.Typer) -> None:
    """Add ``mcp`` to ``app``."""
    app.command("mcp")(mcp)
