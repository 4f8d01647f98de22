"""Background consolidation: ``Memory(consolidate="background")`` and ``serve --consolidate-every``.

Every ``consolidate_every`` seconds (and on ``memory.consolidation.tick()``) a worker of
the memory (a task of its event loop; a thread for ``Memory``) looks after each tenant
the memory served:

1. it takes the tenant's *schedule* record (kind ``consolidate_schedule`` in the reserved
   tenant ``SCHEDULE_TENANT``) with a lease (``memorybank.stores.contract._async.leases``):
   of several processes or service nodes on one store, one at a time works on a tenant,
   and a node that died holding it has it taken over once the lease runs out;
2. it completes the tenant's interrupted runs (``memory.consolidation.resume()``);
3. it reads the facts stored since the cursor the schedule keeps (a page of ``PAGE`` at a
   time, oldest first: the cost follows the new facts, never all of them) and
   consolidates each owner (user, or the shared facts) with a fact newer than its last
   applied run, every agent's facts each compared with its own;
4. it moves the cursor past what it read and releases the lease.

A run the schedule makes is like any other: in ``memory.consolidation.runs()``, undone by
``undo(run_id)``. A failure is logged and retried at the next tick. ``close()`` stops the
worker between two owners (what is left waits for the next start; a run cut short is
resumed), giving it ``CLOSE_TIMEOUT`` seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memorybank.consolidation._async.consolidation import RUN, AsyncConsolidation
from memorybank.errors import Conflict, LeaseLost
from memorybank.memory._async.facts import FACT
from memorybank.rules.scope import ROOT
from memorybank.runtime.concurrency import AsyncJobQueue
from memorybank.runtime.log import logger
from memorybank.stores.contract._async import leases
from memorybank.stores.contract.items import Record, RecordGuard

if TYPE_CHECKING:
    from memorybank.consolidation.report import ConsolidationReport
    from memorybank.memory._async.core import _Core

__all__ = [
    "CLOSE_TIMEOUT",
    "DEFAULT_EVERY",
    "PAGE",
    "SCHEDULE",
    "SCHEDULE_TENANT",
    "AsyncConsolidationService",
]

#: The reserved tenant (no caller can name it) holding one schedule record per tenant.
SCHEDULE_TENANT = "~memorybank-consolidate"
#: The record kind of a tenant's schedule: its cursor and the lease of its worker.
SCHEDULE = "consolidate_schedule"
#: Seconds between two background ticks by default (an hour).
DEFAULT_EVERY = 3600.0
#: Facts read per page when looking for new ones.
PAGE = 1000
#: Seconds ``close()`` gives a tick under way before stopping it.
CLOSE_TIMEOUT = 30.0


def _cursor(record: Record) -> tuple[datetime, str] | None:
    found = record.data.get("cursor")
    if not isinstance(found, list) or len(found) != 2:
        return None
    return datetime.fromisoformat(found[0]), str(found[1])


class AsyncConsolidationService:
    """The background consolidation of one memory (shared by its handles)."""

    def __init__(self, core: _Core, every: float) -> None:
        self._core = core
        self.every = every
        #: The tenants this memory served: the ones each tick looks after.
        self.tenants: set[str] = set()
        self._closing = False
        self._started = False
        self._reports: list[ConsolidationReport] = []
        self.queue: AsyncJobQueue[None] = AsyncJobQueue(
            "memorybank-consolidate",
            capacity=1,
            batch=1,
            handle=self._handle,
            tick=every,
        )

    async def start(self) -> None:
        """Start the worker (once): a first tick at once (what a stopped process left is
        completed), then one every ``every`` seconds."""
        if self._started or self._closing:
            return
        self._started = True
        await self.queue.put(None, 0)

    async def tick(self) -> list[ConsolidationReport]:
        """Run a tick on the worker now and wait for it (and any under way): the reports
        of the runs it made or completed."""
        self._started = True
        self._reports = []
        if not await self.queue.put(None, 0):
            return []
        await self.queue.join()
        found, self._reports = self._reports, []
        return found

    async def close(self) -> None:
        """Stop the worker: between two owners, or after ``CLOSE_TIMEOUT`` seconds."""
        self._closing = True
        await self.queue.close(CLOSE_TIMEOUT)

    async def _handle(self, jobs: list[None]) -> None:
        for tenant in sorted(self.tenants):
            if self._closing:
                return
            try:
                self._reports += await self._tenant(tenant)
            except Exception as error:  # the next tick tries again
                logger.warning(
                    "memorybank: background consolidation of tenant %r failed (%s)",
                    tenant,
                    error,
                    exc_info=error,
                )

    async def _hold(self, tenant: str) -> Record | None:
        """The tenant's schedule record, held by this worker; ``None`` when another holds it."""
        store = self._core.store
        now = datetime.now(UTC)  # the wall clock, not the memory's: leases across nodes
        until = leases.expiry(now, self._core.consolidate_lease)
        found = await store.record_get(SCHEDULE_TENANT, SCHEDULE, tenant)
        if found is not None:
            return await leases.claim(
                store, SCHEDULE_TENANT, found, owner=self._core.worker, until=until, now=now
            )
        fresh = Record(
            kind=SCHEDULE,
            id=tenant,
            agent_id=None,
            user_id=None,
            content="",
            data={"cursor": None},
            created_at=now,
            updated_at=now,
        )
        held = leases.leased(fresh, self._core.worker, until)
        try:
            await store.record_put(
                SCHEDULE_TENANT, [held], guard=RecordGuard(SCHEDULE, tenant, None)
            )
        except Conflict:  # another worker made it first
            return None
        return held

    async def _tenant(self, tenant: str) -> list[ConsolidationReport]:
        store = self._core.store
        held = await self._hold(tenant)
        if held is None:
            return []
        try:
            consolidation = AsyncConsolidation(self._core, tenant, ROOT)
            reports = await consolidation.resume()
            after = _cursor(held)
            newest: dict[str | None, datetime] = {}
            while True:
                page = await store.record_page(tenant, FACT, limit=PAGE, after=after)
                for record in page:
                    seen = newest.get(record.user_id)
                    if seen is None or record.created_at > seen:
                        newest[record.user_id] = record.created_at
                if page:
                    after = (page[-1].created_at, page[-1].id)
                if len(page) < PAGE:
                    break
            finished = True
            for user, latest in sorted(newest.items(), key=lambda item: str(item[0])):
                if self._closing:
                    finished = False
                    break
                runs = await store.record_list(tenant, RUN, user_id=user)
                last = max(
                    (r.created_at for r in runs if r.data.get("status") == "applied"),
                    default=None,
                )
                if last is not None and last >= latest:
                    continue  # nothing new since its last run
                until = leases.expiry(datetime.now(UTC), self._core.consolidate_lease)
                held = await leases.renew(store, SCHEDULE_TENANT, held, until=until)
                reports.append(await consolidation.run(user_id=user))
        except LeaseLost:
            return []
        except BaseException:
            await leases.release(store, SCHEDULE_TENANT, held, now=datetime.now(UTC))
            raise
        data: dict[str, Any] = dict(held.data)
        if finished and after is not None:
            data["cursor"] = [after[0].isoformat(), after[1]]
        data[leases.LEASE_FIELD] = {
            "owner": self._core.worker,
            "until": datetime.now(UTC).isoformat(),  # released
        }
        done = Record(
            kind=SCHEDULE,
            id=tenant,
            agent_id=None,
            user_id=None,
            content="",
            data=data,
            created_at=held.created_at,
            updated_at=datetime.now(UTC),
            revision=held.revision + 1,
        )
        try:
            await store.record_put(
                SCHEDULE_TENANT, [done], guard=RecordGuard(SCHEDULE, tenant, held.revision)
            )
        except Conflict:  # taken over meanwhile: the other worker keeps its own cursor
            pass
        return reports
