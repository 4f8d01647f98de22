"""Dev only: capture what ``memory.search`` ranks, then re-rank it offline with variants.

    python bench/recall_lab.py capture-locomo --emb-cache /work/cache/locomo-int8.npz OUT.pkl
    python bench/recall_lab.py capture-lme [--emb-cache PATH | --no-embedder] [--types T,..] OUT.pkl
    python bench/recall_lab.py eval OUT.pkl [OUT2.pkl ...]

``capture-*`` runs the benchmarks' own ingestion and search (``locomo_memorybank``'s
``retrieve`` / ``retrieve_user``, ``bench_longmemeval.evaluate_question``) with the
search's ranking step (``memorybank.recall._sync.search._rank``) wrapped, and keeps per
question the candidates the search ranked (with their vectors), the query vector and
which candidates are evidence. ``eval`` ranks the same candidates with the default
formula (it must reproduce the benchmarks' figures) and with each variant of
``VARIANTS``; a family with several settings is also scored held out (LoCoMo:
leave-one-conversation-out; LongMemEval: leave-one-question-out), the objective being
the benchmark's headline (LoCoMo: mean of recall@10 and recall within 1,024 tokens;
LongMemEval: session all@5 + NDCG@10 + turn any@10). Nothing here is library behaviour.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import importlib.util
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from memorybank.recall import Candidate, HybridRanker, SearchOptions, Signals  # noqa: E402
from memorybank.recall._sync import search as sync_search  # noqa: E402

FloatArray = np.ndarray
ABBREV = {
    "single-session-user": "ssu",
    "single-session-assistant": "ssa",
    "single-session-preference": "ssp",
    "multi-session": "ms",
    "knowledge-update": "ku",
    "temporal-reasoning": "tr",
}
LOCOMO_CATS = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}


@dataclass
class Question:
    bench: str  # "locomo-thread", "locomo-user", "lme"
    group: str  # LoCoMo: the conversation; LongMemEval: the question type
    qid: str
    text: str
    qvec: np.ndarray | None
    cands: int  # index into Capture.sets
    gold: list[int]  # candidate indices that are evidence (turns)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Capture:
    sets: list[list[Candidate]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    _index: dict[tuple[str, ...], int] = field(default_factory=dict)

    def add_set(self, cands: list[Candidate]) -> int:
        key = tuple(c.id for c in cands)
        if key not in self._index:
            self._index[key] = len(self.sets)
            self.sets.append(cands)
        return self._index[key]


_seen: list[tuple[list[Candidate], str, Any]] = []


def _patch() -> None:
    inner = sync_search._rank

    def wrapped(ranker: HybridRanker, query: str, qvec: Any) -> Any:
        _seen.append((list(ranker.candidates), query, qvec))
        return inner(ranker, query, qvec)

    sync_search._rank = wrapped


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def capture_locomo(args: argparse.Namespace) -> Capture:
    from memorybank.embeddings import LocalEmbedder

    lm = _load("locomo_memorybank", ROOT / "bench" / "locomo_memorybank.py")
    cached = lm.CachedEmbedder(LocalEmbedder(backend=args.backend), args.emb_cache)
    lm.make_embedder = lambda: cached
    harness_path = next(
        p / "shared" / "bench" / "locomo_retrieval.py"
        for p in ROOT.parents
        if (p / "shared" / "bench" / "locomo_retrieval.py").exists()
    )
    harness = _load("locomo_retrieval", harness_path)
    convs = harness.load_locomo(str(harness_path.parent.parent / "data/locomo/locomo_dev.json"))
    _patch()
    cap = Capture()
    for scope in ("thread", "user"):
        if lm._memory is not None:
            lm._memory.close()
        lm._memory = None
        lm._threads.clear()
        lm._users.clear()
        if scope == "user":
            lm.ingest_users([c["turns"] for c in convs])
        retriever = lm.retrieve_user if scope == "user" else lm.retrieve
        for conv in convs:
            turns = conv["turns"]
            valid = {t["id"] for t in turns}
            by_text: dict[str, list[str]] = {}
            for t in turns:
                by_text.setdefault(t["index_text"], []).append(t["id"])
            tokens = {t["id"]: harness.approx_tokens(t["index_text"]) for t in turns}
            for qi, qa in enumerate(conv["qa"]):
                cat = int(qa["category"])
                gold, _ = harness.normalise_evidence(qa.get("evidence", []), valid)
                if cat not in LOCOMO_CATS or not gold:
                    continue
                _seen.clear()
                ranked = retriever(turns, qa["question"], len(turns))
                cands, query, qvec = _seen[-1]
                # the candidates' dia_ids: the default order is the returned one
                ranker = HybridRanker(cands, SearchOptions())
                order = ranker.order(ranker.combine(ranker.signals(query, query_vector=qvec)))
                dia = [""] * len(cands)
                for i, d in zip(order, ranked, strict=False):
                    dia[i] = d
                for i, c in enumerate(cands):
                    if not dia[i]:
                        dia[i] = by_text.get(c.text, [""])[0]
                    assert dia[i] in by_text.get(c.text, []), (c.text, dia[i])
                at = cap.add_set(cands)
                cap.questions.append(
                    Question(
                        f"locomo-{scope}",
                        conv["sample_id"],
                        f"{conv['sample_id']}#{qi}",
                        query,
                        None if qvec is None else np.asarray(qvec, np.float32),
                        at,
                        [i for i, d in enumerate(dia) if d in gold],
                        {
                            "cat": cat,
                            "ngold": len(gold),
                            "tokens": [tokens.get(d, 1) for d in dia],
                        },
                    )
                )
        if args.emb_cache is not None:
            cached.save()
        print(f"{scope}: {sum(q.bench == f'locomo-{scope}' for q in cap.questions)} questions")
    return cap


def capture_lme(args: argparse.Namespace) -> Capture:
    from bench import bench_longmemeval as lme
    from memorybank.embeddings import LocalEmbedder

    types = [t for t in args.types.split(",") if t]
    questions = lme.load(lme.default_data(), args.per_type, types)
    embedder = None
    if not args.no_embedder:
        inner = LocalEmbedder(backend=args.backend)
        embedder = lme.CachedEmbedder(inner, args.emb_cache)
    _patch()
    cap = Capture()
    for q in questions:
        _seen.clear()
        metrics, _, _, _ = lme.evaluate_question(q, embedder)
        cands, query, qvec = _seen[-1]
        where: dict[str, list[tuple[str, int]]] = {}
        for sid, session in lme._sessions(q):
            for j, turn in enumerate(session):
                where.setdefault(turn["content"], []).append((sid, j))
        # each thread's session: the one most of its candidates' texts come from
        votes: dict[str, dict[str, int]] = {}
        for c in cands:
            for sid, _ in where.get(c.text, []):
                votes.setdefault(c.thread_id, {}).setdefault(sid, 0)
                votes[c.thread_id][sid] += 1
        sid_of = {t: max(v, key=lambda s: v[s]) for t, v in votes.items()}
        turn_of = []
        for c in cands:
            sid = sid_of[c.thread_id]
            js = [j for s, j in where[c.text] if s == sid]
            js.sort(key=lambda j: abs(j - c.position))
            turn_of.append((sid, js[0]))
        gold_turns = {
            (sid, j)
            for sid, session in lme._sessions(q)
            for j, turn in enumerate(session)
            if turn.get("has_answer")
        }
        cap.questions.append(
            Question(
                "lme",
                q["question_type"],
                q["question_id"],
                query,
                None if qvec is None else np.asarray(qvec, np.float32),
                cap.add_set(cands),
                [i for i, t in enumerate(turn_of) if t in gold_turns],
                {
                    "turn_of": turn_of,
                    "gold_sessions": set(q["answer_session_ids"]),
                    "gold_turns": gold_turns,
                    "bench": metrics["memorybank"],
                },
            )
        )
    print(f"lme: {len(cap.questions)} questions")
    return cap


# ---------------------------------------------------------------------- evaluation
Scorer = Callable[[HybridRanker, Signals, Question], FloatArray]


def default(r: HybridRanker, sig: Signals, q: Question) -> FloatArray:
    return r.combine(sig)


def combine_rel(r: HybridRanker, sig: Signals, rel: FloatArray) -> FloatArray:
    """``HybridRanker.combine`` from the context on, with ``rel`` as the relevance."""
    w, st, opts = r.options.weights, r.structure, r.options
    best = float(rel.max()) if len(rel) else 0.0
    donor = rel * (rel / best) ** opts.context_strength if best > 0 else rel
    ctx = rel.copy()
    ctx += st.spread(donor, w.after, backward=True)
    ctx += w.question_after * st.spread(donor * st.is_question, (1.0,), backward=True)
    ctx += st.spread(donor, w.before, backward=False)
    pool = st.session_pool(rel, opts.session_top)
    if best > 0:
        pool *= np.minimum(1.0, rel / (opts.session_evidence * best))
    ctx += w.session * pool
    boost = 1.0 + w.speaker * sig.speaker + w.date * sig.date + w.time_word * sig.time_word
    return ctx * (boost + w.role * sig.role)


def parts(r: HybridRanker, sig: Signals) -> tuple[FloatArray, FloatArray, FloatArray]:
    from memorybank.recall.fusion import normalize_array

    kw = normalize_array(sig.keyword, "max")
    sem = np.zeros(len(kw))
    if sig.semantic_mask.any():
        sem[sig.semantic_mask] = r._semantic_norm(sig.semantic[sig.semantic_mask])
    fb = normalize_array(sig.feedback, "max") if sig.feedback is not None else np.zeros(len(kw))
    return kw, sem, fb


def dense_rank(sig: Signals, c: float) -> FloatArray:
    """(c + 1) / (c + rank) of each candidate's cosine (rank 1 the best), 0 without one."""
    out = np.zeros(len(sig.semantic))
    idx = np.flatnonzero(sig.semantic_mask)
    if len(idx):
        order = idx[np.lexsort((idx, -sig.semantic[idx]))]
        out[order] = (c + 1) / (c + np.arange(1, len(order) + 1))
    return out


def lex_rank(values: FloatArray, c: float) -> FloatArray:
    out = np.zeros(len(values))
    idx = np.flatnonzero(values > 0)
    if len(idx):
        order = idx[np.lexsort((idx, -values[idx]))]
        out[order] = (c + 1) / (c + np.arange(1, len(order) + 1))
    return out


def rrf(c: float, ws: float) -> Scorer:
    """Relevance from ranks: keyword and dense each (c+1)/(c+rank), feedback as today."""

    def score(r: HybridRanker, sig: Signals, q: Question) -> FloatArray:
        _kw, _sem, fb = parts(r, sig)
        if not sig.semantic_mask.any():
            return r.combine(sig)
        w = r.options.weights
        rel = w.keyword * lex_rank(sig.keyword, c) + ws * dense_rank(sig, c) + w.feedback * fb
        return combine_rel(r, sig, rel)

    return score


def dense_rank_mix(c: float, a: float) -> Scorer:
    """The default relevance plus ``a`` x the dense rank term (c+1)/(c+rank)."""

    def score(r: HybridRanker, sig: Signals, q: Question) -> FloatArray:
        if not sig.semantic_mask.any():
            return r.combine(sig)
        kw, sem, fb = parts(r, sig)
        w = r.options.weights
        rel = w.keyword * kw + w.semantic * sem + w.feedback * fb + a * dense_rank(sig, c)
        return combine_rel(r, sig, rel)

    return score


FEATURES = (
    "keyword",
    "semantic",
    "feedback",
    "dense-rank",
    "after",
    "question-after",
    "before",
    "session",
    "cosine",
)


def features(r: HybridRanker, sig: Signals) -> FloatArray:
    """Per candidate: the relevance parts, the dense rank term, the context the default
    relevance hands on (after, question after, before, session) and the raw cosine;
    (n, len(FEATURES)). The score of a weight vector ``w`` is ``(f @ w) * boost``."""
    kw, sem, fb = parts(r, sig)
    w, st, opts = r.options.weights, r.structure, r.options
    rel = w.keyword * kw + w.semantic * sem + w.feedback * fb
    best = float(rel.max()) if len(rel) else 0.0
    donor = rel * (rel / best) ** opts.context_strength if best > 0 else rel
    pool = st.session_pool(rel, opts.session_top)
    if best > 0:
        pool *= np.minimum(1.0, rel / (opts.session_evidence * best))
    cos = np.where(sig.semantic_mask, sig.semantic, 0.0)
    return np.stack(
        [
            kw,
            sem,
            fb,
            dense_rank(sig, 20.0),
            st.spread(donor, w.after, backward=True),
            st.spread(donor * st.is_question, (1.0,), backward=True),
            st.spread(donor, w.before, backward=False),
            pool,
            cos,
        ],
        axis=1,
    )


def boost_of(r: HybridRanker, sig: Signals) -> FloatArray:
    w = r.options.weights
    return (
        1.0
        + w.speaker * sig.speaker
        + w.date * sig.date
        + w.time_word * sig.time_word
        + (w.role * sig.role)
    )


#: The default formula as a weight vector over FEATURES (its starting point).
DEFAULT_W = np.array([1.0, 1.2, 0.4, 0.0, 1.0, 0.7, 1.0, 0.8, 0.0])


#: LAB_FREE: the FEATURES the ranker may change (default all); the others keep DEFAULT_W.
FREE = np.array(
    [n in os.environ.get("LAB_FREE", ",".join(FEATURES)).split(",") for n in FEATURES], dtype=float
)


def pairs(x: FloatArray, gold: list[int]) -> tuple[FloatArray, FloatArray]:
    """Each evidence candidate against the 50 best other ones of the default ranking:
    the feature differences (boost applied) and each pair's weight (1 / pairs)."""
    s = x @ DEFAULT_W
    neg = np.setdiff1d(np.argsort(-s, kind="stable")[:50], gold)
    d = (x[gold][:, None, :] - x[neg][None, :, :]).reshape(-1, x.shape[1])
    return d, np.full(len(d), 1.0 / max(1, len(d)))


def train_linear(d: FloatArray, wt: FloatArray, steps: int = 400) -> FloatArray:
    """Pairwise logistic loss over the pairs, gradient descent from DEFAULT_W with an L2
    pull towards it (the default's scale kept: the feature weights are relative)."""
    w = DEFAULT_W.copy()
    lam, lr = float(os.environ.get("LAB_L2", "0.05")), 0.5
    total = wt.sum()
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(np.clip(d @ w, -30, 30)))
        grad = -(d * (wt * p)[:, None]).sum(axis=0) / total + lam * (w - DEFAULT_W)
        w -= lr * grad * FREE
    return w


def learned(cap: Capture) -> None:
    """The linear ranker, trained leave-one-conversation-out (LoCoMo) and scored held out."""
    data = []
    for q in cap.questions:
        r = HybridRanker(cap.sets[q.cands])
        sig = r.signals(q.text, query_vector=q.qvec)
        data.append((features(r, sig), boost_of(r, sig), q.gold))
    folds = [q.group for q in cap.questions]
    made = [pairs(x * boost[:, None], gold) for x, boost, gold in data]
    rows: list[dict[str, float]] = [{}] * len(folds)
    for fold in dict.fromkeys(folds):
        train = [m for m, f in zip(made, folds, strict=True) if f != fold and len(m[0])]
        w = train_linear(
            np.concatenate([m[0] for m in train]), np.concatenate([m[1] for m in train])
        )
        print(
            f"   fold {fold}: " + " ".join(f"{n}={v:.2f}" for n, v in zip(FEATURES, w, strict=True))
        )
        for i, f in enumerate(folds):
            if f == fold:
                x, boost, _ = data[i]
                rows[i] = metrics_of(cap.questions[i], (x @ w) * boost)
    print(table(cap, rows, "linear HELD OUT"))
    base = [
        metrics_of(q, (x @ DEFAULT_W) * b) for q, (x, b, _) in zip(cap.questions, data, strict=True)
    ]
    print(table(cap, base, "linear at DEFAULT_W (check)"))


def quota(per_session: int, top: int = 10) -> Scorer:
    """The default ranking, but among the first ``top`` at most ``per_session`` turns of
    one session (the others move down, in order): coverage across sessions."""

    def score(r: HybridRanker, sig: Signals, q: Question) -> FloatArray:
        scores = r.combine(sig)
        order = r.order(scores)
        session = r.structure.session
        taken: dict[int, int] = {}
        first: list[int] = []
        rest: list[int] = []
        for i in order:
            s = int(session[i])
            if len(first) < top and taken.get(s, 0) < per_session:
                taken[s] = taken.get(s, 0) + 1
                first.append(i)
            else:
                rest.append(i)
        out = np.zeros(len(scores))
        out[first + rest] = -np.arange(len(scores), dtype=np.float64)
        return out

    return score


def option(**changes: Any) -> Callable[[SearchOptions], SearchOptions]:
    return lambda o: replace(o, **changes)


def same_as_default(r: HybridRanker, sig: Signals, q: Question) -> FloatArray:
    """The default relevance through ``combine_rel``: must equal the default."""
    kw, sem, fb = parts(r, sig)
    w = r.options.weights
    return combine_rel(r, sig, w.keyword * kw + w.semantic * sem + w.feedback * fb)


VARIANTS: dict[str, dict[str, tuple[Callable[[SearchOptions], SearchOptions] | None, Scorer]]] = {
    "check": {"combine_rel": (None, same_as_default)},
    "rrf": {f"c={c} ws={ws}": (None, rrf(c, ws)) for c in (5, 20, 60) for ws in (0.8, 1.2, 1.6)},
    "dense-rank-mix": {
        f"c={c} a={a}": (None, dense_rank_mix(c, a)) for c in (5, 20, 60) for a in (0.2, 0.4, 0.8)
    },
    "session-quota": {f"q={n}": (None, quota(n)) for n in (1, 2, 3, 4)},
    "semantic-reference": {
        f"ref={v}": (option(semantic_reference=v), default) for v in (0.0, 0.3, 0.4, 0.6)
    },
}


def metrics_of(q: Question, scores: FloatArray) -> dict[str, float]:
    order = np.lexsort((np.arange(len(scores)), -scores))
    if q.bench.startswith("locomo"):
        pos = np.flatnonzero(np.isin(order, q.gold))
        ng = q.extra["ngold"]
        cum = np.cumsum(np.asarray(q.extra["tokens"])[order])
        fit = int(np.searchsorted(cum, 1024, side="right"))
        return {
            "r@10": float((pos < 10).sum()) / ng,
            "r@1024tok": float((pos < fit).sum()) / ng,
            "r@5": float((pos < 5).sum()) / ng,
        }
    from bench import bench_longmemeval as lme

    turns = [q.extra["turn_of"][i] for i in order[: lme.SEARCH_K]]
    return lme.scores(turns, q.extra["gold_sessions"], q.extra["gold_turns"])


def objective(bench: str, rows: list[dict[str, float]]) -> float:
    if not rows:
        return 0.0
    if bench.startswith("locomo"):
        return float(np.mean([r["r@10"] + r["r@1024tok"] for r in rows]))
    return float(np.mean([r["all@5"] + r["ndcg@10"] + r.get("turn@10", 0.0) for r in rows]))


def run(cap: Capture, variants: dict[str, tuple[Any, Scorer]]) -> dict[str, list[dict[str, float]]]:
    out: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    for q in cap.questions:
        # one ranker and one set of signals per question and options
        made: dict[SearchOptions, tuple[HybridRanker, Signals]] = {}
        for name, (opt, scorer) in variants.items():
            options = opt(SearchOptions()) if opt else SearchOptions()
            if options not in made:
                r = HybridRanker(cap.sets[q.cands], options)
                made[options] = (r, r.signals(q.text, query_vector=q.qvec))
            r, sig = made[options]
            out[name].append(metrics_of(q, scorer(r, sig, q)))
    return out


def held_out(
    cap: Capture, per: dict[str, list[dict[str, float]]]
) -> tuple[list[dict[str, float]], dict[str, int]]:
    """Each fold (LoCoMo conversation / LongMemEval question) with the setting best on the rest."""
    bench = cap.questions[0].bench
    folds = [q.group if bench.startswith("locomo") else q.qid for q in cap.questions]
    chosen: list[dict[str, float]] = [{}] * len(folds)
    picks: dict[str, int] = {}
    for fold in dict.fromkeys(folds):
        train = [i for i, f in enumerate(folds) if f != fold]
        best = max(per, key=lambda n: objective(bench, [per[n][i] for i in train]))
        picks[best] = picks.get(best, 0) + 1
        for i, f in enumerate(folds):
            if f == fold:
                chosen[i] = per[best][i]
    return chosen, picks


def table(cap: Capture, rows: list[dict[str, float]], name: str) -> str:
    bench = cap.questions[0].bench
    cells = []
    if bench.startswith("locomo"):
        for cat, cname in LOCOMO_CATS.items():
            mine = [r for q, r in zip(cap.questions, rows, strict=True) if q.extra["cat"] == cat]
            cells.append(f"{cname} {np.mean([r['r@10'] for r in mine]):.3f}")
        cells.insert(
            0,
            f"R@10 {np.mean([r['r@10'] for r in rows]):.3f}"
            f" tok {np.mean([r['r@1024tok'] for r in rows]):.3f}",
        )
    else:
        for group in ["overall", *dict.fromkeys(q.group for q in cap.questions)]:
            mine = [
                r for q, r in zip(cap.questions, rows, strict=True) if group in ("overall", q.group)
            ]
            m = {k: np.mean([r[k] for r in mine]) for k in ("all@5", "any@5", "ndcg@10", "turn@10")}
            cells.append(
                f"{ABBREV.get(group, group)}({len(mine)}) all5 {m['all@5']:.3f}"
                f" any5 {m['any@5']:.3f} ndcg10 {m['ndcg@10']:.3f} t10 {m['turn@10']:.3f}"
            )
    return f"{name:<28} " + " | ".join(cells)


def evaluate(paths: list[Path], families: list[str]) -> None:
    for path in paths:
        with path.open("rb") as fh:
            cap: Capture = pickle.load(fh)
        for bench in dict.fromkeys(q.bench for q in cap.questions):
            sub = Capture(cap.sets, [q for q in cap.questions if q.bench == bench])
            print(f"\n== {path.name} {bench} ({len(sub.questions)} questions)")
            base = run(sub, {"default": (None, default)})["default"]
            if bench == "lme":
                bad = sum(
                    abs(r[k] - q.extra["bench"][k]) > 1e-9
                    for q, r in zip(sub.questions, base, strict=True)
                    for k in ("all@5", "turn@10")
                )
                print(f"   (default vs the bench's own figures: {bad} differing cells)")
            print(table(sub, base, "default"))
            for fam in families:
                if fam == "linear-fixed":  # LAB_W: weights over FEATURES, comma-separated
                    w = np.array([float(v) for v in os.environ["LAB_W"].split(",")])
                    fixed = [
                        metrics_of(q, (features(r, sig) @ w) * boost_of(r, sig))
                        for q in sub.questions
                        for r in [HybridRanker(sub.sets[q.cands])]
                        for sig in [r.signals(q.text, query_vector=q.qvec)]
                    ]
                    print(table(sub, fixed, "linear-fixed LAB_W"))
                    continue
                if fam == "linear":
                    if bench.startswith("locomo"):
                        learned(sub)
                    continue
                per = run(sub, VARIANTS[fam])
                for name, rows in per.items():
                    print(table(sub, rows, f"{fam} {name}"))
                chosen, picks = held_out(sub, {"default": base, **per})
                print(table(sub, chosen, f"{fam} HELD OUT"), picks)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for cmd in ("capture-locomo", "capture-lme"):
        p = sub.add_parser(cmd)
        p.add_argument("out", type=Path)
        p.add_argument("--emb-cache", type=Path, default=None)
        p.add_argument("--backend", default="onnx-int8")
        p.add_argument("--no-embedder", action="store_true")
        p.add_argument("--types", default="")
        p.add_argument("--per-type", type=int, default=0)
    p = sub.add_parser("eval")
    p.add_argument("paths", type=Path, nargs="+")
    p.add_argument("--family", action="append", default=[])
    args = ap.parse_args(argv)
    if args.cmd == "eval":
        evaluate(args.paths, args.family or [*VARIANTS, "linear"])
        return
    cap = capture_locomo(args) if args.cmd == "capture-locomo" else capture_lme(args)
    with args.out.open("wb") as fh:
        pickle.dump(cap, fh)


if __name__ == "__main__":
    main()
