"""No graph read leaks: random graphs of shared and private nodes, every read, every viewer.

Each seed builds a graph of entities owned by alice, bob or nobody (shared),
some for an agent, with relations added by whoever may see both ends. Then,
for each viewer (alice, bob, nobody; with and without the agent), every read
and traversal is checked against the rule computed here from the ground truth:
an entity is seen when its owner is the viewer or shared on both axes; a
relation when it and both endpoints are. Runs on the embedded stores (the same
code serves all five: the conformance suite shows they answer alike).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.errors import NotFound
from memorybank.graph import Entity, Relation

USERS = ("alice", "bob", None)
AGENTS = ("bot", None)


def _admits(viewer: str | None, owner: str | None) -> bool:
    return owner is None or owner == viewer


def _sees_entity(user: str | None, agent: str | None, e: Entity) -> bool:
    return _admits(user, e.user_id) and _admits(agent, e.agent_id)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("seed", range(4))
def test_no_read_reaches_what_the_viewer_may_not_see(kind: str, seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    url = "memory://" if kind == "memory" else f"sqlite:///{tmp_path}/g.db"
    with Memory(url) as memory:
        g = memory.graph
        entities: list[Entity] = []
        for i in range(14):
            user, agent = rng.choice(USERS), rng.choice(AGENTS)
            entities.append(g.add_entity(f"node {i}", user_id=user, agent_id=agent))
        relations: list[Relation] = []
        for _ in range(30):
            a, b = rng.sample(entities, 2)
            users = {a.user_id, b.user_id} - {None}
            agents = {a.agent_id, b.agent_id} - {None}
            if len(users) > 1 or len(agents) > 1:
                continue  # no writer sees both
            user = next(iter(users)) if users else rng.choice([None, "alice", "bob"])
            agent = next(iter(agents)) if agents else None
            kind_of = rng.choice(["knows", "near"])
            relations.append(g.add_relation(a.id, kind_of, b.id, user_id=user, agent_id=agent))
        by_id = {e.id: e for e in entities}
        ends = {r.id: (r.source_id, r.target_id) for r in relations}
        for user in USERS:
            for agent in AGENTS:
                seen = {e.id for e in entities if _sees_entity(user, agent, e)}
                seen_rels = {
                    r.id
                    for r in relations
                    if _admits(user, r.user_id)
                    and _admits(agent, r.agent_id)
                    and r.source_id in seen
                    and r.target_id in seen
                }
                h = memory.scoped(user_id=user, agent_id=agent).graph
                assert {e.id for e in h.find_entities(limit=1000)} == seen
                assert h.stats().relations == len(seen_rels)
                for entity in entities:
                    if entity.id not in seen:
                        assert h.get_entity(entity.id) is None
                        with pytest.raises(NotFound):
                            h.neighbors(entity.id)
                        continue
                    rels = {r.id for r in h.relations(entity.id)}
                    assert rels <= seen_rels
                    assert rels == {r for r in seen_rels if entity.id in ends[r]}
                    near = {e.id for e in h.neighbors(entity.id, depth=5)}
                    assert near <= seen
                    sub = h.traverse([entity.id], max_depth=5, max_nodes=1000)
                    assert {e.id for e in sub.entities} <= seen
                    assert {r.id for r in sub.relations} <= seen_rels
                    assert {e.id for e in sub.entities} - {entity.id} == near
                    for other in rng.sample(sorted(seen), min(3, len(seen))):
                        path = h.shortest_path(entity.id, other)
                        if path is not None:
                            assert {e.id for e in path.entities} <= seen
                            assert {r.id for r in path.relations} <= seen_rels
                for relation in relations:
                    got = h.get_relation(relation.id)
                    assert (got is not None) == (relation.id in seen_rels)
                for hit in h.search_entities("node", k=100):
                    assert hit.id in seen and _sees_entity(user, agent, by_id[hit.id])
