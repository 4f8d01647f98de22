"""A subgraph drawn as SVG, server-side: where each entity and relation goes.

The layout starts radial around the entity the page is centred on (hop ``h`` on
ring ``h``), then runs a fixed number of force-directed steps (edges pull, every
pair of entities pushes, more the larger their boxes) and pushes apart any two
entity boxes (the circle and the name under it) that still overlap. Each relation
is then routed: straight when that line meets no other entity's box, else bent
once, to the first side offset that clears them. Each label goes at the first
spot along its relation, from the middle outwards, that meets no entity box and
no label placed before it. When something cannot be placed, the whole layout is
spread out and routed again. Deterministic (no randomness: the same subgraph
draws the same), no script, no library: the template turns it into ``<circle>``,
``<polyline>`` and ``<text>``.

The boxes are estimates from the font size (``CHAR_WIDTH`` em a character), the
same the tests measure the drawing with.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from dataclasses import dataclass

from memorybank.graph import Relation, Subgraph

__all__ = [
    "CHAR_WIDTH",
    "EDGE_FONT",
    "LINE_HEIGHT",
    "NAME_CHARS",
    "NAME_LINES",
    "NODE_FONT",
    "Drawing",
    "DrawnEdge",
    "DrawnNode",
    "draw",
    "name_lines",
    "text_box",
]

WIDTH = 960  # the smallest view box; a larger layout gets a larger one (scaled to fit)
HEIGHT = 640
CHAR_WIDTH = 0.62  # a character's width, in em, that boxes are estimated with
EDGE_FONT = 11
NODE_FONT = 13
NAME_CHARS = 28  # a name longer than this goes on more lines (broken at spaces if it can)
NAME_LINES = 3  # at most this many lines of a name; a longer one ends with "…"
LINE_HEIGHT = 1.2  # em, from one line of a name to the next
_MARGIN = 24
_EDGE = 110.0  # the force layout's ideal relation length
_STEPS = 160
_PAD = 4.0  # kept between a label or a line and a box

Box = tuple[float, float, float, float]  # left, top, right, bottom


@dataclass(frozen=True, slots=True)
class DrawnNode:
    """An entity at ``(x, y)`` (a circle of radius ``r``, its name centred at
    ``(x, label_y)``), ``hop`` relations away from the centre."""

    id: str
    name: str
    type: str
    x: float
    y: float
    hop: int
    private: bool
    r: int = 14
    label_y: float = 0.0
    lines: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DrawnEdge:
    """A relation from ``(x1, y1)`` to ``(x2, y2)`` along ``points`` (an SVG polyline's
    ``points``: the ends and at most one bend), its label centred at ``(mx, my)``."""

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
    points: str = ""


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


def text_box(x: float, baseline: float, chars: int, font: float) -> Box:
    """The box of ``chars`` characters of ``font`` px centred at ``x`` on ``baseline``."""
    half = chars * CHAR_WIDTH * font / 2
    return (x - half, baseline - 0.8 * font, x + half, baseline + 0.25 * font)


def name_lines(name: str) -> tuple[str, ...]:
    """The lines ``name`` is drawn on under its circle: at most ``NAME_CHARS`` characters
    each, broken at spaces where it can, at most ``NAME_LINES`` of them (the last ending
    with "…" when the name is longer still; the entities table shows it whole)."""
    import textwrap  # on first use (cold start)

    lines = textwrap.wrap(name, NAME_CHARS) or [name[:NAME_CHARS]]
    if len(lines) > NAME_LINES:
        lines = [*lines[: NAME_LINES - 1], lines[NAME_LINES - 1][: NAME_CHARS - 1] + "…"]
    return tuple(lines)


def _radius(hop: int) -> int:
    return 20 if hop == 0 else 14


def _node_box(x: float, y: float, r: int, name: str) -> Box:
    """The circle and the name under it (on one line or more, see ``name_lines``)."""
    lines = name_lines(name)
    below = (len(lines) - 1) * LINE_HEIGHT * NODE_FONT
    chars = max(len(line) for line in lines)
    left, _, right, bottom = text_box(x, y + r + NODE_FONT + below, chars, NODE_FONT)
    return (min(x - r, left), y - r, max(x + r, right), bottom)


def _grow(box: Box, by: float) -> Box:
    return (box[0] - by, box[1] - by, box[2] + by, box[3] + by)


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _crosses(p: tuple[float, float], q: tuple[float, float], box: Box) -> bool:
    """Whether the segment ``p``-``q`` meets ``box`` (Liang-Barsky clipping)."""
    if (
        max(p[0], q[0]) < box[0]
        or min(p[0], q[0]) > box[2]
        or max(p[1], q[1]) < box[1]
        or min(p[1], q[1]) > box[3]
    ):
        return False
    dx, dy = q[0] - p[0], q[1] - p[1]
    low, high = 0.0, 1.0
    for step, room in (
        (-dx, p[0] - box[0]),
        (dx, box[2] - p[0]),
        (-dy, p[1] - box[1]),
        (dy, box[3] - p[1]),
    ):
        if step == 0:
            if room < 0:
                return False
            continue
        t = room / step
        if step < 0:
            low = max(low, t)
        else:
            high = min(high, t)
        if low > high:
            return False
    return True


def _initial(order: list[str], hops: dict[str, int]) -> dict[str, list[float]]:
    """Rings around the origin: hop ``h`` on ring ``h``, each ring turned half a step."""
    rings: dict[int, list[str]] = {}
    for entity_id in order:
        rings.setdefault(hops[entity_id], []).append(entity_id)
    at: dict[str, list[float]] = {}
    for hop, ids in rings.items():
        if hop == 0 and len(ids) == 1:
            at[ids[0]] = [0.0, 0.0]
            continue
        radius = _EDGE * max(hop, 0.5) * (1 + len(ids) / 12)
        turn = (math.pi / len(ids)) * (hop % 2)
        for i, entity_id in enumerate(ids):
            angle = -math.pi / 2 + turn + 2 * math.pi * i / len(ids)
            at[entity_id] = [radius * math.cos(angle) * 1.4, radius * math.sin(angle)]
    return at


def _force(
    order: list[str],
    at: dict[str, list[float]],
    links: list[tuple[str, str]],
    sizes: dict[str, float],
    pinned: str | None,
) -> None:
    """Fruchterman-Reingold steps with a cooling schedule, in place; ``pinned`` stays put."""
    index = {entity_id: i for i, entity_id in enumerate(order)}
    for step in range(_STEPS):
        heat = 40.0 * (1 - step / _STEPS) + 2.0
        move = {entity_id: [0.0, 0.0] for entity_id in order}
        for i, a in enumerate(order):
            ax, ay = at[a]
            for b in order[i + 1 :]:
                dx, dy = ax - at[b][0], ay - at[b][1]
                far = math.hypot(dx, dy)
                if far < 1e-6:  # the same spot: part them along a fixed direction
                    angle = (index[a] * 7 + index[b] * 13) % 360 * math.pi / 180
                    dx, dy, far = math.cos(angle), math.sin(angle), 1.0
                room = _EDGE
                gap = max(far - sizes[a] - sizes[b], 8.0)
                push = room * room / gap / far
                move[a][0] += dx * push
                move[a][1] += dy * push
                move[b][0] -= dx * push
                move[b][1] -= dy * push
        for a, b in links:
            if a == b:
                continue
            dx, dy = at[a][0] - at[b][0], at[a][1] - at[b][1]
            far = math.hypot(dx, dy) or 1.0
            pull = far / _EDGE
            move[a][0] -= dx * pull
            move[a][1] -= dy * pull
            move[b][0] += dx * pull
            move[b][1] += dy * pull
        for entity_id in order:
            if entity_id == pinned:
                continue
            dx, dy = move[entity_id]
            # A weak pull to the origin keeps parts that are not linked together.
            dx -= at[entity_id][0] * 0.02
            dy -= at[entity_id][1] * 0.02
            length = math.hypot(dx, dy)
            if length > heat:
                dx, dy = dx * heat / length, dy * heat / length
            at[entity_id][0] += dx
            at[entity_id][1] += dy


def _widen(at: dict[str, list[float]]) -> None:
    """Stretch a layout taller than the 3:2 view box sideways (up to twice), in place."""
    if len(at) < 3:
        return
    xs, ys = [p[0] for p in at.values()], [p[1] for p in at.values()]
    wide, tall = max(xs) - min(xs), max(ys) - min(ys)
    if tall <= 0 or wide >= 1.5 * tall:
        return
    factor = min(1.5 * tall / max(wide, 1.0), 2.0)
    for p in at.values():
        p[0] *= factor


def _separate(order: list[str], at: dict[str, list[float]], boxes: dict[str, Box]) -> None:
    """Push apart entity boxes that overlap (with room for a line between), in place."""
    for _ in range(200):
        moved = False
        for i, a in enumerate(order):
            for b in order[i + 1 :]:
                ba = _grow(_shift(boxes[a], at[a]), 3 * _PAD)
                bb = _shift(boxes[b], at[b])
                if not _overlap(ba, bb):
                    continue
                wide = min(ba[2], bb[2]) - max(ba[0], bb[0])
                tall = min(ba[3], bb[3]) - max(ba[1], bb[1])
                if wide < tall:
                    sign = 1.0 if at[a][0] >= at[b][0] else -1.0
                    at[a][0] += sign * (wide / 2 + 1)
                    at[b][0] -= sign * (wide / 2 + 1)
                else:
                    sign = 1.0 if at[a][1] >= at[b][1] else -1.0
                    at[a][1] += sign * (tall / 2 + 1)
                    at[b][1] -= sign * (tall / 2 + 1)
                moved = True
        if not moved:
            return


def _shift(box: Box, by: list[float] | tuple[float, float]) -> Box:
    return (box[0] + by[0], box[1] + by[1], box[2] + by[0], box[3] + by[1])


Point = tuple[float, float]


def _route(
    a: str, b: str, at: dict[str, Point], boxes: dict[str, Box], nth: int
) -> list[Point] | None:
    """The relation's line from ``a`` to ``b``: straight, else bent once, to miss every
    other entity's box; ``nth`` > 0 for a second relation of the same pair (bent apart).
    ``None`` if no tried bend clears them."""
    start, end = at[a], at[b]
    others = [_grow(boxes[e], _PAD) for e in at if e not in (a, b)]

    def clear(points: list[Point]) -> bool:
        return not any(_crosses(p, q, box) for p, q in itertools.pairwise(points) for box in others)

    if a == b:  # a relation of an entity to itself: a loop above it
        x, y = start
        r = boxes[a][1] - y
        loop = [start, (x - 26, y + r - 40 - 14 * nth), (x + 26, y + r - 40 - 14 * nth), end]
        return loop if clear(loop) else None
    if nth == 0 and clear([start, end]):
        return [start, end]
    dx, dy = end[0] - start[0], end[1] - start[1]
    length = math.hypot(dx, dy) or 1.0
    nx, ny = -dy / length, dx / length

    def at_(fraction: float, offset: float) -> Point:
        return (
            start[0] + dx * fraction + nx * offset,
            start[1] + dy * fraction + ny * offset,
        )

    first = 1 if nth == 0 else nth
    for k in range(first, 12):
        for side in (1, -1):
            offset = side * 28 * k
            for bent in (
                [start, at_(0.5, offset), end],
                [start, at_(0.2, offset), at_(0.8, offset), end],
                [start, at_(0.3, offset), end],
                [start, at_(0.7, offset), end],
            ):
                if clear(bent):
                    return bent
    return None


def _along(points: list[Point], fraction: float) -> tuple[Point, Point]:
    """The point ``fraction`` of the way along ``points``, and the direction there."""
    segments = list(itertools.pairwise(points))
    lengths = [math.hypot(q[0] - p[0], q[1] - p[1]) for p, q in segments]
    goal = sum(lengths) * fraction
    for i, ((p, q), length) in enumerate(zip(segments, lengths, strict=True)):
        if goal <= length or i == len(segments) - 1:
            t = min(goal / length, 1.0) if length else 0.0
            unit = ((q[0] - p[0]) / (length or 1.0), (q[1] - p[1]) / (length or 1.0))
            return (p[0] + (q[0] - p[0]) * t, p[1] + (q[1] - p[1]) * t), unit
        goal -= length
    return points[-1], (1.0, 0.0)


_FRACTIONS = (0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82)
_SIDES = (0.0, 10.0, -10.0, 20.0, -20.0)


def _label(
    points: list[Point], chars: int, taken: list[Box], boxes: list[Box]
) -> tuple[Point, Box] | None:
    """A label's baseline centre along its line, from the middle outwards, whose box meets
    no entity box and no label already placed; ``None`` if no spot tried is free."""
    for fraction in _FRACTIONS:
        (x, y), (ux, uy) = _along(points, fraction)
        for side in _SIDES:
            lx, ly = x - uy * side, y + ux * side
            baseline = ly + 0.3 * EDGE_FONT  # the box centred on the line
            box = text_box(lx, baseline, chars, EDGE_FONT)
            padded = _grow(box, _PAD / 2)
            if any(_overlap(padded, other) for other in taken) or any(
                _overlap(padded, other) for other in boxes
            ):
                continue
            return (lx, baseline), box
    return None


def draw(subgraph: Subgraph, centre: str) -> Drawing:
    """Positions for every entity and relation of ``subgraph`` around ``centre``."""
    hops = _hops(subgraph, centre)
    order = [e.id for e in subgraph.entities]  # traversal order: stable from one view to the next
    names = {e.id: e.name for e in subgraph.entities}
    shapes = {
        e: _node_box(0.0, 0.0, _radius(hops[e]), names[e]) for e in order
    }  # each entity's box around its own centre
    sizes = {e: max(-b[0], b[2], -b[1], b[3]) for e, b in shapes.items()}
    relations = [r for r in subgraph.relations if r.source_id in hops and r.target_id in hops]
    links = [(r.source_id, r.target_id) for r in relations]
    start = _initial(order, hops)
    _force(order, start, links, sizes, centre if centre in start else None)
    _widen(start)
    _separate(order, start, shapes)

    spread = 1.0
    for attempt in range(8):
        spread = 1.25**attempt
        at = {e: (start[e][0] * spread, start[e][1] * spread) for e in order}
        placed = _place(relations, at, shapes, hops, names)
        if placed[2] or attempt == 7:
            break
    nodes_at, routed, _ = placed
    return _frame(subgraph, hops, nodes_at, list(zip(relations, routed, strict=True)), names)


Routed = tuple[list[Point], Point, Box]


def _place(
    relations: list[Relation],
    at: dict[str, Point],
    shapes: dict[str, Box],
    hops: dict[str, int],
    names: dict[str, str],
) -> tuple[dict[str, Point], list[Routed], bool]:
    """Route every relation and place its label; whether all of it fits without overlap
    (if not, the best found: a straight line, a label at the middle)."""
    boxes = {e: _shift(shapes[e], at[e]) for e in at}
    all_boxes = [_grow(b, _PAD / 2) for b in boxes.values()]
    seen: dict[frozenset[str], int] = {}
    taken: list[Box] = []
    routed: list[Routed] = []
    fits = True
    for r in relations:
        pair = frozenset((r.source_id, r.target_id))
        nth = seen.get(pair, 0)
        seen[pair] = nth + 1
        points = _route(r.source_id, r.target_id, at, boxes, nth)
        if points is None:
            fits = False
            points = [at[r.source_id], at[r.target_id]]
        spot = _label(points, len(r.type), taken, all_boxes)
        if spot is None:
            fits = False
            (x, y), _ = _along(points, 0.5)
            spot = (x, y), text_box(x, y, len(r.type), EDGE_FONT)
        taken.append(spot[1])
        routed.append((points, spot[0], spot[1]))
    return at, routed, fits


def _frame(
    subgraph: Subgraph,
    hops: dict[str, int],
    at: dict[str, Point],
    routed: list[tuple[Relation, Routed]],
    names: dict[str, str],
) -> Drawing:
    """Move the layout into a view box (at least ``WIDTH`` x ``HEIGHT``, 3:2) and round."""
    boxes = [_node_box(x, y, _radius(hops[e]), names[e]) for e, (x, y) in at.items()]
    boxes += [label for _, (_, _, label) in routed]
    boxes += [(x, y, x, y) for _, (points, _, _) in routed for x, y in points]
    left = min((b[0] for b in boxes), default=0.0)
    top = min((b[1] for b in boxes), default=0.0)
    right = max((b[2] for b in boxes), default=0.0)
    bottom = max((b[3] for b in boxes), default=0.0)
    width = max(right - left + 2 * _MARGIN, WIDTH / 2)
    height = max(bottom - top + 2 * _MARGIN, HEIGHT / 2)
    width, height = max(width, height * 1.5), max(height, width / 1.5)
    dx = (width - (right - left)) / 2 - left
    dy = (height - (bottom - top)) / 2 - top

    def x_(v: float) -> float:
        return round(v + dx, 1)

    def y_(v: float) -> float:
        return round(v + dy, 1)

    nodes = []
    for e in subgraph.entities:
        x, y = at[e.id]
        radius = _radius(hops[e.id])
        nodes.append(
            DrawnNode(
                id=e.id,
                name=e.name,
                type=e.type,
                x=x_(x),
                y=y_(y),
                hop=hops[e.id],
                private=e.user_id is not None or e.agent_id is not None,
                r=radius,
                label_y=y_(y + radius + NODE_FONT),
                lines=name_lines(e.name),
            )
        )
    edges = []
    for r, (points, (lx, ly), _) in routed:
        (x1, y1), (x2, y2) = points[0], points[-1]
        edges.append(
            DrawnEdge(
                id=r.id,
                type=r.type,
                x1=x_(x1),
                y1=y_(y1),
                x2=x_(x2),
                y2=y_(y2),
                mx=x_(lx),
                my=y_(ly),
                valid=r.is_valid,
                bidirectional=r.bidirectional,
                points=" ".join(f"{x_(x)},{y_(y)}" for x, y in points),
            )
        )
    return Drawing(nodes=nodes, edges=edges, width=math.ceil(width), height=math.ceil(height))
