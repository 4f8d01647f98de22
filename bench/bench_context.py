"""``build_context`` latency: hybrid strategy, 8k budget, facts and semantic context.

Setup per store: one 10,000-entry thread, 50 facts, 100,000 documents; every
entry and document has a precomputed 384-d vector (``vector_put``), 1% of them
close to the query. The current input's embedding is precomputed too, so the
timing excludes embedding it (the embedder returns the cached vector).

Rows: the full build (hybrid + facts + semantic), then the same without the
semantic block and ``recent`` alone, to show where the time goes.

Run: ``python -m bench.bench_context [--quick]`` (PostgreSQL too when
``postgresql://postgres@127.0.0.1:5432/test`` answers and its store has the
record and vector methods).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._util import Latency, measure, table
from memorybank import ContextOptions, Memory
from memorybank._sync.context import ContextBuilder
from memorybank._sync.stores.base import Record, Store, VectorItem

DIM = 384
QUERY = "what did we decide about the quarterly budget for the berlin office"
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _unit(vector: Sequence[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]


class CachedEmbedder:
    """Returns precomputed vectors: the benchmark excludes embedding the input."""

    model_id = "bench:random-384"
    dimensions = DIM

    def __init__(self, query: list[float]) -> None:
        self.query = query

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.query for _ in texts]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def _near(query: list[float], rng: random.Random, noise: float) -> list[float]:
    return _unit([q + rng.gauss(0, noise) for q in query])


def _far(rng: random.Random) -> list[float]:
    return _unit([rng.gauss(0, 1) for _ in range(DIM)])


def populate(memory: Memory, entries: int, documents: int, rng: random.Random) -> str:
    embedder = memory._core.embedder
    assert isinstance(embedder, CachedEmbedder)
    query = embedder.query
    store = memory.store
    tenant = memory.tenant_id
    thread = memory.threads.create(user_id="alice", agent_id="agent")
    batch = 500
    for start in range(0, entries, batch):
        messages = []
        for i in range(start, min(entries, start + batch)):
            role = "user" if i % 2 == 0 else "assistant"
            text = f"Turn {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
            messages.append({"role": role, "content": text})
        stored = memory.entries.add_many(thread.id, messages, user_id="alice")
        items = [
            VectorItem(
                "entry",
                e.id,
                embedder.model_id,
                _near(query, rng, 0.03) if rng.random() < 0.01 else _far(rng),
                thread_id=thread.id,
            )
            for e in stored
        ]
        store.vector_put(tenant, items)
    for i in range(50):
        memory.facts.add(
            agent_id="agent",
            user_id="alice" if i % 2 else None,
            content=f"Fact {i}: the user prefers option {i} for reports",
            confidence=rng.random(),
        )
    now = datetime.now(UTC)
    for start in range(0, documents, 5000):
        count = min(documents, start + 5000) - start
        records = [
            Record(
                "document",
                f"doc-{start + i:07d}",
                None,
                None,
                f"Document {start + i}: " + " ".join(rng.choice(WORDS) for _ in range(30)),
                {"metadata": {}},
                now,
                now,
            )
            for i in range(count)
        ]
        store.record_put(tenant, records)
        store.vector_put(
            tenant,
            [
                VectorItem(
                    "document",
                    r.id,
                    embedder.model_id,
                    _near(query, rng, 0.03) if rng.random() < 0.01 else _far(rng),
                )
                for r in records
            ],
        )
    return thread.id


WORDS = (
    "budget office berlin quarterly plan review meeting agent user report numbers team "
    "hire travel invoice deadline launch product customer feedback roadmap design"
).split()


def run(label: str, store: Store, entries: int, documents: int, repeat: int) -> list[list[Any]]:
    rng = random.Random(7)
    query = _far(rng)
    memory = Memory(store, embedder=CachedEmbedder(query))
    started = time.perf_counter()
    thread_id = populate(memory, entries, documents, rng)
    setup = time.perf_counter() - started
    rows: list[list[Any]] = []
    variants = [
        ("hybrid + facts + semantic", "hybrid", True),
        ("hybrid + facts", "hybrid", False),
        ("recent + facts", "recent", False),
    ]
    for name, strategy, semantic in variants:
        options = ContextOptions(
            max_tokens=8192,
            strategy=strategy,  # type: ignore[arg-type]
            include_facts=True,
            include_semantic_context=semantic,
        )
        builder = ContextBuilder(options, memory)
        context = builder.build(
            thread_id,
            agent_id="agent",
            user_id="alice",
            system_prompt="You are a helpful assistant.",
            current_input=QUERY,
        )
        latency: Latency = measure(
            lambda builder=builder: builder.build(  # type: ignore[misc]
                thread_id,
                agent_id="agent",
                user_id="alice",
                system_prompt="You are a helpful assistant.",
                current_input=QUERY,
            ),
            repeat=repeat,
        )
        rows.append(
            [
                label,
                name,
                f"{entries:,}",
                f"{documents:,}",
                context.included_entries,
                context.token_count,
                latency.p50,
                latency.p95,
            ]
        )
    print(f"<!-- {label}: setup {setup:.1f} s -->")
    return rows


def _postgres(tmp: Path) -> Store | str:
    try:
        from memorybank.stores import PostgresStore

        store: Store = PostgresStore.from_url(PG_URL)
        store.record_get("bench-probe", "document", "probe")
        store.vector_search("bench-probe", [1.0] * DIM, model_id="probe", kinds=["document"], k=1)
    except NotImplementedError:
        return "PostgreSQL store lacks the record/vector methods"
    except Exception as error:
        return f"PostgreSQL unavailable: {type(error).__name__}: {error}"
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small thread and corpus")
    parser.add_argument(
        "--stores", default="sqlite,postgres", help="comma list of sqlite, postgres"
    )
    args = parser.parse_args()
    stores = {name.strip() for name in args.stores.split(",")}
    entries, documents, repeat = (2_000, 5_000, 30) if args.quick else (10_000, 100_000, 100)
    rows: list[list[Any]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        from memorybank.stores import SQLiteStore

        if "sqlite" in stores:
            sqlite = SQLiteStore(Path(tmp) / "bench.db", synchronous="normal")
            rows += run("SQLite", sqlite, entries, documents, repeat)
            sqlite.close()
        pg = _postgres(Path(tmp)) if "postgres" in stores else "PostgreSQL: not asked for"
        if isinstance(pg, str):
            notes.append(pg)
        else:
            rows += run("PostgreSQL", pg, entries, documents, repeat)
            pg.close()
    print("## build_context (8k budget, 50 facts, vectors precomputed)\n")
    headers = ["store", "build", "entries", "documents", "included", "tokens", "p50 ms", "p95 ms"]
    print(table(headers, rows))
    for note in notes:
        print(f"\n{note}")
    print("\nTarget: p50 <= 20 ms for the full hybrid build, excluding embedding the input.")


if __name__ == "__main__":
    main()
