"""The extractor protocol, what an extraction returns, and the checks every result passes.

An extractor reads text (one message, usually) and proposes what memory should
learn from it: entities, relations between them (with the times they held),
short observations about an entity, and facts for ``memory.facts`` (a subject,
an attribute and a value, so a later value of the same attribute supersedes
the earlier one). Every item carries a confidence in [0, 1].

Extractors only propose: ``memory.graph.ingest`` (``memorybank.graph._async.formation``)
writes the proposals, scoped and with provenance. ``finish`` is the one gate
every proposal passes, whatever extractor made it: names and types cleaned,
confidence at least ``min_confidence``, at most ``max_entities`` entities and
``max_relations`` relations (the most confident kept), relations and
observations only about entities the extraction names or the caller knows.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Protocol, TypeVar, runtime_checkable

__all__ = [
    "MAX_ENTITIES",
    "MAX_FACTS",
    "MAX_KNOWN",
    "MAX_OBSERVATIONS",
    "MAX_RELATIONS",
    "MIN_CONFIDENCE",
    "ExtractedEntity",
    "ExtractedFact",
    "ExtractedObservation",
    "ExtractedRelation",
    "Extraction",
    "Extractor",
    "IngestReport",
    "finish",
    "normalize_name",
    "parse_time",
    "type_name",
]

#: Proposals less confident than this are dropped.
MIN_CONFIDENCE = 0.7
#: At most this many entities per extraction (the most confident are kept).
MAX_ENTITIES = 20
#: At most this many relations per extraction.
MAX_RELATIONS = 30
#: At most this many observations / facts per extraction.
MAX_OBSERVATIONS = 30
MAX_FACTS = 20
#: At most this many known entity names are passed to an extractor.
MAX_KNOWN = 50
#: Longest name, type, observation and fact text kept (characters).
MAX_NAME_CHARS = 200
MAX_TEXT_CHARS = 1000

_TYPE = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """A proposed entity: ``type`` is one of ``memorybank.graph.ENTITY_TYPES`` or any
    lower-case word."""

    name: str
    type: str = "concept"
    aliases: tuple[str, ...] = ()
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class ExtractedRelation:
    """A proposed relation ``source --type--> target`` between two entity names.

    ``valid_at`` / ``invalid_at``: when it started and stopped holding in the
    world, when the text says so (``None``: not said).
    """

    source: str
    type: str
    target: str
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class ExtractedObservation:
    """A short fact about one entity ("likes hiking"), as the MCP memory server keeps them."""

    entity: str
    text: str
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    """A proposed fact for ``memory.facts``: ``statement`` is the fact's content.

    ``subject`` and ``attribute`` name what it is about (``"Alice"``,
    ``"lives_in"``): a later fact with the same subject and attribute (compared
    normalised) supersedes this one, keeping it in the fact's history.
    """

    subject: str
    attribute: str
    value: str
    statement: str
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class Extraction:
    """What an extractor proposes for one text. ``dropped`` counts the proposals
    ``finish`` refused (malformed, below the minimum confidence, over a limit)."""

    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()
    observations: tuple[ExtractedObservation, ...] = ()
    facts: tuple[ExtractedFact, ...] = ()
    dropped: int = 0

    def __bool__(self) -> bool:
        return bool(self.entities or self.relations or self.observations or self.facts)


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What one ingest did. ``entries``: extracted now; ``skipped``: already ingested or
    nothing to read; ``facts_*``: proposed facts added, superseding the value before,
    confirming the current value, or older than the current value (left as is);
    ``dropped``: proposals the extractor's checks refused or scope withheld."""

    entries: int = 0
    skipped: int = 0
    entities: int = 0
    relations: int = 0
    observations: int = 0
    facts_added: int = 0
    facts_superseded: int = 0
    facts_confirmed: int = 0
    facts_outdated: int = 0
    dropped: int = 0

    def __add__(self, other: IngestReport) -> IngestReport:
        return IngestReport(
            *(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__)
        )


@runtime_checkable
class Extractor(Protocol):
    """Text in, proposals out: what ``memory.graph.ingest`` and ``extract_on_write`` use.

    ``known_entities`` are names of entities memory already holds that the text
    may refer to (for disambiguation: "she" or "the company" may be one of
    them); only names are passed, never the graph. ``reference_time`` is when
    the text was written, to resolve "last year" or "since Monday".
    ``extract`` is synchronous, ``aextract`` its async twin; both return a
    finished ``Extraction`` (see ``finish``).
    """

    def extract(
        self,
        text: str,
        *,
        known_entities: Sequence[str] = (),
        reference_time: datetime | None = None,
    ) -> Extraction: ...

    async def aextract(
        self,
        text: str,
        *,
        known_entities: Sequence[str] = (),
        reference_time: datetime | None = None,
    ) -> Extraction: ...


def normalize_name(name: str) -> str:
    """The form names are compared in: NFKC, case-folded, trimmed, inner whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def _clean_name(value: object, limit: int = MAX_NAME_CHARS) -> str | None:
    """``value`` with its whitespace collapsed, or ``None`` when not a non-empty string
    of at most ``limit`` characters."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text if text and len(text) <= limit else None


def _clean_text(value: object) -> str | None:
    return _clean_name(value, MAX_TEXT_CHARS)


def _name_in(value: object, names: dict[str, str]) -> str | None:
    """The entity name ``value`` refers to (by name or alias), or ``None``."""
    name = _clean_name(value)
    return None if name is None else names.get(normalize_name(name))


def type_name(value: object) -> str | None:
    """A relation, entity or attribute type as stored: lower-case snake_case
    (``"Works At"`` -> ``"works_at"``), or ``None`` when nothing usable is left."""
    if not isinstance(value, str):
        return None
    words = re.findall(r"[a-z0-9]+", unicodedata.normalize("NFKC", value).casefold())
    name = "_".join(words)
    return name if _TYPE.fullmatch(name) else None


def _confidence(value: object, minimum: float) -> float | None:
    """``value`` as a confidence, or ``None`` when not a number from 0 to 1 or below ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return None if not 0.0 <= number <= 1.0 or number < minimum else number


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 date or date-time as an aware UTC datetime (a date is its midnight UTC,
    a time without offset is taken as UTC); ``None`` for anything else."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)  # noqa: DTZ001 - made aware below
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


T = TypeVar("T")


def _most_confident(items: list[T], limit: int, confidence: list[float]) -> list[T]:
    """The ``limit`` most confident items, in their original order."""
    if len(items) <= limit:
        return items
    ranked = sorted(range(len(items)), key=lambda i: (-confidence[i], i))[:limit]
    return [items[i] for i in sorted(ranked)]


def finish(
    extraction: Extraction,
    *,
    known_entities: Sequence[str] = (),
    min_confidence: float = MIN_CONFIDENCE,
    max_entities: int = MAX_ENTITIES,
    max_relations: int = MAX_RELATIONS,
) -> Extraction:
    """Clean and bound an extraction (see the module docstring); never raises on content.

    Entities are merged by normalised name (the first one's name and type, the
    aliases of all, the highest confidence). A relation or observation naming an
    entity that is neither proposed here nor in ``known_entities`` is dropped,
    as is a relation from an entity to itself. Relation and fact times are kept
    only when ``invalid_at`` is not before ``valid_at``.
    """
    dropped = extraction.dropped
    entities: dict[str, ExtractedEntity] = {}
    for item in extraction.entities:
        name = _clean_name(item.name)
        kind = type_name(item.type)
        score = _confidence(item.confidence, min_confidence)
        if name is None or kind is None or score is None:
            dropped += 1
            continue
        aliases = tuple(
            dict.fromkeys(
                a
                for a in (_clean_name(x) for x in item.aliases)
                if a is not None and normalize_name(a) != normalize_name(name)
            )
        )
        key = normalize_name(name)
        seen = entities.get(key)
        if seen is None:
            entities[key] = ExtractedEntity(name, kind, aliases, score)
        else:
            entities[key] = replace(
                seen,
                aliases=tuple(dict.fromkeys(seen.aliases + aliases)),
                confidence=max(seen.confidence, score),
            )
    kept = list(entities.values())
    chosen = _most_confident(kept, max_entities, [e.confidence for e in kept])
    dropped += len(kept) - len(chosen)
    # every name an item may use -> the name it stands for (an alias means its entity)
    names: dict[str, str] = {}
    for known in known_entities:
        if isinstance(known, str) and (clean := _clean_name(known)) is not None:
            names[normalize_name(clean)] = clean
    for entity in chosen:
        for alias in entity.aliases:
            names[normalize_name(alias)] = entity.name
    names.update((normalize_name(e.name), e.name) for e in chosen)

    relations: dict[tuple[str, str, str], ExtractedRelation] = {}
    for rel in extraction.relations:
        source, target = _name_in(rel.source, names), _name_in(rel.target, names)
        kind = type_name(rel.type)
        score = _confidence(rel.confidence, min_confidence)
        if (
            source is None
            or target is None
            or kind is None
            or score is None
            or normalize_name(source) == normalize_name(target)
        ):
            dropped += 1
            continue
        valid_at, invalid_at = parse_time(rel.valid_at), parse_time(rel.invalid_at)
        if valid_at is not None and invalid_at is not None and invalid_at < valid_at:
            valid_at = invalid_at = None
        edge = (normalize_name(source), kind, normalize_name(target))
        if edge in relations:
            dropped += 1
            continue
        relations[edge] = ExtractedRelation(source, kind, target, valid_at, invalid_at, score)
    found = list(relations.values())
    bounded = _most_confident(found, max_relations, [r.confidence for r in found])
    dropped += len(found) - len(bounded)

    observations: list[ExtractedObservation] = []
    seen_notes: set[tuple[str, str]] = set()
    for note in extraction.observations:
        about, text = _name_in(note.entity, names), _clean_text(note.text)
        score = _confidence(note.confidence, min_confidence)
        if (
            about is None
            or text is None
            or score is None
            or (normalize_name(about), text) in seen_notes
            or len(observations) >= MAX_OBSERVATIONS
        ):
            dropped += 1
            continue
        seen_notes.add((normalize_name(about), text))
        observations.append(ExtractedObservation(about, text, score))

    facts: dict[tuple[str, str], ExtractedFact] = {}
    for fact in extraction.facts:
        subject, value = _clean_name(fact.subject), _clean_text(fact.value)
        attribute = type_name(fact.attribute)
        statement = _clean_text(fact.statement)
        score = _confidence(fact.confidence, min_confidence)
        if (
            subject is None
            or attribute is None
            or value is None
            or statement is None
            or score is None
            or len(facts) >= MAX_FACTS
        ):
            dropped += 1
            continue
        # two values of one attribute in one text: the later statement wins
        slot = (normalize_name(subject), attribute)
        if slot in facts:
            dropped += 1
        facts[slot] = ExtractedFact(subject, attribute, value, statement, score)

    return Extraction(
        entities=tuple(chosen),
        relations=tuple(bounded),
        observations=tuple(observations),
        facts=tuple(facts.values()),
        dropped=dropped,
    )
