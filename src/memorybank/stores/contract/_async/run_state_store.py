"""``AsyncRunStateStore``: per-run working memory, snapshots and summaries (a part of
``AsyncStore``), derived from records.

Nothing here is required. Each method has a default written once on the record
primitives (``AsyncRecordStore``): working memory, snapshots and summaries are
records of the reserved kinds ``WORKING_KIND``, ``SNAPSHOT_KIND`` and
``SUMMARY_KIND``, a snapshot's owner check is a compare-and-swap on its record's
revision. A store may override them all for speed and then claims
``Capability.RUN_STATE`` (the conformance suite checks the claim matches).

"Scope", "Compare-and-swap" (snapshot owners) and "Values" (JSON text verbatim) in
``memorybank.stores.contract._async.store`` apply.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memorybank.errors import Conflict, ThreadForbidden
from memorybank.records import Summary
from memorybank.rules.ids import compound_id
from memorybank.stores.contract._async.record_store import AsyncRecordStore
from memorybank.stores.contract.items import Record, RecordGuard
from memorybank.stores.contract.types import Unset

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["SNAPSHOT_KIND", "SUMMARY_KIND", "WORKING_KIND", "AsyncRunStateStore"]

#: The record kinds the derived run state is kept under (no other code writes them).
WORKING_KIND = "derived.working"
SNAPSHOT_KIND = "derived.snapshot"
SUMMARY_KIND = "derived.summary"
#: Compare-and-swap attempts of a snapshot write before it reports the race.
_CAS_ATTEMPTS = 8


def _page(ids: Iterable[str], after: str | None, limit: int | None) -> list[str]:
    found = sorted({i for i in ids if after is None or i > after})
    return found if limit is None else found[:limit]


def _working_id(run_id: str, key: str) -> str:
    import json  # on first use: a process that only reads history never needs it (cold start)

    return compound_id(json.dumps([run_id, key], ensure_ascii=False))


class AsyncRunStateStore(AsyncRecordStore):
    """Run state: working memory (per run), snapshots (durable workflows), summaries."""

    # -- working memory (per run) ----------------------------------------------

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        """Set one key of a run's working memory (value is JSON text)."""
        now = datetime.now(UTC)
        rid = _working_id(run_id, key)
        record = Record(WORKING_KIND, rid, None, None, value, {"key": key}, now, now, key=run_id)
        await self.record_put(tenant, [record])

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        """The JSON text stored under ``key``, or ``None``."""
        record = await self.record_get(tenant, WORKING_KIND, _working_id(run_id, key))
        return None if record is None else record.content

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        """Delete one key; whether it existed."""
        return await self.record_delete(tenant, WORKING_KIND, [_working_id(run_id, key)]) > 0

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        """Every key of the run's working memory."""
        records = await self.record_list(tenant, WORKING_KIND, key=run_id)
        return {r.data["key"]: r.content for r in records}

    async def working_clear(self, tenant: str, run_id: str) -> None:
        """Forget the run's working memory."""
        records = await self.record_list(tenant, WORKING_KIND, key=run_id)
        if records:
            await self.record_delete(tenant, WORKING_KIND, [r.id for r in records])

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """The run ids of ``tenant`` that hold working memory, in id order.

        ``after`` leaves out ids up to and including it; ``limit`` caps the count.
        For export (``memorybank export``); a run whose working memory was
        cleared is not listed.
        """
        records = await self.record_list(tenant, WORKING_KIND)
        return _page((r.key for r in records if r.key is not None), after, limit)

    # -- snapshots (durable workflows) -----------------------------------------

    async def snapshot_save(
        self,
        tenant: str,
        run_id: str,
        value: str,
        *,
        user_id: str | None,
        saved_at: datetime,
        owner_check: bool = True,
    ) -> None:
        """Save (replace) a run's snapshot, with ``user_id`` as its owner.

        With ``owner_check`` the save applies only if the run has no snapshot or
        its owner is ``None`` or ``user_id``; otherwise ``ThreadForbidden`` and
        nothing is written. The check and the write are one atomic step: of two
        users saving the same new run at once, exactly one owns it.
        """
        for _ in range(_CAS_ATTEMPTS):
            found = await self.record_get(tenant, SNAPSHOT_KIND, run_id)
            if owner_check and found is not None and found.user_id not in (None, user_id):
                raise ThreadForbidden("snapshot access forbidden")
            revision = None if found is None else found.revision
            record = Record(
                SNAPSHOT_KIND, run_id, None, user_id, value, {}, saved_at, saved_at,
                revision=0 if revision is None else revision + 1,
            )  # fmt: skip
            try:
                await self.record_put(
                    tenant, [record], guard=RecordGuard(SNAPSHOT_KIND, run_id, revision)
                )
                return
            except Conflict:
                continue  # another save came between the read and the write: look again
        raise Conflict(f"snapshot {run_id!r} changed concurrently; try again")

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        """``(owner user_id, JSON text)`` or ``None``."""
        record = await self.record_get(tenant, SNAPSHOT_KIND, run_id)
        return None if record is None else (record.user_id, record.content)

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        """Delete a run's snapshot; whether it existed.

        With ``owner_check``, a snapshot owned by someone other than ``user_id``
        is not deleted: ``ThreadForbidden``, in the same atomic step as the delete.
        """
        for _ in range(_CAS_ATTEMPTS):
            found = await self.record_get(tenant, SNAPSHOT_KIND, run_id)
            if found is None:
                return False
            if owner_check and found.user_id not in (None, user_id):
                raise ThreadForbidden("snapshot access forbidden")
            guard = RecordGuard(SNAPSHOT_KIND, run_id, found.revision)
            try:
                return await self.record_delete(tenant, SNAPSHOT_KIND, [run_id], guard=guard) > 0
            except Conflict:
                continue
        raise Conflict(f"snapshot {run_id!r} changed concurrently; try again")

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """The run ids of ``tenant`` that have a snapshot, in id order. ``after`` and
        ``limit`` as in :meth:`working_runs`."""
        return _page((r.id for r in await self.record_list(tenant, SNAPSHOT_KIND)), after, limit)

    # -- summaries -------------------------------------------------------------

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        """Store a summary."""
        record = Record(
            SUMMARY_KIND, summary.id, summary.agent_id, summary.user_id, summary.content, {},
            summary.created_at, summary.created_at,
        )  # fmt: skip
        await self.record_put(tenant, [record])
        return summary

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        """The agent's summaries for ``user_id`` plus the shared ones (no user), oldest first.

        ``UNSET``: every summary of the agent.
        """
        records = await self.record_list(tenant, SUMMARY_KIND, agent_id=agent_id)
        return [
            Summary(r.id, agent_id, r.user_id, r.content, r.created_at)
            for r in records
            if isinstance(user_id, Unset) or r.user_id is None or r.user_id == user_id
        ]

    async def summary_agents(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """The agent ids of ``tenant`` that have a summary, in id order. ``after`` and
        ``limit`` as in :meth:`working_runs`. For export (``memorybank export``), which
        reads each agent's summaries with :meth:`summary_list`."""
        records = await self.record_list(tenant, SUMMARY_KIND)
        return _page((r.agent_id for r in records if r.agent_id is not None), after, limit)
