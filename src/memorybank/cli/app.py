"""The ``memorybank`` command: a thin shell over ``Memory`` (parse, call, render).

::

    memorybank demo                      a scripted agent conversation, explained
    memorybank threads [--user U] ...    list threads, most recently updated first
    memorybank show THREAD [--last N]    the entries of a thread's branch
    memorybank serve [--host H --port P] the HTTP API (extra ``server``)
    memorybank keys create --tenant T    a new API key (printed alone on the last line)
    memorybank keys list | revoke ID     the API keys and their state
    memorybank webhooks create | list | pause | resume | delete   webhook endpoints
    memorybank mcp [--transport http]    the MCP server (extra ``mcp``)

Every command takes ``--url`` (default ``$MEMORYBANK_URL``, else the embedded
``sqlite:///./memorybank.db``, the same rule as ``Memory()``) and ``--tenant``.
A ``MemoryBankError`` becomes one red line on stderr naming its code, and exit
status 1.
"""

from __future__ import annotations

import enum
import errno
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

import memorybank
from memorybank import __version__
from memorybank.cli import events as _cli_events
from memorybank.cli import importers as _cli_importers
from memorybank.cli import maintain as _cli_maintain
from memorybank.cli import mcp as _cli_mcp
from memorybank.cli import port as _cli_port
from memorybank.cli import read as _cli_read
from memorybank.cli import runs as _cli_runs
from memorybank.cli.common import (
    EmbedderOption,
    JudgeModelOption,
    JudgeUrlOption,
    TenantOption,
    UrlOption,
    _console,
    _errors,
    chosen_embedder,
    or_unset,
    resolve_url,
    shown_url,
)
from memorybank.cli.flags import FlagGroup, use_flag_classes
from memorybank.cli.render import entries_table, format_time
from memorybank.embeddings.base import Embedder
from memorybank.embeddings.named import EMBEDDER_ENV
from memorybank.embeddings.status import EMBED_ENV, embed_mode
from memorybank.errors import ConfigurationError, NotFound
from memorybank.memory._sync.memory import DEFAULT_TENANT, Memory
from memorybank.records import Thread

__all__ = ["app", "main"]


T = TypeVar("T")

app = typer.Typer(
    name="memorybank",
    cls=FlagGroup,
    help="Memory for LLM agents: inspect threads and entries, or run the demo.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class Status(enum.StrEnum):
    """Thread status filter."""

    active = "active"
    archived = "archived"


def threads_table(threads: Sequence[Thread], *, title: str | None = None) -> Table:
    """Threads as a table: id, user, agent, title, status, branch, updated."""
    table = Table(title=title, title_justify="left")
    table.add_column("thread", style="cyan", no_wrap=True)
    table.add_column("user", no_wrap=True)
    table.add_column("agent", no_wrap=True)
    table.add_column("title", overflow="fold", ratio=1)
    table.add_column("status", no_wrap=True)
    table.add_column("branch", no_wrap=True)
    table.add_column("updated (UTC)", style="dim", no_wrap=True)
    for thread in threads:
        table.add_row(
            Text(thread.id),
            Text(thread.user_id or "-"),
            Text(thread.agent_id or "-"),
            Text(thread.title or ""),
            thread.status,
            Text(thread.current_branch),
            format_time(thread.updated_at),
        )
    return table


THREADS = _cli_read.Listing("threads", draw=threads_table)


# -- plumbing -------------------------------------------------------------------


def _version(value: bool) -> None:
    if value:
        typer.echo(f"memorybank {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Memory for LLM agents: inspect threads and entries, or run the demo."""


# -- commands -------------------------------------------------------------------


@app.command()
def demo(url: UrlOption = None, tenant: TenantOption = DEFAULT_TENANT) -> None:
    """Run a scripted agent conversation and explain what memorybank stored.

    Shows stored entries, a history window (tool-call pairing), a token-budgeted
    window, branches, rewind, working memory and fail-closed thread ownership.
    Every run uses a fresh thread, so it can be re-run on the same store.
    """
    from memorybank.cli.demo import DemoClock, run_demo

    console = _console()
    with _errors():
        clock = DemoClock()
        with Memory(url, clock=clock, tenant_id=tenant) as memory:
            thread_id = run_demo(memory, console, clock=clock)
        again = f"memorybank show {thread_id}"
        if url:
            again += f" --url {url}"
        if tenant != DEFAULT_TENANT:
            again += f" --tenant {tenant}"
        console.print()
        console.print(
            Text.assemble(
                "Thread ",
                (thread_id, "cyan"),
                " is stored. Look at it again with: ",
                (again, "bold"),
            ),
            soft_wrap=True,
        )


@app.command("threads")
def threads_command(
    user: Annotated[
        str | None, typer.Option("--user", help="Only threads owned by this user.")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only threads of this agent.")
    ] = None,
    status: Annotated[
        Status | None, typer.Option("--status", help="Only active or archived threads.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="Show at most this many threads.")
    ] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """List threads, most recently updated first."""
    with _errors(), _cli_read.open_existing(url, tenant) as memory:
        threads = memory.threads.list(
            user_id=or_unset(user),
            agent_id=or_unset(agent),
            status=None if status is None else status.value,
            limit=limit,
        )
        THREADS.print(memory, threads, as_json=as_json, url=url, tenant=tenant)


@app.command()
def show(
    thread_id: _cli_read.ThreadArgument,
    last: Annotated[int, typer.Option("--last", min=1, help="Show the newest N entries.")] = 20,
    branch: Annotated[
        str | None,
        typer.Option("--branch", help="Branch to show. Default: the thread's current branch."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Show a thread's entries (newest N, oldest first) as a table.

    Entries are shown as stored: a tool result whose call falls before the window
    is still listed (provider-ready windows drop it; see `memory.history`).
    """

    console = _console()
    with _errors(), _cli_read.open_existing(url, tenant) as memory:
        found = memory.threads.get(thread_id)
        if found is None:
            raise NotFound(f"thread {thread_id!r} not found")
        name = found.current_branch if branch is None else branch
        branches = [b.name for b in memory.branches.list(thread_id)]
        if name not in branches:
            raise NotFound(f"branch {name!r} not found in thread {thread_id!r}")
        total = memory.entries.count(thread_id, branch=name)
        # The store's raw page: an inspection shows what is stored, pairing rule aside.
        _, entries = memory.store.entry_list(memory.tenant_id, thread_id, branch=name, limit=last)
        if as_json:
            shown = {"thread": found, "branch": name, "total": total, "entries": entries}
            _cli_read.emit_json(shown)
            return
        header = Text.assemble(
            ("thread ", "bold"),
            (found.id, "bold cyan"),
            f"  title: {found.title or '-'}  user: {found.user_id or '-'}"
            f"  agent: {found.agent_id or '-'}  status: {found.status}",
        )
        console.print(header, soft_wrap=True)
        others = ", ".join(b for b in branches if b != name)
        console.print(
            Text(
                f"branch {name}"
                + (" (current)" if name == found.current_branch else "")
                + (f"  other branches: {others}" if others else "")
                + f"  showing {len(entries)} of {total} entries"
            ),
            soft_wrap=True,
        )
        if entries:
            console.print(entries_table(entries))


# -- the service ----------------------------------------------------------------

keys_app = typer.Typer(help="API keys of the HTTP server (stored hashed in the store).")
app.add_typer(keys_app, name="keys")


def _on_store(url: str | None, call: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``call(store)`` on the (async) store at ``url`` (opened and closed here)."""
    import asyncio

    async def run() -> T:
        # memorybank.AsyncMemory loads with its first use (asyncio, the async facade)
        async with memorybank.AsyncMemory(url) as memory:
            return await call(memory.store)

    return asyncio.run(run())


def _keyring_call(url: str | None, call: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``call(KeyRing)`` on the store at ``url`` (opened and closed here)."""
    from memorybank.server.keys import KeyRing

    return _on_store(url, lambda store: call(KeyRing(store)))


@keys_app.command("create")
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", help="The tenant the key acts in.")],
    url: UrlOption = None,
    label: Annotated[str | None, typer.Option("--label", help="A note for humans.")] = None,
) -> None:
    """Create an API key for TENANT; the key itself is printed alone on the last line."""
    with _errors():
        info, secret = _keyring_call(url, lambda ring: ring.create(tenant, label))
    typer.echo(f"key id {info.id} for tenant {info.tenant} (shown once, store it now):")
    typer.echo(secret)


@keys_app.command("list")
def keys_list(
    url: UrlOption = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant's.")] = None,
) -> None:
    """List API keys (id, tenant, label, created, revoked), oldest first."""
    with _errors():
        found = _keyring_call(url, lambda ring: ring.list(tenant))
    table = Table(box=None)
    for column in ("id", "tenant", "label", "created", "revoked"):
        table.add_column(column)
    for info in found:
        table.add_row(
            info.id,
            info.tenant,
            info.label or "",
            format_time(info.created_at),
            "" if info.revoked_at is None else format_time(info.revoked_at),
        )
    _console().print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (the part after mb_).")],
    url: UrlOption = None,
) -> None:
    """Revoke an API key for good (running servers refuse it within their
    --key-cache-seconds, 2 s by default)."""
    with _errors():
        info = _keyring_call(url, lambda ring: ring.revoke(key_id))
    typer.echo(f"revoked {info.id} (tenant {info.tenant})")


webhooks_app = typer.Typer(help="Webhook endpoints of the tenants (docs/webhooks.md).")
WebhookArgument = Annotated[str, typer.Argument(help="The endpoint id (wh_...).")]
app.add_typer(webhooks_app, name="webhooks")


def _webhooks_call(url: str | None, call: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``call(Webhooks)`` on the store at ``url`` (opened and closed here)."""
    from memorybank.webhooks.registry import Webhooks

    return _on_store(url, lambda store: call(Webhooks(store)))


@webhooks_app.command("create")
def webhooks_create(
    tenant: Annotated[str, typer.Option("--tenant", help="Whose events to deliver.")],
    endpoint: Annotated[str, typer.Option("--endpoint", help="The http(s) URL to post to.")],
    url: UrlOption = None,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", help="An event kind to deliver (repeat; default: all)."),
    ] = None,
    from_start: Annotated[
        bool, typer.Option("--from-start", help="Also the events the feed still keeps.")
    ] = False,
) -> None:
    """Register a webhook endpoint for TENANT; its signing secret is printed alone on the
    last line (shown once)."""
    with _errors():
        info, secret = _webhooks_call(
            url,
            lambda hooks: hooks.create(
                tenant, endpoint, kinds=kind or None, start="beginning" if from_start else "now"
            ),
        )
    typer.echo(f"webhook {info.id} for tenant {info.tenant} (secret shown once, store it now):")
    typer.echo(secret)


@webhooks_app.command("list")
def webhooks_list(
    url: UrlOption = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant's.")] = None,
) -> None:
    """List webhook endpoints (id, tenant, URL, state, failures, delivered, why paused)."""
    with _errors():
        found = _webhooks_call(url, lambda hooks: hooks.list(tenant))
    table = Table(box=None)
    for column in ("id", "tenant", "url", "state", "failures", "delivered", "reason"):
        table.add_column(column)
    for info in found:
        table.add_row(
            info.id,
            info.tenant,
            info.url,
            info.state,
            str(info.failures),
            str(info.delivered),
            info.paused_reason or "",
        )
    _console().print(table)


def _webhook_state(webhook_id: str, url: str | None, paused: bool) -> None:
    with _errors():
        info = _webhooks_call(url, lambda hooks: hooks.update(webhook_id, paused=paused))
    typer.echo(f"{info.id} (tenant {info.tenant}) is {info.state}")


@webhooks_app.command("pause")
def webhooks_pause(
    webhook_id: WebhookArgument,
    url: UrlOption = None,
) -> None:
    """Pause deliveries to an endpoint."""
    _webhook_state(webhook_id, url, True)


@webhooks_app.command("resume")
def webhooks_resume(
    webhook_id: WebhookArgument,
    url: UrlOption = None,
) -> None:
    """Resume deliveries from the endpoint's cursor (nothing skipped; failures reset)."""
    _webhook_state(webhook_id, url, False)


@webhooks_app.command("delete")
def webhooks_delete(
    webhook_id: WebhookArgument,
    url: UrlOption = None,
) -> None:
    """Remove an endpoint."""
    with _errors():
        info = _webhooks_call(url, lambda hooks: hooks.delete(webhook_id))
    typer.echo(f"deleted {info.id} (tenant {info.tenant})")


@app.command()
def serve(
    url: UrlOption = None,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8080,
    admin_key: Annotated[
        str | None,
        typer.Option(
            "--admin-key",
            help="Key for /v1/admin (default: $MEMORYBANK_ADMIN_KEY).",
            show_default=False,
        ),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Worker processes.")] = 1,
    embedder: EmbedderOption = None,
    embed: Annotated[
        str | None,
        typer.Option(
            "--embed",
            help="When vectors are computed: background (a write returns once stored; "
            "the default) or inline (in the write). Default: $MEMORYBANK_EMBED, else "
            "background.",
            show_default=False,
        ),
    ] = None,
    key_cache_seconds: Annotated[
        float | None,
        typer.Option(
            "--key-cache-seconds",
            min=0,
            help="How long a verified API key is trusted without reading the store: the "
            "longest a key revoked by another process keeps working (0: check every "
            "request; default 2, or $MEMORYBANK_KEY_CACHE_SECONDS).",
            show_default=False,
        ),
    ] = None,
    header_timeout: Annotated[
        float,
        typer.Option(
            "--header-timeout",
            min=0.001,
            help="Seconds a client has to send a request's headers (then 408, closed).",
        ),
    ] = 10.0,
    body_timeout: Annotated[
        float,
        typer.Option(
            "--body-timeout",
            min=0.001,
            help="Seconds a client has to send a request's body once its headers are in.",
        ),
    ] = 30.0,
    limit_concurrency: Annotated[
        int,
        typer.Option(
            "--limit-concurrency",
            min=1,
            help="Connections and requests one worker serves at once; more get 503.",
        ),
    ] = 1000,
    demo_data: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="Load the demo conversation into tenant 'default' (the one every command "
            "reads when --tenant is not given) and print an admin key "
            "(made up if none is given) and a demo key. A second start on the same store "
            "reuses them and the demo data (see --reset-demo).",
        ),
    ] = False,
    judge_url: JudgeUrlOption = None,
    judge_model: JudgeModelOption = None,
    consolidate_every: Annotated[
        str | None,
        typer.Option(
            "--consolidate-every",
            help="Consolidate in the background: every DURATION (90s, 15m, 2h, 1d), each "
            "owner with facts newer than its last run, one node at a time per tenant "
            "(default: $MEMORYBANK_CONSOLIDATE_EVERY, else off).",
            show_default=False,
        ),
    ] = None,
    reset_demo: Annotated[
        bool,
        typer.Option(
            "--reset-demo",
            help="With --demo: revoke the saved demo key and seed a new demo thread and key "
            "(the earlier data stays; delete the SQLite file to start from nothing).",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API until SIGTERM or SIGINT (in-flight requests finish; exit 0)."""
    import os
    import signal

    try:
        import uvicorn

        from memorybank.server import limits, ops, supervise
    except ImportError:  # pragma: no cover - the server extra is missing
        typer.echo("memorybank serve needs the server extra: pip install 'memorybank[server]'")
        raise typer.Exit(1) from None
    if url is not None:
        os.environ["MEMORYBANK_URL"] = url
    if admin_key is not None:
        os.environ["MEMORYBANK_ADMIN_KEY"] = admin_key
    # a bad name or a missing extra fails here, before uvicorn starts
    chosen = chosen_embedder(embedder)
    if embedder is not None:
        os.environ[EMBEDDER_ENV] = embedder  # read by every worker's app_from_env
    if embed is not None:
        try:
            embed_mode(embed)
        except ConfigurationError as error:
            raise typer.BadParameter(str(error), param_hint="--embed") from None
        os.environ[EMBED_ENV] = embed
    if key_cache_seconds is not None:
        os.environ["MEMORYBANK_KEY_CACHE_SECONDS"] = str(key_cache_seconds)
    try:
        _cli_port.consolidation_env(judge_url, judge_model, consolidate_every)
    except ConfigurationError as error:
        _usage_error(str(error))
    os.environ[limits.HEADER_TIMEOUT_ENV] = str(header_timeout)  # read by every worker's protocol
    os.environ[limits.BODY_TIMEOUT_ENV] = str(body_timeout)
    if reset_demo and not demo_data:
        _usage_error("--reset-demo needs --demo")
    # A busy port is one line and exit status 2, before anything is seeded or started.
    _check_port_free(host, port)
    lines = _serve_demo(url, chosen, reset=reset_demo) if demo_data else []
    _print_banner(url, host, port, chosen, lines)
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        import tempfile

        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="memorybank-metrics-")
    # Workers end with this process, even when it is SIGKILLed (server.supervise).
    os.environ[supervise.MASTER_PID_ENV] = str(os.getpid())
    ops.configure_logging()
    # uvicorn re-raises the signal that stopped it once it has shut down gracefully;
    # these handlers make that a no-op, so a requested stop exits with status 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    uvicorn.run(
        "memorybank.server.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=None,
        access_log=False,  # the app writes its own JSON access log
        timeout_graceful_shutdown=30,
        # uvicorn's protocol with header and body deadlines, X-User-Id exactly as sent
        http=limits.SERVE_PROTOCOL,
        limit_concurrency=limit_concurrency,
    )


def _usage_error(message: str) -> None:
    """One red line on stderr and exit status 2 (a usage error, as click's own)."""
    Console(stderr=True, highlight=False).print(
        Text(f"error: {message}", style="bold red"), soft_wrap=True
    )
    raise typer.Exit(2)


def _check_port_free(host: str, port: int) -> None:
    """Exit 2 with one line naming ``host:port`` when nothing can listen there."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        _usage_error(f"cannot listen on {host}:{port}: {error.strerror}")
        return
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        # As uvicorn binds: SO_REUSEADDR, so a port in TIME_WAIT is not called busy.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                _usage_error(f"port {port} is already in use on {host} (choose one with --port)")
            _usage_error(f"cannot listen on {host}:{port}: {error.strerror}")


def _mcp_line(base: str) -> str:
    """The banner's MCP line: the endpoint, or why there is none."""
    import importlib.util

    if importlib.util.find_spec("mcp") is not None:
        return f"  MCP:       {base}/mcp (streamable HTTP, the same API keys)"
    return "  MCP:       off: the mcp extra is not installed (pip install 'memorybank[mcp]')"


def _print_banner(
    url: str | None, host: str, port: int, embedder: Embedder | None, lines: Sequence[str]
) -> None:
    """What ``memorybank serve`` prints on every start: where it listens and what it serves."""
    shown = "[::1]" if host == "::1" else host
    base = f"http://{shown}:{port}"
    typer.echo(f"memorybank {__version__} serving {shown_url(resolve_url(url))} at {base}")
    typer.echo(f"  inspector: {base}/ui")
    typer.echo(f"  API docs:  {base}/docs")
    typer.echo(_mcp_line(base))
    if embedder is not None:
        typer.echo(f"  embedder:  {embedder.model_id} (semantic search on)")
    else:
        typer.echo("  embedder:  none (keyword search; --embedder local for semantic)")
    for line in lines:
        typer.echo(line)
    typer.echo("Ctrl-C stops it.")


def _embedder_flag(embedder: Embedder) -> str:
    """The ``--embedder`` value that names ``embedder`` (``local`` or ``openai``)."""
    return "local" if embedder.model_id.startswith("local:") else "openai"


def _serve_demo(url: str | None, embedder: Embedder | None, *, reset: bool) -> list[str]:
    """Seed the default tenant once per store (``make run``); the banner's lines about it.

    The demo key and a made-up admin key are saved in the store (``cli.demo_state``),
    so a second start prints the same keys and adds no thread; ``reset`` revokes the
    saved key and seeds a new demo thread and key.
    """
    import os

    from memorybank.cli.demo_state import DEMO_TENANT, prepare_demo

    with _errors():
        state = prepare_demo(
            url, embedder, admin_key=os.environ.get("MEMORYBANK_ADMIN_KEY"), reset=reset
        )
    os.environ["MEMORYBANK_ADMIN_KEY"] = state.admin_key
    again = "reused from an earlier start" if state.reused else "new"
    return [
        f"  admin key: {state.admin_key}",
        f"  demo key (tenant {DEMO_TENANT!r}): {state.demo_key}",
        f"  demo thread: {state.thread_id} ({again}; memorybank serve --demo --reset-demo "
        "for a new key and thread, or delete the SQLite file to start from nothing)",
        # the demo is in the CLI's default tenant: only a --url needs naming
        "  from a shell: memorybank threads"
        + (f" --url {shown_url(url)}" if url else " (from this directory)")
        + (f"; search by meaning: add --embedder {_embedder_flag(embedder)}" if embedder else ""),
    ]


# -- commands of their own modules ---------------------------------------------------

_cli_read.register(app)
_cli_events.register(app)
_cli_runs.register(app)
_cli_port.register(app)
_cli_maintain.register(app)
_cli_importers.register(app)
_cli_mcp.register(app)


def help_text(doc: str) -> str:
    """A command's docstring as its ``--help`` text: reST literals (double backticks)
    become single backticks, and each paragraph is one line (rich wraps it to the
    terminal; a line break kept from the source would break the commands list)."""
    import inspect
    import re

    text = re.sub(r"``(.+?)``", r"`\1`", inspect.cleandoc(doc))
    paragraphs = (" ".join(p.split()) for p in re.split(r"\n\s*\n", text))
    return "\n\n".join(p for p in paragraphs if p)


def _clean_help(typer_app: typer.Typer) -> None:
    """Give every command of ``typer_app`` (and of its groups) ``help_text`` of its docstring."""
    for command in typer_app.registered_commands:
        doc = command.help or (command.callback.__doc__ if command.callback else None)
        if doc:
            command.help = help_text(doc)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _clean_help(group.typer_instance)


_clean_help(app)
use_flag_classes(app)


def main() -> None:
    """Entry point of the ``memorybank`` console script."""
    app()
