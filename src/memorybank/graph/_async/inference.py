"""``infer``: materialised ``inferred`` relations from a few rules."""

from __future__ import annotations

from collections.abc import Sequence

from memorybank.errors import InvalidInput
from memorybank.graph._async.checks import _labels
from memorybank.graph._async.records import RULES, _relation_owner, _start
from memorybank.graph._async.relations import RelationVerbs
from memorybank.graph.model import Relation
from memorybank.rules.ids import new_id
from memorybank.stores.contract._async.store import UNSET, Unset


class InferenceVerbs(RelationVerbs):
    """Rule-based inference over the valid relations the caller sees."""

    async def infer(
        self,
        rules: Sequence[str] | None = None,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> list[Relation]:
        """Materialise ``inferred`` relations from the valid relations the caller sees;
        the new ones, oldest first. Rules (``RULES``, default all):

        * ``transitive_part_of`` / ``transitive_located_in``: a -> b -> c gives a -> c;
        * ``colleagues``: two people who ``works_at`` one organisation are
          ``colleague_of`` each other (one bidirectional relation);
        * ``knows_symmetry``: a ``knows`` b gives b ``knows`` a.

        Each carries its supporting relations (``support``) and is deleted when
        one of them is invalidated, closed or deleted. Reads return inferred
        relations only with ``include_inferred=True``.
        """
        seen = self._seen(user_id, agent_id)
        chosen = RULES if rules is None else _labels(rules, "rules")
        for rule in chosen:
            if rule not in RULES:
                raise InvalidInput(
                    f"unknown rule {rule!r}; known: {', '.join(RULES)}", field="rules"
                )
        owner = self._owner(seen)
        now = self._core.now()
        visible_ids = {e.id: e for e in await self._all_entities(seen)}
        everything = [
            r
            for r in await self._all_relations(seen)
            if r.source_id in visible_ids
            and r.target_id in visible_ids
            and r.holds_at(now)
            and r.expired_at is None
        ]
        base = [r for r in everything if r.source != "inferred"]
        existing = {(r.source_id, r.type, r.target_id) for r in everything}
        plans: list[tuple[str, str, str, bool, tuple[Relation, ...]]] = []
        for transitive in ("part_of", "located_in"):
            if f"transitive_{transitive}" not in chosen:
                continue
            step: dict[str, list[Relation]] = {}
            for r in base:
                if r.type == transitive:
                    step.setdefault(r.source_id, []).append(r)
            for origin in sorted(step):
                paths: dict[str, tuple[Relation, ...]] = {}
                queue: list[tuple[str, tuple[Relation, ...]]] = [(origin, ())]
                while queue:
                    node, path = queue.pop(0)
                    for r in step.get(node, ()):
                        if r.target_id == origin or r.target_id in paths:
                            continue
                        paths[r.target_id] = (*path, r)
                        queue.append((r.target_id, (*path, r)))
                for target, path in paths.items():
                    if len(path) > 1:
                        plans.append((origin, transitive, target, False, path))
        if "colleagues" in chosen:
            staff: dict[str, list[Relation]] = {}
            for r in base:
                if r.type == "works_at":
                    staff.setdefault(r.target_id, []).append(r)
            for org in sorted(staff):
                people = sorted(staff[org], key=lambda r: r.source_id)
                for i, a in enumerate(people):
                    for b in people[i + 1 :]:
                        if a.source_id != b.source_id:
                            plans.append((a.source_id, "colleague_of", b.source_id, True, (a, b)))
        if "knows_symmetry" in chosen:
            for r in base:
                if r.type == "knows" and not r.bidirectional and r.source_id != r.target_id:
                    plans.append((r.target_id, "knows", r.source_id, False, (r,)))
        made: list[Relation] = []
        for source, type_, target, both, support in plans:
            if (source, type_, target) in existing or (
                both and (target, type_, source) in existing
            ):
                continue
            existing.add((source, type_, target))
            rel_owner = _relation_owner(owner, visible_ids[source], visible_ids[target])
            for s in support:  # a private support makes the conclusion private too
                if s.user_id is not None:
                    rel_owner = (rel_owner[0], s.user_id)
                if s.agent_id is not None:
                    rel_owner = (s.agent_id, rel_owner[1])
            confidence = 1.0
            for s in support:
                confidence *= s.confidence
            relation = Relation(
                id=new_id(),
                tenant_id=self._tenant,
                source_id=source,
                type=type_,
                target_id=target,
                agent_id=rel_owner[0],
                user_id=rel_owner[1],
                label=None,
                weight=min(s.weight for s in support),
                bidirectional=both,
                properties={},
                confidence=round(confidence, 12),
                source="inferred",
                provenance=(),
                valid_at=max(_start(s) for s in support),
                invalid_at=None,
                created_at=self._core.now(),
                expired_at=None,
                support=tuple(s.id for s in support),
            )
            made.append(await self._write_relation(relation, functional=False))
        return made
