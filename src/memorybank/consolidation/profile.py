"""``memory.profile(user_id)``: a user's current facts, grouped by attribute (I/O-free).

The rule, without an LLM, written once here: a fact belongs to the profile of user U
when it is U's own (``user_id == U``; a shared fact is not about U) and current (not
superseded, not expired: what ``memory.facts.list`` returns). Its attribute is

1. the slot the consolidation rules read (``consolidation.rules.slot_of``: the
   ``subject``/``attribute``/``value`` metadata extraction writes, else a sentence
   shape such as "User lives in Paris") when its subject is the user ("I", "my",
   "the user", the user's id, or a name one of the user's ``name`` facts gives): ``name``,
   ``lives_in``, ``works_at``, ``age``, ``birthday``, ``occupation``, ``partner``,
   ``favorite_<thing>``, ...;
2. else its ``category`` when it has one (``preference`` and ``preferences`` are one);
3. else ``preferences`` for a sentence of liking ("likes", "loves", "prefers",
   "enjoys", "hates", "dislikes", "favourite"), ``plans`` for one of intent ("plans",
   "is going to", "will", "wants to", "intends", "hopes to");
4. else ``other``.

Each attribute lists its facts newest first (by when the value holds: ``valid_at``,
else ``said_at``, else stored), each with its provenance (the entries it came from,
the facts consolidation merged into it) and times. Consolidation keeps the profile
current: it merges duplicates and supersedes contradicted values, so an attribute of
one value (``lives_in``) normally holds one fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memorybank.consolidation.rules import slot_of, valid_at
from memorybank.records import Fact

__all__ = ["ATTRIBUTE_ORDER", "Profile", "ProfileItem", "attribute_of", "build_profile"]

#: Attributes shown first, in this order; the others follow alphabetically, ``other`` last.
ATTRIBUTE_ORDER = (
    "name",
    "age",
    "birthday",
    "lives_in",
    "occupation",
    "works_at",
    "partner",
    "preferences",
    "plans",
)
_LIKING = re.compile(
    r"\b(likes?|loves?|prefers?|enjoys?|hates?|dislikes?|favou?rite|is fond of|is into)\b", re.I
)
_INTENT = re.compile(
    r"\b(plans?|planning|is going to|are going to|will|wants? to|intends?|hopes? to)\b", re.I
)
_CATEGORY_NAMES = {"preference": "preferences", "plan": "plans"}


@dataclass(frozen=True, slots=True)
class ProfileItem:
    """One fact of a profile: its text, the value a rule read (if any), provenance, times."""

    fact_id: str
    content: str
    value: str | None
    source_entries: tuple[str, ...]
    merged_from: tuple[str, ...]
    valid_at: datetime
    created_at: datetime
    updated_at: datetime
    confidence: float | None
    version: int


@dataclass(frozen=True, slots=True)
class Profile:
    """A user's current facts by attribute (see the module for the rule)."""

    user_id: str
    attributes: dict[str, list[ProfileItem]] = field(default_factory=dict)

    @property
    def facts(self) -> int:
        return sum(len(items) for items in self.attributes.values())

    def lines(self) -> list[str]:
        """One line per attribute, ``"name: User's name is Ana"``, newest first."""
        return [
            f"{name}: " + "; ".join(item.content for item in items)
            for name, items in self.attributes.items()
        ]


def attribute_of(fact: Fact, names: frozenset[str] = frozenset()) -> tuple[str, str | None]:
    """The fact's attribute in a profile and the value a rule read (the module's rule);
    ``names``: what else names the user as a subject (normalised, as slots are)."""
    slot = slot_of(fact)
    if slot is not None and (slot.subject == "user" or slot.subject in names):
        return slot.attribute, slot.value
    if fact.category and fact.category.strip():
        name = fact.category.strip().lower()
        return _CATEGORY_NAMES.get(name, name), None
    if _LIKING.search(fact.content):
        return "preferences", None
    if _INTENT.search(fact.content):
        return "plans", None
    return "other", None


def _merged(fact: Fact) -> tuple[str, ...]:
    merged = fact.metadata.get("merged_from")
    return tuple(m for m in merged if isinstance(m, str)) if isinstance(merged, list) else ()


def _order(name: str) -> tuple[int, str]:
    if name in ATTRIBUTE_ORDER:
        return ATTRIBUTE_ORDER.index(name), ""
    return len(ATTRIBUTE_ORDER) + (1 if name == "other" else 0), name


def build_profile(user_id: str, facts: Sequence[Fact]) -> Profile:
    """The profile of ``user_id`` from current facts (others' and shared ones left out)."""
    own = [fact for fact in facts if fact.user_id == user_id]
    names = {user_id.strip().lower()}
    for fact in own:
        slot = slot_of(fact)
        if slot is not None and slot.subject == "user" and slot.attribute == "name":
            names.add(slot.value)
            names.add(slot.value.split()[0] if slot.value.split() else slot.value)
    groups: dict[str, list[ProfileItem]] = {}
    for fact in own:
        name, value = attribute_of(fact, frozenset(names))
        groups.setdefault(name, []).append(
            ProfileItem(
                fact_id=fact.id,
                content=fact.content,
                value=value,
                source_entries=fact.source_entries,
                merged_from=_merged(fact),
                valid_at=valid_at(fact),
                created_at=fact.created_at,
                updated_at=fact.updated_at,
                confidence=fact.confidence,
                version=fact.version,
            )
        )
    ordered = {
        name: sorted(
            groups[name], key=lambda i: (i.valid_at, i.created_at, i.fact_id), reverse=True
        )
        for name in sorted(groups, key=_order)
    }
    return Profile(user_id=user_id, attributes=ordered)
