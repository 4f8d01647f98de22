"""Apply a ``RetentionPolicy`` to one tenant of a store (``memory.prune``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memorybank.core._async.facts import FACT, AsyncFacts
from memorybank.core._async.usage import usage_of
from memorybank.core.documents import DOCUMENT_KIND
from memorybank.importance import USAGE, usage_id
from memorybank.retention import PruneReport, RetentionPolicy, doomed_entries
from memorybank.stores.contract._async.store import AsyncStore

if TYPE_CHECKING:
    from memorybank.core._async.core import _Core

__all__ = ["prune_tenant"]

#: Entry ids per ``entry_delete`` call.
_BATCH = 500


async def prune_tenant(
    store: AsyncStore,
    tenant: str,
    policy: RetentionPolicy,
    *,
    now: datetime,
    dry_run: bool,
    core: _Core | None = None,
) -> PruneReport:
    """Apply ``policy`` to every thread of ``tenant``; reclaim space when something went.

    One branch is read at a time. Each deletion is its own store call, so an
    interrupted prune leaves a consistent (partly pruned) tenant; running it
    again finishes the job.
    """
    report = PruneReport(dry_run=dry_run)

    idle_before = None if policy.idle_ttl is None else now - policy.idle_ttl
    cutoff = None if policy.max_age is None else now - policy.max_age
    for thread in await store.thread_list(tenant):
        report.threads_examined += 1
        if idle_before is not None and thread.updated_at < idle_before:
            if dry_run or await store.thread_delete(tenant, thread.id):
                report.threads_deleted += 1
            continue
        if cutoff is None and policy.max_entries_per_thread is None:
            continue
        removed = 0
        for branch in await store.branch_list(tenant, thread.id):
            _, entries = await store.entry_list(tenant, thread.id, branch=branch.name)
            doomed = doomed_entries(entries, policy, cutoff)
            if dry_run:
                removed += len(doomed)
                continue
            for start in range(0, len(doomed), _BATCH):
                removed += await store.entry_delete(
                    tenant, thread.id, doomed[start : start + _BATCH], branch=branch.name
                )
        if removed:
            report.per_thread[thread.id] = removed
            report.entries_deleted += removed
    if core is not None and policy.long_term:
        await _prune_long_term(core, tenant, policy, now=now, report=report)
    if not dry_run and (
        report.threads_deleted
        or report.entries_deleted
        or report.facts_deleted
        or report.documents_deleted
    ):
        await store.reclaim_space()
    return report


async def _prune_long_term(
    core: _Core, tenant: str, policy: RetentionPolicy, *, now: datetime, report: PruneReport
) -> None:
    """The long-term rules over the tenant's facts and documents: one page of ``_BATCH``
    records at a time, one batch read of their usage per page."""
    store = core.store
    facts = AsyncFacts(core, tenant)
    for kind in (FACT, DOCUMENT_KIND):
        after: tuple[datetime, str] | None = None
        while True:
            page = await store.record_page(tenant, kind, limit=_BATCH, after=after)
            if not page:
                break
            after = (page[-1].created_at, page[-1].id)
            usage = await usage_of(core, tenant, [(kind, r.id) for r in page])
            doomed: list[str] = []
            for record in page:
                item = usage[(kind, record.id)]
                last = record.created_at
                if item.last_used_at is not None:
                    last = max(last, item.last_used_at)
                if policy.doomed(item.importance, last, now):
                    doomed.append(record.id)
                    report.long_term.append((kind, record.id, item.importance, last))
            if kind == FACT:
                report.facts_deleted += len(doomed)
            else:
                report.documents_deleted += len(doomed)
            if report.dry_run or not doomed:
                continue
            if kind == FACT:
                for fact_id in doomed:
                    await facts.delete(fact_id)
            else:
                await store.record_delete(tenant, DOCUMENT_KIND, doomed)
            await store.record_delete(tenant, USAGE, [usage_id(kind, i) for i in doomed])
