"""What every ``memorybank`` command module shares: the common options, times, errors.

A module of its own so that command modules (``cli``, ``_cli_read``,
``_cli_port``) import it rather than each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from memorybank.cli.render import format_time
from memorybank.embeddings.base import Embedder
from memorybank.embeddings.named import EMBEDDER_ENV, embedder_named
from memorybank.errors import MemoryBankError
from memorybank.memory._sync.memory import DEFAULT_TENANT, DEFAULT_URL, Memory
from memorybank.stores._async.open import sqlite_path
from memorybank.stores.contract.types import UNSET, Unset

__all__ = [
    "AgentOption",
    "EmbedderOption",
    "JudgeModelOption",
    "JudgeUrlOption",
    "TenantOption",
    "UrlOption",
    "UserOption",
    "_console",
    "_errors",
    "as_seen_by",
    "chosen_embedder",
    "empty_listing",
    "format_time",
    "or_unset",
    "resolve_url",
    "shown_url",
]

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help=f"Store URL. Default: $MEMORYBANK_URL, else {DEFAULT_URL} (as Memory()).",
        show_default=False,
    ),
]
TenantOption = Annotated[
    str, typer.Option("--tenant", help="Tenant to read and write (hard isolation).")
]
#: ``--judge-url`` and ``--judge-model`` of the commands that consolidate (``serve``,
#: ``consolidate``); the key is ``$MEMORYBANK_JUDGE_API_KEY`` only.
JudgeUrlOption = Annotated[
    str | None,
    typer.Option(
        "--judge-url",
        help="An OpenAI-compatible endpoint (e.g. http://localhost:11434/v1) whose model "
        "decides what the consolidation rules cannot (default: $MEMORYBANK_JUDGE_URL; "
        "the key: $MEMORYBANK_JUDGE_API_KEY only).",
        show_default=False,
    ),
]
JudgeModelOption = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        help="The judge's model (default: $MEMORYBANK_JUDGE_MODEL).",
        show_default=False,
    ),
]
#: ``--embedder`` of every command that serves search (``serve``, ``mcp``): one name,
#: one set of choices (``memorybank.embeddings.named``).
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="Embed what is written for semantic search: local (all-MiniLM-L6-v2, "
        f"offline), openai ($OPENAI_API_KEY) or none (default: ${EMBEDDER_ENV}, "
        "else none).",
        show_default=False,
    ),
]

#: ``--user`` and ``--agent``: the principal a command reads as, one name on every command
#: (the library's ``user_id`` and ``agent_id``).
UserOption = Annotated[str | None, typer.Option("--user", help="As seen by this user.")]
AgentOption = Annotated[str | None, typer.Option("--agent", help="As seen by this agent.")]


def or_unset(value: str | None) -> str | Unset:
    """A ``--user``/``--agent`` value as the library takes it: left out, unconfined."""
    return UNSET if value is None else value


def as_seen_by(memory: Memory, user: str | None, agent: str | None = None) -> Memory:
    """The memory as ``--user``/``--agent`` see it (an option left out: unconfined)."""
    return memory.scoped(user_id=or_unset(user), agent_id=or_unset(agent))


def _console() -> Console:
    # Built per call so that it writes to the sys.stdout of the moment (tests swap it).
    return Console(highlight=False)


@contextmanager
def _errors() -> Iterator[None]:
    """Turn a ``MemoryBankError`` into one red line on stderr and exit status 1."""
    try:
        yield
    except MemoryBankError as error:
        message = " ".join(str(error).split()) or type(error).__name__
        line = Text(f"error [{error.code}]: {message}", style="bold red")
        Console(stderr=True, highlight=False).print(line, soft_wrap=True)
        raise typer.Exit(1) from None


def chosen_embedder(name: str | None) -> Embedder | None:
    """The embedder ``--embedder NAME`` names (``None``: ``$MEMORYBANK_EMBEDDER``, else
    none); a bad name or a missing extra is one error line and exit status 1."""
    import os

    with _errors():
        return embedder_named(name if name is not None else os.environ.get(EMBEDDER_ENV))


def resolve_url(url: str | None) -> str:
    """The URL a command uses: ``--url``, else ``$MEMORYBANK_URL``, else the default."""
    import os

    return url or os.environ.get("MEMORYBANK_URL") or DEFAULT_URL


def shown_url(url: str) -> str:
    """``url`` as a command prints it: a password masked, a relative SQLite path followed
    by the file it names (``sqlite:///./memorybank.db (/home/ana/memorybank.db)``)."""
    from pathlib import Path
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is not None:
        host = parts.netloc.rpartition("@")[2]
        user = parts.username or ""
        return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
    if parts.scheme.split("+", 1)[0].lower() == "sqlite":
        path = sqlite_path(url)
        if path != ":memory:" and not Path(path).is_absolute():
            return f"{url} ({Path(path).resolve()})"
    return url


def empty_listing(what: str, tenant: str, url: str | None, store: Any) -> str:
    """The line a listing prints when it found nothing: what, in which tenant of which
    store, and, when ``memorybank serve --demo`` (``make run``) seeded this store's demo
    in another tenant, the option that reads it."""
    line = f"no {what} in tenant {tenant!r} of {shown_url(resolve_url(url))}"
    try:
        from memorybank.cli.demo_state import demo_tenant
    except ImportError:  # no server extra: no `serve --demo` seeded this store from here
        return line
    seeded = demo_tenant(store)
    if seeded is not None and tenant != seeded:
        add = "leave out --tenant" if seeded == DEFAULT_TENANT else f"add --tenant {seeded}"
        line += f"; the demo of `memorybank serve --demo` (make run) is in tenant {seeded!r}: {add}"
    return line
