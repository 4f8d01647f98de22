"""The local embedder's backends: messages stored per second and one query's embedding.

E1  ``ready``: ``LocalEmbedder(backend=...)`` and its first embed, in a process that
    has imported the backend's libraries already (ONNX: the built model file is
    cached, so this is its load, not its build).
E2  ``messages/s``: a batch of 1,000 messages (``"<speaker>: <text>"``, 6-60 words,
    the LoCoMo turns' spread) stored with one ``entries.add_many`` on ``sqlite://``
    with the backend as the store's embedder: embedding, entries, FTS and vectors,
    durable on return. ``embed/s`` is the embedder alone on the same texts.
E3  ``query ms``: ``embed([question])`` of one short question, p50 / p95.

Interleaved (each round runs every backend once, so each sees the same load), the
best round reported; the load average is printed. ``numpy`` is the reference
vectors; ``cosine`` is each backend's minimum cosine with them over the batch.
``--torch`` adds sentence-transformers (slow to import).

Run: ``python -m bench embedders`` or ``python -m bench.bench_embedders [--quick]
[--rounds 3] [--torch]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import time
from typing import Any

import numpy as np

from bench._util import Latency, table
from memorybank import Memory
from memorybank.embeddings import LocalEmbedder
from memorybank.embeddings.local import Backend

WORDS = (
    "we went to the lake last weekend with my sister and her kids it was sunny and "
    "the water was cold but everyone swam anyway then we had a picnic I made the "
    "sandwiches she brought lemonade my new job starts on monday I am nervous about "
    "the commute painting helps me relax I finished a portrait of my grandmother "
    "yesterday did you ever adopt that puppy from the shelter how is the book club"
).split()
SPEAKERS = ("Caroline", "Melanie", "Jon", "Gina")
QUESTION = "When did Caroline go to the lake?"


def messages(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(SPEAKERS)}: " + " ".join(rng.choices(WORDS, k=rng.randint(6, 60)))
        for _ in range(n)
    ]


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def backends(with_torch: bool) -> list[Backend]:
    names: list[Backend] = ["numpy"]
    if _installed("onnxruntime") and _installed("onnx"):
        names += ["onnx", "onnx-int8"]
    if with_torch and _installed("torch") and _installed("sentence_transformers"):
        names.append("sentence-transformers")
    return names


def store_batch(embedder: LocalEmbedder, texts: list[str]) -> float:
    """Seconds to store ``texts`` with one ``add_many`` (a fresh in-memory store)."""
    with Memory("sqlite://", embedder=embedder) as memory:
        thread = memory.threads.create(title="bench")
        batch = [{"role": "user", "content": text} for text in texts]
        start = time.perf_counter()
        memory.entries.add_many(thread.id, batch)
        return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200 messages, 1 round")
    parser.add_argument("--messages", type=int, default=None, help="batch size (1,000)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (3)")
    parser.add_argument("--queries", type=int, default=30, help="query embeds per round")
    parser.add_argument("--torch", action="store_true", help="add sentence-transformers")
    args = parser.parse_args(argv)
    count = args.messages or (200 if args.quick else 1000)
    rounds = args.rounds or (1 if args.quick else 3)
    texts = messages(count)
    names = backends(args.torch)
    print(
        f"{count} messages of 6-60 words, {rounds} interleaved round(s); "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )

    embedders: dict[str, LocalEmbedder] = {}
    ready: dict[str, float] = {}
    for name in names:
        LocalEmbedder(backend=name).embed(["import and, for ONNX, build the cached model"])
        start = time.perf_counter()
        embedders[name] = LocalEmbedder(backend=name)
        embedders[name].embed([QUESTION])
        ready[name] = time.perf_counter() - start

    vectors: dict[str, Any] = {}
    stored: dict[str, list[float]] = {name: [] for name in names}
    embedded: dict[str, list[float]] = {name: [] for name in names}
    query: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for label, emb in embedders.items():
            stored[label].append(store_batch(emb, texts))
            start = time.perf_counter()
            vectors[label] = np.asarray(emb.embed(texts))
            embedded[label].append(time.perf_counter() - start)
            for _ in range(args.queries):
                start = time.perf_counter()
                emb.embed([QUESTION])
                query[label].append(time.perf_counter() - start)

    cosine = {
        name: float(np.einsum("ij,ij->i", got, vectors["numpy"]).min())
        for name, got in vectors.items()
    }
    base = count / min(stored["numpy"])
    rows: list[list[Any]] = []
    for name in names:
        per_s = count / min(stored[name])
        latency = Latency.of(query[name])
        rows.append(
            [
                name,
                f"{ready[name]:.2f}",
                f"{per_s:,.0f}",
                f"{count / min(embedded[name]):,.0f}",
                f"{per_s / base:.2f}x",
                f"{1000 / per_s:.1f}",
                f"{latency.p50:.2f} / {latency.p95:.2f}",
                f"{cosine[name]:.5f}",
            ]
        )
    print(
        table(
            [
                "backend",
                "ready s",
                f"messages/s ({count:,} stored)",
                "embed/s",
                "vs numpy",
                "ms/message",
                "query ms p50 / p95",
                "cosine vs numpy (min)",
            ],
            rows,
        )
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
