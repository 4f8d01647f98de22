"""``shortest_path`` against brute force: every simple path of small random graphs.

The expected path is the minimum over all simple paths of (hops, sum of 1/weight,
the relation and entity ids along it), computed here without the library; the
search meets in the middle, so this checks the join as well as each side.
"""

from __future__ import annotations

import random

import pytest

from memorybank import Memory
from memorybank.graph import Direction, Relation


def _brute(
    relations: list[Relation], source: str, target: str, direction: str, max_hops: int
) -> tuple[int, float, tuple[str, ...]] | None:
    steps: dict[str, list[tuple[Relation, str]]] = {}
    for r in relations:
        if direction in ("out", "both") or r.bidirectional:
            steps.setdefault(r.source_id, []).append((r, r.target_id))
        if direction in ("in", "both") or r.bidirectional:
            steps.setdefault(r.target_id, []).append((r, r.source_id))
    best: tuple[int, float, tuple[str, ...]] | None = None

    def walk(node: str, seen: set[str], key: tuple[str, ...], cost: float, hops: int) -> None:
        nonlocal best
        if node == target:
            found = (hops, round(cost, 6), key)
            if best is None or found < best:
                best = found
            return
        if hops == max_hops:
            return
        for r, other in steps.get(node, []):
            if other not in seen:
                walk(other, seen | {other}, (*key, r.id, other), cost + 1.0 / r.weight, hops + 1)

    walk(source, {source}, (), 0.0, 0)
    return best


@pytest.mark.parametrize("seed", range(16))
def test_shortest_path_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    with Memory("memory://") as memory:
        g = memory.graph
        nodes = [g.add_entity(f"n{i}") for i in range(10)]
        for _ in range(24):
            left, right = rng.sample(nodes, 2)
            g.add_relation(
                left.id,
                "r",
                right.id,
                weight=rng.choice([0.5, 1.0, 2.0, 4.0]) if seed % 2 else 1.0,  # ties: ids decide
                bidirectional=rng.random() < 0.2,
            )
        everything: dict[str, Relation] = {}
        for node in nodes:
            for r in g.relations(node.id):
                everything[r.id] = r
        for _ in range(40):
            a, b = rng.sample(nodes, 2)
            direction: Direction = rng.choice(["out", "in", "both"])
            hops = rng.choice([2, 3, 6])
            expected = _brute(list(everything.values()), a.id, b.id, direction, hops)
            path = g.shortest_path(a.id, b.id, direction=direction, max_depth=hops)
            if expected is None:
                assert path is None
                continue
            assert path is not None
            pairs = zip(path.relations, path.entities[1:], strict=True)
            key = tuple(x for r, e in pairs for x in (r.id, e.id))
            assert (path.hops, round(path.cost, 6), key) == expected
            assert path.entities[0].id == a.id and path.entities[-1].id == b.id


@pytest.mark.parametrize("seed", range(8))
def test_traverse_matches_brute_force(seed: int) -> None:
    """Entities: exactly those within ``max_depth`` hops; relations: every one among them."""
    rng = random.Random(seed)
    with Memory("memory://") as memory:
        g = memory.graph
        nodes = [g.add_entity(f"n{i}") for i in range(12)]
        for _ in range(20):
            left, right = rng.sample(nodes, 2)
            g.add_relation(left.id, "r", right.id, bidirectional=rng.random() < 0.2)
        everything = {r.id: r for node in nodes for r in g.relations(node.id)}
        for _ in range(20):
            start = rng.choice(nodes)
            direction: Direction = rng.choice(["out", "in", "both"])
            depth = rng.choice([0, 1, 2, 3])
            reach = {start.id}
            frontier = {start.id}
            for _level in range(depth):
                step = set()
                for r in everything.values():
                    if r.source_id in frontier and (direction != "in" or r.bidirectional):
                        step.add(r.target_id)
                    if r.target_id in frontier and (direction != "out" or r.bidirectional):
                        step.add(r.source_id)
                frontier = step - reach
                reach |= frontier
            sub = g.traverse([start.id], max_depth=depth, direction=direction)
            assert not sub.truncated
            assert {e.id for e in sub.entities} == reach
            assert {r.id for r in sub.relations} == {
                r.id for r in everything.values() if r.source_id in reach and r.target_id in reach
            }
