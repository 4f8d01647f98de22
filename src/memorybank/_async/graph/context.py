"""``context_block``: the graph's part of a prompt (see ``memorybank._async.graph_context``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memorybank import _validate as v
from memorybank._async.graph.checks import _types
from memorybank._async.graph.lookup import LookupVerbs
from memorybank._async.graph.records import ENTITY, NAME, _entity, normalise
from memorybank._async.graph.traversal import TraversalVerbs
from memorybank._async.stores.base import UNSET, Unset
from memorybank._ids import compound_id
from memorybank.errors import InvalidInput
from memorybank.graph.model import Entity, GraphContextOptions
from memorybank.stores._types import visible


class ContextVerbs(TraversalVerbs, LookupVerbs):
    """The reads ``graph_block`` makes, and the verb that runs it."""

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
        ``memorybank._async.graph_context``); also the context builder's graph hook.
        Options as ``options=GraphContextOptions(...)`` or as its fields given as
        keywords (``max_nodes=5``), not both.
        """
        from memorybank._async.graph_context import graph_block
        from memorybank.graph._context import as_options

        if not isinstance(query, str):
            raise InvalidInput("query must be a string", field="query")
        v.check_text(query, "query")
        budget = v.check_limit(max_tokens, "max_tokens", allow_none=False) or 0
        if options is not None and graph_options:
            raise InvalidInput(
                "give graph options either as options= or as keywords, not both",
                field="graph_options",
            )
        checked = as_options(options if options is not None else graph_options)
        agent, user = self._owner(self._seen(user_id, agent_id))
        block = await graph_block(
            self,
            query,
            agent_id=agent,
            user_id=user,
            max_tokens=budget,
            options=checked,
            tokenizer=self._core.tokenizer,
            now=self._core.now(),
        )
        return None if block is None else block.text
