"""The graph view draws without overlaps: measured on the SVG the page serves.

For every entity of each test graph (the inspector's seeded graph, the demo's, and a
denser one of 15 entities and 25 relations, and one of 30 and 60), the page centred on
it at depth 3 is parsed: no two relation labels' boxes intersect, no label meets an
entity's box, and no relation's line crosses the box of an entity other than its two
ends. A box is estimated from the text's length and font size (``CHAR_WIDTH`` em a
character) and, for an entity, spans its circle and the name under it.
"""

from __future__ import annotations

import asyncio
import html
import itertools
import random
import re
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from memorybank.cli.app import _serve_demo
from memorybank.memory._async.memory import AsyncMemory
from memorybank.server import create_app
from memorybank.server.keys import KeyRing
from memorybank.server.ui._graph_svg import CHAR_WIDTH, LINE_HEIGHT
from memorybank.stores.memory._async.store import AsyncInMemoryStore
from tests.inspector._fixtures import seed

SVG = "{http://www.w3.org/2000/svg}"
Box = tuple[float, float, float, float]
Point = tuple[float, float]


def _text_box(node: ET.Element) -> Box:
    """The box of a ``<text>``: one line, or one per ``<tspan>`` (a long entity name),
    each ``LINE_HEIGHT`` em below the one before."""
    x, y = float(node.get("x", "0")), float(node.get("y", "0"))
    font = float(node.get("font-size", "0"))
    lines = [t.text or "" for t in node.iter(f"{SVG}tspan")] or [node.text or ""]
    half = max(len(line) for line in lines) * CHAR_WIDTH * font / 2
    below = (len(lines) - 1) * LINE_HEIGHT * font
    assert node.get("text-anchor") == "middle"
    return (x - half, y - 0.8 * font, x + half, y + below + 0.25 * font)


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _crosses(p: Point, q: Point, box: Box) -> bool:
    """Whether segment p-q meets the box: sampled finely (independent of the layout's
    own clipping code), every 0.5 px."""
    if max(p[0], q[0]) < box[0] or min(p[0], q[0]) > box[2]:
        return False
    if max(p[1], q[1]) < box[1] or min(p[1], q[1]) > box[3]:
        return False
    steps = max(2, int(max(abs(q[0] - p[0]), abs(q[1] - p[1])) * 2))
    for i in range(steps + 1):
        x = p[0] + (q[0] - p[0]) * i / steps
        y = p[1] + (q[1] - p[1]) * i / steps
        if box[0] < x < box[2] and box[1] < y < box[3]:
            return True
    return False


@dataclass
class Drawn:
    nodes: dict[Point, Box]  # circle centre -> the box of the circle and its name
    labels: list[tuple[str, Box]]
    lines: list[list[Point]]
    width: float
    height: float


def parse(page: str) -> Drawn:
    found = re.search(r'<svg id="graph".*?</svg>', page, re.S)
    assert found, "no graph drawn"
    svg = ET.fromstring(found[0])
    view = [float(v) for v in (svg.get("viewBox") or "").split()]
    nodes: dict[Point, Box] = {}
    for a in svg.iter(f"{SVG}a"):
        circle, name = a.find(f"{SVG}circle"), a.find(f"{SVG}text")
        assert circle is not None and name is not None
        cx, cy, r = (float(circle.get(k, "0")) for k in ("cx", "cy", "r"))
        text = _text_box(name)
        nodes[(cx, cy)] = (
            min(cx - r, text[0]),
            cy - r,
            max(cx + r, text[2]),
            max(cy + r, text[3]),
        )
    labels, lines = [], []
    for g in svg.iter(f"{SVG}g"):
        if g.get("class") != "edge":
            continue
        line, label = g.find(f"{SVG}polyline"), g.find(f"{SVG}text")
        assert line is not None and label is not None
        points = [
            (float(x), float(y))
            for x, y in (p.split(",") for p in (line.get("points") or "").split())
        ]
        lines.append(points)
        labels.append((label.text or "", _text_box(label)))
    return Drawn(nodes, labels, lines, view[2], view[3])


def problems(drawn: Drawn) -> list[str]:
    found = []
    for (a, box_a), (b, box_b) in itertools.combinations(drawn.labels, 2):
        if _overlap(box_a, box_b):
            found.append(f"labels {a!r} and {b!r} overlap")
    for name, box in drawn.labels:
        for centre, node in drawn.nodes.items():
            if _overlap(box, node):
                found.append(f"label {name!r} covers the entity at {centre}")
    for points in drawn.lines:
        ends = {points[0], points[-1]}
        assert ends <= set(drawn.nodes), "a line that does not start and end at entities"
        for centre, node in drawn.nodes.items():
            if centre in ends:
                continue
            if any(_crosses(p, q, node) for p, q in itertools.pairwise(points)):
                found.append(f"a line {points[0]}->{points[-1]} crosses the entity at {centre}")
    for one, other in itertools.combinations(drawn.nodes.values(), 2):
        if _overlap(one, other):
            found.append("two entities overlap")
    return found


@asynccontextmanager
async def logged_in(app: FastAPI, key: str, user: str = "") -> AsyncIterator[httpx.AsyncClient]:
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://graph.test") as client:
            await client.get("/ui/login")
            form = {"csrf": client.cookies["mb_ui_csrf"], "key": key, "user_id": user}
            assert (await client.post("/ui/login", data=form)).status_code == 303
            yield client


async def every_centre(client: httpx.AsyncClient, expect: tuple[int, int]) -> int:
    """Check the drawing centred on each listed entity; how many were drawn. ``expect``:
    the least (entities, relations) the largest drawing must show."""
    listing = (await client.get("/ui/graph")).text
    ids = [html.unescape(i) for i in re.findall(r'<tr data-entity-id="([^"]+)"', listing)]
    assert ids
    largest = (0, 0)
    for entity_id in ids:
        answer = await client.get("/ui/graph", params={"entity": entity_id, "depth": "3"})
        assert answer.status_code == 200
        drawn = parse(answer.text)
        if entity_id == ids[0]:  # deterministic: the same subgraph draws the same
            again = await client.get("/ui/graph", params={"entity": entity_id, "depth": "3"})
            svg = re.compile(r'<svg id="graph".*?</svg>', re.S)
            assert svg.findall(again.text) == svg.findall(answer.text)
        largest = max(largest, (len(drawn.nodes), len(drawn.lines)))
        assert problems(drawn) == [], entity_id
        assert drawn.width / drawn.height == pytest.approx(1.5, abs=0.01)
    assert largest >= expect, largest
    return len(ids)


async def dense(memory: AsyncMemory, nodes: int, edges: int, seed_: int) -> None:
    """A connected graph of ``nodes`` entities and ``edges`` relations (a few of them
    between the same two, some long names and long relation types), fixed by ``seed_``."""
    rng = random.Random(seed_)
    words = ["Alpha", "Borealis", "Centrifuge", "Delta", "Echo chamber", "Foxtrot"]
    kinds = ["works_at", "knows", "located_in", "part_of", "reports_to", "depends_on"]
    made = []
    for i in range(nodes):
        name = f"{rng.choice(words)} {i}" + (" of the northern division" if i % 5 == 0 else "")
        made.append((await memory.graph.add_entity(name, type="thing")).id)
    pairs = [(made[i], made[rng.randrange(i)]) for i in range(1, nodes)]  # a tree: connected
    while len(pairs) < edges - 2:
        a, b = rng.sample(made, 2)
        if (a, b) not in pairs:
            pairs.append((a, b))
    pairs += [pairs[0], pairs[3]]  # two pairs related twice
    for i, (a, b) in enumerate(pairs):
        kind = kinds[i % len(kinds)] + ("_since_last_spring" if i % 7 == 0 else "")
        await memory.graph.add_relation(a, kind, b)


async def test_the_seeded_and_dense_graphs_draw_without_overlaps() -> None:
    memory = AsyncMemory(AsyncInMemoryStore())
    try:
        data = await seed(memory, paging_threads=0)
        app = create_app(memory=memory)
        async with logged_in(app, data.key) as client:
            assert await every_centre(client, (3, 2)) >= 4
        async with logged_in(app, data.key, user="bob") as client:
            await every_centre(client, (4, 3))
        ring = KeyRing(memory.store)
        # (a centre's depth-3 subgraph of the 30 holds all of them but not every relation)
        for name, size, shown in (("dense", (15, 25), (15, 25)), ("denser", (30, 60), (30, 50))):
            _, key = await ring.create(name)
            await dense(memory.tenant(name), *size, seed_=len(name))
            async with logged_in(app, key) as client:
                assert await every_centre(client, shown) == size[0]
    finally:
        await memory.close()


def test_the_measure_finds_overlaps() -> None:
    node = (0.0, 0.0, 40.0, 40.0)
    drawn = Drawn(
        nodes={(20.0, 20.0): node, (200.0, 20.0): (180.0, 0.0, 220.0, 40.0)},
        labels=[("a", (100.0, 100.0, 140.0, 112.0)), ("b", (130.0, 105.0, 170.0, 117.0))],
        lines=[[(200.0, 20.0), (-50.0, 30.0), (200.0, 20.0)]],
        width=300,
        height=200,
    )
    assert problems(drawn) == [
        "labels 'a' and 'b' overlap",
        "a line (200.0, 20.0)->(200.0, 20.0) crosses the entity at (20.0, 20.0)",
    ]


def test_the_demo_graph_draws_without_overlaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORYBANK_ADMIN_KEY", raising=False)
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    lines = _serve_demo(url, None, reset=False)
    key = "\n".join(lines).split("demo key (tenant 'default'): ")[1].split()[0]

    async def check() -> None:
        async with logged_in(create_app(url), key) as client:
            await every_centre(client, (3, 3))

    asyncio.run(check())
