"""Memory formation: a thread's entries in, graph and facts out.

``memory.graph.ingest(thread_id)`` runs the memory's extractor over the thread's user and
assistant messages, one entry at a time and in order, writes what it proposes (entities,
observations, relations, facts) owned like the thread with the entry's id as provenance,
and marks the entry (a ``graph_ingested`` record) so a later ingest skips it.
``extract_on_write``: ``submit`` hands new entries to the memory's background runner,
behind a breaker (``EXTRACT_BREAKER_THRESHOLD``, ``EXTRACT_PAUSE``). The rules:
docs/graph.md ("``memory.graph.ingest``", "Extract on write").
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memorybank.core._async.cas import retry_conflicts
from memorybank.core._async.facts import AsyncFacts
from memorybank.core.extraction import (
    MAX_KNOWN,
    ExtractedEntity,
    ExtractedFact,
    IngestReport,
    normalize_name,
    parse_time,
)
from memorybank.errors import (
    ConfigurationError,
    Conflict,
    InvalidInput,
    NotFound,
    StoreUnavailable,
)
from memorybank.graph._async.entities import EntityVerbs
from memorybank.graph._async.lookup import LookupVerbs
from memorybank.graph.model import Entity
from memorybank.records import Entry, Thread
from memorybank.rules import validate as v
from memorybank.rules.ids import compound_id
from memorybank.runtime.log import logger
from memorybank.stores.contract._async.store import Record

if TYPE_CHECKING:
    from memorybank.core._async.core import _Core
    from memorybank.core.extraction import Extractor

__all__ = ["INGESTED", "fact_slot_id", "ingest", "ingest_entries", "submit"]

INGESTED = "graph_ingested"
#: Roles whose messages are read (system prompts and tool output are not conversation).
ROLES = ("user", "assistant")
#: How many entities ``search_entities`` offers the extractor as known, per entry.
KNOWN_FROM_GRAPH = 10


def _marker_id(thread_id: str, entry_id: str) -> str:
    return compound_id(f"{thread_id}:{entry_id}")


def fact_slot_id(agent_id: str | None, user_id: str | None, subject: str, attribute: str) -> str:
    """The id of the one fact of (agent, user, subject, attribute): a later value of the
    same attribute supersedes it instead of being added beside it."""
    key = json.dumps([agent_id, user_id, normalize_name(subject), attribute])
    return "fs_" + hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def _readable(entry: Entry) -> bool:
    return entry.role in ROLES and bool(entry.content and entry.content.strip())


class _GraphWriter(EntityVerbs, LookupVerbs):
    """The graph verbs an ingest uses (``AsyncGraph`` has them all; naming only these
    keeps this module below the graph's namespace, which runs it)."""


class _Run:
    """One ingest: the thread's owner, the graph and facts it writes, and the names seen."""

    def __init__(self, core: _Core, tenant: str, thread: Thread, extractor: Extractor) -> None:
        self.core = core
        self.tenant = tenant
        self.thread = thread
        self.extractor = extractor
        self.graph = _GraphWriter(core, tenant)
        self.facts = AsyncFacts(core, tenant)
        self.agent = thread.agent_id
        self.user = thread.user_id
        self.entities: dict[str, Entity] = {}  # normalised name or alias -> entity

    def _remember(self, entity: Entity) -> Entity:
        for name in (entity.name, *entity.aliases):
            self.entities[normalize_name(name)] = entity
        return entity

    async def _known(self, text: str) -> list[str]:
        """Names to offer the extractor: the graph's best matches for the text (what the
        owner sees), then the entities this run met, latest first."""
        try:
            found = await self.graph.search_entities(
                text[:2000], k=KNOWN_FROM_GRAPH, agent_id=self.agent, user_id=self.user
            )
        except InvalidInput:  # nothing searchable in the text
            found = []
        names = [e.name for e in found] + [e.name for e in reversed(self.entities.values())]
        return list(dict.fromkeys(names))[:MAX_KNOWN]

    def _owns(self, entity: Entity) -> bool:
        """Whether the thread's owner owns ``entity`` exactly (it may then change it)."""
        return entity.agent_id == self.agent and entity.user_id == self.user

    async def _find(self, name: str) -> Entity | None:
        key = normalize_name(name)
        if key in self.entities:
            return self.entities[key]
        candidates = await self.graph.find_entities(
            name, agent_id=self.agent, user_id=self.user, limit=50
        )
        exact = [
            e for e in candidates if any(normalize_name(n) == key for n in (e.name, *e.aliases))
        ]
        # the thread owner's own entity before a shared one, then the oldest
        exact.sort(key=lambda e: (e.user_id is None, e.agent_id is None))
        return self._remember(exact[0]) if exact else None

    async def _entity(self, proposed: ExtractedEntity, entry: Entry) -> Entity:
        found = await self._find(proposed.name)
        if found is not None and (
            not self._owns(found)  # a shared entity is used, never changed from a private thread
            or (
                set(proposed.aliases) <= set(found.aliases)
                and proposed.confidence <= found.confidence
            )
        ):
            return found
        name, kind = (proposed.name, proposed.type) if found is None else (found.name, found.type)
        entity = await self.graph.add_entity(
            name,
            type=kind,
            agent_id=self.agent,
            user_id=self.user,
            aliases=proposed.aliases,
            confidence=proposed.confidence,
            source="extracted" if found is None else found.source,
            provenance=(entry.id,),
        )
        return self._remember(entity)

    async def _named(self, name: str, entry: Entry, confidence: float) -> Entity:
        """The entity a relation or observation names (a known entity not proposed again
        is looked up; one that vanished meanwhile is added as a concept, as sure as
        the proposal that names it)."""
        found = await self._find(name)
        if found is not None:
            return found
        return await self._entity(ExtractedEntity(name, "concept", (), confidence), entry)

    async def entry(self, entry: Entry) -> IngestReport:
        """Extract one entry and write what it proposes; then mark it done."""
        assert entry.content is not None
        extraction = await self.extractor.aextract(
            entry.content,
            known_entities=await self._known(entry.content),
            reference_time=entry.created_at,
        )
        for proposed in extraction.entities:
            await self._entity(proposed, entry)
        withheld = 0
        for note in extraction.observations:
            target = await self._named(note.entity, entry, note.confidence)
            if not self._owns(target):  # it would tell other users what this thread said
                withheld += 1
                continue
            self._remember(
                await self.graph.add_observations(
                    target.id,
                    [note.text],
                    provenance=(entry.id,),
                    agent_id=self.agent,
                    user_id=self.user,
                )
            )
        for rel in extraction.relations:
            source = await self._named(rel.source, entry, rel.confidence)
            target = await self._named(rel.target, entry, rel.confidence)
            valid_at = rel.valid_at if rel.valid_at is not None else entry.created_at
            invalid_at = rel.invalid_at
            if invalid_at is not None and invalid_at <= valid_at:
                invalid_at = None
            await self.graph.add_relation(
                source.id,
                rel.type,
                target.id,
                agent_id=self.agent,
                user_id=self.user,
                valid_at=valid_at,
                invalid_at=invalid_at,
                confidence=rel.confidence,
                provenance=(entry.id,),
                source="extracted",
            )
        outcomes = [await self._fact(fact, entry) for fact in extraction.facts]
        await self.core.store.record_put(
            self.tenant,
            [
                Record(
                    kind=INGESTED,
                    id=_marker_id(self.thread.id, entry.id),
                    agent_id=self.agent,
                    user_id=self.user,
                    content="",
                    data={"entry_id": entry.id},
                    created_at=self.core.now(),
                    updated_at=self.core.now(),
                    key=self.thread.id,
                )
            ],
        )
        return IngestReport(
            entries=1,
            entities=len(extraction.entities),
            relations=len(extraction.relations),
            observations=len(extraction.observations) - withheld,
            facts_added=outcomes.count("added"),
            facts_superseded=outcomes.count("superseded"),
            facts_confirmed=outcomes.count("confirmed"),
            facts_outdated=outcomes.count("outdated"),
            dropped=extraction.dropped + withheld,
        )

    async def _fact(self, fact: ExtractedFact, entry: Entry) -> str:
        """Write one proposed fact into its slot: ``"added"``, ``"superseded"``,
        ``"confirmed"`` (same value: provenance added) or ``"outdated"`` (said before
        the current value was: left alone)."""
        fact_id = fact_slot_id(self.agent, self.user, fact.subject, fact.attribute)
        said = entry.created_at.isoformat()
        metadata = {
            "subject": fact.subject,
            "attribute": fact.attribute,
            "value": fact.value,
            "said_at": said,
        }

        async def step() -> str:
            current = await self.facts.get(fact_id, agent_id=self.agent, user_id=self.user)
            if current is None:
                try:
                    await self.facts.add(
                        content=fact.statement,
                        category=fact.attribute,
                        confidence=fact.confidence,
                        source="extracted",
                        metadata=metadata,
                        source_entries=[entry.id],
                        fact_id=fact_id,
                        agent_id=self.agent,
                        user_id=self.user,
                    )
                    return "added"
                except Conflict:
                    pass  # it exists (expired, or added meanwhile): supersede it below
            elif _said_at(current.metadata) > entry.created_at:
                return "outdated"
            elif normalize_name(str(current.metadata.get("value", ""))) == normalize_name(
                fact.value
            ):
                if entry.id not in current.source_entries:
                    await self.facts.update(
                        fact_id,
                        source_entries=[*current.source_entries, entry.id],
                        confidence=max(current.confidence or 0.0, fact.confidence),
                        agent_id=self.agent,
                        user_id=self.user,
                    )
                return "confirmed"
            try:
                await self.facts.supersede(
                    fact_id,
                    fact.statement,
                    category=fact.attribute,
                    confidence=fact.confidence,
                    source="extracted",
                    metadata=metadata,
                    source_entries=[entry.id],
                    expires_at=None,
                    agent_id=self.agent,
                    user_id=self.user,
                )
            except NotFound as gone:  # deleted between the two reads: start over
                raise Conflict(f"fact {fact_id!r} vanished") from gone
            return "superseded"

        return await retry_conflicts(step, f"fact {fact_id!r}")


def _said_at(metadata: dict[str, object]) -> datetime:
    """When the fact's current value was said (its entry's ``created_at``)."""
    said = parse_time(metadata.get("said_at"))
    return said if said is not None else datetime.min.replace(tzinfo=UTC)


async def ingest_entries(
    core: _Core, tenant: str, thread: Thread, entries: Sequence[Entry]
) -> IngestReport:
    """Extract ``entries`` of ``thread`` (already checked) in order, skipping those done."""
    extractor = core.extractor
    if extractor is None:
        raise ConfigurationError("no extractor: pass Memory(..., extractor=...)")
    readable = [e for e in entries if _readable(e)]
    report = IngestReport(skipped=len(entries) - len(readable))
    if not readable:
        return report
    done = await core.store.record_get_many(
        tenant, INGESTED, [_marker_id(thread.id, e.id) for e in readable]
    )
    run = _Run(core, tenant, thread, extractor)
    for entry in readable:
        if _marker_id(thread.id, entry.id) in done:
            report += IngestReport(skipped=1)
            continue
        report += await run.entry(entry)
    return report


async def ingest(
    core: _Core,
    tenant: str,
    thread: Thread,
    entries: Sequence[Entry | str] | None,
) -> IngestReport:
    """``memory.graph.ingest``: the thread's current branch, or the given entries (objects
    or ids of this thread)."""
    if entries is None:
        _, chosen = await core.store.entry_list(tenant, thread.id)
    else:
        if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
            raise InvalidInput("entries must be a list of entries or entry ids", field="entries")
        chosen = []
        for item in entries:
            if isinstance(item, Entry):
                if item.thread_id != thread.id:
                    raise InvalidInput(
                        f"entry {item.id!r} is not of thread {thread.id!r}", field="entries"
                    )
                chosen.append(item)
                continue
            entry_id = v.check_id(item, "entries")
            found = await core.store.entry_get(tenant, thread.id, entry_id)
            if found is None:
                raise NotFound(f"entry {entry_id!r} not found")
            chosen.append(found)
    return await ingest_entries(core, tenant, thread, chosen)


async def _background(
    core: _Core, tenant: str, thread: Thread, entries: Sequence[Entry]
) -> IngestReport:
    """One background job: ``ingest_entries``, failing at once while the extractor has
    been unavailable too often in a row (``core.extract_breaker``)."""
    breaker = core.extract_breaker
    if breaker.is_open():
        raise StoreUnavailable(
            f"extraction paused for {breaker.cooldown:g} s after {breaker.threshold} "
            "extractions in a row found the extractor (or the store) unavailable; "
            "memory.graph.ingest catches up"
        )
    try:
        report = await ingest_entries(core, tenant, thread, entries)
    except StoreUnavailable:
        breaker.failed()
        raise
    breaker.succeeded()
    return report


def submit(core: _Core, tenant: str, thread: Thread, entries: Sequence[Entry]) -> None:
    """Queue new entries for background extraction (``extract_on_write``); never raises."""
    background = core.background
    if background is None:
        return
    try:
        readable = [e for e in entries if _readable(e)]
        if readable:
            step = functools.partial(_background, core, tenant, thread, readable)
            background.submit(f"{tenant}\x1f{thread.id}", step, size=len(readable))
    except Exception as error:  # the write has succeeded: nothing may undo that
        logger.warning("extract_on_write: could not queue entries (%s)", error, exc_info=error)
