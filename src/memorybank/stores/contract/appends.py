"""``plan_append``: what an append writes, decided once for the stores that keep entries in
this process (the in-memory store, a store of your own); the SQL stores and Redis make the
same decisions in their statements and scripts, and the conformance suite holds all of
them to one outcome.

Given a batch and what the branch holds, it applies the contract's rules in order: an id
twice in the batch (``Conflict``), an idempotency key already on the branch (the stored
entry comes back in its place, or ``Conflict`` when the payload's fingerprint differs),
an id the branch already holds (``Conflict``), positions after the branch's last. It
changes nothing: the caller writes ``Plan.added`` only when it returns, so a refused
append writes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memorybank.records import Entry
from memorybank.rules.entry_ids import check_batch_ids, id_taken
from memorybank.rules.idempotency import clash, key_reused
from memorybank.stores.contract.items import NewEntry

__all__ = ["Plan", "new_entry", "plan_append"]


@dataclass(slots=True)
class Plan:
    """An append's outcome: ``entries`` to return (stored or new, in the batch's order),
    ``added`` to write, and the ``fingerprints`` of the keyed ones among them (by id)."""

    entries: list[Entry] = field(default_factory=list)
    added: list[Entry] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)


def new_entry(new: NewEntry, thread_id: str, branch: str, position: int) -> Entry:
    """The ``Entry`` stored for ``new`` (deep copies of its JSON values; an empty one is a
    fresh ``{}``, not a copy: an append builds one per entry)."""
    return Entry(
        id=new.id,
        thread_id=thread_id,
        branch=branch,
        position=position,
        role=new.role,  # type: ignore[arg-type]  # validated above the stores
        content=new.content,
        name=new.name,
        tool_calls=new.tool_calls,
        tool_call_id=new.tool_call_id,
        metadata=copy.deepcopy(new.metadata) if new.metadata else {},
        state=copy.deepcopy(new.state) if new.state else {},
        token_count=new.token_count,
        created_at=new.created_at,
        idempotency_key=new.idempotency_key,
        extra=copy.deepcopy(new.extra) if new.extra else {},
        item=copy.deepcopy(new.item),
    )


def plan_append(
    entries: Sequence[NewEntry],
    held: Sequence[Entry],
    fingerprints: Mapping[str, str],
    *,
    thread_id: str,
    branch: str,
) -> Plan:
    """The plan of appending ``entries`` to ``branch``, which holds ``held`` (oldest first)
    whose keyed entries have ``fingerprints`` (by entry id). Raises ``Conflict`` as the
    module says; writes nothing."""
    check_batch_ids(entries)
    by_key = {e.idempotency_key: e for e in held if e.idempotency_key is not None}
    ids = {e.id for e in held}
    position = held[-1].position if held else 0
    plan = Plan()
    for new in entries:
        old = by_key.get(new.idempotency_key) if new.idempotency_key else None
        if old is not None:  # a replay: the stored entry, unless the payload differs
            stored = fingerprints.get(old.id, plan.fingerprints.get(old.id))
            if clash(stored, new.fingerprint):
                raise key_reused(new.idempotency_key)
            plan.entries.append(old)
            continue
        if new.id in ids:
            raise id_taken(new.id, branch)
        position += 1
        entry = new_entry(new, thread_id, branch, position)
        if new.idempotency_key is not None:
            by_key[new.idempotency_key] = entry
            if new.fingerprint is not None:
                plan.fingerprints[new.id] = new.fingerprint
        plan.entries.append(entry)
        plan.added.append(entry)
    return plan
