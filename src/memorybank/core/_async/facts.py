"""``memory.facts``: long-term facts with scope, expiry, provenance and supersession.

Facts are store records of kind ``"fact"``, so every store that keeps records
keeps facts. Two more kinds index them:

* ``"fact_version"``: an earlier value of a superseded fact (``key`` = fact id),
  written in the same atomic ``record_put`` as the new value;
* ``"fact_source"``: one link per source entry (``key`` = entry id), so deleting
  an entry can find the facts derived from it without scanning every fact.

Concurrency: every change of a fact is a read-guard-write step (``_cas``): it
writes with a ``RecordGuard`` on the revision it read and bumps the revision,
so a step built on a stale read is refused and re-run. Versions, links and
deletes all follow the fact's revision, so no acknowledged version vanishes and
a version id ``"<fact id>:<version>"`` is written once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank.core._async.cas import retry_conflicts
from memorybank.core._async.core import Namespace
from memorybank.core._async.embed import embed_texts
from memorybank.core._async.usage import given_importance
from memorybank.errors import InvalidInput, NotFound
from memorybank.importance import check_importance
from memorybank.records import Fact
from memorybank.rules import validate as v
from memorybank.rules.ids import compound_id, new_id
from memorybank.stores.contract._async.store import UNSET, Record, RecordGuard, Unset, VectorItem
from memorybank.stores.contract.types import Visibility, visible

if TYPE_CHECKING:
    pass

__all__ = [
    "FACT",
    "FACT_SOURCE",
    "FACT_VERSION",
    "AsyncFacts",
    "fact_from_record",
    "fact_links",
    "fact_rank",
    "fact_record",
    "version_record",
]

FACT = "fact"
FACT_VERSION = "fact_version"
FACT_SOURCE = "fact_source"


def _fact(record: Record) -> Fact:
    data = record.data
    return Fact(
        id=data.get("fact_id", record.id),
        agent_id=record.agent_id,
        user_id=record.user_id,
        content=record.content,
        category=data.get("category"),
        confidence=data.get("confidence"),
        source=data.get("source"),
        metadata=dict(data.get("metadata") or {}),
        source_entries=tuple(data.get("source_entries") or ()),
        created_at=datetime.fromisoformat(data["created_at"])
        if "created_at" in data
        else record.created_at,
        updated_at=record.updated_at,
        expires_at=record.expires_at,
        version=int(data.get("version", 1)),
    )


#: A stored fact (kind ``fact``) or earlier value (kind ``fact_version``) as a ``Fact``.
fact_from_record = _fact


def _record(fact: Fact, revision: int = 0) -> Record:
    return Record(
        kind=FACT,
        id=fact.id,
        agent_id=fact.agent_id,
        user_id=fact.user_id,
        content=fact.content,
        data={
            "category": fact.category,
            "confidence": fact.confidence,
            "source": fact.source,
            "metadata": fact.metadata,
            "source_entries": list(fact.source_entries),
            "version": fact.version,
        },
        created_at=fact.created_at,
        updated_at=fact.updated_at,
        expires_at=fact.expires_at,
        revision=revision,
    )


def version_record(old: Fact, replaced_at: datetime) -> Record:
    """The ``fact_version`` record keeping ``old`` (``facts.history``), replaced at
    ``replaced_at``."""
    version = _record(old)
    version.kind = FACT_VERSION
    version.id = f"{old.id}:{old.version}"
    version.key = old.id
    version.data["fact_id"] = old.id
    version.data["created_at"] = old.created_at.isoformat()
    version.data["replaced_at"] = replaced_at.isoformat()
    version.created_at = old.updated_at
    return version


#: A ``Fact`` as the record that stores it (kind ``fact``), at ``revision``.
fact_record = _record


def _link_id(fact_id: str, entry_id: str) -> str:
    """The id of the link from a fact to one of its source entries (at most 255 characters)."""
    return compound_id(f"{fact_id}:{entry_id}")


def _links(fact: Fact, entry_ids: Sequence[str]) -> list[Record]:
    return [
        Record(
            kind=FACT_SOURCE,
            id=_link_id(fact.id, entry_id),
            agent_id=fact.agent_id,
            user_id=fact.user_id,
            content="",
            data={"fact_id": fact.id},
            created_at=fact.updated_at,
            updated_at=fact.updated_at,
            key=entry_id,
        )
        for entry_id in entry_ids
    ]


#: The ``fact_source`` records linking a fact to these of its source entries.
fact_links = _links


def fact_rank(fact: Fact) -> tuple[float, float]:
    """Sort key for prompts: highest confidence first (none counts lowest), then newest."""
    confidence = -1.0 if fact.confidence is None else fact.confidence
    return (-confidence, -fact.created_at.timestamp())


def _check_confidence(value: object) -> float | None:
    return None if value is None else v.check_unit(value, "confidence")


def _check_text(value: object, field: str, *, max_chars: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    return v.check_text(value, field, max_chars=max_chars)


def _check_optional_text(value: object, field: str) -> str | None:
    if value is None:
        return None
    return _check_text(value, field, max_chars=v.MAX_LABEL_CHARS)


def _check_sources(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidInput("source_entries must be a list of entry ids", field="source_entries")
    return tuple(dict.fromkeys(v.check_id(item, "source_entries") for item in value))


class AsyncFacts(Namespace):
    """``memory.facts``: what an agent knows about its users and the world.

    A fact with a ``user_id`` reaches only that user's context; without one it
    is shared by every user of the agent (``agent_id=None``: by every agent).
    Expired facts are never returned; a superseded value stays in
    ``history()`` but is no longer returned.

    Every verb takes ``user_id=`` and ``agent_id=`` (the scope rule of
    ``memorybank.rules.scope``): given, the caller sees its own and shared facts, and
    a fact it may not see behaves exactly like a missing id; left out, the
    handle's scope applies (nothing on the root handle).
    """

    def _sees(self, record: Record | None, user_id: object, agent_id: object) -> Record | None:
        """``record`` if the caller may see it (the scope rule), else ``None``."""
        seen = self._scope.visibility(user_id=user_id, agent_id=agent_id)
        if record is None or not visible(seen, record.agent_id, record.user_id):
            return None
        return record

    def _live(self, fact: Fact, now: datetime) -> bool:
        return fact.expires_at is None or fact.expires_at > now

    async def add(
        self,
        *,
        content: str,
        agent_id: str | Unset | None = UNSET,
        category: str | None = None,
        confidence: float | None = None,
        source: str | None = None,
        user_id: str | Unset | None = UNSET,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        source_entries: Sequence[str] | None = None,
        fact_id: str | None = None,
        importance: float | None = None,
    ) -> Fact:
        """Store a fact and return it.

        ``content``: the fact, as one short sentence. ``category``: a label such as
        ``preference`` or ``profile``. ``confidence``: how sure it is, from 0 to 1.
        ``source_entries``: ids of the entries it came from. Owner (``user_id``) and
        ``agent_id`` default to the handle's scope, else ``None`` (shared). ``fact_id``
        chooses the id (default: a new one); ``Conflict`` and nothing written if a fact has
        it already. ``importance``: from 0 to 1, how much it matters (``memory.usage``;
        default: derived from use and feedback, see ``memorybank.importance``).
        """
        now = self._core.now()
        weight = None if importance is None else check_importance(importance)
        fact = Fact(
            id=new_id() if fact_id is None else v.check_id(fact_id, "fact_id"),
            agent_id=self._scope.owner(agent_id, "agent_id"),
            user_id=self._scope.owner(user_id),
            content=_check_text(content, "content", max_chars=self._core.max_content_chars),
            category=_check_optional_text(category, "category"),
            confidence=_check_confidence(confidence),
            source=_check_optional_text(source, "source"),
            metadata=v.check_json_object(metadata, "metadata"),
            source_entries=_check_sources(source_entries),
            created_at=now,
            updated_at=now,
            expires_at=None if expires_at is None else v.check_time(expires_at, "expires_at"),
        )
        vector = await self._embed(FACT, fact.id, fact.content)
        guard = None if fact_id is None else RecordGuard(FACT, fact.id, None)
        extra = [] if weight is None else [given_importance(FACT, fact, weight, now)]
        await self._core.store.record_put(
            self._tenant, [_record(fact), *_links(fact, fact.source_entries), *extra], guard=guard
        )
        await self._put_vector(vector)
        return fact

    async def get(
        self,
        fact_id: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> Fact | None:
        """The fact, or ``None`` (also when it has expired or the caller may not see it)."""
        record = await self._core.store.record_get(self._tenant, FACT, v.check_id(fact_id, "id"))
        record = self._sees(record, user_id, agent_id)
        if record is None:
            return None
        fact = _fact(record)
        return fact if self._live(fact, self._core.now()) else None

    async def update(
        self,
        fact_id: str,
        *,
        content: str | Unset = UNSET,
        category: str | Unset | None = UNSET,
        confidence: float | Unset | None = UNSET,
        source: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        expires_at: datetime | Unset | None = UNSET,
        source_entries: Sequence[str] | Unset | None = UNSET,
        supersede: bool = False,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> Fact:
        """Change the given fields. ``NotFound`` if the fact is absent (or not visible).

        With ``supersede=True`` the current value is kept in ``history()`` (in
        the same atomic write) and the fact's ``version`` goes up; without it
        the fact is corrected in place. The change applies to the fact as it is
        when written: a concurrent change in between makes it re-read and
        re-apply (``Conflict`` if the fact keeps changing through every attempt).
        Owner and agent never change.
        """
        fact_id = v.check_id(fact_id, "id")
        store = self._core.store
        self._scope.visibility(user_id=user_id, agent_id=agent_id)  # refuse a widening first

        async def step() -> tuple[Fact, Fact, VectorItem | None]:
            record = self._sees(
                await store.record_get(self._tenant, FACT, fact_id), user_id, agent_id
            )
            if record is None:
                raise NotFound(f"fact {fact_id!r} not found")
            old = _fact(record)
            now = self._core.now()
            new = Fact(
                id=old.id,
                agent_id=old.agent_id,
                user_id=old.user_id,
                content=old.content
                if isinstance(content, Unset)
                else _check_text(content, "content", max_chars=self._core.max_content_chars),
                category=old.category
                if isinstance(category, Unset)
                else _check_optional_text(category, "category"),
                confidence=old.confidence
                if isinstance(confidence, Unset)
                else _check_confidence(confidence),
                source=old.source
                if isinstance(source, Unset)
                else _check_optional_text(source, "source"),
                metadata=old.metadata
                if isinstance(metadata, Unset)
                else v.check_json_object(metadata, "metadata"),
                source_entries=old.source_entries
                if isinstance(source_entries, Unset)
                else _check_sources(source_entries),
                created_at=old.created_at,
                updated_at=now,
                expires_at=old.expires_at
                if isinstance(expires_at, Unset)
                else None
                if expires_at is None
                else v.check_time(expires_at, "expires_at"),
                version=old.version + 1 if supersede else old.version,
            )
            # Every write bumps the revision: an in-place fix never overwrites a concurrent
            # supersede (or the reverse), and the version id below is written only once.
            writes = [_record(new, record.revision + 1)]
            added = [e for e in new.source_entries if e not in old.source_entries]
            writes += _links(new, added)
            if supersede:
                writes.append(version_record(old, now))
            # The vector is computed (and checked) before anything is written.
            vector = (
                await self._embed(FACT, new.id, new.content) if new.content != old.content else None
            )
            guard = RecordGuard(FACT, fact_id, record.revision)
            await store.record_put(self._tenant, writes, guard=guard)
            return old, new, vector

        old, new, vector = await retry_conflicts(step, f"fact {fact_id!r}")
        dropped = [e for e in old.source_entries if e not in new.source_entries]
        if dropped:
            await self._unlink_stale(fact_id, dropped)
        await self._put_vector(vector)
        return new

    async def supersede(
        self,
        old_id: str,
        new: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        **changes: Any,
    ) -> Fact:
        """Replace the fact's value with ``new`` (content), keeping the old one in history.

        Same as ``update(old_id, content=new, supersede=True, **changes)``.
        """
        return await self.update(
            old_id, content=new, supersede=True, user_id=user_id, agent_id=agent_id, **changes
        )

    async def history(
        self,
        fact_id: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> list[Fact]:
        """Every value the fact has had, oldest first; the current one (if any) last.

        Only values the caller may see (each carries the fact's owner and agent):
        ``[]`` for a fact it may not see, as for a missing one.
        """
        fact_id = v.check_id(fact_id, "id")
        seen = self._scope.visibility(user_id=user_id, agent_id=agent_id)
        records = await self._core.store.record_list(self._tenant, FACT_VERSION, key=fact_id)
        versions = sorted(
            (_fact(r) for r in records if visible(seen, r.agent_id, r.user_id)),
            key=lambda f: f.version,
        )
        current = await self._core.store.record_get(self._tenant, FACT, fact_id)
        if self._sees(current, user_id, agent_id) is not None:
            assert current is not None
            versions.append(_fact(current))
        return versions

    async def delete(
        self,
        fact_id: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
    ) -> bool:
        """Delete the fact, its history and its provenance links; whether it existed.

        ``False`` for a fact the caller may not see (as for a missing one).
        """
        fact_id = v.check_id(fact_id, "id")
        self._scope.visibility(user_id=user_id, agent_id=agent_id)  # refuse a widening first

        async def step() -> bool:
            record = self._sees(
                await self._core.store.record_get(self._tenant, FACT, fact_id), user_id, agent_id
            )
            if record is None:
                return False
            await self._remove(record)
            return True

        return await retry_conflicts(step, f"fact {fact_id!r}")

    async def _remove(self, record: Record) -> None:
        """Delete the fact as read in ``record`` (``Conflict`` if it changed since), then
        its history and links: once it is gone, no write guarded on it can add more."""
        store = self._core.store
        guard = RecordGuard(FACT, record.id, record.revision)
        await store.record_delete(self._tenant, FACT, [record.id], guard=guard)
        versions = await store.record_list(self._tenant, FACT_VERSION, key=record.id)
        if versions:
            await store.record_delete(self._tenant, FACT_VERSION, [r.id for r in versions])
        sources = _fact(record).source_entries
        if sources:
            links = [_link_id(record.id, e) for e in sources]
            await store.record_delete(self._tenant, FACT_SOURCE, links)

    async def _unlink_stale(self, fact_id: str, entry_ids: Sequence[str]) -> None:
        """Delete the fact's links to these entries, except those it names again by now."""
        store = self._core.store

        async def step() -> None:
            record = await store.record_get(self._tenant, FACT, fact_id)
            names = () if record is None else _fact(record).source_entries
            stale = [_link_id(fact_id, e) for e in entry_ids if e not in names]
            if not stale:
                return
            guard = RecordGuard(FACT, fact_id, None if record is None else record.revision)
            await store.record_delete(self._tenant, FACT_SOURCE, stale, guard=guard)

        await retry_conflicts(step, f"fact {fact_id!r}")

    async def search(
        self,
        query: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        category: str | None = None,
        k: int = 10,
    ) -> list[Fact]:
        """The ``k`` facts best matching ``query``, best first, scoped like ``list``.

        Semantic (cosine) with the memory's embedder, keyword (BM25/full-text) without.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-empty string", field="query")
        v.check_text(query, "query")
        limit = v.check_limit(k, "k", allow_none=False)
        seen = self._scope.visibility(user_id=user_id, agent_id=agent_id)
        store = self._core.store
        embedder = self._core.embedder
        fetch = limit * 2 + 10
        if embedder is not None:
            vector = (await embed_texts(embedder, [query]))[0]
            hits = await store.vector_search(
                self._tenant,
                vector,
                model_id=embedder.model_id,
                kinds=[FACT],
                k=fetch,
                visible_to=seen,
            )
        else:
            hits = await store.text_search(
                self._tenant, query, kinds=[FACT], k=fetch, visible_to=seen
            )
        now = self._core.now()
        found: list[Fact] = []
        for hit in hits:
            record = await store.record_get(self._tenant, FACT, hit.id)
            if record is None:
                continue
            fact = _fact(record)
            if (
                self._live(fact, now)
                and visible(seen, fact.agent_id, fact.user_id)
                and (category is None or fact.category == category)
            ):
                found.append(fact)
            if len(found) >= limit:
                break
        return found

    async def list(
        self,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        category: str | None = None,
        include_expired: bool = False,
    ) -> list[Fact]:
        """Facts visible to ``agent_id`` and ``user_id``, oldest first.

        ``category``: only the facts of this category. A given ``agent_id`` keeps that
        agent's facts and shared ones (no agent); a given ``user_id`` keeps that user's and
        shared ones (no user); ``None`` keeps shared ones only on that axis; left out, the
        handle's scope applies (no filter on the root handle).
        """
        seen = self._scope.visibility(user_id=user_id, agent_id=agent_id)
        records = await self._core.store.record_list(self._tenant, FACT, visible_to=seen)
        now = self._core.now()
        return [
            fact
            for fact in map(_fact, records)
            if (include_expired or self._live(fact, now))
            and visible(seen, fact.agent_id, fact.user_id)
            and (category is None or fact.category == category)
        ]

    async def _cascade(self, entry_ids: Sequence[str], visible_to: Visibility | None = None) -> int:
        """Delete the facts derived from these entries (even expired ones) that ``visible_to``
        may change (``None``: every one, the trusted call); how many went."""
        gone = 0
        for entry_id in entry_ids:
            links = await self._core.store.record_list(
                self._tenant, FACT_SOURCE, key=entry_id, visible_to=visible_to
            )
            for link in links:
                fact_id = v.check_id(str(link.data.get("fact_id")), "id")
                gone += await retry_conflicts(
                    functools.partial(self._unlink, fact_id, entry_id, link.id), f"fact {fact_id!r}"
                )
        return gone

    async def _unlink(self, fact_id: str, entry_id: str, link_id: str) -> int:
        """One read-guard-write step of ``_cascade``: delete the fact if it (still) names
        the entry, else just the stale link; how many facts went."""
        store = self._core.store
        record = await store.record_get(self._tenant, FACT, fact_id)
        if record is not None and entry_id in _fact(record).source_entries:
            await self._remove(record)
            return 1
        guard = RecordGuard(FACT, fact_id, None if record is None else record.revision)
        await store.record_delete(self._tenant, FACT_SOURCE, [link_id], guard=guard)
        return 0
