"""``memory.usage``: the importance and last use of facts, documents and entries.

The rules live in ``memorybank.importance``; this module reads and writes the
``memory_usage`` records (one per item, ``usage_id(kind, id)``) with the store's record
verbs only: a flush of the use buffer is one ``record_get_many``, at most one
``thread_get_many`` (the owners of entries used for the first time) and one
``record_put`` per ``USAGE_WRITE`` items.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from memorybank.core._async.core import Namespace
from memorybank.errors import InvalidInput, NotFound
from memorybank.importance import (
    DEFAULT_IMPORTANCE,
    USAGE,
    USAGE_WRITE,
    HalfLife,
    ItemUsage,
    Pending,
    check_importance,
    check_kind,
    rated,
    usage_id,
)
from memorybank.records import Document, Fact, Hit
from memorybank.rules import validate as v
from memorybank.rules.scope import check_owner
from memorybank.stores.contract._async.store import UNSET, Record, Unset
from memorybank.stores.contract.types import visible

if TYPE_CHECKING:
    from memorybank.core._async.core import _Core

__all__ = [
    "AsyncUsage",
    "decayed",
    "flush_usage",
    "given_importance",
    "note_hits",
    "usage_of",
    "usage_record",
    "weights",
]


def usage_record(
    usage: ItemUsage,
    *,
    agent_id: str | None,
    user_id: str | None,
    now: datetime,
    created_at: datetime | None = None,
    thread_id: str | None = None,
    record_id: str | None = None,
) -> Record:
    """The ``memory_usage`` record holding ``usage``, owned like its item (``record_id``:
    its ``usage_id``, if known)."""
    return Record(
        kind=USAGE,
        id=usage_id(usage.kind, usage.id) if record_id is None else record_id,
        agent_id=agent_id,
        user_id=user_id,
        content="",
        data=usage.data(thread_id),
        created_at=now if created_at is None else created_at,
        updated_at=now,
        key=usage.id,
    )


def given_importance(kind: str, item: Fact | Document, importance: float, now: datetime) -> Record:
    """The usage record of an importance given at write (``facts.add``, ``documents.add``),
    written in the same ``record_put`` as the item."""
    return usage_record(
        ItemUsage(kind, item.id, importance, explicit=True),
        agent_id=item.agent_id,
        user_id=item.user_id,
        now=now,
    )


def note_hits(core: _Core, tenant: str, hits: Iterable[Hit], at: datetime) -> None:
    """Note a search's hits as used (in the buffer; no write)."""
    buffer = core.usage
    for hit in hits:
        if hit.entry is not None:
            entry = hit.entry
            buffer.note(
                tenant,
                "entry",
                entry.id,
                at,
                agent_id=None,
                user_id=None,
                thread_id=entry.thread_id,
            )
        elif hit.document is not None:
            doc = hit.document
            buffer.note(tenant, "document", doc.id, at, agent_id=doc.agent_id, user_id=doc.user_id)
        elif hit.fact is not None and not hit.superseded:
            fact = hit.fact
            buffer.note(tenant, "fact", fact.id, at, agent_id=fact.agent_id, user_id=fact.user_id)


async def flush_usage(core: _Core) -> int:
    """Write every buffered use; how many items were written."""
    written = 0
    for tenant, pending in core.usage.take().items():
        for start in range(0, len(pending), USAGE_WRITE):
            written += await _write(core, tenant, pending[start : start + USAGE_WRITE])
    return written


async def _write(core: _Core, tenant: str, batch: Sequence[Pending]) -> int:
    store = core.store
    now = core.now()
    ids = [usage_id(p.kind, p.id) for p in batch]
    have = await store.record_get_many(tenant, USAGE, ids)
    # an entry used for the first time is owned like its thread: one batch read
    new_threads = [
        p.thread_id
        for p, rid in zip(batch, ids, strict=True)
        if p.kind == "entry" and rid not in have and p.thread_id is not None
    ]
    threads = await store.thread_get_many(tenant, new_threads) if new_threads else {}
    records: list[Record] = []
    for p, rid in zip(batch, ids, strict=True):
        old = have.get(rid)
        usage = _stored(p.kind, p.id, old).after_uses(p.uses, p.last_used_at)
        if old is not None:
            old.data = usage.data(old.data.get("thread_id"))
            old.updated_at = now
            records.append(old)
            continue
        agent, user = p.agent_id, p.user_id
        if p.kind == "entry":
            thread = threads.get(p.thread_id or "")
            if thread is None:
                continue  # the thread went since the search: nothing to keep
            agent, user = thread.agent_id, thread.user_id
        records.append(
            usage_record(
                usage, agent_id=agent, user_id=user, now=now, thread_id=p.thread_id, record_id=rid
            )
        )
    if records:
        await store.record_put(tenant, records)
    return len(records)


def _stored(kind: str, item_id: str, record: Record | None) -> ItemUsage:
    """The usage its ``memory_usage`` record holds (``None``: never used or rated)."""
    return (
        ItemUsage(kind, item_id)
        if record is None
        else ItemUsage.from_data(kind, item_id, record.data)
    )


async def usage_of(
    core: _Core, tenant: str, items: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], ItemUsage]:
    """The usage of each ``(kind, id)`` (stored, plus what the buffer holds): one batch read."""
    if not items:
        return {}
    ids = [usage_id(kind, item_id) for kind, item_id in items]
    have = await core.store.record_get_many(tenant, USAGE, ids)
    out: dict[tuple[str, str], ItemUsage] = {}
    for (kind, item_id), rid in zip(items, ids, strict=True):
        usage = _stored(kind, item_id, have.get(rid))
        pending = core.usage.pending(tenant, kind, item_id)
        if pending is not None:
            usage = usage.after_uses(pending.uses, pending.last_used_at)
        out[(kind, item_id)] = usage
    return out


def _item(hit: Hit) -> tuple[str, str, datetime] | None:
    """The usage key and write time of a hit's item (``None``: an earlier fact value)."""
    if hit.entry is not None:
        return "entry", hit.entry.id, hit.entry.created_at
    if hit.document is not None:
        return "document", hit.document.id, hit.document.created_at
    if hit.fact is not None and not hit.superseded:
        return "fact", hit.fact.id, hit.fact.created_at
    return None


async def weights(
    core: _Core,
    tenant: str,
    items: Sequence[tuple[str, str, datetime | None]],
    decay: HalfLife,
) -> list[float]:
    """``decay``'s weight of each ``(kind, id, written at)``: one batch read of their usage.
    The age is the time since the last use, else since the write (``None``: very old)."""
    usage = await usage_of(core, tenant, [(kind, item_id) for kind, item_id, _ in items])
    now = core.now()
    out: list[float] = []
    for kind, item_id, written in items:
        item = usage[(kind, item_id)]
        moments = [m for m in (written, item.last_used_at) if m is not None]
        age = (now - max(moments)).total_seconds() if moments else math.inf
        out.append(decay.weight(age, item.importance))
    return out


async def decayed(core: _Core, tenant: str, hits: Sequence[Hit], decay: HalfLife) -> list[Hit]:
    """``hits`` re-ordered by ``decay``'s weighted score (one batch read of their usage);
    each hit's ``score`` becomes the weighted one, its ``signals`` gain ``"decay"`` (the
    weight). A negative score is divided by the weight. Ties keep the undecayed order;
    an earlier value of a fact weighs as a very old, unrated item."""
    keys = [_item(hit) for hit in hits]
    known = [k for k in keys if k is not None]
    weight = iter(await weights(core, tenant, known, decay))
    weighed: list[tuple[float, int, Hit]] = []
    for i, (hit, key) in enumerate(zip(hits, keys, strict=True)):
        w = decay.weight(math.inf, DEFAULT_IMPORTANCE) if key is None else next(weight)
        score = hit.score * w if hit.score >= 0 else hit.score / w
        weighed.append((-score, i, replace(hit, score=score, signals={**hit.signals, "decay": w})))
    weighed.sort(key=lambda t: (t[0], t[1]))
    return [hit for _, _, hit in weighed]


class AsyncUsage(Namespace):
    """``memory.usage``: read and set the importance of facts, documents and entries.

    Scoped like the items: an item the caller may not see is ``NotFound``. Entries are
    named with their ``thread_id`` (the thread rule applies).
    """

    async def _owner(
        self,
        kind: str,
        item_id: str,
        thread_id: str | None,
        user_id: object,
        agent_id: object,
    ) -> tuple[str | None, str | None, str | None]:
        """The item's owner (agent, user) and thread, if the caller may see it."""
        store = self._core.store
        if kind == "entry":
            if thread_id is None:
                raise InvalidInput("an entry is named with its thread_id", field="thread_id")
            thread = await store.thread_get(self._tenant, v.check_id(thread_id, "thread_id"))
            if thread is None or await store.entry_get(self._tenant, thread.id, item_id) is None:
                raise NotFound(f"entry {item_id!r} not found")
            check_owner(thread, self._scope.user(user_id))
            return thread.agent_id, thread.user_id, thread.id
        record = await store.record_get(self._tenant, kind, item_id)
        seen = self._scope.visibility(user_id=user_id, agent_id=agent_id)
        if record is None or not visible(seen, record.agent_id, record.user_id):
            raise NotFound(f"{kind} {item_id!r} not found")
        return record.agent_id, record.user_id, None

    async def get(
        self,
        kind: str,
        item_id: str,
        *,
        thread_id: str | None = None,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> ItemUsage:
        """The item's importance, use count and last use (defaults if never used or rated)."""
        kind, item_id = check_kind(kind), v.check_id(item_id, "id")
        await self._owner(kind, item_id, thread_id, user_id, agent_id)
        return (await usage_of(self._core, self._tenant, [(kind, item_id)]))[(kind, item_id)]

    async def set(
        self,
        kind: str,
        item_id: str,
        importance: float,
        *,
        thread_id: str | None = None,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> ItemUsage:
        """Give the item an explicit importance (0 to 1); its usage as it is now."""
        kind, item_id = check_kind(kind), v.check_id(item_id, "id")
        value = check_importance(importance)
        owner = await self._owner(kind, item_id, thread_id, user_id, agent_id)
        return await self._change(kind, item_id, owner, lambda _: value, explicit=True)

    async def rate(
        self,
        kind: str,
        item_id: str,
        *,
        useful: bool,
        thread_id: str | None = None,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> ItemUsage:
        """Feedback on the item's importance (``importance.rated``); its usage now."""
        kind, item_id = check_kind(kind), v.check_id(item_id, "id")
        useful = v.check_bool(useful, "useful")
        owner = await self._owner(kind, item_id, thread_id, user_id, agent_id)
        return await self._change(
            kind, item_id, owner, lambda now: rated(now, useful), explicit=None
        )

    async def _change(
        self,
        kind: str,
        item_id: str,
        owner: tuple[str | None, str | None, str | None],
        step: Callable[[float], float],
        *,
        explicit: bool | None,
    ) -> ItemUsage:
        store, now = self._core.store, self._core.now()
        old = await store.record_get(self._tenant, USAGE, usage_id(kind, item_id))
        usage = _stored(kind, item_id, old)
        usage = ItemUsage(
            kind,
            item_id,
            step(usage.importance),
            usage.explicit if explicit is None else explicit,
            usage.uses,
            usage.last_used_at,
        )
        agent, user, thread = owner
        await store.record_put(
            self._tenant,
            [
                usage_record(
                    usage,
                    agent_id=agent,
                    user_id=user,
                    now=now,
                    created_at=None if old is None else old.created_at,
                    thread_id=thread,
                )
            ],
        )
        return (await usage_of(self._core, self._tenant, [(kind, item_id)]))[(kind, item_id)]

    async def flush(self) -> int:
        """Write the uses searches noted and not yet written; how many items."""
        return await flush_usage(self._core)
