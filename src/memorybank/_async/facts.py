"""``memory.facts``: long-term facts with scope, expiry, provenance and supersession.

Facts are store records of kind ``"fact"``, so every store that keeps records
keeps facts. Two more kinds index them:

* ``"fact_version"``: an earlier value of a superseded fact (``key`` = fact id),
  written in the same atomic ``record_put`` as the new value;
* ``"fact_source"``: one link per source entry (``key`` = entry id), so deleting
  an entry can find the facts derived from it without scanning every fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank import _validate as v
from memorybank._async.stores.base import UNSET, Record, Unset, VectorItem, Visibility
from memorybank._ids import compound_id, new_id
from memorybank.errors import InvalidInput, NotFound
from memorybank.records import Fact

if TYPE_CHECKING:
    from memorybank._async.memory import _Core

__all__ = ["FACT", "FACT_SOURCE", "FACT_VERSION", "AsyncFacts", "fact_rank"]

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


def _record(fact: Fact) -> Record:
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
    )


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


def fact_rank(fact: Fact) -> tuple[float, float]:
    """Sort key for prompts: highest confidence first (none counts lowest), then newest."""
    confidence = -1.0 if fact.confidence is None else fact.confidence
    return (-confidence, -fact.created_at.timestamp())


def _check_confidence(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("confidence must be a number", field="confidence")
    if not 0 <= value <= 1:  # compared as given: a huge int must not reach float()
        raise InvalidInput("confidence must be between 0 and 1", field="confidence")
    return float(value)


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


class AsyncFacts:
    """``memory.facts``: what an agent knows about its users and the world.

    A fact with a ``user_id`` reaches only that user's context; without one it
    is shared by every user of the agent (``agent_id=None``: by every agent).
    Expired facts are never returned; a superseded value stays in
    ``history()`` but is no longer returned.
    """

    def __init__(self, core: _Core, tenant: str) -> None:
        self._core = core
        self._tenant = tenant

    async def _vector(self, fact: Fact) -> VectorItem | None:
        """The fact's checked vector, computed before anything is written."""
        embedder = self._core.embedder
        if embedder is None:
            return None
        from memorybank._async.search import embed_texts

        vectors = await embed_texts(embedder, [fact.content])
        return VectorItem(FACT, fact.id, embedder.model_id, vectors[0])

    async def _put_vector(self, item: VectorItem | None) -> None:
        if item is not None:
            await self._core.store.vector_put(self._tenant, [item])

    def _live(self, fact: Fact, now: datetime) -> bool:
        return fact.expires_at is None or fact.expires_at > now

    async def add(
        self,
        *,
        agent_id: str | None,
        content: str,
        category: str | None = None,
        confidence: float | None = None,
        source: str | None = None,
        user_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        source_entries: Sequence[str] | None = None,
    ) -> Fact:
        """Store a fact and return it. ``source_entries``: ids of the entries it came from."""
        now = self._core.now()
        fact = Fact(
            id=new_id(),
            agent_id=v.check_optional_id(agent_id, "agent_id"),
            user_id=v.check_optional_id(user_id, "user_id"),
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
        vector = await self._vector(fact)
        await self._core.store.record_put(
            self._tenant, [_record(fact), *_links(fact, fact.source_entries)]
        )
        await self._put_vector(vector)
        return fact

    async def get(self, fact_id: str) -> Fact | None:
        """The fact, or ``None`` (also when it has expired)."""
        record = await self._core.store.record_get(self._tenant, FACT, v.check_id(fact_id, "id"))
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
    ) -> Fact:
        """Change the given fields. ``NotFound`` if the fact is absent.

        With ``supersede=True`` the current value is kept in ``history()`` (in
        the same atomic write) and the fact's ``version`` goes up; without it
        the fact is corrected in place.
        """
        fact_id = v.check_id(fact_id, "id")
        record = await self._core.store.record_get(self._tenant, FACT, fact_id)
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
        writes = [_record(new)]
        added = [e for e in new.source_entries if e not in old.source_entries]
        writes += _links(new, added)
        if supersede:
            version = _record(old)
            version.kind = FACT_VERSION
            version.id = f"{old.id}:{old.version}"
            version.key = old.id
            version.data["fact_id"] = old.id
            version.data["created_at"] = old.created_at.isoformat()
            version.data["replaced_at"] = now.isoformat()
            version.created_at = old.updated_at
            writes.append(version)
        vector = await self._vector(new) if new.content != old.content else None
        await self._core.store.record_put(self._tenant, writes)
        dropped = [_link_id(old.id, e) for e in old.source_entries if e not in new.source_entries]
        if dropped:
            await self._core.store.record_delete(self._tenant, FACT_SOURCE, dropped)
        await self._put_vector(vector)
        return new

    async def supersede(self, old_id: str, new: str, **changes: Any) -> Fact:
        """Replace the fact's value with ``new`` (content), keeping the old one in history.

        Same as ``update(old_id, content=new, supersede=True, **changes)``.
        """
        return await self.update(old_id, content=new, supersede=True, **changes)

    async def history(self, fact_id: str) -> list[Fact]:
        """Every value the fact has had, oldest first; the current one (if any) last."""
        fact_id = v.check_id(fact_id, "id")
        records = await self._core.store.record_list(self._tenant, FACT_VERSION, key=fact_id)
        versions = sorted((_fact(r) for r in records), key=lambda f: f.version)
        current = await self._core.store.record_get(self._tenant, FACT, fact_id)
        if current is not None:
            versions.append(_fact(current))
        return versions

    async def delete(self, fact_id: str) -> bool:
        """Delete the fact, its history and its provenance links; whether it existed."""
        fact_id = v.check_id(fact_id, "id")
        store = self._core.store
        record = await store.record_get(self._tenant, FACT, fact_id)
        if record is None:
            return False
        fact = _fact(record)
        versions = await store.record_list(self._tenant, FACT_VERSION, key=fact_id)
        existed = await store.record_delete(self._tenant, FACT, [fact_id])
        if versions:
            await store.record_delete(self._tenant, FACT_VERSION, [r.id for r in versions])
        if fact.source_entries:
            links = [_link_id(fact_id, e) for e in fact.source_entries]
            await store.record_delete(self._tenant, FACT_SOURCE, links)
        return existed > 0

    async def search(
        self,
        query: str,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        category: str | None = None,
        k: int = 10,
    ) -> list[Fact]:
        """The ``k`` facts best matching ``query``, best first, scoped like ``list``.

        Semantic (cosine) with the memory's embedder, keyword (BM25/full-text) without.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-empty string", field="query")
        v.check_text(query, "query")
        limit = v.check_limit(k, "k", allow_none=False) or 0
        agent = v.check_optional_id(agent_id, "agent_id")
        user = v.check_optional_id(user_id, "user_id")
        visible = Visibility(agent, user) if agent is not None and user is not None else None
        store = self._core.store
        embedder = self._core.embedder
        fetch = limit * 2 + 10
        if embedder is not None:
            from memorybank._async.search import embed_texts

            vector = (await embed_texts(embedder, [query]))[0]
            hits = await store.vector_search(
                self._tenant,
                vector,
                model_id=embedder.model_id,
                kinds=[FACT],
                k=fetch,
                visible_to=visible,
            )
        else:
            hits = await store.text_search(
                self._tenant, query, kinds=[FACT], k=fetch, visible_to=visible
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
                and (agent is None or fact.agent_id in (None, agent))
                and (user is None or fact.user_id in (None, user))
                and (category is None or fact.category == category)
            ):
                found.append(fact)
            if len(found) >= limit:
                break
        return found

    async def list(
        self,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        category: str | None = None,
        include_expired: bool = False,
    ) -> list[Fact]:
        """Facts visible to ``agent_id`` and ``user_id``, oldest first.

        A given ``agent_id`` keeps that agent's facts and shared ones (no
        agent); a given ``user_id`` keeps that user's and shared ones (no user);
        ``None`` does not filter that axis.
        """
        agent = v.check_optional_id(agent_id, "agent_id")
        user = v.check_optional_id(user_id, "user_id")
        visible = Visibility(agent, user) if agent is not None and user is not None else None
        records = await self._core.store.record_list(self._tenant, FACT, visible_to=visible)
        now = self._core.now()
        return [
            fact
            for fact in map(_fact, records)
            if (include_expired or self._live(fact, now))
            and (agent is None or fact.agent_id in (None, agent))
            and (user is None or fact.user_id in (None, user))
            and (category is None or fact.category == category)
        ]

    async def _cascade(self, entry_ids: Sequence[str]) -> int:
        """Delete the facts derived from these entries; how many went."""
        gone = 0
        for entry_id in entry_ids:
            links = await self._core.store.record_list(self._tenant, FACT_SOURCE, key=entry_id)
            for link in links:
                fact = await self._get_any(str(link.data.get("fact_id")))
                if fact is not None and entry_id in fact.source_entries:
                    gone += await self.delete(fact.id)
                else:
                    await self._core.store.record_delete(self._tenant, FACT_SOURCE, [link.id])
        return gone

    async def _get_any(self, fact_id: str) -> Fact | None:
        """The fact even when expired (for maintenance), or ``None``."""
        record = await self._core.store.record_get(self._tenant, FACT, v.check_id(fact_id, "id"))
        return None if record is None else _fact(record)
