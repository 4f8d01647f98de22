"""CLI ``events``: read the change feed (``memory.events``), follow it, or switch it.

Registered on ``memorybank.cli.app`` by ``register``. Each event is one JSON object on a
line of standard output (``--follow`` keeps printing as changes commit).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated

import typer

from memorybank.cli.common import TenantOption, UrlOption, UserOption, _errors, as_seen_by
from memorybank.cli.read import open_existing
from memorybank.events.types import Event, split_kinds
from memorybank.memory._sync.events import DEFAULT_KEEP, MAX_WAIT
from memorybank.memory._sync.memory import DEFAULT_TENANT

__all__ = ["event_line", "register"]

#: Seconds each read of ``--follow`` waits for a change (a long poll).
FOLLOW_WAIT = 30.0


def event_line(event: Event) -> str:
    """One event as one line of JSON."""
    return json.dumps(
        {
            "cursor": event.cursor, "id": event.id, "kind": event.kind,
            "at": event.at.isoformat(), "user_id": event.user_id, "agent_id": event.agent_id,
            "thread_id": event.thread_id, "item_id": event.item_id,
            "data": None if event.data is None else dict(event.data),
            **({} if event.content is None else {"content": event.content}),
        },
        ensure_ascii=False,
    )  # fmt: skip


def events_command(
    after: Annotated[
        str | None, typer.Option("--after", help="Only events after this cursor.")
    ] = None,
    kinds: Annotated[
        list[str] | None,
        typer.Option("--kinds", help="Only these kinds (repeat, or comma-separated)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many per read.")] = 100,
    wait: Annotated[
        float, typer.Option("--wait", help="Seconds to wait for a change when none is new.")
    ] = 0.0,
    follow: Annotated[
        bool, typer.Option("--follow", help="Keep reading and printing until interrupted.")
    ] = False,
    content: Annotated[
        bool,
        typer.Option("--content", help="With each event, the content of the item it names."),
    ] = False,
    user: UserOption = None,
    enable: Annotated[
        bool, typer.Option("--enable", help="Turn the feed on for the whole store.")
    ] = False,
    keep: Annotated[
        float | None,
        typer.Option("--keep", help="With --enable: days to keep events (default 7)."),
    ] = None,
    disable: Annotated[
        bool, typer.Option("--disable", help="Turn the feed off for the whole store.")
    ] = False,
    prune: Annotated[
        bool, typer.Option("--prune", help="Delete the tenant's events older than the keep time.")
    ] = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Print the change feed: the tenant's changes after a cursor, oldest first.

    One JSON object a line (``--follow``: and then each change as it commits). Or switch
    the feed (``--enable [--keep DAYS]``, ``--disable``) or expire old events
    (``--prune``)."""
    with _errors(), open_existing(url, tenant) as memory:
        if enable or disable or prune:
            if enable:
                days = DEFAULT_KEEP if keep is None else timedelta(days=keep)
                memory.events.enable(keep=days)
            if disable:
                memory.events.disable()
            if prune:
                typer.echo(f"pruned {memory.events.prune()} events")
            kept = memory.events.keep()
            typer.echo("feed off" if kept is None else f"feed on, events kept {kept}")
            return
        handle = as_seen_by(memory, user)
        wanted = split_kinds(kinds)
        cursor = after
        try:
            while True:
                found = handle.events.list(
                    after=cursor,
                    kinds=wanted,
                    limit=limit,
                    wait=min(MAX_WAIT, FOLLOW_WAIT) if follow else wait,
                    content=content,
                )
                for event in found:
                    typer.echo(event_line(event))
                if found:
                    cursor = found[-1].cursor
                if not follow:
                    return
        except KeyboardInterrupt:
            return


def register(app: typer.Typer) -> None:
    """Add ``events`` to ``app``."""
    app.command("events")(events_command)
