"""CLI read commands for run state: ``runs`` (working memory) and ``snapshots``.

Registered on ``memorybank.cli.app`` by ``register``. Both open an existing store
(``open_existing``) and list what the library's ``memory.working_runs()`` and
``memory.snapshots.list()`` return: with ``--user`` (and ``--agent``) what that
principal could open, without them every run of the tenant (the CLI is a trusted
operator's tool, like ``show``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from memorybank.cli.common import (
    AgentOption,
    TenantOption,
    UrlOption,
    UserOption,
    _console,
    _errors,
    as_seen_by,
    empty_listing,
)
from memorybank.cli.read import JsonOption, emit_json, open_existing
from memorybank.memory._sync.memory import DEFAULT_TENANT

__all__ = ["register", "runs", "snapshots"]

LimitOption = Annotated[int, typer.Option("--limit", min=1, help="At most this many.")]


def _json_cell(value: Any, limit: int = 160) -> Text:
    flat = json.dumps(value, ensure_ascii=False, default=str)
    return Text(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def runs(
    user: UserOption = None,
    agent: AgentOption = None,
    limit: LimitOption = 50,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """List the runs holding working memory, by run id, with their values."""
    with _errors(), open_existing(url, tenant) as memory:
        found = as_seen_by(memory, user, agent).working_runs(limit=limit)
        if as_json:
            emit_json(found)
            return
        console = _console()
        if not found:
            console.print(empty_listing("runs", tenant, url, memory.store), soft_wrap=True)
            return
        table = Table(title=f"runs (tenant {tenant})", title_justify="left")
        for name in ("run", "user", "agent", "values"):
            table.add_column(name, overflow="fold", ratio=1 if name == "values" else None)
        for run in found:
            table.add_row(
                Text(run.run_id),
                Text(run.user_id or "-"),
                Text(run.agent_id or "-"),
                _json_cell(run.items),
            )
        console.print(table)


def snapshots(
    user: UserOption = None,
    limit: LimitOption = 50,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """List the saved snapshots, by run id (with --user: hers and unowned ones)."""
    with _errors(), open_existing(url, tenant) as memory:
        found = as_seen_by(memory, user).snapshots.list(limit=limit)
        if as_json:
            emit_json(found)
            return
        console = _console()
        if not found:
            console.print(empty_listing("snapshots", tenant, url, memory.store), soft_wrap=True)
            return
        table = Table(title=f"snapshots (tenant {tenant})", title_justify="left")
        for name in ("run", "owner", "value"):
            table.add_column(name, overflow="fold", ratio=1 if name == "value" else None)
        for saved in found:
            table.add_row(Text(saved.run_id), Text(saved.user_id or "-"), _json_cell(saved.value))
        console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``runs`` and ``snapshots`` to ``app``."""
    app.command("runs")(runs)
    app.command("snapshots")(snapshots)
