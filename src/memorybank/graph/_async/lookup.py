"""Finding entities: by name (the name index), paged listing, hybrid search."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memorybank.core._async.embed import embed_texts
from memorybank.errors import InvalidInput, NotFound
from memorybank.graph._async.checks import _label, _types
from memorybank.graph._async.core import _PAGE, GraphCore
from memorybank.graph._async.records import ENTITY, NAME, _entity, normalise
from memorybank.graph.model import Entity
from memorybank.rules import validate as v
from memorybank.rules.ids import compound_id
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.contract.types import Visibility, visible


class LookupVerbs(GraphCore):
    """Entity lookup: ``find_entities`` and ``search_entities``."""

    async def find_entities(
        self,
        name: str | None = None,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        types: Sequence[str] | str | None = None,
        min_confidence: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> list[Entity]:
        """Entities the caller sees, oldest first (creation time, then id).

        ``name``: case-insensitive over names and aliases: an exact (normalised)
        match through the name index, plus entities whose name or an alias
        contains it among the keyword-search candidates. ``cursor``: the id of
        the last entity of the previous page (``NotFound`` if it is gone).
        """
        seen = self._seen(user_id, agent_id)
        wanted = None if name is None else normalise(_label(name, "name"))
        kinds = _types(types)
        floor = None if min_confidence is None else v.check_unit(min_confidence, "min_confidence")
        count = v.check_limit(limit, "limit", allow_none=False)
        after: tuple[datetime, str] | None = None
        if cursor is not None:
            cursor = v.check_id(cursor, "cursor")
            last = (await self._entities([cursor], seen)).get(cursor)
            if last is None:
                raise NotFound("the cursor's entity is gone (or not this caller's to see)")
            after = (last.created_at, last.id)

        def keeps(entity: Entity) -> bool:
            return (
                (kinds is None or entity.type in kinds)
                and (floor is None or entity.confidence >= floor)
                and (after is None or (entity.created_at, entity.id) > after)
            )

        store = self._core.store
        if count == 0:
            return []
        if wanted is not None:
            assert name is not None
            ids = await self._name_index([wanted], seen)
            hits = await store.text_search(
                self._tenant, name, kinds=[ENTITY], k=max(50, count * 4), visible_to=seen
            )
            ids += [h.id for h in hits]
            found = await self._entities(list(dict.fromkeys(ids)), seen)
            matches = [
                e
                for e in found.values()
                if any(wanted in normalise(n) for n in (e.name, *e.aliases)) and keeps(e)
            ]
            matches.sort(key=lambda e: (e.created_at, e.id))
            return matches[:count]
        out: list[Entity] = []
        while len(out) < count:
            page = await store.record_page(
                self._tenant, ENTITY, limit=_PAGE, after=after, visible_to=seen
            )
            for record in page:
                if visible(seen, record.agent_id, record.user_id):
                    entity = _entity(self._tenant, record)
                    if keeps(entity):
                        out.append(entity)
            if len(page) < _PAGE:
                break
            after = (page[-1].created_at, page[-1].id)
        return out[:count]

    async def search_entities(
        self,
        query: str,
        *,
        k: int = 10,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        types: Sequence[str] | str | None = None,
    ) -> list[Entity]:
        """The ``k`` entities best matching ``query``, best first.

        Hybrid: exact name/alias matches first, then keyword (name, aliases,
        observations) and, with an embedder, semantic matches fused by
        reciprocal rank.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-empty string", field="query")
        v.check_text(query, "query", max_chars=v.MAX_LABEL_CHARS * 10)
        count = v.check_limit(k, "k", allow_none=False)
        kinds = _types(types)
        seen = self._seen(user_id, agent_id)
        if count == 0:
            return []
        store = self._core.store
        fetch = count * 3 + 10
        scores: dict[str, float] = {}
        for entity_id in await self._name_index([normalise(query)], seen):
            scores[entity_id] = 10.0
        rankings = [
            await store.text_search(self._tenant, query, kinds=[ENTITY], k=fetch, visible_to=seen)
        ]
        embedder = self._core.embedder
        if embedder is not None:
            vector = (await embed_texts(embedder, [query]))[0]
            rankings.append(
                await store.vector_search(
                    self._tenant,
                    vector,
                    model_id=embedder.model_id,
                    kinds=[ENTITY],
                    k=fetch,
                    visible_to=seen,
                )
            )
        for ranking in rankings:
            for rank, hit in enumerate(ranking, start=1):
                scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (60 + rank)
        found = await self._entities(list(scores), seen)
        ranked = sorted(
            (e for e in found.values() if kinds is None or e.type in kinds),
            key=lambda e: (-scores[e.id], e.id),
        )
        return ranked[:count]

    async def _name_index(self, normalised: Sequence[str], seen: Visibility) -> list[str]:
        """Ids of the entities ``seen`` may see named or aliased by one of these
        normalised names: one indexed read of the name records, in their order."""
        keys = list(dict.fromkeys(compound_id(n) for n in normalised))
        records = await self._core.store.record_list_keys(self._tenant, NAME, keys, visible_to=seen)
        return list(dict.fromkeys(str(r.data["entity_id"]) for r in records))
