"""Delivering the change feed to webhook endpoints: ``WebhookWorker``.

How it works
    A worker scans the endpoints (``memorybank.webhooks.registry``) every ``poll``
    seconds. An active endpoint nobody holds is *claimed* with a lease
    (``memorybank.stores.contract._async.leases``: a compare-and-swap on its record), so
    of several workers (``serve --workers N``, several nodes on one store) exactly one
    delivers it at a time. The holder reads its tenant's feed after the endpoint's
    stored cursor (``memory.tenant(T).events.list(after=cursor)``, oldest first) and
    posts the events one at a time, in cursor order (hence in order per thread), each
    signed (``memorybank.webhooks.signing``) and carrying its event id.

At least once
    The cursor is stored only after the endpoint answered 2xx (consecutive successes
    are stored together, at the latest ``checkpoint`` seconds after the first, and at
    once at a failure or the end of a page). A failure (an answer
    other than 2xx, a refused connection, a timeout) is counted in the record and the
    same event is retried after an exponential backoff with jitter
    (``retry_base * 2**(failures-1)``, capped at ``retry_max``, times a random factor
    in [0.5, 1)). After ``max_failures`` consecutive failures the endpoint is paused
    with the reason stored (``GET /v1/admin/webhooks/{id}``, the inspector); resuming
    it retries from its cursor, so nothing is skipped. A worker killed mid-delivery
    leaves its lease to run out: the next holder starts again from the stored cursor
    and may send the last event again, with the same ``Memorybank-Event-Id``.

    A cursor older than the feed keeps (``CursorExpired``) pauses the endpoint with
    that reason rather than skipping what was lost.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx

from memorybank import __version__
from memorybank.core._async.cas import put_changed
from memorybank.errors import ConfigurationError, Conflict, LeaseLost
from memorybank.events.types import CursorExpired, Event
from memorybank.rules.ids import new_id
from memorybank.runtime.log import logger
from memorybank.stores.contract._async import leases
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.items import Record
from memorybank.webhooks.registry import ACTIVE, PAUSED, WEBHOOK_KIND, WEBHOOK_TENANT
from memorybank.webhooks.signing import (
    EVENT_ID_HEADER,
    EVENT_KIND_HEADER,
    SIGNATURE_HEADER,
    signature_header,
)

if TYPE_CHECKING:
    from memorybank.memory._async.memory import AsyncMemory

__all__ = [
    "DEFAULT_CHECKPOINT",
    "DEFAULT_MAX_FAILURES",
    "DEFAULT_POLL",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WEBHOOK_LEASE",
    "WebhookWorker",
    "payload",
]

#: Seconds a worker holds an endpoint between renewals (longer than one delivery's timeout).
DEFAULT_WEBHOOK_LEASE = 30.0
#: Seconds between scans for endpoints to claim, and between reads of an idle feed.
DEFAULT_POLL = 1.0
#: Seconds one delivery may take before it counts as failed.
DEFAULT_TIMEOUT = 10.0
#: Consecutive failures after which an endpoint is paused.
DEFAULT_MAX_FAILURES = 10
#: Seconds acknowledged deliveries may wait before their cursor is stored (together).
DEFAULT_CHECKPOINT = 0.5
#: Events read from the feed per page.
_PAGE = 100
_MAX_ERROR = 500


def payload(tenant: str, event: Event) -> dict[str, Any]:
    """The JSON body delivered for ``event`` of ``tenant``."""
    return {
        "id": event.id,
        "kind": event.kind,
        "at": event.at.isoformat(),
        "cursor": event.cursor,
        "tenant": tenant,
        "user_id": event.user_id,
        "agent_id": event.agent_id,
        "thread_id": event.thread_id,
        "item_id": event.item_id,
        "data": None if event.data is None else dict(event.data),
    }


class _Gone(Exception):
    """The endpoint was deleted, paused or taken over: its task ends (``release``: and
    its lease, still this worker's, is ended at once)."""

    def __init__(self, release: bool = False) -> None:
        super().__init__()
        self.release = release


class WebhookWorker:
    """Delivers every tenant's events to their webhook endpoints (see the module's docstring).

    Run it with ``async with WebhookWorker(memory):`` or ``await worker.start()`` /
    ``await worker.stop()``; the HTTP service runs one per process. Any number of workers
    may share a store: each endpoint is delivered by one of them at a time.

    Args:
        memory: the (root) memory whose tenants' feeds are delivered.
        lease: seconds a worker holds an endpoint; another worker takes a crashed
            worker's endpoints over after it.
        poll: seconds between scans for endpoints, and between reads of an idle feed.
        timeout: seconds one delivery may take.
        max_failures: consecutive failures that pause an endpoint.
        retry_base: seconds before the first retry (doubled per failure).
        retry_max: the longest wait between retries.
        checkpoint: the longest (seconds) an acknowledged delivery's cursor waits to be
            stored: consecutive successes are stored together (one store write per
            ``checkpoint`` rather than per event). A worker killed meanwhile leaves the
            next one to send those events again (same ids).
        client: the ``httpx.AsyncClient`` to post with (default: one of its own).
    """

    def __init__(
        self,
        memory: AsyncMemory,
        *,
        lease: float = DEFAULT_WEBHOOK_LEASE,
        poll: float = DEFAULT_POLL,
        timeout: float = DEFAULT_TIMEOUT,
        max_failures: int = DEFAULT_MAX_FAILURES,
        retry_base: float = 1.0,
        retry_max: float = 300.0,
        checkpoint: float = DEFAULT_CHECKPOINT,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.lease = leases.check_lease(lease, "webhook lease")
        for name, value in (
            ("poll", poll),
            ("timeout", timeout),
            ("retry_base", retry_base),
            ("checkpoint", checkpoint),
        ):
            if not (isinstance(value, int | float) and 0 < value < 86_400):
                raise ConfigurationError(f"{name} must be positive seconds, got {value!r}")
        if not (isinstance(retry_max, int | float) and retry_max >= retry_base):
            raise ConfigurationError(f"retry_max must be >= retry_base, got {retry_max!r}")
        if isinstance(max_failures, bool) or not isinstance(max_failures, int) or max_failures < 1:
            raise ConfigurationError(f"max_failures must be an integer >= 1, got {max_failures!r}")
        self.memory = memory
        self.store = memory.store
        self.poll = float(poll)
        self.timeout = float(timeout)
        self.max_failures = max_failures
        self.retry_base = float(retry_base)
        self.retry_max = float(retry_max)
        self.checkpoint = float(checkpoint)
        self.owner = new_id()  # this worker, in the leases of the endpoints it holds
        self._clock = clock or (lambda: datetime.now(UTC))
        self._client = client
        self._own_client = client is None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._main: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        #: Deliveries answered 2xx by this worker.
        self.delivered = 0
        #: Failed delivery attempts of this worker.
        self.failed = 0

    # -- running ------------------------------------------------------------------

    async def start(self) -> None:
        """Start scanning and delivering in the background (idempotent)."""
        if self._main is not None:
            return
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self.timeout,
                follow_redirects=False,
                headers={"User-Agent": f"memorybank-webhooks/{__version__}"},
            )
        self._stopping.clear()
        self._main = asyncio.create_task(self._run(), name="memorybank-webhooks")

    async def stop(self) -> None:
        """Stop delivering; the endpoints this worker holds are released at once."""
        self._stopping.set()
        main, self._main = self._main, None
        tasks = [main, *self._tasks.values()] if main is not None else list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> WebhookWorker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def holding(self) -> list[str]:
        """Ids of the endpoints this worker delivers now."""
        return sorted(self._tasks)

    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.scan()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the store is down: try again next poll
                logger.warning("memorybank: webhook scan failed (%s)", error)
            await self._sleep(self.poll)

    async def scan(self) -> int:
        """Claim the active endpoints nobody holds and start delivering them: how many
        were claimed."""
        claimed = 0
        now = self._clock()
        for record in await self.store.record_list(WEBHOOK_TENANT, WEBHOOK_KIND):
            if record.id in self._tasks or record.data.get("state") != ACTIVE:
                continue
            lease = leases.lease_of(record)
            if lease is not None and lease.owner != self.owner and lease.live(now):
                continue
            held = await leases.claim(
                self.store,
                WEBHOOK_TENANT,
                record,
                owner=self.owner,
                until=leases.expiry(now, self.lease),
                now=now,
            )
            if held is None:
                continue
            claimed += 1
            task = asyncio.create_task(self._serve(held), name=f"memorybank-webhook-{record.id}")
            self._tasks[record.id] = task
            task.add_done_callback(self._forget(record.id))
        return claimed

    def _forget(self, webhook_id: str) -> Callable[[asyncio.Task[None]], None]:
        def done(task: asyncio.Task[None]) -> None:
            if self._tasks.get(webhook_id) is task:
                del self._tasks[webhook_id]

        return done

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=max(0.0, seconds))
        except TimeoutError:
            pass

    # -- one endpoint -------------------------------------------------------------

    async def _write(
        self, held: Record, changes: dict[str, Any], *, release: bool = False
    ) -> Record:
        """``held`` with ``changes`` and the lease renewed (``release``: ended) stored: a
        compare-and-swap
        on the revision this worker last wrote. Another writer in between (an operator's
        change) is read back and the changes applied again on top, while this worker's
        lease holds; ``_Gone`` when it does not, or the endpoint was deleted."""
        while True:
            now = self._clock()
            data = {**held.data, **changes}
            until = now if release else leases.expiry(now, self.lease)
            data[leases.LEASE_FIELD] = {"owner": self.owner, "until": until.isoformat()}
            try:
                return await put_changed(self.store, WEBHOOK_TENANT, held, data, now)
            except Conflict:
                fresh = await self.store.record_get(WEBHOOK_TENANT, WEBHOOK_KIND, held.id)
                lease = None if fresh is None else leases.lease_of(fresh)
                if (
                    fresh is None
                    or lease is None
                    or lease.owner != self.owner
                    or not lease.live(now)
                ):
                    raise _Gone from None
                held = fresh

    async def _keep(self, held: Record) -> Record:
        """``held``, its lease renewed first when less than half of it is left."""
        lease = leases.lease_of(held)
        now = self._clock()
        if lease is not None and lease.owner == self.owner:
            if (lease.until - now).total_seconds() >= self.lease / 2:
                return held
        return await self._write(held, {})

    async def _serve(self, held: Record) -> None:
        tenant = str(held.data["tenant"])
        try:
            if Capability.EVENTS not in self.store.capabilities:
                await self._pause(held, f"{type(self.store).__name__} keeps no change feed")
            while not self._stopping.is_set():
                held = await self._keep(held)
                if held.data.get("state") != ACTIVE:
                    raise _Gone(release=True)
                try:
                    events = await self.memory.tenant(tenant).events.list(
                        after=held.data.get("cursor"), limit=_PAGE
                    )
                except CursorExpired as error:
                    await self._pause(
                        held, f"the feed no longer keeps this endpoint's cursor: {error}"
                    )
                    return
                if not events:
                    await self._sleep(self.poll)
                    continue
                held = await self._deliver_page(held, tenant, events)
        except _Gone as gone:
            if gone.release:
                await self._release(held)
            return
        except LeaseLost:
            return
        except asyncio.CancelledError:
            await self._release(held)
            raise
        except Exception as error:  # the store failed: let another scan (or worker) retry
            logger.warning("memorybank: webhook %s stopped (%s)", held.id, error)
        await self._release(held)

    async def _release(self, held: Record) -> None:
        try:
            await asyncio.shield(
                leases.release(self.store, WEBHOOK_TENANT, held, now=self._clock())
            )
        except Exception as error:  # best effort: the lease runs out anyway
            logger.info("memorybank: could not release a webhook lease (%s)", error)

    async def _deliver_page(self, held: Record, tenant: str, events: list[Event]) -> Record:
        kinds = held.data.get("kinds")
        since_raw = held.data.get("since")
        since = datetime.fromisoformat(since_raw) if isinstance(since_raw, str) else None
        # acknowledged progress not stored yet (the cursor, counts): stored at the latest
        # ``checkpoint`` seconds after the first of it, at a failure, and at the page's end
        pending: dict[str, Any] = {}
        loop = asyncio.get_running_loop()
        first = loop.time()
        for event in events:
            if (kinds is not None and event.kind not in kinds) or (
                since is not None and event.at < since
            ):
                pending["cursor"] = event.cursor  # not wanted: skipped past
            else:
                held = await self._deliver(held, tenant, event, pending)
            if not pending:
                first = loop.time()
            elif loop.time() - first >= self.checkpoint:
                held, pending = await self._write(held, pending), {}
        if since is not None and len(events) < _PAGE:
            pending["since"] = None  # caught up with the feed: nothing older is left
        if pending:
            held = await self._write(held, pending)
        return held

    async def _deliver(
        self, held: Record, tenant: str, event: Event, pending: dict[str, Any]
    ) -> Record:
        """Post ``event`` until the endpoint answers 2xx, then add the cursor past it to
        ``pending`` (what is not stored yet: stored with the next failure, or by the
        caller). ``_Gone`` when the endpoint is paused (after ``max_failures``) meanwhile."""
        body = json.dumps(payload(tenant, event), separators=(",", ":"), ensure_ascii=False)
        raw = body.encode("utf-8")
        while True:
            held = await self._keep(held)
            if held.data.get("state") != ACTIVE or self._stopping.is_set():
                if pending:  # what was acknowledged stays acknowledged
                    await self._write(held, pending, release=True)
                raise _Gone(release=not pending)
            secret = str(held.data["secret"])
            headers = {
                "Content-Type": "application/json",
                SIGNATURE_HEADER: signature_header(secret, raw),
                EVENT_ID_HEADER: event.id,
                EVENT_KIND_HEADER: event.kind,
            }
            error = await self._post(str(held.data["url"]), raw, headers)
            now = self._clock().isoformat()
            if error is None:
                self.delivered += 1
                delivered = int(pending.get("delivered", held.data.get("delivered", 0))) + 1
                pending.update(
                    cursor=event.cursor,
                    failures=0,
                    last_success_at=now,
                    last_attempt_at=now,
                    delivered=delivered,
                )
                return held
            self.failed += 1
            failures = int(pending.get("failures", held.data.get("failures", 0))) + 1
            changes: dict[str, Any] = {
                **pending,
                "failures": failures,
                "last_error": f"event {event.id}: {error}"[:_MAX_ERROR],
                "last_attempt_at": now,
            }
            pending.clear()
            if failures >= self.max_failures:
                changes.update(
                    state=PAUSED,
                    paused_at=now,
                    paused_reason=f"{failures} consecutive failed deliveries; last: {error}"[
                        :_MAX_ERROR
                    ],
                )
                await self._write(held, changes, release=True)
                raise _Gone
            held = await self._write(held, changes)
            held = await self._backoff(held, failures)

    async def _backoff(self, held: Record, failures: int) -> Record:
        """Wait before retry ``failures`` (renewing the lease meanwhile)."""
        delay = min(self.retry_max, self.retry_base * 2 ** (failures - 1))
        delay *= 0.5 + random.random() / 2  # jitter: spread retries of many endpoints
        loop = asyncio.get_running_loop()
        end = loop.time() + delay
        while not self._stopping.is_set():
            left = end - loop.time()
            if left <= 0:
                break
            await self._sleep(min(left, self.lease / 3))
            held = await self._keep(held)
        return held

    async def _post(self, url: str, body: bytes, headers: dict[str, str]) -> str | None:
        """Post once: ``None`` on a 2xx answer, else what went wrong."""
        assert self._client is not None
        try:
            response = await self._client.post(
                url, content=body, headers=headers, timeout=self.timeout
            )
        except httpx.TimeoutException:
            return f"timed out after {self.timeout:g} s"
        except httpx.HTTPError as error:
            return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        if 200 <= response.status_code < 300:
            return None
        return f"HTTP {response.status_code}"

    async def _pause(self, held: Record, reason: str) -> None:
        now = self._clock().isoformat()
        await self._write(
            held,
            {"state": PAUSED, "paused_reason": reason[:_MAX_ERROR], "paused_at": now},
            release=True,
        )
        raise _Gone
