"""Which graph entities name the same thing: consolidation's alias rules (I/O-free).

``memory.consolidate`` merges, per owner, the entities these rules find to be one
(``plan_entities``), with the graph's own ``merge_entities``. Two entities are only
ever compared when they have exactly the same owner (agent and user) and the same
type; the first rule that holds decides, in this order:

1. **the same name**: their names are equal once case, accents, spaces and
   punctuation are set aside (``compact_key``: "New-York" = "new york", "Dr. Smith" =
   "dr smith", "Café Luna" = "Cafe Luna", "e-mail" = "email"; a leading "the" is
   dropped; "+" and "#" count: "C++" and "C#" are not "C");
2. **a known alias**: a name or alias of one is (by ``compact_key``) a name or alias of
   the other ("NYC" on the entity "New York City" and an entity named "NYC");
3. **embedding**, when the memory has an embedder: the cosine similarity of their
   names' embeddings is at least ``ENTITY_COSINE`` (0.95: high, because a small
   sentence model puts different things of similar names close: with
   all-MiniLM-L6-v2, "York" and "New York" are 0.93 apart, "Room 101" and "Room 102"
   0.91, while "NYC" and "New York City" are 0.91).

Pairs no rule decides but that look alike (cosine at least ``ENTITY_COSINE_UNDECIDED``,
or one name's words a part of the other's: "Bob" and "Bob Smith") are *undecided*:
the memory's LLM judge, when it has one, is asked about them (``undecided_entities``);
without one they stay apart. Entities found to be one form a group; each group's
oldest entity (``created_at``, then id) survives and the others merge into it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memorybank.graph.model import Entity

__all__ = [
    "ENTITY_COSINE",
    "ENTITY_COSINE_UNDECIDED",
    "EntityMergePlan",
    "alias_key",
    "compact_key",
    "group_merges",
    "plan_entities",
    "undecided_entities",
]

#: Names whose embeddings are at least this similar (cosine) name one thing.
ENTITY_COSINE = 0.95
#: Names at least this similar, below ``ENTITY_COSINE``, are asked of the judge.
ENTITY_COSINE_UNDECIDED = 0.8

#: Rows of name vectors compared per block (bounds a run's memory on a large graph).
_BLOCK = 512
_NOT_WORD = re.compile(r"[^\w\s+#]+", re.UNICODE)
_UNDERSCORE = re.compile(r"_+")


def alias_key(name: str) -> str:
    """The form aliases are compared in: accents stripped, case-folded, "&" read as
    "and", punctuation and underscores removed (a hyphen or slash is a space, an
    apostrophe or a dot nothing; "+" and "#" stay: "C++" is not "C"), whitespace
    collapsed, a leading "the" dropped. The rules compare it without its spaces too
    (``compact_key``: "e-mail" = "email")."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    text = text.replace("&", " and ")
    for space in ("-", "/", "\u2013", "\u2014"):
        text = text.replace(space, " ")
    text = _UNDERSCORE.sub(" ", _NOT_WORD.sub("", text))
    words = text.split()
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    return " ".join(words)


def compact_key(name: str) -> str:
    """``alias_key`` without spaces: what the name and alias rules compare."""
    return alias_key(name).replace(" ", "")


@dataclass(frozen=True, slots=True)
class EntityMergePlan:
    """One entity to merge into another of the same owner and type, and why.

    ``rule``: ``"name"``, ``"alias"``, ``"embedding"`` or ``"judge"``; ``score``: the
    cosine of an embedding match; ``decided_by``: ``"rules"`` or ``"judge"``."""

    entity_id: str
    into: str
    rule: str
    why: str
    score: float | None = None
    decided_by: str = "rules"


def _keys(entity: Entity) -> set[str]:
    return {k for k in (compact_key(n) for n in (entity.name, *entity.aliases)) if k}


def _order(entity: Entity) -> tuple[Any, str]:
    return (entity.created_at, entity.id)


def _groups(entities: Iterable[Entity]) -> dict[tuple[str | None, str | None, str], list[Entity]]:
    """Entities by exact owner and type, each list oldest first."""
    out: dict[tuple[str | None, str | None, str], list[Entity]] = {}
    for entity in entities:
        out.setdefault((entity.agent_id, entity.user_id, entity.type), []).append(entity)
    for group in out.values():
        group.sort(key=_order)
    return out


def _matrix(group: Sequence[Entity], vectors: Mapping[str, Sequence[float]]) -> Any:
    """The group's name vectors as unit rows (zeros for an entity without one)."""
    dims = len(next(iter(vectors.values())))
    matrix = np.zeros((len(group), dims), dtype=np.float32)
    for i, entity in enumerate(group):
        vector = vectors.get(entity.id)
        if vector is not None:
            row = np.asarray(vector, dtype=np.float32)
            norm = float(np.linalg.norm(row))
            if norm > 0:
                matrix[i] = row / norm
    return matrix


def _close(matrix: Any, floor: float) -> dict[tuple[int, int], float]:
    """Pairs (older index, newer index) whose cosine is at least ``floor``, computed a
    block of rows at a time (memory bounded by ``_BLOCK`` rows times the group)."""
    out: dict[tuple[int, int], float] = {}
    for start in range(0, len(matrix), _BLOCK):
        sims = matrix[start : start + _BLOCK] @ matrix.T
        rows, cols = np.nonzero(sims >= floor)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + r
            if c > i:
                out[(i, c)] = round(float(sims[r, c]), 6)
    return out


class _Union:
    def __init__(self, order: Mapping[str, tuple[Any, str]]) -> None:
        self._parent: dict[str, str] = {}
        self._order = order

    def find(self, item: str) -> str:
        root = item
        while self._parent.get(root, root) != root:
            root = self._parent[root]
        self._parent[item] = root
        return root

    def join(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        older, newer = sorted((ra, rb), key=lambda i: self._order[i])
        self._parent[newer] = older
        return True


def group_merges(
    entities: Sequence[Entity], pairs: Sequence[EntityMergePlan]
) -> list[EntityMergePlan]:
    """``pairs`` (each joining two entities) as merges into each group's oldest entity:
    every entity of a group but the oldest merges into it once, with the reason of the
    pair that first joined it to the group."""
    order = {e.id: _order(e) for e in entities}
    union = _Union(order)
    why: dict[str, EntityMergePlan] = {}
    for pair in pairs:
        if pair.entity_id not in order or pair.into not in order:
            continue
        newer = max((pair.entity_id, pair.into), key=lambda i: order[i])
        if union.join(pair.entity_id, pair.into):
            why.setdefault(newer, pair)
    out = []
    for entity in sorted(entities, key=_order):
        root = union.find(entity.id)
        if root == entity.id:
            continue
        pair = why.get(entity.id) or next(p for p in pairs if entity.id in (p.entity_id, p.into))
        out.append(
            EntityMergePlan(entity.id, root, pair.rule, pair.why, pair.score, pair.decided_by)
        )
    return out


def _pairs(
    group: Sequence[Entity], vectors: Mapping[str, Sequence[float]] | None
) -> tuple[list[EntityMergePlan], list[tuple[Entity, Entity, float | None]]]:
    """The rules' pairs in one owner-and-type group (newer into older), and the
    undecided pairs (newer, older, cosine)."""
    decided: list[EntityMergePlan] = []
    done: set[tuple[str, str]] = set()
    by_name: dict[str, Entity] = {}
    by_alias: dict[str, list[Entity]] = {}
    for entity in group:  # oldest first
        key = compact_key(entity.name)
        first = by_name.get(key)
        if key and first is not None:
            decided.append(
                EntityMergePlan(
                    entity.id,
                    first.id,
                    "name",
                    f"the same name once case, spaces and punctuation are set aside: "
                    f"{entity.name!r} = {first.name!r}",
                )
            )
            done.add((entity.id, first.id))
        elif key:
            by_name[key] = entity
        for k in _keys(entity):
            by_alias.setdefault(k, []).append(entity)
    for key, holders in by_alias.items():
        for newer in holders[1:]:
            older = holders[0]
            if (newer.id, older.id) in done or newer.id == older.id:
                continue
            done.add((newer.id, older.id))
            decided.append(
                EntityMergePlan(
                    newer.id,
                    older.id,
                    "alias",
                    f"a known alias: {newer.name!r} and {older.name!r} share the name or "
                    f"alias {key!r} (compared without case, spaces and punctuation)",
                )
            )
    undecided: list[tuple[Entity, Entity, float | None]] = []
    close: dict[tuple[int, int], float] = {}
    if vectors and len(group) > 1 and any(e.id in vectors for e in group):
        close = _close(_matrix(group, vectors), ENTITY_COSINE_UNDECIDED)
    words = [set(alias_key(e.name).split()) for e in group]
    by_word: dict[str, list[int]] = {}
    for j, found in enumerate(words):  # one name's words a part of an older one's
        seen: set[int] = set()
        for word in found:
            for i in by_word.get(word, ()):
                if i not in seen and (words[i] < found or found < words[i]):
                    close.setdefault((i, j), -1.0)
                seen.update(by_word.get(word, ()))
            by_word.setdefault(word, []).append(j)
    for (i, j), cosine in sorted(close.items()):
        newer, older = group[j], group[i]
        if (newer.id, older.id) in done:
            continue
        score = None if cosine < 0 else cosine
        if score is not None and score >= ENTITY_COSINE:
            decided.append(
                EntityMergePlan(
                    newer.id,
                    older.id,
                    "embedding",
                    f"names this close by embedding: {newer.name!r} ~ {older.name!r} "
                    f"(cosine {score:.3f} >= {ENTITY_COSINE})",
                    score,
                )
            )
        else:
            undecided.append((newer, older, score))
    return decided, undecided


def plan_entities(
    entities: Iterable[Entity], *, vectors: Mapping[str, Sequence[float]] | None = None
) -> list[EntityMergePlan]:
    """The merges the rules decide among ``entities`` (any owners: each is compared only
    with entities of exactly its owner and type); ``vectors``: entity id -> the
    embedding of its name (``None``: no embedding rule)."""
    every = list(entities)
    pairs: list[EntityMergePlan] = []
    for group in _groups(every).values():
        pairs += _pairs(group, vectors)[0]
    return group_merges(every, pairs)


def undecided_entities(
    entities: Iterable[Entity],
    *,
    vectors: Mapping[str, Sequence[float]] | None = None,
    max_candidates: int = 5,
) -> list[tuple[Entity, list[Entity]]]:
    """The pairs the rules leave undecided, as (a newer entity, older candidates of its
    owner and type, most alike first, at most ``max_candidates``): what a judge is
    asked."""
    out: list[tuple[Entity, list[Entity]]] = []
    for group in _groups(entities).values():
        by_newer: dict[str, list[tuple[float, Entity]]] = {}
        newer_of: dict[str, Entity] = {}
        for newer, older, score in _pairs(group, vectors)[1]:
            by_newer.setdefault(newer.id, []).append((-(score or 0.0), older))
            newer_of[newer.id] = newer
        for entity_id, candidates in by_newer.items():
            candidates.sort(key=lambda c: (c[0], _order(c[1])))
            out.append((newer_of[entity_id], [c for _, c in candidates[:max_candidates]]))
    out.sort(key=lambda case: _order(case[0]))
    return out
