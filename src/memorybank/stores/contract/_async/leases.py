"""Leases: one worker per record of a background job, across processes and nodes.

A background job keeps its work in records (the embedding journal's ``embed_job``
records, for one). Before a worker does a record's work it *claims* the record:
``data["lease"]`` names the holder (``owner``, a random id per worker) and until
when it holds it (``until``, ISO UTC). The claim is a compare-and-swap on the
record's revision (``record_put`` with a ``RecordGuard``, see "Compare-and-swap"
in ``memorybank.stores.contract._async.store``), so of N workers claiming one
record at once exactly one wins, on every store, written once here above them.

* ``claim`` takes a record nobody holds, or whose lease has run out (a crashed
  worker's records are taken over after the lease); ``None`` when another worker
  holds it or won the race.
* ``renew`` extends the holder's lease (a long job renews between its steps); it
  raises ``LeaseLost`` when the lease ran out and another worker took the record,
  or the record is gone (the job was finished): the caller then writes nothing of
  that job.
* ``release`` ends the holder's lease at once (a job that failed, or that a
  closing worker leaves), so the next worker need not wait for it to run out.
* ``leased`` makes a new record already held (a job its writer will do itself).

While a lease is live no other worker does that record's work. A holder whose
single step outlasts the lease may see its record taken over: the step's work is
done twice (never lost), and the holder's next ``renew`` fails, so only one of
them writes the result. Choose a lease longer than the longest step. Expiry is
compared with each worker's wall clock: nodes keep their clocks in sync (NTP).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memorybank.errors import ConfigurationError, Conflict, LeaseLost
from memorybank.stores.contract.items import Record, RecordGuard

if TYPE_CHECKING:
    from memorybank.stores.contract._async.store import AsyncStore

__all__ = [
    "DEFAULT_LEASE",
    "LEASE_FIELD",
    "Lease",
    "check_lease",
    "claim",
    "expiry",
    "lease_from_text",
    "lease_of",
    "leased",
    "release",
    "renew",
]

#: Seconds a claim holds by default (longer than one embedding batch takes).
DEFAULT_LEASE = 60.0
#: The key of ``Record.data`` holding the lease.
LEASE_FIELD = "lease"


@dataclasses.dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a record and until when."""

    owner: str
    until: datetime

    def live(self, now: datetime) -> bool:
        """Whether the lease still holds at ``now``."""
        return now < self.until


def check_lease(seconds: object, name: str = "lease") -> float:
    """A lease length from configuration: a finite number of seconds > 0."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ConfigurationError(f"{name} must be a number of seconds, got {seconds!r}")
    value = float(seconds)
    if not (0 < value < 86_400 * 365):
        raise ConfigurationError(f"{name} must be positive seconds (under a year), got {seconds!r}")
    return value


def lease_from_text(text: str | None, name: str, default: float = DEFAULT_LEASE) -> float:
    """A lease length from configuration text (an environment variable ``name``): unset
    or empty is ``default``."""
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number of seconds, got {text!r}") from None
    return check_lease(value, name)


def lease_of(record: Record) -> Lease | None:
    """The record's lease, or ``None`` (never claimed, or unreadable: claimable)."""
    found = record.data.get(LEASE_FIELD)
    if not isinstance(found, dict):
        return None
    owner, until = found.get("owner"), found.get("until")
    if not isinstance(owner, str) or not isinstance(until, str):
        return None
    try:
        when = datetime.fromisoformat(until)
    except ValueError:
        return None
    return Lease(owner, when) if when.tzinfo is not None else None


def _held(record: Record, owner: str, until: datetime, revision: int) -> Record:
    data = {**record.data, LEASE_FIELD: {"owner": owner, "until": until.isoformat()}}
    return dataclasses.replace(record, data=data, revision=revision)


def leased(record: Record, owner: str, until: datetime) -> Record:
    """``record`` (not stored yet) held by ``owner`` until ``until``, at revision 0."""
    return _held(record, owner, until, 0)


async def claim(
    store: AsyncStore, tenant: str, record: Record, *, owner: str, until: datetime, now: datetime
) -> Record | None:
    """Hold ``record`` (as read) for ``owner`` until ``until``: the record as stored, or
    ``None`` when another worker's lease is live at ``now`` or another claim won."""
    lease = lease_of(record)
    if lease is not None and lease.owner != owner and lease.live(now):
        return None
    held = _held(record, owner, until, record.revision + 1)
    try:
        await store.record_put(
            tenant, [held], guard=RecordGuard(record.kind, record.id, record.revision)
        )
    except Conflict:  # changed since read: another worker claimed it, or it is done
        return None
    return held


async def renew(store: AsyncStore, tenant: str, record: Record, *, until: datetime) -> Record:
    """Extend the lease of ``record`` (as its holder last stored it) to ``until``: the
    record as stored. ``LeaseLost`` when it was taken over or removed meanwhile."""
    lease = lease_of(record)
    if lease is None:
        raise LeaseLost(f"{record.kind} {record.id!r} is not held")
    held = _held(record, lease.owner, until, record.revision + 1)
    try:
        await store.record_put(
            tenant, [held], guard=RecordGuard(record.kind, record.id, record.revision)
        )
    except Conflict as error:
        raise LeaseLost(
            f"{record.kind} {record.id!r}: the lease of {lease.owner!r} was taken over"
            " or the job is done"
        ) from error
    return held


def expiry(now: datetime, seconds: float) -> datetime:
    """The ``until`` of a lease of ``seconds`` taken at ``now``."""
    return now + timedelta(seconds=seconds)


async def release(
    store: AsyncStore, tenant: str, record: Record, *, now: datetime
) -> Record | None:
    """End the lease of ``record`` (as its holder last stored it) at ``now``, so any
    worker may claim it at once (a job that failed, or that a closing worker leaves):
    the record as stored, or ``None`` when it was taken over or removed meanwhile."""
    lease = lease_of(record)
    if lease is None:
        return None
    try:
        return await renew(store, tenant, record, until=now)
    except LeaseLost:
        return None
