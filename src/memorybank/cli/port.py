"""CLI data commands: ``export``, ``import``, ``migrate`` (``memorybank.dump``), ``prune``,
``consolidate``.

Registered on ``memorybank.cli.app`` by ``register``. Dumps go to standard
output and come from standard input; progress goes to standard error.
"""

from __future__ import annotations

import enum
import itertools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from memorybank.cli.common import (
    AgentOption,
    EmbedderOption,
    JudgeModelOption,
    JudgeUrlOption,
    UrlOption,
    _errors,
    chosen_embedder,
    or_unset,
    resolve_url,
)
from memorybank.cli.read import JsonOption, emit_json, open_existing
from memorybank.consolidation import config
from memorybank.dump._sync.portability import ImportReport, export_dump, import_dump
from memorybank.dump.format import parse_header
from memorybank.errors import InvalidInput
from memorybank.memory._sync.memory import DEFAULT_TENANT, Memory
from memorybank.retention import RetentionPolicy
from memorybank.rules import validate as v

__all__ = ["register"]

#: How to get vectors the import did not write.
REEMBED = "with an embedder configured, memory.embed_pending() re-embeds entries and documents"


class OnConflictChoice(enum.StrEnum):
    """What an import does with a record the target already holds."""

    skip = "skip"
    overwrite = "overwrite"
    fail = "fail"


OnConflictOption = Annotated[
    OnConflictChoice,
    typer.Option(
        "--on-conflict",
        help="A thread/record already in the target: skip it (resumes an interrupted "
        "import), overwrite it, or fail.",
    ),
]
VectorsOption = Annotated[
    str | None,
    typer.Option("--vectors", help="Carry the stored vectors of this embedder model id."),
]
OptionalTenant = Annotated[
    str | None,
    typer.Option("--tenant", help="Tenant to read/write. Import default: the dump's tenant."),
]


class _Ticker:
    """Counts lines per type; on a terminal (and not ``--quiet``) also shows them as rich
    progress bars on standard error (with totals once known: ``plan``)."""

    def __init__(self, title: str, progress: Progress | None) -> None:
        self.title = title
        self.progress = progress
        self.counts: dict[str, int] = {}
        self.tasks: dict[str, TaskID] = {}

    def _task(self, kind: str, total: int | None = None) -> TaskID | None:
        if self.progress is None:
            return None
        if kind not in self.tasks:
            self.tasks[kind] = self.progress.add_task(f"{self.title} {kind}s", total=total)
        return self.tasks[kind]

    def plan(self, totals: dict[str, int]) -> None:
        """The number of lines of each type to come (import, after its checking pass)."""
        for kind, total in totals.items():
            if total:
                task = self._task(kind, total)
                if task is not None and self.progress is not None:
                    self.progress.update(task, total=total)

    def __call__(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        task = self._task(kind)
        if task is not None and self.progress is not None:
            self.progress.advance(task)

    def line(self) -> str:
        """The final count line."""
        counts = ", ".join(f"{kind}: {n}" for kind, n in self.counts.items() if n) or "nothing"
        return f"{self.title}: {counts}"


@contextmanager
def _progress(title: str, quiet: bool = False) -> Iterator[_Ticker]:
    """A ``_Ticker``: progress bars on a terminal's standard error unless ``quiet``."""
    stderr = Console(stderr=True)
    if quiet or not stderr.is_terminal:
        yield _Ticker(title, None)
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:>9,}"),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    ) as progress:
        yield _Ticker(title, progress)


def _say(text: str, quiet: bool = False) -> None:
    if not quiet:
        Console(stderr=True, highlight=False).print(text, soft_wrap=True)


def _summary(report: ImportReport, quiet: bool = False) -> None:
    loud = Console(stderr=True, highlight=False)
    for warning in report.warnings:  # said even with --quiet
        loud.print(f"warning: {warning}", soft_wrap=True)
    if report.partial is not None:
        loud.print(f"PARTIAL import (--allow-partial): {report.partial}", soft_wrap=True)
    err = Console(stderr=True, highlight=False, quiet=quiet)
    written = ", ".join(f"{kind}: {n}" for kind, n in sorted(report.written.items())) or "nothing"
    skipped = ", ".join(f"{kind}: {n}" for kind, n in sorted(report.skipped.items()))
    err.print(f"written: {written}" + (f"; skipped: {skipped}" if skipped else ""))
    model = report.vector_model
    if model is None:
        err.print(f"vectors: the dump carries none; {REEMBED}")
    if report.vectors_written:
        err.print(f"vectors: {report.vectors_written} of model {model} carried")
    if report.vectors_dropped:
        err.print(
            f"vectors: {report.vectors_dropped} of model {model} NOT carried (the target's "
            f"model, --model-id, differs or was not given); {REEMBED}"
        )
    if report.unlisted:
        err.print(
            f"not in the dump: {', '.join(report.unlisted)} (the source store cannot list its runs)"
        )


QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress bars and no final count line (errors still show)."
    ),
]


def export_command(
    url: UrlOption = None,
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant to export.")] = DEFAULT_TENANT,
    after: Annotated[
        str | None,
        typer.Option("--after", help="Resume: leave out threads with ids up to this one."),
    ] = None,
    vectors: VectorsOption = None,
    quiet: QuietOption = False,
) -> None:
    """Write a tenant as a JSON-lines dump to standard output."""
    with _errors():
        with open_existing(url, tenant) as memory, _progress("exported", quiet) as tick:
            out = sys.stdout
            for line in export_dump(
                memory.store,
                tenant,
                now=datetime.now(UTC),
                after_thread=after,
                vector_model=vectors,
                progress=tick,
            ):
                out.write(line)
                out.write("\n")
            out.flush()
        _say(f"{tick.line()} (tenant {tenant})", quiet)


def _header_tenant(first: str | None, tenant: str | None) -> None:
    """Refuse a reserved tenant (``--tenant`` or the dump's header) before opening the target,
    so a refused import leaves no trace (not even a new SQLite file)."""
    if tenant is not None:
        v.check_tenant(tenant, "--tenant")
        return
    if first is not None:
        named = parse_header(first.rstrip("\r\n")).get("tenant")
        if named is not None:
            v.check_tenant(named, "the dump's tenant")


def import_command(
    url: UrlOption = None,
    tenant: OptionalTenant = None,
    on_conflict: OnConflictOption = OnConflictChoice.fail,
    model_id: Annotated[
        str | None,
        typer.Option(
            "--model-id",
            help="The target's embedder model: the dump's vectors go in if it matches.",
        ),
    ] = None,
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial",
            help="Import a dump that lacks its trailer or disagrees with it (cut short): what"
            " is there goes in, and the import says it was partial.",
        ),
    ] = False,
    quiet: QuietOption = False,
) -> None:
    """Read a dump from standard input into a store (created if needed).

    The whole dump is checked before anything is written: an invalid line, a
    dump cut short (no trailer, counts or checksum that disagree) or a reserved
    tenant (``~...``) is an error and the target is left as it was.
    """
    with _errors():
        first = sys.stdin.readline() or None
        _header_tenant(first, tenant)
        lines = itertools.chain([] if first is None else [first], sys.stdin)
        with Memory(resolve_url(url)) as memory, _progress("imported", quiet) as tick:
            report = import_dump(
                memory.store,
                tenant,
                lines,
                on_conflict=on_conflict.value,
                model_id=model_id,
                progress=tick,
                allow_partial=allow_partial,
                plan=tick.plan,
            )
    _summary(report, quiet)


def migrate_command(
    source: Annotated[str, typer.Option("--from", help="Store URL to copy from.")],
    target: Annotated[str, typer.Option("--to", help="Store URL to copy into.")],
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant to copy.")] = DEFAULT_TENANT,
    on_conflict: OnConflictOption = OnConflictChoice.fail,
    vectors: VectorsOption = None,
    quiet: QuietOption = False,
) -> None:
    """Copy a tenant from one store to another (export piped into import; the dump is
    checked whole before the target is written)."""
    with _errors():
        v.check_tenant(tenant, "--tenant")
        with (
            open_existing(source, tenant) as origin,
            Memory(target) as destination,
            _progress("migrated", quiet) as tick,
        ):
            lines = export_dump(origin.store, tenant, now=datetime.now(UTC), vector_model=vectors)
            report = import_dump(
                destination.store,
                tenant,
                lines,
                on_conflict=on_conflict.value,
                model_id=vectors,
                progress=tick,
                plan=tick.plan,
            )
    _summary(report, quiet)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str | None, field: str) -> timedelta | None:
    """``"90d"``, ``"12h"``, ``"30m"``, ``"45s"``, ``"2w"`` as a timedelta (``None`` stays)."""
    if text is None:
        return None
    number, unit = text[:-1], text[-1:].lower()
    if unit not in _UNITS or not number.isdigit() or int(number) <= 0:
        raise InvalidInput(
            f"{field} must be a positive number with a unit s, m, h, d or w (like 90d), "
            f"got {text!r}",
            field=field,
        )
    return timedelta(seconds=int(number) * _UNITS[unit])


def prune_command(
    max_age: Annotated[
        str | None, typer.Option("--max-age", help="Delete entries older than this (e.g. 90d).")
    ] = None,
    max_entries: Annotated[
        int | None,
        typer.Option("--max-entries", min=0, help="Keep at most this many entries per branch."),
    ] = None,
    idle_ttl: Annotated[
        str | None,
        typer.Option("--idle-ttl", help="Delete threads not updated for this long (e.g. 30d)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would be deleted.")
    ] = False,
    url: UrlOption = None,
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant to prune.")] = DEFAULT_TENANT,
) -> None:
    """Apply a retention policy to a tenant (tool-call pairs stay whole; SQLite shrinks)."""
    with _errors():
        policy = RetentionPolicy(
            max_age=parse_duration(max_age, "max_age"),
            max_entries_per_thread=max_entries,
            idle_ttl=parse_duration(idle_ttl, "idle_ttl"),
        )
        if policy == RetentionPolicy():
            raise InvalidInput(
                "give at least one of --max-age, --max-entries, --idle-ttl", field="policy"
            )
        with open_existing(url, tenant) as memory:
            report = memory.prune(policy, dry_run=dry_run)
        verb = "would delete" if dry_run else "deleted"
        Console(highlight=False).print(
            f"{verb} {report.threads_deleted} threads and {report.entries_deleted} entries "
            f"(of {report.threads_examined} threads examined, tenant {tenant})"
        )


def consolidate_command(
    user: Annotated[
        str | None,
        typer.Option("--user", help="Whose facts (leave out with --shared).", show_default=False),
    ] = None,
    shared: Annotated[
        bool, typer.Option("--shared", help="The facts shared by every user instead.")
    ] = False,
    agent: AgentOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would change; write nothing.")
    ] = False,
    embedder: EmbedderOption = None,
    judge_url: JudgeUrlOption = None,
    judge_model: JudgeModelOption = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant of the facts.")] = DEFAULT_TENANT,
) -> None:
    """Merge a user's duplicate facts and supersede contradicted ones (memory.consolidate).

    Duplicates are found by text, and by meaning too with an embedder (--embedder, or
    $MEMORYBANK_EMBEDDER); with a judge (--judge-url and --judge-model, or their
    $MEMORYBANK_JUDGE_* variables; the key from $MEMORYBANK_JUDGE_API_KEY) a chat model
    decides what the rules cannot. Every change names its run, which the library and REST
    can undo.
    """
    with _errors():
        if (user is None) == (not shared):
            raise InvalidInput("give exactly one of --user U and --shared", field="user_id")
        judge = config.judge_from(judge_url, judge_model)
        try:
            with open_existing(
                url, tenant, embedder=chosen_embedder(embedder), judge=judge
            ) as memory:
                report = memory.consolidate(user_id=user, agent_id=or_unset(agent), dry_run=dry_run)
        finally:
            if judge is not None:
                judge.close()
        if as_json:
            emit_json(report.to_dict())
            return
        console = Console(highlight=False)
        verb = "would merge" if dry_run else "merged"
        console.print(
            f"{verb} {report.merged} duplicates and supersede{'' if dry_run else 'd'} "
            f"{report.superseded} contradicted facts (of {report.facts_examined} examined"
            f"{'' if dry_run else ', run ' + report.run_id})"
        )
        for change in report.changes:
            console.print(f"- {change.content!r} -> {change.into_content!r}: {change.why}")


def consolidation_env(url: str | None, model: str | None, every: str | None) -> None:
    """Check ``serve``'s judge and schedule flags (``ConfigurationError``, before uvicorn
    starts) and hand them to every worker's ``app_from_env`` in the environment."""
    config.consolidate_every(every, "--consolidate-every")
    judge = config.judge_from(url, model)
    if judge is not None:
        judge.close()
    for name, value in (
        (config.JUDGE_URL_ENV, url),
        (config.JUDGE_MODEL_ENV, model),
        (config.CONSOLIDATE_EVERY_ENV, every),
    ):
        if value is not None:
            os.environ[name] = value


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("export")(export_command)
    app.command("import")(import_command)
    app.command("migrate")(migrate_command)
    app.command("prune")(prune_command)
    app.command("consolidate")(consolidate_command)
