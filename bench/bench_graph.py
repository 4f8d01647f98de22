"""Knowledge graph: traversal and shortest path against a raw recursive CTE, graph
context, entity upserts; SQLite and PostgreSQL, on a 100k-entity / 500k-relation graph.

Setup per store (a fresh SQLite file at ``synchronous="normal"``, a fresh
PostgreSQL table prefix dropped afterwards): ``--entities N`` entities (default
100,000; types cycle through person, organization, location, concept, event,
object) and ``5 N`` relations between uniformly random pairs (eight
non-functional types, weights 0.5-2), all shared (no agent, no user). The big
graph is written with bulk ``record_put`` batches of the very records
``memory.graph`` writes (its own encoders: entity, identity and name records;
each relation as ``graph_out`` + ``graph_in``), not through ``add_entity`` /
``add_relation`` one at a time (that would take hours here); the API's write
path is measured on its own in the upsert row. Relation slots (the
functional-closing guards) are not bulk-written: an absent slot is what a new
(source, type) has anyway.

Rows (p50/p95 over ``--repeat`` random starts or pairs, after a warm-up):

- ``traverse``: ``memory.graph.traverse([start], max_depth=3, max_nodes=100,
  max_edges=500)`` (both directions); ``raw traverse``: the same bound in two
  statements, a recursive CTE over the records' key index (breadth-first,
  ``UNION``, the first 300 walk rows, their 100 nearest distinct nodes with their
  entity rows), then the stored out-relations among those nodes (at most 500).
- ``shortest path``: ``memory.graph.shortest_path(a, b, max_depth=6)`` where
  ``b`` is the end of a random 3-step walk from ``a`` (distance 1 to 3);
  ``raw shortest path``: a recursive CTE breadth-first from ``a`` (``UNION``
  on (node, depth)), stopped at the first row that reaches ``b``: the hop count
  only, no path, no tie-breaking, no scope or validity checks.
- ``graph context``: ``memory.build_context(thread, include_graph_context=True,
  current_input=<a sentence naming one entity>)`` on a 20-entry thread (skipped
  when this memorybank has no graph context).
- ``upsert``: ``add_entity`` of new names, then of existing ones (a merge with a
  new observation), one call at a time: entities per second.

Run: ``python -m bench graph [--entities N] [--stores sqlite,postgres]``
(``--quick``: 2,000 entities). Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench._util import Latency, measure, table
from memorybank import Memory
from memorybank.errors import MemoryBankError
from memorybank.graph._async import records as g
from memorybank.graph.model import ENTITY_TYPES, Entity, Relation
from memorybank.rules.ids import new_id
from memorybank.stores.contract._sync.store import Record, Store

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
TENANT = "default"
RELATION_TYPES = (
    "knows",
    "part_of",
    "related_to",
    "mentions",
    "owns",
    "member_of",
    "created",
    "visited",
)
BATCH = 5_000
START = datetime(2026, 1, 1, tzinfo=UTC)


# -- the graph -----------------------------------------------------------------------


def _entities(n: int) -> list[Entity]:
    return [
        Entity(
            id=new_id(),
            tenant_id=TENANT,
            name=f"Entity {i:06d}",
            type=ENTITY_TYPES[i % len(ENTITY_TYPES)],
            agent_id=None,
            user_id=None,
            aliases=(),
            observations=(f"observation about entity {i}",),
            properties={"n": i},
            confidence=1.0,
            source="user",
            created_at=START + timedelta(microseconds=i),
            updated_at=START + timedelta(microseconds=i),
        )
        for i in range(n)
    ]


def _relations(entities: Sequence[Entity], n: int, rng: random.Random) -> Iterator[Relation]:
    count = len(entities)
    for i in range(n):
        a, b = rng.randrange(count), rng.randrange(count - 1)
        b += b >= a  # never a self-loop
        yield Relation(
            id=new_id(),
            tenant_id=TENANT,
            source_id=entities[a].id,
            type=RELATION_TYPES[i % len(RELATION_TYPES)],
            target_id=entities[b].id,
            agent_id=None,
            user_id=None,
            label=None,
            weight=round(rng.uniform(0.5, 2.0), 3),
            bidirectional=False,
            properties={},
            confidence=1.0,
            source="user",
            provenance=(),
            valid_at=None,
            invalid_at=None,
            created_at=START + timedelta(seconds=1, microseconds=i),
            expired_at=None,
        )


def _entity_records(entity: Entity) -> list[Record]:
    ident = Record(
        kind=g.IDENT,
        id=g._key("ident", None, None, entity.type, g.normalise(entity.name)),
        agent_id=None,
        user_id=None,
        content="",
        data={"entity_id": entity.id},
        created_at=entity.created_at,
        updated_at=entity.updated_at,
    )
    return [
        g._entity_record(entity, {}),
        ident,
        *g._name_records(entity, g._names(entity)),
    ]


def populate(store: Store, entities: Sequence[Entity], relations: int, seed: int) -> list[float]:
    """Bulk-write the graph; returns the seconds it took, per phase."""
    rng = random.Random(seed)
    timings = []
    start = time.perf_counter()
    batch: list[Record] = []
    for entity in entities:
        batch += _entity_records(entity)
        if len(batch) >= BATCH:
            store.record_put(TENANT, batch)
            batch = []
    if batch:
        store.record_put(TENANT, batch)
    timings.append(time.perf_counter() - start)
    start = time.perf_counter()
    batch = []
    for relation in _relations(entities, relations, rng):
        batch += g._relation_records(relation, relation.created_at)
        if len(batch) >= BATCH:
            store.record_put(TENANT, batch)
            batch = []
    if batch:
        store.record_put(TENANT, batch)
    timings.append(time.perf_counter() - start)
    return timings


# -- raw SQL ---------------------------------------------------------------------------


class Raw:
    """The raw recursive-CTE queries on the store's own tables, through the driver."""

    def traverse(self, start: str) -> tuple[int, int]:
        raise NotImplementedError

    def hops(self, a: str, b: str) -> int | None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def analyze(self) -> None:
        """Refresh the planner's statistics after the bulk load (autovacuum would)."""


_WALK_SQLITE = """
WITH RECURSIVE walk(node, depth) AS (
  SELECT ?, 0
  UNION
  SELECT json_extract(r.data, CASE r.kind WHEN 'graph_out' THEN '$.target_id'
                                          ELSE '$.source_id' END), w.depth + 1
  FROM walk w JOIN {p}records r
    ON r.tenant_id = ? AND r.kind IN ('graph_out', 'graph_in') AND r.key = w.node
  WHERE w.depth < {depth}{stop}
)"""


class RawSQLite(Raw):
    def __init__(self, path: Path, prefix: str = "memorybank_") -> None:
        import sqlite3

        self.conn = sqlite3.connect(path)
        self.p = prefix

    def traverse(self, start: str) -> tuple[int, int]:
        walk = _WALK_SQLITE.format(p=self.p, depth=3, stop="")
        nodes = self.conn.execute(
            walk
            + f""",
            nodes AS (SELECT node, min(depth) AS d FROM (SELECT * FROM walk LIMIT 300)
                      GROUP BY node ORDER BY d, node LIMIT 100)
            SELECT e.id, e.data FROM nodes JOIN {self.p}records e
              ON e.tenant_id = ? AND e.kind = 'graph_entity' AND e.id = nodes.node""",
            (start, TENANT, TENANT),
        ).fetchall()
        ids = [row[0] for row in nodes]
        marks = ", ".join("?" * len(ids))
        edges = self.conn.execute(
            f"SELECT id, data FROM {self.p}records WHERE tenant_id = ? AND kind = 'graph_out'"
            f" AND key IN ({marks}) AND json_extract(data, '$.target_id') IN ({marks}) LIMIT 500",
            (TENANT, *ids, *ids),
        ).fetchall()
        return len(nodes), len(edges)

    def hops(self, a: str, b: str) -> int | None:
        walk = _WALK_SQLITE.format(p=self.p, depth=6, stop=" AND w.node <> ?")
        row = self.conn.execute(
            walk + " SELECT depth FROM walk WHERE node = ? LIMIT 1", (a, TENANT, b, b)
        ).fetchone()
        return None if row is None else int(row[0])

    def close(self) -> None:
        self.conn.close()


_WALK_PG = """
WITH RECURSIVE walk(node, depth) AS (
  SELECT %(start)s::text, 0
  UNION
  SELECT CASE r.kind WHEN 'graph_out' THEN r.data->>'target_id'
                     ELSE r.data->>'source_id' END, w.depth + 1
  FROM walk w JOIN {p}records r
    ON r.tenant_id = %(tenant)s AND r.kind IN ('graph_out', 'graph_in')
    AND r.key = w.node AND r.key IS NOT NULL
  WHERE w.depth < {depth}{stop}
)"""


class RawPostgres(Raw):
    def __init__(self, prefix: str) -> None:
        import psycopg

        self.conn = psycopg.connect(PG_URL, autocommit=True)
        self.p = prefix

    def traverse(self, start: str) -> tuple[int, int]:
        walk = _WALK_PG.format(p=self.p, depth=3, stop="")
        args = {"start": start, "tenant": TENANT}
        nodes = self.conn.execute(
            walk
            + f""",
            nodes AS (SELECT node, min(depth) AS d FROM (SELECT * FROM walk LIMIT 300) s
                      GROUP BY node ORDER BY d, node LIMIT 100)
            SELECT e.id, e.data FROM nodes JOIN {self.p}records e
              ON e.tenant_id = %(tenant)s AND e.kind = 'graph_entity' AND e.id = nodes.node""",
            args,
        ).fetchall()
        ids = [row[0] for row in nodes]
        edges = self.conn.execute(
            f"SELECT id, data FROM {self.p}records WHERE tenant_id = %s AND kind = 'graph_out'"
            " AND key = ANY(%s::text[]) AND data->>'target_id' = ANY(%s::text[]) LIMIT 500",
            (TENANT, ids, ids),
        ).fetchall()
        return len(nodes), len(edges)

    def hops(self, a: str, b: str) -> int | None:
        walk = _WALK_PG.format(p=self.p, depth=6, stop=" AND w.node <> %(end)s")
        row = self.conn.execute(
            walk + " SELECT depth FROM walk WHERE node = %(end)s LIMIT 1",
            {"start": a, "tenant": TENANT, "end": b},
        ).fetchone()
        return None if row is None else int(row[0])

    def close(self) -> None:
        self.conn.close()

    def analyze(self) -> None:
        self.conn.execute(f"ANALYZE {self.p}records")


# -- the run ---------------------------------------------------------------------------


def _walk_pairs(store: Store, starts: Sequence[str], rng: random.Random) -> list[tuple[str, str]]:
    """``(a, b)`` with ``b`` the end of a random 3-step walk (either direction) from ``a``."""
    pairs = []
    for a in starts:
        node = a
        for _ in range(3):
            records = store.record_list_keys(TENANT, g.OUT, [node]) + store.record_list_keys(
                TENANT, g.IN, [node]
            )
            if not records:
                break
            r = rng.choice(records)
            node = r.data["target_id"] if r.kind == g.OUT else r.data["source_id"]
        if node != a:
            pairs.append((a, node))
    return pairs


def _cycle(items: Sequence[Any], fn: Callable[[Any], object]) -> Callable[[], object]:
    """A zero-argument call that applies ``fn`` to the next item each time."""
    state = {"i": 0}

    def call() -> object:
        item = items[state["i"] % len(items)]
        state["i"] += 1
        return fn(item)

    return call


def run(
    label: str, store: Store, raw: Raw, n: int, repeat: int, seed: int
) -> tuple[list[list[Any]], list[str]]:
    rng = random.Random(seed)
    entities = _entities(n)
    load = populate(store, entities, 5 * n, seed)
    raw.analyze()
    notes = [
        f"{label}: bulk load {n:,} entities in {load[0]:.1f} s"
        f" ({3 * n / load[0]:,.0f} records/s), {5 * n:,} relations in {load[1]:.1f} s"
        f" ({10 * n / load[1]:,.0f} records/s)"
    ]
    memory = Memory(store)
    graph = memory.graph
    starts = [entities[rng.randrange(n)].id for _ in range(repeat + 5)]
    rows: list[list[Any]] = []

    sizes: list[tuple[int, int]] = []

    def api_traverse(start: str) -> object:
        sub = graph.traverse([start], max_depth=3, max_nodes=100, max_edges=500)
        sizes.append((len(sub.entities), len(sub.relations)))
        return sub

    raw_sizes: list[tuple[int, int]] = []

    def raw_traverse(start: str) -> object:
        raw_sizes.append(raw.traverse(start))
        return None

    api = measure(_cycle(starts, api_traverse), repeat)
    base = measure(_cycle(starts, raw_traverse), repeat)
    avg = (sum(s[0] for s in sizes) / len(sizes), sum(s[1] for s in sizes) / len(sizes))
    raw_avg = (
        sum(s[0] for s in raw_sizes) / len(raw_sizes),
        sum(s[1] for s in raw_sizes) / len(raw_sizes),
    )
    rows.append(_row(label, "traverse depth 3", api, base, f"{avg[0]:.0f} / {avg[1]:.0f}"))
    rows.append(
        _row(label, "raw traverse (CTE)", base, None, f"{raw_avg[0]:.0f} / {raw_avg[1]:.0f}")
    )

    pairs = _walk_pairs(store, starts, rng)
    hops: list[int] = []

    def api_path(pair: tuple[str, str]) -> object:
        path = graph.shortest_path(pair[0], pair[1], max_depth=6)
        hops.append(-1 if path is None else path.hops)
        return path

    raw_hops: list[int] = []

    def raw_path(pair: tuple[str, str]) -> object:
        found = raw.hops(*pair)
        raw_hops.append(-1 if found is None else found)
        return found

    api = measure(_cycle(pairs, api_path), repeat)
    base = measure(_cycle(pairs, raw_path), repeat)
    if hops != raw_hops:
        notes.append(f"{label}: shortest path hop counts differ from the raw CTE's!")
    rows.append(_row(label, "shortest path", api, base, f"{sum(hops) / len(hops):.2f} hops"))
    rows.append(_row(label, "raw shortest path (CTE)", base, None, ""))

    rows += _context(label, memory, entities, rng, repeat, notes)
    rows += _upserts(label, memory, n, rng)
    return rows, notes


def _row(label: str, what: str, got: Latency, raw: Latency | None, size: str) -> list[Any]:
    ratio = "" if raw is None else f"{got.p50 / raw.p50:.2f}x"
    return [label, what, got.p50, got.p95, ratio, size]


def _context(
    label: str,
    memory: Memory,
    entities: Sequence[Entity],
    rng: random.Random,
    repeat: int,
    notes: list[str],
) -> list[list[Any]]:
    thread = memory.threads.create().id
    for i in range(20):
        memory.remember(thread, "user" if i % 2 == 0 else "assistant", f"message {i} of the chat")
    inputs = [
        f"what do we know about {entities[rng.randrange(len(entities))].name} lately?"
        for _ in range(repeat + 5)
    ]

    def build(text: str) -> object:
        return memory.build_context(
            thread,
            max_tokens=8_000,
            agent_id="bench",
            include_graph_context=True,
            current_input=text,
        )

    try:
        first: Any = build(inputs[0])
    except (TypeError, MemoryBankError) as error:  # no graph context in this memorybank
        notes.append(f"{label}: graph context not measured ({type(error).__name__}: {error})")
        return []
    failed = [e for e in getattr(first, "errors", ()) if getattr(e, "source", "") == "graph"]
    if failed or not getattr(first, "graph_entities", None):
        why = repr(failed[0].error) if failed else "no graph block was built"
        notes.append(f"{label}: graph context not measured ({why})")
        return []
    got = measure(_cycle(inputs, build), repeat)
    return [_row(label, "graph context build", got, None, "20 entries")]


def _upserts(label: str, memory: Memory, n: int, rng: random.Random) -> list[list[Any]]:
    count = max(200, min(2_000, n // 50))
    tag = uuid.uuid4().hex[:6]
    start = time.perf_counter()
    for i in range(count):
        memory.graph.add_entity(f"New {tag} {i}", type="person", observations=[f"seen {i}"])
    fresh = count / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(count):
        j = rng.randrange(n)
        memory.graph.add_entity(
            f"entity {j:06d}",  # the same normalised name: a merge
            type=ENTITY_TYPES[j % len(ENTITY_TYPES)],
            observations=[f"more about {j} ({i})"],
        )
    merged = count / (time.perf_counter() - start)
    return [
        [label, "add_entity, new (entities/s)", fresh, "", "", f"{count:,} calls"],
        [label, "add_entity, merge (entities/s)", merged, "", "", f"{count:,} calls"],
    ]


def _drop_postgres(prefix: str) -> None:
    import psycopg

    from memorybank.stores.postgres._async import TABLES

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for name in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {prefix}{name} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2,000 entities")
    parser.add_argument("--entities", type=int, default=None, help="entities (relations: 5x)")
    parser.add_argument("--repeat", type=int, default=None, help="samples per row")
    parser.add_argument("--stores", default="sqlite,postgres", help="comma list")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    n = args.entities or (2_000 if args.quick else 100_000)
    repeat = args.repeat or (30 if args.quick else 200)
    stores = {s.strip() for s in args.stores.split(",")}
    rows: list[list[Any]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        if "sqlite" in stores:
            from memorybank.stores import SQLiteStore

            path = Path(tmp) / "graph.db"
            sqlite = SQLiteStore(path, synchronous="normal")
            raw_sqlite = RawSQLite(path)
            try:
                got, said = run("SQLite", sqlite, raw_sqlite, n, repeat, args.seed)
                rows += got
                notes += said
            finally:
                raw_sqlite.close()
                sqlite.close()
        if "postgres" in stores:
            prefix = f"bg{uuid.uuid4().hex[:8]}_"
            try:
                from memorybank.stores import PostgresStore

                pg = PostgresStore.from_url(PG_URL, prefix=prefix)
                pg.record_get(TENANT, "probe", "probe")
            except Exception as error:
                notes.append(f"PostgreSQL unavailable: {type(error).__name__}: {error}")
            else:
                raw_pg = RawPostgres(prefix)
                try:
                    got, said = run("PostgreSQL", pg, raw_pg, n, repeat, args.seed)
                    rows += got
                    notes += said
                finally:
                    raw_pg.close()
                    pg.close()
                    _drop_postgres(prefix)
    print(f"## knowledge graph ({n:,} entities, {5 * n:,} relations)\n")
    print(table(["store", "operation", "p50 ms", "p95 ms", "vs raw p50", "size"], rows))
    for note in notes:
        print(f"\n{note}")
    print(
        "\nTargets (issue 9): traversal and shortest path <= 2x the raw CTE and p50 <= 20 ms;"
        " graph context p50 <= 20 ms. Upsert rows are entities per second (p50 column)."
    )


if __name__ == "__main__":
    main()
