"""LoCoMo research harness for memorybank.recall (no LLM).

Two uses:

1. As a retriever for the shared benchmark::

       python3 ../shared/bench/locomo_retrieval.py \
           --retriever bench/locomo_research.py:retrieve --budgets 1024

   Turns are ingested the way the memorybank benchmark ingests them (one entry per
   turn, name = speaker, content = "<speaker>: <text> [image: <caption>]",
   created_at = the session's date) and ranked by ``HybridRanker`` with the
   library defaults.

2. Leave-one-conversation-out (LOCO) tuning/evaluation::

       .venv/bin/python bench/locomo_research.py loco

   For each conversation, weights are tuned (coordinate ascent) on the other
   six and the held-out one is scored with them; per-category R@5/10/20 and
   recall within 1,024 tokens are reported, plus per-query cost.
   ``defaults`` scores the library defaults on all conversations (no tuning).

The data is read from ``../shared/data`` (never copied); MiniLM embeddings of
all turns and questions are cached in /tmp/locomo_emb.npz.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from memorybank.recall import (  # noqa: E402
    Candidate,
    HybridRanker,
    HybridWeights,
    SearchOptions,
    Signals,
)

# ../shared next to the checkout (a worktree may sit one level deeper)
SHARED = next(
    (p / "shared" for p in ROOT.parents if (p / "shared" / "bench").is_dir()),
    ROOT.parent / "shared",
)
DATA = SHARED / "data" / "locomo" / "locomo_dev.json"
BENCH = SHARED / "bench" / "locomo_retrieval.py"
EMB_CACHE = Path("/tmp/locomo_emb.npz")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BUDGET = 1024

FloatArray = NDArray[np.float64]


# ---------------------------------------------------------------------- helpers
def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("locomo_retrieval", BENCH)
    if spec is None or spec.loader is None:
        raise SystemExit(f"benchmark not found: {BENCH}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_session_date(text: str) -> datetime | None:
    """ "1:56 pm on 8 May, 2023" -> datetime(2023, 5, 8, 13, 56) (naive, local)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt)  # noqa: DTZ007 - wall-clock date
        except ValueError:
            continue
    return None


class Embedder:
    """MiniLM sentence embeddings (the packaged model, NumPy backend when torch is
    absent) with the persistent cache of ``locomo_memorybank --emb-cache``
    (``/tmp/locomo_emb.npz``, keyed by the SHA-256 of the text)."""

    def __init__(self, cache: Path = EMB_CACHE) -> None:
        from memorybank.embeddings import LocalEmbedder

        spec = importlib.util.spec_from_file_location(
            "locomo_memorybank", HERE / "locomo_memorybank.py"
        )
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        self._cached = mod.CachedEmbedder(LocalEmbedder(), cache)

    def embed(self, texts: Sequence[str]) -> list[NDArray[np.float32]]:
        return [np.asarray(v, dtype=np.float32) for v in self._cached.embed(list(texts))]

    def save(self) -> None:
        self._cached.save()


_EMBEDDER: Embedder | None = None


def embedder() -> Embedder:
    global _EMBEDDER
    if _EMBEDDER is None:
        _EMBEDDER = Embedder()
    return _EMBEDDER


def to_candidates(
    turns: Sequence[dict[str, Any]], thread_id: str = "conv", with_vectors: bool = True
) -> list[Candidate]:
    """The benchmark's ingestion rule, as memorybank entries would look."""
    texts = [str(t["index_text"]) for t in turns]
    vecs: Sequence[NDArray[np.float32] | None] = (
        embedder().embed(texts) if with_vectors else [None] * len(turns)
    )
    return [
        Candidate(
            id=str(t["id"]),
            thread_id=thread_id,
            position=i,
            text=texts[i],
            name=str(t["speaker"]),
            created_at=parse_session_date(str(t["date_time"])),
            vector=vecs[i],
        )
        for i, t in enumerate(turns)
    ]


# ---------------------------------------------------------------------- retriever
_RANKERS: dict[int, tuple[object, HybridRanker]] = {}
OPTIONS = SearchOptions()


def retrieve(conversation_turns: list[dict[str, Any]], question: str, k: int) -> list[str]:
    """Benchmark entry point: rank the conversation's turns for ``question``."""
    hit = _RANKERS.get(id(conversation_turns))
    if hit is None or hit[0] is not conversation_turns:
        ranker = HybridRanker(to_candidates(conversation_turns), OPTIONS)
        embedder().save()
        _RANKERS.clear()
        _RANKERS[id(conversation_turns)] = (conversation_turns, ranker)
    else:
        ranker = hit[1]
    qvec = embedder().embed([question])[0]
    return [r.id for r in ranker.rank(question, query_vector=qvec, limit=k)]


# ---------------------------------------------------------------------- evaluation
class Query(NamedTuple):
    conv: int
    category: int
    gold: NDArray[np.int64]
    signals: Signals
    text: str


class Conv(NamedTuple):
    sample_id: str
    ranker: HybridRanker
    tokens: NDArray[np.int64]
    queries: list[Query]


def build(options: SearchOptions, with_vectors: bool = True) -> list[Conv]:
    bench = _load_bench()
    convs = bench.load_locomo(str(DATA))
    emb = embedder()
    out: list[Conv] = []
    for ci, conv in enumerate(convs):
        turns = conv["turns"]
        ranker = HybridRanker(to_candidates(turns, with_vectors=with_vectors), options)
        valid = {t["id"] for t in turns}
        index = {t["id"]: i for i, t in enumerate(turns)}
        tokens = np.array([bench.approx_tokens(t["index_text"]) for t in turns], dtype=np.int64)
        queries: list[Query] = []
        for qa in conv["qa"]:
            cat = int(qa["category"])
            if cat not in CATEGORIES:
                continue
            gold, _ = bench.normalise_evidence(qa.get("evidence", []), valid)
            if not gold:
                continue
            q = str(qa["question"])
            qvec = emb.embed([q])[0] if with_vectors else None
            sig = ranker.signals(q, query_vector=qvec)
            queries.append(Query(ci, cat, np.array([index[g] for g in gold]), sig, q))
        out.append(Conv(conv["sample_id"], ranker, tokens, queries))
    emb.save()
    return out


METRICS = ("r5", "r10", "r20", "rtok")


def score_query(conv: Conv, q: Query, weights: HybridWeights) -> tuple[float, ...]:
    s = conv.ranker.combine(q.signals, weights)
    top_n = min(len(s), 120)
    part = np.argpartition(-s, top_n - 1)[:top_n]
    order = part[np.lexsort((part, -s[part]))]
    gold = q.gold
    pos = np.flatnonzero(np.isin(order, gold))
    ng = len(gold)
    r5 = float((pos < 5).sum()) / ng
    r10 = float((pos < 10).sum()) / ng
    r20 = float((pos < 20).sum()) / ng
    cum = np.cumsum(conv.tokens[order])
    fit = int(np.searchsorted(cum, BUDGET, side="right"))
    rtok = float((pos < fit).sum()) / ng
    return r5, r10, r20, rtok


def evaluate(
    convs: Sequence[Conv], weights: HybridWeights, only: Sequence[int] | None = None
) -> dict[int, NDArray[np.float64]]:
    """Per conversation index: array (n_queries, 4 metrics)."""
    res: dict[int, NDArray[np.float64]] = {}
    for ci, conv in enumerate(convs):
        if only is not None and ci not in only:
            continue
        res[ci] = np.array([score_query(conv, q, weights) for q in conv.queries])
    return res


def objective(per_conv: dict[int, FloatArray], convs: Sequence[int]) -> float:
    """Mean of R@10 and R@1024tok over the questions of ``convs``."""
    rows = np.concatenate([per_conv[c] for c in convs])
    return float(rows[:, 1].mean() + rows[:, 3].mean()) / 2


# Search space for coordinate ascent: (field, candidate values).
SPACE: list[tuple[str, list[Any]]] = [
    ("semantic", [0.0, 0.6, 0.9, 1.2, 1.5, 2.0]),
    ("after", [(0.0,), (0.15,), (0.3,), (0.5,), (0.3, 0.1), (0.5, 0.15)]),
    ("before", [(0.0,), (0.3,), (0.5,), (0.3, 0.1), (0.5, 0.15), (0.7, 0.2), (0.5, 0.3)]),
    ("session", [0.0, 0.4, 0.8, 1.2, 1.6]),
    ("speaker", [0.0, 0.15, 0.3, 0.5, 0.8]),
    ("date", [0.0, 0.5, 1.0, 2.0]),
    ("time_word", [0.0, 0.15, 0.3, 0.5]),
]


class Tuner:
    """Coordinate ascent over SPACE with memoised per-conversation results."""

    def __init__(self, convs: Sequence[Conv]) -> None:
        self.convs = convs
        self.memo: dict[HybridWeights, dict[int, FloatArray]] = {}

    def results(self, w: HybridWeights) -> dict[int, FloatArray]:
        hit = self.memo.get(w)
        if hit is None:
            hit = evaluate(self.convs, w)
            self.memo[w] = hit
        return hit

    def tune(self, train: Sequence[int], start: HybridWeights, rounds: int = 2) -> HybridWeights:
        best = start
        best_obj = objective(self.results(best), train)
        for _ in range(rounds):
            improved = False
            for name, values in SPACE:
                for v in values:
                    cand = replace(best, **{name: v})
                    obj = objective(self.results(cand), train)
                    if obj > best_obj + 1e-9:
                        best, best_obj, improved = cand, obj, True
            if not improved:
                break
        return best


def report(per_conv: dict[int, FloatArray], convs: Sequence[Conv], title: str) -> None:
    cats: dict[str, list[NDArray[np.float64]]] = {}
    for ci, rows in per_conv.items():
        for q, row in zip(convs[ci].queries, rows, strict=True):
            cats.setdefault(CATEGORIES[q.category], []).append(row)
    print(f"\n{title}")
    print(f"{'category':<12} {'n':>5} {'R@5':>7} {'R@10':>7} {'R@20':>7} {'R@1024tok':>10}")
    all_rows: list[NDArray[np.float64]] = []
    for name in ("single-hop", "multi-hop", "temporal", "open-domain"):
        rows = np.array(cats.get(name, []))
        if not len(rows):
            continue
        all_rows.extend(rows)
        m = rows.mean(axis=0)
        print(f"{name:<12} {len(rows):>5} {m[0]:>7.3f} {m[1]:>7.3f} {m[2]:>7.3f} {m[3]:>10.3f}")
    m = np.array(all_rows).mean(axis=0)
    print(
        f"{'overall':<12} {len(all_rows):>5} {m[0]:>7.3f} {m[1]:>7.3f} {m[2]:>7.3f} {m[3]:>10.3f}"
    )


def per_query_ms(convs: Sequence[Conv], options: SearchOptions, with_vectors: bool) -> float:
    """Wall time of HybridRanker.rank per question (signals + combine + sort), excluding
    the query embedding (an embedder call, ~5 ms for MiniLM on CPU)."""
    emb = embedder()
    n, t = 0, 0.0
    for conv in convs:
        ranker = HybridRanker(conv.ranker.candidates, options)
        ranker.bm25  # noqa: B018 - build the index outside the timed part
        for q in conv.queries[:60]:
            question = q.text
            qvec = emb.embed([question])[0] if with_vectors else None
            t0 = time.perf_counter()
            ranker.rank(question, query_vector=qvec, limit=BUDGET)
            t += time.perf_counter() - t0
            n += 1
    return 1000 * t / max(1, n)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["loco", "defaults", "grid-bm25"])
    ap.add_argument("--no-vectors", action="store_true", help="keyword + context only")
    ap.add_argument("--k1", type=float, default=None)
    ap.add_argument("--b", type=float, default=None)
    ap.add_argument("--opt", action="append", default=[], help="SearchOptions field=value")
    ap.add_argument("--start", default="", help="HybridWeights overrides, e.g. semantic=1.3")
    args = ap.parse_args(argv)
    options = SearchOptions()
    if args.k1 is not None:
        options = replace(options, k1=args.k1)
    if args.b is not None:
        options = replace(options, b=args.b)
    for item in args.opt:
        key, _, value = item.partition("=")
        options = replace(options, **{key: type(getattr(options, key))(eval(value))})
    if args.start:
        options = replace(options, weights=eval(f"replace(options.weights, {args.start})"))
    with_vectors = not args.no_vectors

    t0 = time.perf_counter()
    convs = build(options, with_vectors)
    print(
        f"built signals for {sum(len(c.queries) for c in convs)} questions in "
        f"{time.perf_counter() - t0:.1f}s (k1={options.k1}, b={options.b})"
    )
    start = options.weights if with_vectors else replace(options.weights, semantic=0.0)

    if args.mode == "defaults":
        res = evaluate(convs, start)
        report(res, convs, f"library defaults, no tuning: {start}")
    elif args.mode == "grid-bm25":
        for k1, b in itertools.product((0.9, 1.2, 1.5), (0.3, 0.5, 0.75)):
            opts = replace(options, k1=k1, b=b)
            cs = build(opts, with_vectors)
            res = evaluate(cs, start)
            print(f"k1={k1} b={b} objective={objective(res, list(res)):.4f}")
    else:
        tuner = Tuner(convs)
        held: dict[int, FloatArray] = {}
        for ci in range(len(convs)):
            train = [c for c in range(len(convs)) if c != ci]
            w = tuner.tune(train, start)
            held[ci] = tuner.results(w)[ci]
            print(
                f"fold {convs[ci].sample_id}: held-out objective "
                f"{objective(held, [ci]):.3f} with {w}"
            )
        report(held, convs, "LOCO (weights tuned on the other 6 conversations)")
        full = tuner.tune(list(range(len(convs))), start)
        print(f"\nweights tuned on all 7 (for reference only): {full}")
        report(tuner.results(start), convs, f"library defaults, no tuning: {start}")
    print(
        f"\nper-query ranking cost: {per_query_ms(convs, options, with_vectors):.2f} ms "
        f"(~{math.ceil(np.mean([len(c.tokens) for c in convs]))} candidates/conversation, "
        "query embedding excluded)"
    )


if __name__ == "__main__":
    main()
