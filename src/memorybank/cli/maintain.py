"""CLI commands of memory that maintains itself, beside ``consolidate`` (``port.py``):
``consolidation-runs``, ``consolidation-report``, ``consolidation-undo`` (a run's
report and its undo, ``memory.consolidation``), ``profile`` (``memory.profile``) and
``feedback`` (``memory.feedback``)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from memorybank.cli.common import (
    AgentOption,
    TenantOption,
    UrlOption,
    UserOption,
    _errors,
    as_seen_by,
    or_unset,
)
from memorybank.cli.read import JsonOption, emit_json, open_existing
from memorybank.consolidation.report import ConsolidationReport
from memorybank.memory._sync.memory import DEFAULT_TENANT

__all__ = ["register"]

RunArgument = Annotated[str, typer.Argument(metavar="RUN_ID", help="The run's id.")]


def _print_report(report: ConsolidationReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.to_dict())
        return
    console = Console(highlight=False)
    console.print(
        f"run {report.run_id} ({report.status}) over user {report.user_id!r}: "
        f"{report.merged} merged, {report.superseded} superseded, "
        f"{report.entities_merged} entities merged; started {report.started_at.isoformat()}"
    )
    for change in report.changes:
        console.print(
            f"- fact {change.fact_id} {change.content!r} -> {change.into} "
            f"{change.into_content!r} ({change.reason}): {change.why}"
        )
    for entity in report.entity_changes:
        console.print(
            f"- entity {entity.entity_id} {entity.name!r} -> {entity.into} "
            f"{entity.into_name!r} ({entity.rule}): {entity.why}"
        )
    for change in report.skipped:
        console.print(f"- skipped {change.fact_id} -> {change.into}: changed during the run")


def consolidation_runs_command(
    limit: Annotated[int | None, typer.Option("--limit", help="Show at most this many.")] = None,
    user: UserOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """List consolidation runs, newest first (memory.consolidation.runs)."""
    with _errors(), open_existing(url, tenant) as memory:
        runs = as_seen_by(memory, user, agent).consolidation.runs(limit=limit)
        if as_json:
            emit_json([r.to_dict() for r in runs])
            return
        console = Console(highlight=False)
        for run in runs:
            console.print(
                f"{run.run_id}  {run.status:<8}  user {run.user_id!r}  "
                f"started {run.started_at.isoformat()}"
            )


def consolidation_report_command(
    run_id: RunArgument,
    user: UserOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """What a consolidation run changed and why (memory.consolidation.report)."""
    with _errors(), open_existing(url, tenant) as memory:
        _print_report(as_seen_by(memory, user, agent).consolidation.report(run_id), as_json)


def consolidation_undo_command(
    run_id: RunArgument,
    user: UserOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Undo a consolidation run: every fact and entity it changed back as it was
    (memory.consolidation.undo; refused when one changed since)."""
    with _errors(), open_existing(url, tenant) as memory:
        _print_report(as_seen_by(memory, user, agent).consolidation.undo(run_id), as_json)


def profile_command(
    user: Annotated[str, typer.Option("--user", help="Whose profile.", show_default=False)],
    agent: AgentOption = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """A user's current facts grouped by attribute, with provenance (memory.profile)."""
    with _errors(), open_existing(url, tenant) as memory:
        profile = memory.profile(user, agent_id=or_unset(agent))
        if as_json:
            emit_json(profile)
            return
        console = Console(highlight=False)
        for name, items in profile.attributes.items():
            console.print(f"{name}:")
            for item in items:
                console.print(f"  - {item.content}  (fact {item.fact_id}, v{item.version})")


def feedback_command(
    hit_or_id: Annotated[str, typer.Argument(metavar="FACT_ID", help="The fact's id.")],
    useful: Annotated[
        bool,
        typer.Option(
            "--useful/--not-useful",
            help="Whether the fact was useful (or wrong).",
            show_default=False,
        ),
    ],
    reason: Annotated[str | None, typer.Option("--reason", help="Why, in words.")] = None,
    user: UserOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Say a fact was useful or wrong (memory.feedback: importance up, or demoted)."""
    with _errors(), open_existing(url, tenant) as memory:
        result = memory.feedback(
            hit_or_id,
            useful=useful,
            reason=reason,
            user_id=or_unset(user),
            agent_id=or_unset(agent),
        )
        if as_json:
            emit_json(result)
            return
        Console(highlight=False).print(f"feedback recorded on {hit_or_id}: {result}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("consolidation-runs")(consolidation_runs_command)
    app.command("consolidation-report")(consolidation_report_command)
    app.command("consolidation-undo")(consolidation_undo_command)
    app.command("profile")(profile_command)
    app.command("feedback")(feedback_command)
