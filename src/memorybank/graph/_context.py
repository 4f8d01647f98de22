"""The graph block of ``build_context``: ranking, formatting and fitting, no I/O.

``memorybank.graph._async.context`` gathers the candidates (the entities the input
names, their neighbourhood); this module ranks them (deterministically: every tie is
broken by names, then ids) and fits their lines to the block's budget. The scores and
the fitting rule are in docs/graph.md ("Context"); the constants below are theirs.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memorybank.errors import InvalidInput
from memorybank.graph.model import Entity, GraphContextOptions, Relation
from memorybank.rules.validate import MAX_COUNT, check_time

__all__ = [
    "ENTITIES_HEADER",
    "RELATIONSHIPS_HEADER",
    "GraphBlock",
    "Seed",
    "as_options",
    "fit_block",
    "name_keys",
    "named_in",
    "rank",
]

ENTITIES_HEADER = "Entities:"
RELATIONSHIPS_HEADER = "Relationships:"

NAME_SCORE = 1.0
SEARCH_SCORE = 0.6
SEARCH_FLOOR = 0.3
HOP_DECAY = 0.5
EDGE_WEIGHT = 0.3
LEXICAL_WEIGHT = 0.3
HISTORY_FACTOR = 0.8
#: Observations shown per entity: the most relevant to the input, in their stored order.
MAX_OBSERVATIONS = 5
#: Longest name (in words) looked up from the input, and most lookups per input.
MAX_NAME_WORDS = 5
MAX_NAME_KEYS = 1024
#: Lines estimated to overshoot by at most this many tokens are measured exactly
#: (the first 8 of them) before being skipped.
EXACT_SLACK = 2
EXACT_CHECKS = 8

_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")
_EDGE_PUNCTUATION = "\"'`.,;:!?()[]{}<>«»“”‘’"  # noqa: RUF001 (typographic quotes are punctuation)
_END_PUNCTUATION = _EDGE_PUNCTUATION.replace(".", "")  # "Acme Inc." may end with its period
_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her
    hers him his how i if in into is it its me my no not of on or our ours she so than that
    the their them then there these they this those to us was we were what when where which
    who whom whose why will with would you your yours about tell know""".split()
)


def as_options(value: object) -> GraphContextOptions:
    """``value`` (a ``GraphContextOptions``, a dict of its fields or ``None``) checked.

    ``InvalidInput`` (field ``graph_options``) for an unknown key, a bound that
    is not a whole number (``max_nodes``/``max_edges`` >= 1, ``max_depth`` >= 0),
    entity types that are not strings or a naive ``as_of``.
    """
    if value is None:
        return GraphContextOptions()
    if isinstance(value, Mapping):
        names = {f.name for f in dataclasses.fields(GraphContextOptions)}
        unknown = sorted(str(k) for k in value if k not in names)
        if unknown:
            raise InvalidInput(
                f"graph_options has unknown option(s) {', '.join(unknown)}"
                f" (known: {', '.join(sorted(names))})",
                field="graph_options",
            )
        fields: dict[str, Any] = dict(value)
        if isinstance(fields.get("entity_types"), list | set | frozenset):
            fields["entity_types"] = tuple(sorted(fields["entity_types"]))
        value = GraphContextOptions(**fields)
    if not isinstance(value, GraphContextOptions):
        raise InvalidInput(
            "graph_options must be a GraphContextOptions (or a dict of its fields)",
            field="graph_options",
        )
    for name, low in (("max_nodes", 1), ("max_edges", 1), ("max_depth", 0)):
        bound = getattr(value, name)
        if isinstance(bound, bool) or not isinstance(bound, int) or not low <= bound <= MAX_COUNT:
            raise InvalidInput(
                f"graph_options.{name} must be a whole number from {low}, got {bound!r}",
                field="graph_options",
            )
    types = value.entity_types
    if types is not None and (
        isinstance(types, str) or not all(isinstance(t, str) and t for t in types)
    ):
        raise InvalidInput(
            "graph_options.entity_types must be a tuple of non-empty strings or None",
            field="graph_options",
        )
    if types is not None and not isinstance(types, tuple):
        value = dataclasses.replace(value, entity_types=tuple(types))
    if value.as_of is not None:
        check_time(value.as_of, "graph_options")
    return value


@functools.lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """The graph's name key: case-folded, trimmed, inner whitespace collapsed."""
    return _SPACE.sub(" ", text.strip()).casefold()


def name_keys(text: str) -> list[str]:
    """Normalised word runs of ``text`` (1 to 5 words) that could be entity names or aliases.

    Each run is given as written and without the punctuation around it
    (``"Acme Inc.?"`` gives ``"acme inc.?"``, ``"acme inc."`` and ``"acme inc"``);
    single common words are left out. In order of first appearance, at most 1024.
    """
    words = _SPACE.split(text.strip())
    keys: dict[str, None] = {}
    for start in range(len(words)):
        for length in range(1, MAX_NAME_WORDS + 1):
            if start + length > len(words):
                break
            raw = " ".join(words[start : start + length])
            trimmed = raw.lstrip(_EDGE_PUNCTUATION)
            for candidate in (
                raw,
                trimmed.rstrip(_END_PUNCTUATION),
                trimmed.rstrip(_EDGE_PUNCTUATION),
            ):
                key = normalize(candidate)
                if not key or (length == 1 and key in _STOPWORDS):
                    continue
                keys.setdefault(key, None)
                if len(keys) >= MAX_NAME_KEYS:
                    return list(keys)
    return list(keys)


def named_in(text: str, names: Iterable[str]) -> int | None:
    """Where the first of ``names`` occurs in ``text`` as whole words (case-insensitive).

    The position in the normalised text, or ``None`` when none occurs.
    """
    haystack = normalize(text)
    best: int | None = None
    for name in names:
        key = normalize(name)
        if not key:
            continue
        found = re.search(r"(?<!\w)" + re.escape(key) + r"(?!\w)", haystack)
        if found is not None and (best is None or found.start() < best):
            best = found.start()
    return best


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) >= 4:
        word = word[:-1]
    return word


@functools.lru_cache(maxsize=4096)
def terms(text: str) -> tuple[str, ...]:
    """The content words of ``text``, crudely stemmed, each once, in order."""
    out: dict[str, None] = {}
    for word in _WORD.findall(text.replace("_", " ").casefold()):
        if word in _STOPWORDS or (len(word) < 3 and not word.isdigit()):
            continue
        out.setdefault(_stem(word), None)
    return tuple(out)


def _overlap(query: Sequence[str], texts: Iterable[str]) -> float:
    """The share of the query's terms found in ``texts``."""
    if not query:
        return 0.0
    found: set[str] = set()
    for text in texts:
        found.update(terms(text))
    return sum(1 for term in query if term in found) / len(query)


@dataclass(frozen=True, slots=True)
class Seed:
    """An entity the input led to: ``score`` 1.0 when named, less when only searched."""

    entity: Entity
    score: float


@dataclass(frozen=True, slots=True)
class GraphBlock:
    """The block's text and what it shows (entities and relations, best first)."""

    text: str
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Item:
    score: float
    order: tuple[object, ...]
    line: str
    entity: Entity | None = None
    relation: Relation | None = None


def _name_order(entity: Entity) -> tuple[str, str, str]:
    return (normalize(entity.name), entity.type, entity.id)


def _date(when: datetime) -> str:
    return when.date().isoformat()


def rank(
    query: str,
    seeds: Sequence[Seed],
    entities: Sequence[Entity],
    relations: Sequence[Relation],
    *,
    when: datetime,
    max_depth: int,
) -> tuple[list[tuple[Entity, float, str]], list[tuple[Relation, float, str]]]:
    """Entities and relations with their scores and lines, best first.

    ``entities`` must include the seeds; relations whose endpoints are not all
    in ``entities`` are left out, and so are entities further than
    ``max_depth`` hops from every seed. ``when`` is the time the relations are
    read at: one that does not hold then is a past one.
    """
    by_id = {e.id: e for e in entities}
    for seed in seeds:
        by_id.setdefault(seed.entity.id, seed.entity)
    edges = [r for r in relations if r.source_id in by_id and r.target_id in by_id]
    query_terms = terms(query)
    relevance = {r.id: _overlap(query_terms, [r.type, r.label or ""]) for r in edges}
    adjacent: dict[str, list[tuple[str, float]]] = {}
    for r in edges:
        factor = HOP_DECAY + EDGE_WEIGHT * relevance[r.id]
        adjacent.setdefault(r.source_id, []).append((r.target_id, factor))
        adjacent.setdefault(r.target_id, []).append((r.source_id, factor))

    # best seed score decayed by hops over paths of at most max_depth hops; fewest hops
    best: dict[str, float] = {}
    hops: dict[str, int] = {}
    for seed in seeds:
        if best.get(seed.entity.id, -1.0) < seed.score:
            best[seed.entity.id] = seed.score
            hops[seed.entity.id] = 0
    for hop in range(1, max_depth + 1):
        spread = dict(best)
        for entity_id in sorted(best):
            for other, factor in adjacent.get(entity_id, ()):
                score = best[entity_id] * factor
                hops.setdefault(other, hop)
                if spread.get(other, -1.0) < score:
                    spread[other] = score
        if spread == best:
            break
        best = spread

    ambiguous = _ambiguous(by_id[i] for i in best)

    ranked_entities: list[tuple[Entity, float, str]] = []
    scores: dict[str, float] = {}
    for entity_id, base in best.items():
        entity = by_id[entity_id]
        lexical = _overlap(query_terms, [entity.name, *entity.aliases, *entity.observations])
        score = round(base + LEXICAL_WEIGHT * lexical, 9)  # equal scores tie exactly
        scores[entity_id] = score
        ranked_entities.append((entity, score, _entity_line(entity, query_terms)))
    ranked_entities.sort(key=lambda item: (-item[1], hops[item[0].id], *_name_order(item[0])))

    ranked_relations: list[tuple[Relation, float, str]] = []
    for r in edges:
        if r.source_id not in scores or r.target_id not in scores:
            continue
        score = (scores[r.source_id] + scores[r.target_id]) / 2 + LEXICAL_WEIGHT * relevance[r.id]
        score *= 0.5 + 0.5 * max(0.0, min(1.0, r.confidence))
        if not r.holds_at(when):
            score *= HISTORY_FACTOR
        score = round(score, 9)
        line = _relation_line(r, by_id[r.source_id], by_id[r.target_id], ambiguous, when)
        ranked_relations.append((r, score, line))
    ranked_relations.sort(
        key=lambda item: (
            -item[1],
            item[0].type,
            *_name_order(by_id[item[0].source_id]),
            *_name_order(by_id[item[0].target_id]),
            item[0].id,
        )
    )
    return ranked_entities, ranked_relations


def _ambiguous(entities: Iterable[Entity]) -> set[str]:
    """Normalised names shared by more than one entity (their lines name the type too)."""
    seen: dict[str, int] = {}
    for entity in entities:
        key = normalize(entity.name)
        seen[key] = seen.get(key, 0) + 1
    return {key for key, count in seen.items() if count > 1}


def _entity_line(entity: Entity, query_terms: Sequence[str]) -> str:
    head = entity.type
    aliases = [a for a in entity.aliases if normalize(a) != normalize(entity.name)]
    if aliases:
        head += "; aka " + ", ".join(aliases)
    line = f"{entity.name} ({head})"
    observations = [o for o in entity.observations if o.strip()]
    if len(observations) > MAX_OBSERVATIONS:
        relevance = [(-_overlap(query_terms, [o]), i) for i, o in enumerate(observations)]
        keep = sorted(i for _, i in sorted(relevance)[:MAX_OBSERVATIONS])
        observations = [observations[i] for i in keep]
    if observations:
        line += ": " + "; ".join(observations)
    return line


def _display(entity: Entity, ambiguous: set[str]) -> str:
    if normalize(entity.name) in ambiguous:
        return f"{entity.name} ({entity.type})"
    return entity.name


def _relation_line(
    relation: Relation, source: Entity, target: Entity, ambiguous: set[str], when: datetime
) -> str:
    notes: list[str] = []
    if relation.source == "inferred":
        notes.append("inferred")
    if relation.bidirectional:
        notes.append("both ways")
    start = relation.valid_at if relation.valid_at is not None else relation.created_at
    if relation.invalid_at is not None and relation.invalid_at <= when:
        notes.append(f"from {_date(start)} to {_date(relation.invalid_at)}")
    elif start > when:
        notes.append(f"from {_date(start)}")
    else:
        notes.append(f"since {_date(start)}")
    if relation.invalid_at is not None and relation.invalid_at > when:
        notes.append(f"until {_date(relation.invalid_at)}")
    label = f" [{relation.label}]" if relation.label else ""
    return (
        f"{_display(source, ambiguous)} {relation.type}{label} {_display(target, ambiguous)}"
        f" ({'; '.join(notes)})"
    )


def render(entity_lines: Sequence[str], relation_lines: Sequence[str]) -> str:
    """The block's text: an ``Entities:`` list, then a ``Relationships:`` list."""
    parts: list[str] = []
    if entity_lines:
        parts.append(ENTITIES_HEADER + "".join("\n- " + line for line in entity_lines))
    if relation_lines:
        parts.append(RELATIONSHIPS_HEADER + "".join("\n- " + line for line in relation_lines))
    return "\n".join(parts)


def _anchored(items: Sequence[_Item]) -> Callable[[_Item], tuple[Any, ...]]:
    """The order lines are taken in: best first (an entity before a relation of the same
    score), except that a relation worth at least its weaker endpoint comes right after
    its better one: its line names both, so a small budget keeps "Bob plans_to_visit
    Paris" rather than "Bob" and "Paris" without it."""
    entities = {i.entity.id: i for i in items if i.entity is not None}

    def key(item: _Item) -> tuple[Any, ...]:
        relation = item.relation
        if relation is not None:
            source, target = entities.get(relation.source_id), entities.get(relation.target_id)
            if source is not None and target is not None:
                better, weaker = sorted((source, target), key=lambda e: (-e.score, e.order))
                if item.score >= weaker.score:
                    return (-better.score, better.order, 1, -item.score, item.order)
        return (-item.score, item.order, 0, 0.0, item.order)

    return key


def fit_block(
    entities: Sequence[tuple[Entity, float, str]],
    relations: Sequence[tuple[Relation, float, str]],
    *,
    budget: int,
    count: Callable[[str], int],
    measure: Callable[[str], int] | None = None,
) -> GraphBlock | None:
    """The best lines that fit ``budget`` tokens, as one block, or ``None`` when none fits.

    ``count`` estimates a piece of text (the tokenizer); ``measure`` gives the
    block's exact cost where it will be used (default: ``count`` of the block).
    """
    if budget <= 0 or (not entities and not relations):
        return None
    exact = measure if measure is not None else count
    items = [_Item(s, (0, i), line, entity=e) for i, (e, s, line) in enumerate(entities)]
    items += [_Item(s, (1, i), line, relation=r) for i, (r, s, line) in enumerate(relations)]
    items.sort(key=_anchored(items))

    def text_of(items: Iterable[_Item]) -> str:
        picked = sorted(items, key=lambda item: item.order)
        return render(
            [i.line for i in picked if i.entity is not None],
            [i.line for i in picked if i.relation is not None],
        )

    chosen: list[_Item] = []
    used = 0
    checks = 0
    has_entities = has_relations = False
    for item in items:
        # BPE encoders split text after a newline, so pieces ending with one add up
        # (an upper bound for other tokenizers, checked exactly below)
        cost = count("- " + item.line + "\n")
        if item.entity is not None and not has_entities:
            cost += count(ENTITIES_HEADER + "\n")
        if item.relation is not None and not has_relations:
            cost += count(RELATIONSHIPS_HEADER + "\n")
        if used + cost <= budget:
            used += cost
        elif used + cost <= budget + EXACT_SLACK and checks < EXACT_CHECKS:
            # a close call (the last line has no newline; other tokenizers may merge
            # pieces): ask the exact count
            checks += 1
            cost = exact(text_of([*chosen, item]))
            if cost > budget:
                continue
            used = cost
        else:
            continue
        chosen.append(item)
        has_entities = has_entities or item.entity is not None
        has_relations = has_relations or item.relation is not None
    while chosen:  # the per-line counts are close; the whole block is measured exactly
        text = text_of(chosen)
        if exact(text) <= budget:
            picked = sorted(chosen, key=lambda item: item.order)
            return GraphBlock(
                text,
                [i.entity for i in picked if i.entity is not None],
                [i.relation for i in picked if i.relation is not None],
            )
        chosen.pop()
    return None
