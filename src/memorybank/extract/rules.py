"""``RuleExtractor``: an offline extractor with no model, for demos and tests.

It knows a handful of English sentence shapes and nothing else:

* capitalised names ("Alice", "New York") become entities;
* "X is Y's Z" -> relation ``X --Z_of--> Y`` ("Bob is Alice's manager" ->
  ``manager_of``), both people;
* "X works at/for Y" -> ``works_at`` (Y an organization), and a fact;
* "X lives in Y" / "X moved to Y" -> ``lives_in`` (Y a location), and a fact;
* "X was born on DATE" -> an observation and a ``born_on`` fact;
* a date in the sentence ("2024-03-01", "March 1, 2024", "1 March 2024",
  "since 2019") becomes the ``valid_at`` of the sentence's relations.

It does not resolve pronouns, negation ("Alice no longer lives in Paris" is
read as living there), or anything a sentence says in another way. Use
``LLMExtractor`` for real conversations.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from memorybank.core.extraction import (
    ExtractedEntity,
    ExtractedFact,
    ExtractedObservation,
    ExtractedRelation,
    Extraction,
    finish,
    type_name,
)

__all__ = ["RuleExtractor"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
# Capitalised words that start sentences or name times, not things.
_NOT_NAMES = frozenset(
    """a an and as at but by for from he her his i if in is it its my no not of on or our
    she so that the their then there these they this those to we what when where which who
    why with yes you your yesterday today tomorrow tonight monday tuesday wednesday thursday
    friday saturday sunday hi hello hey thanks thank ok okay please sure also since after
    before last next""".split()
) | frozenset(_MONTHS)

_WORD = r"[A-Z][a-zA-Z]*(?:-[A-Z]?[a-zA-Z]+)*"
_NAME = rf"{_WORD}(?: {_WORD})*"
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MDY = re.compile(rf"\b({_MONTH}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b", re.I)
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? ({_MONTH}),? (\d{{4}})\b", re.I)
_YEAR = re.compile(r"\b(?:since|in|from) (\d{4})\b", re.I)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")

_POSSESSIVE = re.compile(rf"(?P<x>{_NAME}) is (?P<y>{_NAME})['\u2019]s (?P<z>[a-z]+(?: [a-z]+)?)\b")
_WORKS = re.compile(rf"(?P<x>{_NAME}) (?:works|worked|is working) (?:at|for) (?P<y>{_NAME})")
_LIVES = re.compile(
    rf"(?P<x>{_NAME}) (?:lives|lived|is living|moved|has moved) (?:in|to) (?P<y>{_NAME})"
)
_BORN = re.compile(rf"(?P<x>{_NAME}) was born on ")
_CANDIDATE = re.compile(_NAME)

#: Confidence of a name matched by a sentence shape, and of a bare capitalised name.
SHAPE_CONFIDENCE = 0.9
NAME_CONFIDENCE = 0.75


def _date(text: str) -> datetime | None:
    """The first date the sentence names, at midnight UTC."""
    found: list[tuple[int, datetime]] = []
    for match in _ISO.finditer(text):
        found.extend(_at(match.start(), int(match[1]), int(match[2]), int(match[3])))
    for match in _MDY.finditer(text):
        month = _MONTHS[match[1].lower().rstrip(".")]
        found.extend(_at(match.start(), int(match[3]), month, int(match[2])))
    for match in _DMY.finditer(text):
        month = _MONTHS[match[2].lower().rstrip(".")]
        found.extend(_at(match.start(), int(match[3]), month, int(match[1])))
    for match in _YEAR.finditer(text):
        found.extend(_at(match.start(), int(match[1]), 1, 1))
    return min(found)[1] if found else None


def _at(position: int, year: int, month: int, day: int) -> list[tuple[int, datetime]]:
    try:
        return [(position, datetime(year, month, day, tzinfo=UTC))]
    except ValueError:  # "2024-02-31"
        return []


def _trim(name: str) -> str | None:
    """The name without leading words that are not names ("The Acme" stays, "Yesterday
    Alice" -> "Alice"); ``None`` if nothing is left."""
    words = name.split(" ")
    while words and words[0].lower() in _NOT_NAMES:
        words.pop(0)
    return " ".join(words) or None


class RuleExtractor:
    """An extractor made of regular expressions: no model, no network, deterministic.

    Good enough to demo ``memory.graph.ingest`` and to test with (see the module
    docstring for exactly what it reads); not for real conversations.
    ``min_confidence`` applies as in ``finish``; names found only by
    capitalisation have confidence 0.75, names and relations from a sentence
    shape 0.9.
    """

    def __init__(self, *, min_confidence: float = 0.7) -> None:
        self.min_confidence = min_confidence

    async def aextract(
        self,
        text: str,
        *,
        known_entities: Sequence[str] = (),
        reference_time: datetime | None = None,
    ) -> Extraction:
        """Same as ``extract`` (there is no I/O to wait for)."""
        return self.extract(text, known_entities=known_entities, reference_time=reference_time)

    def extract(
        self,
        text: str,
        *,
        known_entities: Sequence[str] = (),
        reference_time: datetime | None = None,
    ) -> Extraction:
        """Entities, relations, observations and facts in ``text`` (see the module docstring).

        A capitalised word that is a ``known_entities`` name is an entity even at
        the start of a sentence.
        """
        known = {k.casefold() for k in known_entities if isinstance(k, str)}
        entities: list[ExtractedEntity] = []
        relations: list[ExtractedRelation] = []
        observations: list[ExtractedObservation] = []
        facts: list[ExtractedFact] = []

        def entity(name: str | None, kind: str, confidence: float) -> str | None:
            if name is None:
                return None
            entities.append(ExtractedEntity(name, kind, (), confidence))
            return name

        for sentence in _SENTENCES.split(text):
            sentence = sentence.strip()
            if not sentence:
                continue
            when = _date(sentence)
            typed: set[str] = set()
            for match in _POSSESSIVE.finditer(sentence):
                x = entity(_trim(match["x"]), "person", SHAPE_CONFIDENCE)
                y = entity(_trim(match["y"]), "person", SHAPE_CONFIDENCE)
                role = type_name(match["z"])
                if x and y and role:
                    typed.update((x, y))
                    relations.append(
                        ExtractedRelation(x, f"{role}_of", y, when, None, SHAPE_CONFIDENCE)
                    )
                    observations.append(
                        ExtractedObservation(x, f"{y}'s {match['z']}", SHAPE_CONFIDENCE)
                    )
            for pattern, kind, rel in (
                (_WORKS, "organization", "works_at"),
                (_LIVES, "location", "lives_in"),
            ):
                for match in pattern.finditer(sentence):
                    x = entity(_trim(match["x"]), "person", SHAPE_CONFIDENCE)
                    y = entity(_trim(match["y"]), kind, SHAPE_CONFIDENCE)
                    if x and y:
                        typed.update((x, y))
                        relations.append(ExtractedRelation(x, rel, y, when, None, SHAPE_CONFIDENCE))
                        verb = "works at" if rel == "works_at" else "lives in"
                        facts.append(ExtractedFact(x, rel, y, f"{x} {verb} {y}", SHAPE_CONFIDENCE))
            for match in _BORN.finditer(sentence):
                x = entity(_trim(match["x"]), "person", SHAPE_CONFIDENCE)
                born = _date(sentence[match.end() :].replace("since ", ""))
                if x and born is not None:
                    typed.add(x)
                    day = born.date().isoformat()
                    observations.append(ExtractedObservation(x, f"born on {day}", SHAPE_CONFIDENCE))
                    facts.append(
                        ExtractedFact(x, "born_on", day, f"{x} was born on {day}", SHAPE_CONFIDENCE)
                    )
            for match in _CANDIDATE.finditer(sentence):
                name = match[0]
                if match.start() == 0 and name.casefold() not in known:
                    name = _trim(name) or ""
                    # a lone capitalised first word is a name only when known or shaped
                    if name == match[0] and " " not in name:
                        continue
                else:
                    name = _trim(name) or ""
                if name and name not in typed:
                    entity(name, "concept", NAME_CONFIDENCE)
        # A name seen both bare and in a shape keeps the shape's type (finish merges
        # by name, keeping the first): put the shaped ones first.
        entities.sort(key=lambda e: e.confidence != SHAPE_CONFIDENCE)
        return finish(
            Extraction(tuple(entities), tuple(relations), tuple(observations), tuple(facts)),
            known_entities=known_entities,
            min_confidence=self.min_confidence,
        )
