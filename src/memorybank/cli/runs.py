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
from rich.text import Text

from memorybank.cli.common import (
    AgentOption,
    TenantOption,
    UrlOption,
    UserOption,
    _errors,
    as_seen_by,
)
from memorybank.cli.read import AGENT, USER, JsonOption, Listing, open_existing
from memorybank.memory._sync.memory import DEFAULT_TENANT

__all__ = ["register", "runs", "snapshots"]

LimitOption = Annotated[int, typer.Option("--limit", min=1, help="At most this many.")]


def _json_cell(value: Any, limit: int = 160) -> Text:
    flat = json.dumps(value, ensure_ascii=False, default=str)
    return Text(flat if len(flat) <= limit else flat[: limit - 1] + "…")


RUN = ("run", lambda saved: Text(saved.run_id))
RUNS = Listing(
    "runs", (RUN, USER, AGENT, ("values", lambda run: _json_cell(run.items))), wide="values"
)
SNAPSHOTS = Listing(
    "snapshots",
    (RUN, ("owner", USER[1]), ("value", lambda saved: _json_cell(saved.value))),
    wide="value",
)


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
        RUNS.print(memory, found, as_json=as_json, url=url, tenant=tenant)


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
        SNAPSHOTS.print(memory, found, as_json=as_json, url=url, tenant=tenant)


def register(app: typer.Typer) -> None:
    """Add ``runs`` and ``snapshots`` to ``app``."""
    app.command("runs")(runs)
    app.command("snapshots")(snapshots)
