"""CLI ``import-from``: another memory system's data into memorybank (``memorybank.importers``).

Registered on ``memorybank.cli.app`` by ``register``. The counts go to standard output.
"""

from __future__ import annotations

import enum
import importlib
from typing import Annotated

import typer
from rich.console import Console

from memorybank.cli.common import EmbedderOption, UrlOption, _errors, chosen_embedder, resolve_url
from memorybank.errors import ConfigurationError
from memorybank.importers import SYSTEMS, apply
from memorybank.memory._sync.memory import DEFAULT_TENANT, Memory

__all__ = ["register"]

System = enum.StrEnum("System", {name: name for name in SYSTEMS})  # type: ignore[misc]


def import_from_command(
    system: Annotated[System, typer.Argument(help="The system to import from.")],
    source: Annotated[
        str,
        typer.Option(
            "--source",
            help="Where its data is: a database file, a connection URL or an export file "
            "(per system: docs/cli.md).",
        ),
    ],
    url: UrlOption = None,
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant to write.")] = DEFAULT_TENANT,
    user: Annotated[
        str | None,
        typer.Option("--user", help="Owner of what the other system gives no owner."),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Agent of what the other system gives no agent."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only count what would be imported.")
    ] = False,
    embedder: EmbedderOption = None,
) -> None:
    """Import another memory system's threads, messages, facts and documents.

    Every item keeps its times and owners and names its origin in ``metadata.source``
    (the system and its own id); a second run adds nothing (``added 0 new items``). What
    has no memorybank equivalent is listed as ``not imported``.
    """
    model = chosen_embedder(embedder)
    with _errors():
        try:
            module = importlib.import_module(SYSTEMS[str(system)])
        except ImportError as error:  # the system's library is missing: name the extra
            raise ConfigurationError(str(error)) from error
        plan = module.read(source, user_id=user, agent_id=agent)
        with Memory(resolve_url(url), tenant_id=tenant, embedder=model) as memory:
            result = apply(memory, plan, dry_run=dry_run)
    console = Console(highlight=False)
    for line in result.describe():
        console.print(line, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("import-from")(import_from_command)
