"""Apply a ``RetentionPolicy`` to one tenant of a store (``memory.prune``)."""

from __future__ import annotations

from datetime import datetime

from memorybank.retention import PruneReport, RetentionPolicy, doomed_entries
from memorybank.stores.contract._async.store import AsyncStore

__all__ = ["prune_tenant"]

#: Entry ids per ``entry_delete`` call.
_BATCH = 500


async def prune_tenant(
    store: AsyncStore, tenant: str, policy: RetentionPolicy, *, now: datetime, dry_run: bool
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
    if not dry_run and (report.threads_deleted or report.entries_deleted):
        await store.reclaim_space()
    return report
