"""``context_block``: the knowledge-graph block of ``build_context``, what the input
is about, in the graph.

It gathers the candidates (the entities the input names, else the best
``search_entities`` matches, and their neighbourhood by ``traverse``), every read for
the caller's agent and user; ``memorybank.graph._context`` ranks and fits them. How
they are chosen: docs/graph.md ("Context").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorybank.errors import InvalidInput
from memorybank.graph._async.checks import _types
from memorybank.graph._async.lookup import LookupVerbs
from memorybank.graph._async.records import ENTITY, NAME, _entity, normalise
from memorybank.graph._async.traversal import TraversalVerbs
from memorybank.graph._context import (
    NAME_SCORE,
    SEARCH_FLOOR,
    SEARCH_SCORE,
    GraphBlock,
    Seed,
    as_options,
    fit_block,
    name_keys,
    named_in,
    normalize,
    rank,
)
from memorybank.graph.model import Entity, GraphContextOptions
from memorybank.rules import validate as v
from memorybank.rules.ids import compound_id
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.contract.types import visible

if TYPE_CHECKING:
    from memorybank.tokens import Tokenizer

#: The neighbourhood read is this many times the shown bounds (then ranked and cut).
CANDIDATES = 2
#: The longest input searched (``search_entities`` takes up to 10,000 characters).
SEARCH_CHARS = 10_000
#: Entities taken from the search when the input names none.
SEARCH_SEEDS = 3


class ContextVerbs(TraversalVerbs, LookupVerbs):
    """``context_block``, and ``_context``: the block with what it shows, the context
    builder's entry (it also needs the block's entities and relations)."""

    async def _named(
        self,
        names: Sequence[str],
        *,
        agent_id: str | None,
        user_id: str | None,
        types: Sequence[str] | None = None,
    ) -> list[Entity]:
        """Entities the caller sees whose normalised name or alias is one of ``names``'
        normalised forms, oldest first: one indexed read of the name records, with the
        entities they name (``record_list_keys_linked``)."""
        if not names:
            return []
        seen = self._seen(user_id, agent_id)
        kinds = _types(types)
        keys = list(dict.fromkeys(compound_id(normalise(n)) for n in names))
        _, found = await self._core.store.record_list_keys_linked(
            self._tenant, {NAME: "entity_id"}, keys, ENTITY, visible_to=seen
        )
        entities = (
            _entity(self._tenant, r) for r in found.values() if visible(seen, r.agent_id, r.user_id)
        )
        return sorted(
            (e for e in entities if kinds is None or e.type in kinds),
            key=lambda e: (e.created_at, e.id),
        )

    async def context_block(
        self,
        query: str,
        *,
        max_tokens: int,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        options: GraphContextOptions | Mapping[str, Any] | None = None,
        **graph_options: Any,
    ) -> str | None:
        """The ``Entities:`` / ``Relationships:`` block about ``query`` in at most
        ``max_tokens`` tokens of the memory's tokenizer, or ``None`` (nothing named or
        found, or nothing fits).

        What ``build_context(include_graph_context=True)`` adds (see
        ``memorybank.graph._async.context``); also the context builder's graph hook.
        Options as ``options=GraphContextOptions(...)`` or as its fields given as
        keywords (``max_nodes=5``), not both.
        """
        if not isinstance(query, str):
            raise InvalidInput("query must be a string", field="query")
        v.check_text(query, "query")
        budget = v.check_limit(max_tokens, "max_tokens", allow_none=False)
        if options is not None and graph_options:
            raise InvalidInput(
                "give graph options either as options= or as keywords, not both",
                field="graph_options",
            )
        checked = as_options(options if options is not None else graph_options)
        agent, user = self._owner(self._seen(user_id, agent_id))
        block = await self._context(
            query, agent_id=agent, user_id=user, max_tokens=budget, options=checked
        )
        return None if block is None else block.text

    async def _context(
        self,
        query: str,
        *,
        agent_id: str | None,
        user_id: str | None,
        max_tokens: int,
        options: GraphContextOptions,
        tokenizer: Tokenizer | None = None,
        now: datetime | None = None,
        measure: Callable[[str], int] | None = None,
    ) -> GraphBlock | None:
        """The graph block for ``query`` within ``max_tokens``, or ``None`` (arguments
        checked by the caller). ``tokenizer`` and ``now`` default to the memory's;
        ``measure`` gives the block's exact cost where it is used (the context builder
        counts it inside the system message); default: the tokenizer's count of the
        block alone."""
        if max_tokens <= 0 or not query.strip():
            return None
        seeds = await self._context_seeds(
            query, agent_id=agent_id, user_id=user_id, options=options
        )
        if not seeds:
            return None
        # read more than is shown, so the bounds cut by relevance, not by discovery
        # order; ``traverse`` from the seeds, which the caller sees (read just now)
        subgraph = await self._subgraph(
            [seed.entity for seed in seeds],
            hops=options.max_depth,
            nodes=min(options.max_nodes * CANDIDATES, v.MAX_COUNT),
            edges=min(options.max_edges * CANDIDATES, v.MAX_COUNT),
            way="both",
            seen=self._seen(user_id, agent_id),
            flt=self._filter(
                as_of=options.as_of,
                include_invalid=options.include_history,
                include_inferred=options.include_inferred,
            ),
            entity_types=None if options.entity_types is None else frozenset(options.entity_types),
        )
        if now is None:
            now = self._core.now()
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
        count = (tokenizer or self._core.tokenizer).count
        return fit_block(entities, relations, budget=max_tokens, count=count, measure=measure)

    async def _context_seeds(
        self,
        query: str,
        *,
        agent_id: str | None,
        user_id: str | None,
        options: GraphContextOptions,
    ) -> list[Seed]:
        """The entities ``query`` names (by position, at most ``max_nodes``), or else
        its best search hits."""
        types = list(options.entity_types) if options.entity_types is not None else None
        named: list[tuple[int, int, tuple[str, str, str], Entity]] = []
        for entity in await self._named(
            name_keys(query), agent_id=agent_id, user_id=user_id, types=types
        ):
            position = named_in(query, [entity.name, *entity.aliases])
            if position is not None:
                key = (normalize(entity.name), entity.type, entity.id)
                named.append((position, -len(entity.name), key, entity))
        named.sort(key=lambda item: item[:3])
        seeds = [Seed(item[3], NAME_SCORE) for item in named][: options.max_nodes]
        if not seeds:  # nothing named: what the input is about, by search
            hits = await self.search_entities(
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
