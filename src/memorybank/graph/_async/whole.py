"""Whole-graph verbs: ``stats`` and ``clear``."""

from __future__ import annotations

from collections import Counter

from memorybank.graph._async.entities import EntityVerbs
from memorybank.graph._async.records import ENTITY, OUT, SLOT, _relation
from memorybank.graph.model import GraphStats
from memorybank.stores.contract._async.store import UNSET, Unset


class WholeGraphVerbs(EntityVerbs):
    """Counts over, and deletion of, a whole owner's graph."""

    async def stats(
        self,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> GraphStats:
        """Counts of the entities and relations the caller sees (all times, inferred too)."""
        seen = self._seen(user_id, agent_id)
        entities = await self._all_entities(seen)
        ids = {e.id for e in entities}
        relations = [
            r for r in await self._all_relations(seen) if r.source_id in ids and r.target_id in ids
        ]
        now = self._core.now()
        entity_types = Counter(e.type for e in entities)
        relation_types = Counter(r.type for r in relations)
        return GraphStats(
            entities=len(entities),
            relations=len(relations),
            valid_relations=sum(1 for r in relations if r.holds_at(now) and r.expired_at is None),
            entity_types=dict(sorted(entity_types.items())),
            relation_types=dict(sorted(relation_types.items())),
        )

    async def clear(
        self,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> int:
        """Delete the graph owned by exactly this agent and user (``None``: the shared
        one on that axis; left out: the handle's principal, else shared), with every
        relation touching its entities; how many entities and relations went."""
        seen = self._seen(user_id, agent_id)
        agent, user = self._owner(seen)
        store = self._core.store
        gone = 0
        for record in await store.record_list(self._tenant, OUT, agent_id=agent, user_id=user):
            fresh = await store.record_get(self._tenant, OUT, record.id)
            if fresh is not None:
                await self._remove_relation(_relation(self._tenant, fresh))
                gone += 1
        for record in await store.record_list(self._tenant, ENTITY, agent_id=agent, user_id=user):
            before = len(await self._touching([record.id]))
            if await self._remove_entity(record):
                gone += 1 + before
        leftovers = await store.record_list(self._tenant, SLOT, agent_id=agent, user_id=user)
        if leftovers:
            await store.record_delete(self._tenant, SLOT, [r.id for r in leftovers])
        return gone
