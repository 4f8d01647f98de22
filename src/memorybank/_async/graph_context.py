"""The knowledge-graph block of ``build_context``: what the input is about, in the graph.

``build_context(include_graph_context=True, current_input=...)`` asks this
module for a block of at most the graph's share of the budget (15%):

1. the entities the input names: every name and alias of an entity the caller
   may see that occurs in the input as whole words, case-insensitive (looked
   up in one read by the input's word runs), in order of appearance;
2. when it names none, the 3 best matches of
   ``memory.graph.search_entities(input)`` (keyword, plus semantic with an
   embedder): names are exact evidence, and a search beside them mostly adds
   entities that share a common word with the input;
3. their neighbourhood: ``memory.graph.traverse`` from them, up to the
   options' ``max_depth`` hops and twice their ``max_nodes`` and
   ``max_edges``, through entities of ``entity_types`` only, with ``inferred``
   relations only when asked, and the relations that hold now (or at
   ``as_of``) unless ``include_history``;
4. ranked by ``memorybank.graph._context``; the best ``max_nodes`` entities and
   the best ``max_edges`` relations among them are kept and fitted to the
   budget (exact token counts).

Every read names the caller's agent and user, so the block shows only what the
graph's scope rule lets them see (their own and shared records). No input, no
entity matched or an empty graph gives no block.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from memorybank._validate import MAX_COUNT
from memorybank.graph._context import (
    NAME_SCORE,
    SEARCH_FLOOR,
    SEARCH_SCORE,
    GraphBlock,
    Seed,
    fit_block,
    name_keys,
    named_in,
    normalize,
    rank,
)
from memorybank.graph.model import Entity, GraphContextOptions

if TYPE_CHECKING:
    from memorybank._async.graph.context import ContextVerbs
    from memorybank.tokens import Tokenizer

__all__ = ["CANDIDATES", "graph_block"]

#: The neighbourhood read is this many times the shown bounds (then ranked and cut).
CANDIDATES = 2
#: The longest input searched (``search_entities`` takes up to 10,000 characters).
SEARCH_CHARS = 10_000
#: Entities taken from the search when the input names none.
SEARCH_SEEDS = 3


async def graph_block(
    graph: ContextVerbs,
    query: str,
    *,
    agent_id: str | None,
    user_id: str | None,
    max_tokens: int,
    options: GraphContextOptions,
    tokenizer: Tokenizer,
    now: datetime,
    measure: Callable[[str], int] | None = None,
) -> GraphBlock | None:
    """The graph block for ``query`` within ``max_tokens``, or ``None``.

    ``measure`` gives the block's exact cost where it is used (the context
    builder counts it inside the system message); default: the tokenizer's
    count of the block alone.
    """
    if max_tokens <= 0 or not query.strip():
        return None
    seeds = await _seeds(graph, query, agent_id=agent_id, user_id=user_id, options=options)
    if not seeds:
        return None
    # read more than is shown, so the bounds cut by relevance, not by discovery order
    # ``traverse`` from the seeds, which the caller sees (read just now, not again)
    subgraph = await graph._subgraph(
        [seed.entity for seed in seeds],
        hops=options.max_depth,
        nodes=min(options.max_nodes * CANDIDATES, MAX_COUNT),
        edges=min(options.max_edges * CANDIDATES, MAX_COUNT),
        way="both",
        seen=graph._seen(user_id, agent_id),
        flt=graph._filter(
            as_of=options.as_of,
            include_invalid=options.include_history,
            include_inferred=options.include_inferred,
        ),
        entity_types=None if options.entity_types is None else frozenset(options.entity_types),
    )
    entities, relations = rank(
        query,
        seeds,
        subgraph.entities,
        subgraph.relations,
        when=options.as_of if options.as_of is not None else now,
        max_depth=options.max_depth,
    )
    entities = entities[: options.max_nodes]
    kept = {entity.id for entity, _, _ in entities}
    relations = [
        item for item in relations if item[0].source_id in kept and item[0].target_id in kept
    ][: options.max_edges]
    return fit_block(entities, relations, budget=max_tokens, count=tokenizer.count, measure=measure)


async def _seeds(
    graph: ContextVerbs,
    query: str,
    *,
    agent_id: str | None,
    user_id: str | None,
    options: GraphContextOptions,
) -> list[Seed]:
    """The entities ``query`` names (by position, at most ``max_nodes``), or else its
    best search hits."""
    types = list(options.entity_types) if options.entity_types is not None else None
    named: list[tuple[int, int, tuple[str, str, str], Entity]] = []
    for entity in await graph._named(
        name_keys(query), agent_id=agent_id, user_id=user_id, types=types
    ):
        position = named_in(query, [entity.name, *entity.aliases])
        if position is not None:
            key = (normalize(entity.name), entity.type, entity.id)
            named.append((position, -len(entity.name), key, entity))
    named.sort(key=lambda item: item[:3])
    seeds = [Seed(item[3], NAME_SCORE) for item in named][: options.max_nodes]
    if not seeds:  # nothing named: what the input is about, by search
        hits = await graph.search_entities(
            query[:SEARCH_CHARS],
            k=min(SEARCH_SEEDS, options.max_nodes),
            agent_id=agent_id,
            user_id=user_id,
            types=types,
        )
        for index, entity in enumerate(hits):
            share = index / (len(hits) - 1) if len(hits) > 1 else 0.0
            seeds.append(Seed(entity, SEARCH_SCORE - (SEARCH_SCORE - SEARCH_FLOOR) * share))
    return seeds
