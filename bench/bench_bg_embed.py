"""Background embedding: a batch's append latency, inline vs background, and recall after.

B1  ``append s``: one batch of N messages (default 2,000; ``"<speaker>: <text>"``,
    6-60 words) stored on a fresh SQLite file with the local embedder (NumPy
    MiniLM, ``LocalEmbedder(backend="numpy")``, loaded and warmed before), through
    ``Memory.entries.add_many`` (``library``) and through the service's
    ``POST /v1/threads/{id}/entries/batch`` (``service``, in-process ASGI, one
    request): the time until the call returns.
B2  ``all vectors s``: from the start of the append until every vector is stored
    (inline: the same as B1; background: after ``memory.embedding.flush()``).
B3  ``recall@10``: 30 queries, each 6 words drawn from one stored message (its
    target), hybrid search, k = 10, after the vectors exist; and whether the
    inline and background runs returned the same hits in the same order with the
    same scores (``same hits``).

The machine's load average is printed: the timings are of a shared 2-core box.

Run: ``python -m bench bg_embed`` or ``python -m bench.bench_bg_embed [--quick] [-n 2000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench._util import table
from bench.bench_embedders import messages
from memorybank import Hit, Memory
from memorybank.embeddings import LocalEmbedder
from memorybank.server import create_app
from memorybank.server.keys import KeyRing

QUERIES = 30
ADMIN = "bench-admin-key"


def _queries(texts: list[str], seed: int = 1) -> list[tuple[int, str]]:
    rng = random.Random(seed)
    out = []
    for index in rng.sample(range(len(texts)), QUERIES):
        words = texts[index].split(": ", 1)[1].split()
        out.append((index, " ".join(rng.sample(words, min(6, len(words))))))
    return out


def _recall(
    memory: Memory, ids: list[str], queries: list[tuple[int, str]]
) -> tuple[float, list[list[tuple[object, float]]]]:
    found = 0
    seen: list[list[tuple[object, float]]] = []
    for index, query in queries:
        hits: list[Hit] = memory.search(query, k=10)
        found += any(h.id == ids[index] for h in hits)
        seen.append([(ids.index(h.id) if h.id in ids else h.id, round(h.score, 6)) for h in hits])
    return found / len(queries), seen


def library_run(mode: str, texts: list[str], embedder: LocalEmbedder, path: Path) -> dict[str, Any]:
    with Memory(f"sqlite:///{path}", embedder=embedder, embed=mode) as memory:  # type: ignore[arg-type]
        thread = memory.threads.create()
        start = time.perf_counter()
        entries = memory.entries.add_many(
            thread.id, [{"role": "user", "content": t} for t in texts]
        )
        returned = time.perf_counter() - start
        memory.embedding.flush()
        done = time.perf_counter() - start
        ids = [e.id for e in entries]
        recall, seen = _recall(memory, ids, _queries(texts))
    return {"append": returned, "all": done, "recall": recall, "seen": seen}


async def _service(
    mode: str, texts: list[str], embedder: LocalEmbedder, path: Path
) -> dict[str, Any]:
    app = create_app(f"sqlite:///{path}", admin_key=ADMIN, embedder=embedder, mcp=False, embed=mode)  # type: ignore[arg-type]
    async with app.router.lifespan_context(app):
        keys: KeyRing = app.state.keys
        _, secret = await keys.create("bench", "bench")
        headers = {"Authorization": f"Bearer {secret}"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://b", timeout=600
        ) as client:
            thread = (await client.post("/v1/threads", json={}, headers=headers)).json()["id"]
            body = {"messages": [{"role": "user", "content": t} for t in texts]}
            start = time.perf_counter()
            sent = await client.post(
                f"/v1/threads/{thread}/entries/batch", json=body, headers=headers
            )
            returned = time.perf_counter() - start
            assert sent.status_code == 201, sent.text
            await app.state.memory.embedding.flush()
            done = time.perf_counter() - start
    return {"append": returned, "all": done}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200 messages")
    parser.add_argument("-n", type=int, default=2000, help="messages in the batch")
    args = parser.parse_args(argv)
    n = 200 if args.quick else args.n
    texts = messages(n)
    embedder = LocalEmbedder(backend="numpy")
    embedder.embed(["warm up the model"])
    rows, runs = [], {}
    with tempfile.TemporaryDirectory() as directory:
        for mode in ("inline", "background"):
            run = library_run(mode, texts, embedder, Path(directory) / f"lib-{mode}.db")
            runs[mode] = run
            rows.append(["library", mode, run["append"], run["all"], f"{run['recall']:.3f}"])
        for mode in ("inline", "background"):
            run = asyncio.run(_service(mode, texts, embedder, Path(directory) / f"svc-{mode}.db"))
            rows.append(["service", mode, run["append"], run["all"], ""])
    same = runs["inline"]["seen"] == runs["background"]["seen"]
    print(f"B1-B3: {n} messages, LocalEmbedder(backend='numpy'); load average {os.getloadavg()}")
    print(table(["surface", "embed", "append s", "all vectors s", "recall@10"], rows))
    print(f"same hits inline vs background after flush: {same}")


if __name__ == "__main__":
    main()
