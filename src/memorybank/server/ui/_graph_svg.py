"""A subgraph drawn as SVG, server-side: where each entity and relation goes.

Radial layout around the entity the page is centred on: hop ``h`` from it
sits on ring ``h``, spread evenly (each ring turned by half a step from the
last, so edges between neighbouring rings do not overlap). Deterministic, no
script, no library: the template turns the positions into ``<circle>``,
``<line>`` and ``<text>``.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from memorybank.graph import Subgraph

__all__ = ["Drawing", "DrawnEdge", "DrawnNode", "draw"]

WIDTH = 960
HEIGHT = 640
_MARGIN = 70


@dataclass(frozen=True, slots=True)
class DrawnNode:
    """An entity at ``(x, y)``, ``hop`` relations away from the centre."""

    id: str
    name: str
    type: str
    x: float
    y: float
    hop: int
    private: bool


@dataclass(frozen=True, slots=True)
class DrawnEdge:
    """A relation from ``(x1, y1)`` to ``(x2, y2)``, labelled at its middle."""

    id: str
    type: str
    x1: float
    y1: float
    x2: float
    y2: float
    mx: float
    my: float
    valid: bool
    bidirectional: bool


@dataclass(frozen=True, slots=True)
class Drawing:
    """Everything the template draws, in a ``width`` x ``height`` view box."""

    nodes: list[DrawnNode]
    edges: list[DrawnEdge]
    width: int = WIDTH
    height: int = HEIGHT


def _hops(subgraph: Subgraph, centre: str) -> dict[str, int]:
    """Hops from ``centre`` over the subgraph's relations (either way); the unreached last."""
    links: dict[str, list[str]] = {}
    for r in subgraph.relations:
        links.setdefault(r.source_id, []).append(r.target_id)
        links.setdefault(r.target_id, []).append(r.source_id)
    hops = {centre: 0}
    queue = deque([centre])
    while queue:
        here = queue.popleft()
        for there in links.get(here, ()):
            if there not in hops:
                hops[there] = hops[here] + 1
                queue.append(there)
    far = max(hops.values(), default=0) + 1
    return {e.id: hops.get(e.id, far) for e in subgraph.entities}


def draw(subgraph: Subgraph, centre: str) -> Drawing:
    """Positions for every entity and relation of ``subgraph`` around ``centre``."""
    hops = _hops(subgraph, centre)
    rings: dict[int, list[str]] = {}
    for entity in subgraph.entities:  # traversal order: stable from one view to the next
        rings.setdefault(hops[entity.id], []).append(entity.id)
    outer = max(rings, default=0)
    cx, cy = WIDTH / 2, HEIGHT / 2
    step = (min(WIDTH, HEIGHT) / 2 - _MARGIN) / max(outer, 1)
    at: dict[str, tuple[float, float]] = {}
    for hop, ids in rings.items():
        if hop == 0 and len(ids) == 1:
            at[ids[0]] = (cx, cy)
            continue
        radius = step * max(hop, 0.5)
        turn = (math.pi / len(ids)) * (hop % 2)
        for i, entity_id in enumerate(ids):
            angle = -math.pi / 2 + turn + 2 * math.pi * i / len(ids)
            # A wider ellipse than circle: the view box is wider than it is tall.
            at[entity_id] = (
                cx + radius * math.cos(angle) * WIDTH / HEIGHT,
                cy + radius * math.sin(angle),
            )
    nodes = [
        DrawnNode(
            id=e.id,
            name=e.name,
            type=e.type,
            x=round(at[e.id][0], 1),
            y=round(at[e.id][1], 1),
            hop=hops[e.id],
            private=e.user_id is not None or e.agent_id is not None,
        )
        for e in subgraph.entities
    ]
    edges = []
    for r in subgraph.relations:
        if r.source_id not in at or r.target_id not in at:
            continue
        (x1, y1), (x2, y2) = at[r.source_id], at[r.target_id]
        edges.append(
            DrawnEdge(
                id=r.id,
                type=r.type,
                x1=round(x1, 1),
                y1=round(y1, 1),
                x2=round(x2, 1),
                y2=round(y2, 1),
                mx=round((x1 + x2) / 2, 1),
                my=round((y1 + y2) / 2, 1),
                valid=r.is_valid,
                bidirectional=r.bidirectional,
            )
        )
    return Drawing(nodes=nodes, edges=edges)
