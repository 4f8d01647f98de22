"""Read-guard-write, retried: how ``AsyncMemory`` changes a record others may change too.

A step reads a record, builds the new value from what it read and writes it with
a ``RecordGuard`` on the revision it read (see "Compare-and-swap" in
``memorybank.stores.contract._async.store``). When another writer got in between,
the store refuses the write with ``Conflict`` and nothing is written; the step then
runs again on a fresh read. Every acknowledged write
was therefore built on the value it replaced: none is lost.
"""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime
from typing import Any, TypeVar

from memorybank.errors import Conflict
from memorybank.runtime.concurrency import AsyncStep, asleep
from memorybank.stores.contract._async.store import AsyncStore, Record, RecordGuard

__all__ = ["ATTEMPTS", "put_changed", "put_new", "retry_conflicts", "system_record"]

T = TypeVar("T")

#: Attempts before giving up. A step loses only to a writer that succeeded, so
#: running out takes a record rewritten 20 times during one caller's attempts.
ATTEMPTS = 20
_BACKOFF = 0.002  # seconds; doubled per attempt (capped), jittered so rivals spread out
_MAX_BACKOFF = 0.1


async def retry_conflicts(step: AsyncStep[T], what: str) -> T:
    """``await step()`` until it does not raise ``Conflict`` (at most ``ATTEMPTS`` times).

    Raises:
        Conflict: ``what`` kept changing through every attempt.
    """
    for attempt in range(ATTEMPTS):
        try:
            return await step()
        except Conflict as error:
            if attempt + 1 == ATTEMPTS:
                raise Conflict(
                    f"{what} kept changing during {ATTEMPTS} attempts to write it; try again"
                ) from error
            # random() is fine here: the jitter only spreads rivals apart.
            await asleep(random.random() * min(_MAX_BACKOFF, _BACKOFF * 2**attempt))
    raise AssertionError("unreachable")


def system_record(
    kind: str,
    record_id: str,
    data: dict[str, Any],
    now: datetime,
    *,
    key: str | None = None,
    created_at: datetime | None = None,
) -> Record:
    """A new record of the library's own (API keys, webhooks, jobs): no owner, no content;
    created ``now`` unless ``created_at`` (a record written anew keeps its first time)."""
    return Record(kind, record_id, None, None, "", data, created_at or now, now, key=key)


async def put_new(store: AsyncStore, tenant: str, record: Record) -> None:
    """Write ``record`` only if its id is free: a taken id raises ``Conflict`` and writes
    nothing (a ``retry_conflicts`` step that drew the id draws anew)."""
    await store.record_put(tenant, [record], guard=RecordGuard(record.kind, record.id, None))


async def put_changed(
    store: AsyncStore, tenant: str, record: Record, data: dict[str, Any], now: datetime
) -> Record:
    """``record`` with ``data`` written over the revision it was read at: ``Conflict``
    (nothing written) when another writer got in between. The record written."""
    new = dataclasses.replace(record, data=data, revision=record.revision + 1, updated_at=now)
    await store.record_put(
        tenant, [new], guard=RecordGuard(record.kind, record.id, record.revision)
    )
    return new
