"""What consolidation decides, without I/O: duplicates, contradictions and the plan.

A plan is a list of ``Change``: each retires one fact (the *loser*) in favour of another
of the same owner (the *winner*), as a ``"duplicate"`` (``is_duplicate``; the oldest of
a group survives and gains the others' provenance) or a ``"contradiction"`` (the same
slot with another value; the value valid last wins, one valid only in the future is left
alone). The rules, the slots and their sentence shapes: docs/consolidation.md ("The
rules (no LLM)"). Deterministic: the same facts give the same plan.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from memorybank.core.extraction import normalize_name, parse_time, type_name

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memorybank.records import Fact

__all__ = [
    "DUPLICATE_COSINE",
    "DUPLICATE_COSINE_CONTRAST",
    "DUPLICATE_OVERLAP",
    "DUPLICATE_OVERLAP_WITH_VECTORS",
    "JUDGE_COSINE",
    "Change",
    "Slot",
    "is_duplicate",
    "normalise",
    "plan",
    "slot_of",
    "undecided",
    "valid_at",
]

#: Cosine similarity from which two facts' embeddings count as the same meaning.
DUPLICATE_COSINE = 0.86
#: Cosine needed instead when each fact has content words the other lacks.
DUPLICATE_COSINE_CONTRAST = 0.95
#: Word overlap (Jaccard of content words) two facts need beside ``DUPLICATE_COSINE``.
DUPLICATE_OVERLAP_WITH_VECTORS = 0.3
#: Word overlap that alone makes two facts duplicates (no embedder).
DUPLICATE_OVERLAP = 0.75
#: Cosine from which a pair the rules left undecided is shown to an LLM judge.
JUDGE_COSINE = 0.6
#: Words shared by more facts than this are not used to find candidate pairs.
_COMMON_WORD = 50
#: Nearest facts by embedding each fact is compared with (bounds a run's time).
NEIGHBOURS = 10

Reason = Literal["duplicate", "contradiction"]
#: Who decided a change: these rules, or an LLM judge (``memorybank.core.judge``).
DecidedBy = Literal["rules", "judge"]

_WORDS = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_STOP = frozenset(
    """a an the is are was were be been am of to in on at for with and or as by it its this
    that these those i me my mine user user's users their they them he she his her him we
    our us you your has have had do does did currently now really very also just still
    s""".split()
)
_NEGATIONS = frozenset(
    "not no never nor none nobody nothing dont doesnt didnt isnt arent wasnt werent cannot "
    "cant wont hates dislikes avoids longer".split()
)
_SELF = frozenset({"i", "me", "my", "user", "the user", "users", "the user's", "user's"})


#: British spellings and contractions compared as one word.
_SPELLINGS = {
    "favourite": "favorite",
    "favourites": "favorites",
    "colour": "color",
    "colours": "colors",
    "doesnt": "not",
    "dont": "not",
    "didnt": "not",
    "isnt": "not",
    "arent": "not",
    "wasnt": "not",
    "cant": "cannot",
    "wont": "not",
}
#: Number words: two facts that differ in one differ in a number.
_NUMBER_WORDS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve twenty thirty
    hundred thousand first second third fourth fifth once twice""".split()
)
#: People a fact may be about instead of its subject: "the user's sister works at X" is
#: not "the user works at X".
_RELATIVES = frozenset(
    """mother mom mum father dad parent sister brother sibling son daughter child children
    kid wife husband spouse partner boyfriend girlfriend fiance niece nephew cousin aunt
    uncle grandmother grandfather grandma grandpa grandson granddaughter friend neighbor
    neighbour boss manager colleague coworker roommate teacher doctor dog cat pet""".split()
)
#: Capitalised words that start sentences without naming anything.
_STARTERS = frozenset(
    """user the i my a an this that every each on in at when since after before usually
    currently now today yesterday also""".split()
)


def normalise(text: str) -> str:
    """The form texts are compared in: NFKC, case-folded, apostrophes dropped, every run
    of other punctuation and whitespace one space, British spellings and contractions
    as one word."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("'", "").replace("\u2019", "")
    return " ".join(_SPELLINGS.get(w, w) for w in _WORDS.findall(folded))


def _names(text: str) -> frozenset[str]:
    """Capitalised words (a sentence's first one unless it is a usual starter), folded."""
    words = re.findall(r"[A-Za-z][A-Za-z-]*", text)
    found = {w.casefold() for w in words[1:] if w[0].isupper()}
    if words and words[0][0].isupper() and words[0].casefold() not in _STARTERS:
        found.add(words[0].casefold())
    return frozenset(found)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(normal: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in normal.split() if w not in _STOP)


def _numbers(normal: str) -> frozenset[str]:
    return frozenset(_NUMBER.findall(normal)) | frozenset(
        w for w in normal.split() if w in _NUMBER_WORDS
    )


def _negated(normal: str) -> bool:
    return any(w in _NEGATIONS for w in normal.split())


@dataclass(frozen=True, slots=True)
class Slot:
    """What a fact says one value of: ``subject``'s ``attribute`` is ``value`` (each
    normalised; a subject naming the user, "I", "my", "the user", is ``"user"``)."""

    subject: str
    attribute: str
    value: str


def _subject(text: str) -> str:
    name = normalize_name(text).removeprefix("the ").strip()
    name = name.removesuffix("'s").removesuffix("\u2019s")
    return "user" if name in _SELF or name == "user" else name


def _value(text: str) -> str:
    value = normalise(text)
    for lead in ("a ", "an ", "the "):
        value = value.removeprefix(lead)
    for tail in (" now", " currently", " these days", " nowadays"):
        value = value.removesuffix(tail)
    return value.strip()


_POSS = r"(?:['\u2019]s)?"
_S = rf"(?P<s>i|my|the user{_POSS}|user{_POSS}|[A-Z][a-z]+(?: [A-Z][a-z]+)?{_POSS})"
_V = r"(?P<v>[A-Za-z0-9][\w .,'&-]*?)"
_END = r"\s*(?:now|currently|these days)?\s*[.!]?$"
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), attribute)
    for pattern, attribute in (
        (rf"^{_S} (?:now |currently )?(?:lives?|is living|resides?) in {_V}{_END}", "lives_in"),
        (rf"^{_S} (?:has )?(?:moved|relocated) to {_V}{_END}", "lives_in"),
        (rf"^{_S} (?:home|hometown|city of residence) is {_V}{_END}", "lives_in"),
        (rf"^{_S} (?:now |currently )?works? (?:at|for) {_V}{_END}", "works_at"),
        (rf"^{_S} (?:is|am) employed (?:at|by) {_V}{_END}", "works_at"),
        (rf"^{_S} employer is {_V}{_END}", "works_at"),
        (rf"^{_S} (?:is|am) (?P<v>\d{{1,3}})(?: years old| years of age)?{_END}", "age"),
        (rf"^{_S} age is (?P<v>\d{{1,3}}){_END}", "age"),
        (rf"^{_S} name is {_V}{_END}", "name"),
        (rf"^{_S} (?:is|am) called {_V}{_END}", "name"),
        (rf"^{_S} (?:birthday|date of birth) is (?:on )?{_V}{_END}", "birthday"),
        (rf"^{_S} (?:was|were) born on {_V}{_END}", "birthday"),
        (rf"^{_S} (?:job|occupation|profession) is {_V}{_END}", "occupation"),
        (rf"^{_S} works as {_V}{_END}", "occupation"),
        (rf"^{_S} (?:partner|spouse|wife|husband) is {_V}{_END}", "partner"),
    )
)
_FAVOURITE = re.compile(
    rf"^{_S} (?:favou?rite|preferred) (?P<a>[a-z]+(?: [a-z]+)?) is {_V}{_END}", re.I
)


def slot_of(fact: Fact) -> Slot | None:
    """The fact's slot: from its metadata, else from a sentence shape, else ``None``."""
    meta = fact.metadata
    subject, attribute, value = meta.get("subject"), meta.get("attribute"), meta.get("value")
    if isinstance(subject, str) and isinstance(value, str):
        name = type_name(attribute)
        if name is not None and subject.strip() and value.strip():
            return Slot(_subject(subject), name, _value(value))
    return _shape_slot(fact.content)


def _shape_slot(content: str) -> Slot | None:
    text = " ".join(content.split())
    if _negated(normalise(text)):
        return None
    match = _FAVOURITE.match(text)
    if match:
        attribute = type_name("favorite " + match["a"])
        if attribute is not None:
            return Slot(_subject(match["s"]), attribute, _value(match["v"]))
    for pattern, attribute in _SHAPES:
        match = pattern.match(text)
        if match:
            value = _value(match["v"])
            return Slot(_subject(match["s"]), attribute, value) if value else None
    return None


def valid_at(fact: Fact) -> datetime:
    """When the fact's value holds from: ``valid_at``, else ``said_at``, else stored."""
    for name in ("valid_at", "valid_from", "said_at"):
        moment = parse_time(fact.metadata.get(name))
        if moment is not None:
            return moment
    return fact.created_at


@dataclass(frozen=True, slots=True)
class Change:
    """One decision of a plan: retire ``fact_id`` in favour of ``into`` (same owner)."""

    fact_id: str
    into: str
    reason: Reason
    why: str
    score: float | None = None
    decided_by: DecidedBy = "rules"


@dataclass(slots=True)
class _Facts:
    """The facts of one owner, with what ``is_duplicate`` compares precomputed."""

    facts: list[Fact]
    normal: list[str] = field(default_factory=list)
    words: list[frozenset[str]] = field(default_factory=list)
    numbers: list[frozenset[str]] = field(default_factory=list)
    negated: list[bool] = field(default_factory=list)
    slots: list[Slot | None] = field(default_factory=list)
    names: list[frozenset[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for fact in self.facts:
            self.names.append(_names(fact.content))
            normal = normalise(fact.content)
            self.normal.append(normal)
            self.words.append(_words(normal))
            self.numbers.append(_numbers(normal))
            self.negated.append(_negated(normal))
            self.slots.append(slot_of(fact))


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def _refines(a: str, b: str) -> bool:
    """Whether one value is the other with words added ("paris" and "paris texas")."""
    short, long = sorted((a.split(), b.split()), key=len)
    return short != long and long[: len(short)] == short


def is_duplicate(data: _Facts, i: int, j: int, cosine: float | None) -> tuple[bool, str]:
    """Whether facts ``i`` and ``j`` say the same thing, and why (the module's rule)."""
    if data.normal[i] == data.normal[j]:
        return True, "the same text once normalised"
    a, b = data.slots[i], data.slots[j]
    if a is not None and b is not None and (a.subject, a.attribute) == (b.subject, b.attribute):
        if a.value == b.value:
            return True, f"the same {a.attribute} of {a.subject}: {a.value}"
        return False, ""
    if data.numbers[i] != data.numbers[j] or data.negated[i] != data.negated[j]:
        return False, ""
    only_i, only_j = data.words[i] - data.words[j], data.words[j] - data.words[i]
    if (only_i | only_j) & _RELATIVES:
        return False, ""  # about someone (or some pet) else
    tokens_i, tokens_j = set(data.normal[i].split()), set(data.normal[j].split())
    if (data.names[i] - tokens_j) or (data.names[j] - tokens_i):
        return False, ""  # a name only one of them has
    overlap = _overlap(data.words[i], data.words[j])
    if cosine is not None:
        # words on both sides that the other lacks: a paraphrase, or a contrast
        # ("every morning" / "every evening"); only a very close meaning decides
        needed = DUPLICATE_COSINE_CONTRAST if only_i and only_j else DUPLICATE_COSINE
        if cosine >= needed and overlap >= DUPLICATE_OVERLAP_WITH_VECTORS:
            return True, f"the same meaning (cosine {cosine:.3f}, word overlap {overlap:.2f})"
        return False, ""
    if overlap >= DUPLICATE_OVERLAP:
        return True, f"the same words (overlap {overlap:.2f})"
    return False, ""


def _text_pairs(data: _Facts) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, sharing a word no more than ``_COMMON_WORD`` facts have,
    or a normalised text, or a slot: the only pairs text alone can call duplicates."""
    by_word: dict[str, list[int]] = defaultdict(list)
    by_key: dict[object, list[int]] = defaultdict(list)
    for i, words in enumerate(data.words):
        for word in words:
            by_word[word].append(i)
        by_key[data.normal[i]].append(i)
        slot = data.slots[i]
        if slot is not None:
            by_key[slot].append(i)
    pairs: set[tuple[int, int]] = set()
    groups = [g for g in by_word.values() if len(g) <= _COMMON_WORD]
    for group in (*groups, *by_key.values()):
        for x, i in enumerate(group):
            pairs.update((i, j) for j in group[x + 1 :])
    return pairs


def _vector_pairs(
    ordered: Sequence[Fact],
    vectors: Mapping[str, Sequence[float] | npt.NDArray[np.float32]] | None,
    threshold: float,
) -> dict[tuple[int, int], float]:
    """Pairs ``(i, j)`` of ``ordered``, ``i < j``, both with a vector, whose cosine is at
    least ``threshold``, each fact with at most ``NEIGHBOURS`` nearest others: a block of
    512 rows at a time (bounded memory), at most ``NEIGHBOURS`` pairs per fact (bounded
    time, however alike the facts are)."""
    if not vectors:
        return {}
    rows = [i for i, fact in enumerate(ordered) if fact.id in vectors]
    if not rows:
        return {}
    import numpy as np

    matrix = np.asarray([vectors[ordered[i].id] for i in rows], dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.where(norms == 0, 1.0, norms)
    found: dict[tuple[int, int], float] = {}
    keep = min(NEIGHBOURS + 1, len(unit))
    for start in range(0, len(unit), 512):
        block = unit[start : start + 512] @ unit.T
        nearest = np.argpartition(-block, keep - 1, axis=1)[:, :keep]
        for r, row in enumerate(nearest.tolist()):
            i = start + r
            for c in row:
                score = float(block[r, c])
                if c != i and score >= threshold:
                    found[(rows[min(i, c)], rows[max(i, c)])] = score
    return found


def plan(
    facts: Sequence[Fact],
    *,
    now: datetime,
    vectors: Mapping[str, Sequence[float] | npt.NDArray[np.float32]] | None = None,
) -> list[Change]:
    """The changes that consolidate ``facts`` (all of one owner), in the order to apply.

    ``vectors``: fact id -> embedding (``None``: no embedder; text rules alone). A fact
    without a vector is compared by text. Contradictions are decided first, then
    duplicates among the facts still current.
    """
    ordered = sorted(facts, key=lambda f: (f.created_at, f.id))
    data = _Facts(ordered)
    retired: dict[int, Change] = {}
    changes: list[Change] = []

    def retire(i: int, change: Change) -> None:
        retired[i] = change
        changes.append(change)

    for members in _slot_groups(data, now).values():
        winner = max(members, key=lambda i: (valid_at(ordered[i]), ordered[i].created_at, i))
        won = data.slots[winner]
        assert won is not None
        for i in members:
            slot = data.slots[i]
            if i == winner or slot is None:
                continue
            if slot.value == won.value or _refines(slot.value, won.value):
                continue  # the same value (merged below), or one that only adds detail
            retire(
                i,
                Change(
                    ordered[i].id,
                    ordered[winner].id,
                    "contradiction",
                    f"{won.attribute} of {won.subject}: {slot.value!r} was replaced by "
                    f"{won.value!r} (valid from {valid_at(ordered[winner]).isoformat()})",
                ),
            )

    cosines = _vector_pairs(ordered, vectors, DUPLICATE_COSINE)
    has_vector = [vectors is not None and fact.id in vectors for fact in ordered]
    candidates = sorted(set(cosines) | _text_pairs(data))
    for i, j in candidates:
        if i in retired or j in retired:
            continue
        both = has_vector[i] and has_vector[j]
        cosine = cosines.get((i, j), 0.0) if both else None
        same, why = is_duplicate(data, i, j, cosine)
        if same:
            retire(j, Change(ordered[j].id, ordered[i].id, "duplicate", why, cosine))
    return changes


def undecided(
    facts: Sequence[Fact],
    changes: Sequence[Change],
    *,
    now: datetime,
    vectors: Mapping[str, Sequence[float] | npt.NDArray[np.float32]] | None = None,
    max_candidates: int = 5,
) -> list[tuple[Fact, list[Fact]]]:
    """What the rules could not decide, for an LLM judge: each current fact with the
    older facts of its owner near it (cosine at least ``JUDGE_COSINE``, or sharing a
    rarer word), closest first, at most ``max_candidates`` of them; oldest fact first.

    Left out: facts ``changes`` retire, facts valid only after ``now``, and pairs with
    the same slot (the rules decide those: one value, or two).
    """
    ordered = sorted(facts, key=lambda f: (f.created_at, f.id))
    data = _Facts(ordered)
    gone = {c.fact_id for c in changes}
    cosines = _vector_pairs(ordered, vectors, JUDGE_COSINE)
    near: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
    for i, j in set(cosines) | _text_pairs(data):
        if ordered[i].id in gone or ordered[j].id in gone:
            continue
        if valid_at(ordered[i]) > now or valid_at(ordered[j]) > now:
            continue
        one, two = data.slots[i], data.slots[j]
        if one is not None and two is not None and one.attribute == two.attribute:
            if one.subject == two.subject:
                continue
        overlap = _overlap(data.words[i], data.words[j])
        near[j].append((-cosines.get((i, j), 0.0), -overlap, i))
    return [
        (ordered[j], [ordered[i] for _, _, i in sorted(near[j])[:max_candidates]])
        for j in sorted(near)
    ]


def _slot_groups(data: _Facts, now: datetime) -> dict[tuple[str, str], list[int]]:
    """Facts by slot (subject, attribute), where some differ in value; a fact valid only
    after ``now`` takes no part."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, slot in enumerate(data.slots):
        if slot is not None and valid_at(data.facts[i]) <= now:
            groups[(slot.subject, slot.attribute)].append(i)
    return {
        key: members
        for key, members in groups.items()
        if len({slot.value for i in members if (slot := data.slots[i]) is not None}) > 1
    }


def owners(facts: Iterable[Fact]) -> dict[tuple[str | None, str | None], list[Fact]]:
    """Facts by exact owner ``(user_id, agent_id)``: consolidation never crosses them."""
    out: dict[tuple[str | None, str | None], list[Fact]] = defaultdict(list)
    for fact in facts:
        out[(fact.user_id, fact.agent_id)].append(fact)
    return dict(out)
