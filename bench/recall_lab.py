"""Dev only: capture what ``memory.search`` ranks, then re-rank it offline with variants.

    python bench/recall_lab.py capture-locomo --emb-cache /work/cache/locomo-int8.npz OUT.pkl
    python bench/recall_lab.py capture-lme [--emb-cache PATH | --no-embedder] [--types T,..] OUT.pkl
    python bench/recall_lab.py eval OUT.pkl [OUT2.pkl ...]
    python bench/recall_lab.py joint LOCOMO.pkl LME.pkl   # LAB_SHARE, LAB_TOKENS, LAB_FREE, LAB_L2
    python bench/recall_lab.py joint-grid LOCOMO.pkl LME.pkl

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
import math
import pickle
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from memorybank.recall import (  # noqa: E402
    Candidate,
    HybridRanker,
    HybridWeights,
    SearchOptions,
    Signals,
)
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


def train_linear(
    d: FloatArray, wt: FloatArray, steps: int = 400, nonneg: bool = False
) -> FloatArray:
    """Pairwise logistic loss over the pairs, gradient descent from DEFAULT_W with an L2
    pull towards it (the default's scale kept: the feature weights are relative)."""
    w = DEFAULT_W.copy()
    lam, lr = float(os.environ.get("LAB_L2", "0.05")), 0.5
    total = wt.sum()
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(np.clip(d @ w, -30, 30)))
        grad = -(d * (wt * p)[:, None]).sum(axis=0) / total + lam * (w - DEFAULT_W)
        w -= lr * grad * FREE
        if nonneg:  # a negative share is no formula the search can run
            np.maximum(w, 0.0, out=w)
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


#: the FEATURES a joint ranker may change: those a ``HybridWeights`` can express
WEIGHT_FEATURES = (
    "keyword",
    "semantic",
    "feedback",
    "after",
    "question-after",
    "before",
    "session",
)


def as_weights(w: FloatArray) -> HybridWeights:
    """A weight vector over FEATURES (dense rank and cosine at 0) as ``HybridWeights``:
    the context features are the default's spreads, so their weights scale its tuples."""
    d = HybridWeights()
    f = dict(zip(FEATURES, (float(v) for v in w), strict=True))
    return replace(
        d,
        keyword=round(f["keyword"], 4),
        semantic=round(f["semantic"], 4),
        feedback=round(f["feedback"], 4),
        after=tuple(round(a * f["after"], 4) for a in d.after),
        question_after=round(f["question-after"], 4),
        before=tuple(round(b * f["before"], 4) for b in d.before),
        session=round(f["session"], 4),
    )


@dataclass
class Item:
    """One question of a joint training set: features, boost, evidence, pair data."""

    cap: Capture
    q: Question
    x: FloatArray
    boost: FloatArray
    d: FloatArray
    wt: FloatArray


def joint_items(cap: Capture, token_loss: bool) -> list[Item]:
    """Pairs per question: each evidence candidate against the 50 best others of the
    default ranking, each question weighing 1 in total. ``token_loss``: a pair weighs in
    proportion to the tokens of its negative (LoCoMo: a long turn ranked above the
    evidence spends more of the 1,024-token budget); LongMemEval: a negative from an
    evidence session weighs half (it costs the turn, not the session)."""
    out = []
    for q in cap.questions:
        r = HybridRanker(cap.sets[q.cands])
        sig = r.signals(q.text, query_vector=q.qvec)
        x, boost = features(r, sig), boost_of(r, sig)
        xb = x * boost[:, None]
        s = xb @ DEFAULT_W
        neg = np.setdiff1d(np.argsort(-s, kind="stable")[:50], q.gold)
        d = (xb[q.gold][:, None, :] - xb[neg][None, :, :]).reshape(-1, x.shape[1])
        per_neg = np.ones(len(neg))
        if token_loss and "tokens" in q.extra:
            tok = np.asarray(q.extra["tokens"], dtype=float)
            per_neg = tok[neg] / max(1.0, float(np.mean(tok)))
        elif token_loss and "turn_of" in q.extra:
            gold_s = q.extra["gold_sessions"]
            per_neg = np.array([0.5 if q.extra["turn_of"][i][0] in gold_s else 1.0 for i in neg])
        wt = np.tile(per_neg, len(q.gold))
        if len(wt):
            wt = wt / wt.sum()
        out.append(Item(cap, q, x, boost, d, wt))
    return out


def train_joint(parts_: list[list[Item]], shares: list[float], steps: int = 400) -> FloatArray:
    """``train_linear`` over several benchmarks' items, each benchmark weighing its share."""
    ds, wts = [], []
    for items, share in zip(parts_, shares, strict=True):
        used = [it for it in items if len(it.d)]
        if not used:
            continue
        for it in used:
            ds.append(it.d)
            wts.append(it.wt * share / len(used))
    nonneg = os.environ.get("LAB_NONNEG", "1") == "1"
    return train_linear(np.concatenate(ds), np.concatenate(wts), steps, nonneg=nonneg)


def real_rows(items: list[Item], weights: HybridWeights | FloatArray) -> list[dict[str, float]]:
    """The items' questions ranked by the search's own formula with ``weights`` (the
    feedback words re-chosen by the first ranking with them); a weight vector over
    FEATURES: ranked by the linear form ``(features . w) x boost`` instead."""
    if isinstance(weights, np.ndarray):
        return [metrics_of(it.q, (it.x @ weights) * it.boost) for it in items]
    options = SearchOptions(weights=weights)
    rows = []
    for it in items:
        r = HybridRanker(it.cap.sets[it.q.cands], options)
        rows.append(metrics_of(it.q, r.combine(r.signals(it.q.text, query_vector=it.q.qvec))))
    return rows


def joint(paths: list[Path]) -> None:
    """The linear ranker trained on LoCoMo and LongMemEval together (only the weights a
    ``HybridWeights`` holds), scored held out through the real formula: each LoCoMo
    conversation with the weights learnt without it (and with every LongMemEval
    question), each LongMemEval question with those learnt without it. LAB_L2,
    LAB_SHARE (LongMemEval's share of the loss, default 0.5), LAB_TOKENS (1: the token
    budget in the loss)."""
    token_loss = os.environ.get("LAB_TOKENS", "1") == "1"
    share = float(os.environ.get("LAB_SHARE", "0.5"))
    benches: dict[str, list[Item]] = {}
    for path in paths:
        with path.open("rb") as fh:
            cap: Capture = pickle.load(fh)
        for bench in dict.fromkeys(q.bench for q in cap.questions):
            if bench == "locomo-user":  # ranks as the thread scope, question for question
                continue
            sub = Capture(cap.sets, [q for q in cap.questions if q.bench == bench])
            key = f"{bench}:{path.stem}"
            benches[key] = joint_items(sub, token_loss)
    keys = list(benches)
    lme_keys = [k for k in keys if k.startswith("lme")]
    loc_keys = [k for k in keys if not k.startswith("lme")]
    shares = {k: (1 - share) / max(1, len(loc_keys)) for k in loc_keys}
    shares.update({k: share / max(1, len(lme_keys)) for k in lme_keys})
    full = train_joint([benches[k] for k in keys], [shares[k] for k in keys])
    print(
        "trained on all: " + " ".join(f"{n}={v:.3f}" for n, v in zip(FEATURES, full, strict=True))
    )
    print(f"  as HybridWeights: {as_weights(full)}")
    for key in keys:
        if not key.startswith(os.environ.get("LAB_EVAL", "")):
            continue
        items = benches[key]
        sub = Capture(items[0].cap.sets, [it.q for it in items])
        lme = key.startswith("lme")
        folds = [it.q.qid if lme else it.q.group for it in items]
        rows: list[dict[str, float]] = [{}] * len(items)
        seen_w = []
        for fold in dict.fromkeys(folds):
            mine = [i for i, f in enumerate(folds) if f == fold]
            # the held-out question (LongMemEval: under every capture of it) left out
            train = [
                [it for it in benches[k] if (it.q.qid if lme else it.q.group) != fold]
                if k == key or (lme and k.startswith("lme"))
                else benches[k]
                for k in keys
            ]
            w = train_joint(train, [shares[k] for k in keys])
            seen_w.append(w)
            linear = os.environ.get("LAB_LINEAR") == "1"
            for i, row in zip(
                mine,
                real_rows([items[i] for i in mine], w if linear else as_weights(w)),
                strict=True,
            ):
                rows[i] = row
        print(f"\n== {key} ({len(items)} questions)")
        print(table(sub, real_rows(items, HybridWeights()), "default"))
        print(table(sub, rows, "joint HELD OUT (real)"))
        print(table(sub, real_rows(items, as_weights(full)), "joint all-data (real)"))
        print(table(sub, real_rows(items, full), "joint all-data (linear form)"))
        spread = np.array(seen_w)
        print(
            "   folds' weights min/max: "
            + " ".join(
                f"{n}={lo:.2f}/{hi:.2f}"
                for n, lo, hi in zip(FEATURES, spread.min(0), spread.max(0), strict=True)
            )
        )


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


def scaled(k: float, f: float, c: float, s: float) -> HybridWeights:
    """The default weights with keyword x k, feedback x f, the context (after, question
    after, before) x c and the session prior x s."""
    d = HybridWeights()
    return replace(
        d,
        keyword=d.keyword * k,
        feedback=round(d.feedback * f, 4),
        after=tuple(round(a * c, 4) for a in d.after),
        question_after=round(d.question_after * c, 4),
        before=tuple(round(b * c, 4) for b in d.before),
        session=round(d.session * s, 4),
    )


GRID = {
    f"k={k} f={f} c={c} s={s}": scaled(k, f, c, s)
    for k in (1.0, 1.3)
    for f in (1.0, 2.0)
    for c in (0.5, 0.75, 1.0)
    for s in (0.75, 1.0, 1.25)
}


def joint_grid(paths: list[Path]) -> None:
    """``GRID``'s settings of the search's own formula on every capture; held out, each
    LoCoMo conversation / LongMemEval question with the setting best on the rest of
    both benchmarks (objective: LoCoMo's mean (recall@10 + within 1,024 tokens) / 2 +
    LongMemEval's mean (all@5 + NDCG@10 + turn any@10) / 3 over every LongMemEval capture)."""
    rows: dict[str, dict[str, list[dict[str, float]]]] = {}
    subs: dict[str, Capture] = {}
    for path in paths:
        with path.open("rb") as fh:
            cap: Capture = pickle.load(fh)
        for bench in dict.fromkeys(q.bench for q in cap.questions):
            if bench == "locomo-user":
                continue
            key = f"{bench}:{path.stem}"
            subs[key] = Capture(cap.sets, [q for q in cap.questions if q.bench == bench])
            variants: dict[str, tuple[Any, Scorer]] = {
                n: (option(weights=w), default) for n, w in GRID.items()
            }
            rows[key] = run(subs[key], variants)
            print(f"{key}: {len(subs[key].questions)} questions ranked", flush=True)

    def score(name: str, leave: tuple[str, str] | None) -> float:
        total = 0.0
        for key, sub in subs.items():
            lme = key.startswith("lme")
            kept = [
                r
                for q, r in zip(sub.questions, rows[key][name], strict=True)
                if leave is None
                or leave[0] != ("lme" if lme else "locomo")
                or leave[1] != (q.qid if lme else q.group)
            ]
            total += objective(sub.questions[0].bench, kept) / (3.0 if lme else 2.0)
        return total

    best_all = max(GRID, key=lambda n: score(n, None))
    print(f"best on all data: {best_all} {GRID[best_all]}")
    for key, sub in subs.items():
        lme = key.startswith("lme")
        folds = [q.qid if lme else q.group for q in sub.questions]
        chosen: list[dict[str, float]] = [{}] * len(folds)
        picks: dict[str, int] = {}
        for fold in dict.fromkeys(folds):
            best = max(GRID, key=lambda n: score(n, ("lme" if lme else "locomo", fold)))
            picks[best] = picks.get(best, 0) + 1
            for i, f in enumerate(folds):
                if f == fold:
                    chosen[i] = rows[key][best][i]
        print(f"\n== {key}")
        print(table(sub, rows[key]["k=1.0 f=1.0 c=1.0 s=1.0"], "default"))
        print(table(sub, chosen, "grid HELD OUT"), picks)
        print(table(sub, rows[key][best_all], f"grid all-data {best_all}"))


#: questions that gather across sessions ("how many ...", "in total", "different ...")
AGGREGATE = re.compile(
    r"\bhow many\b|\bhow much\b|\bin total\b|\btotal\b|\bcombined\b|\bdifferent\b|\ball the\b",
    re.I,
)


def aggregate_quota(per_session: int, top: int = 10) -> Scorer:
    """``quota`` only for questions that gather across sessions (``AGGREGATE``)."""
    inner = quota(per_session, top)

    def score(r: HybridRanker, sig: Signals, q: Question) -> FloatArray:
        return inner(r, sig, q) if AGGREGATE.search(q.text) else r.combine(sig)

    return score


_NUM = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple of": 2,
}  # fmt: skip
_UNIT = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMS = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of)"
_AGO = re.compile(rf"\b{_NUMS}\s+(day|week|month|year)s?\s+ago\b", re.I)
_PAST = re.compile(rf"\b(?:past|last|previous)\s+(?:{_NUMS}\s+)?(day|week|month|year)s?\b", re.I)
_YESTERDAY = re.compile(r"\byesterday\b", re.I)
_QDATE: dict[str, Any] = {}


def question_date(qid: str) -> Any:
    """The LongMemEval question's ``question_date`` (None for LoCoMo)."""
    if not _QDATE:
        from bench import bench_longmemeval as lme

        for q in lme.load(lme.default_data()):
            _QDATE[q["question_id"]] = lme.parse_date(q["question_date"])
    return _QDATE.get(qid)


def anchor_windows(text: str, asked: Any) -> list[tuple[Any, Any]]:
    """Time windows a question names relative to the day it is asked: "N weeks ago"
    (that day, half a unit either side), "the past/last N months" (from then to the
    question), "yesterday"."""
    from datetime import timedelta

    out = []
    for m in _AGO.finditer(text):
        n = int(m.group(1)) if m.group(1).isdigit() else _NUM[m.group(1).lower()]
        days = n * _UNIT[m.group(2).lower()]
        half = max(1, _UNIT[m.group(2).lower()] // 2)
        out.append((asked - timedelta(days=days + half), asked - timedelta(days=days - half)))
    for m in _PAST.finditer(text):
        g = m.group(1)
        n = 1 if g is None else int(g) if g.isdigit() else _NUM[g.lower()]
        out.append((asked - timedelta(days=n * _UNIT[m.group(2).lower()]), asked))
    if _YESTERDAY.search(text):
        out.append((asked - timedelta(days=2), asked))
    return out


def time_anchor(weight: float) -> Scorer:
    """The default, with the score of each candidate dated inside a window the question
    names relative to its ``question_date`` multiplied by (1 + weight)."""

    def score(r: HybridRanker, sig: Signals, q: Question) -> FloatArray:
        base = r.combine(sig)
        asked = question_date(q.qid) if q.bench == "lme" else None
        if asked is None:
            return base
        windows = anchor_windows(q.text, asked)
        if not windows:
            return base
        inside = np.array(
            [
                c.created_at is not None and any(a <= c.created_at <= b for a, b in windows)
                for c in r.candidates
            ],
            dtype=float,
        )
        if inside.all() or not inside.any():
            return base
        out: FloatArray = base * (1.0 + weight * inside)
        return out

    return score


def passage_keyword(r: HybridRanker, query: str, size: int) -> FloatArray:
    """BM25 of the query where each candidate longer than ``size`` terms counts as its
    best passage (windows of ``size`` terms, half overlapping): the IDF of the turns,
    the passage's own length against the turns' mean."""
    from memorybank.recall.features import keyword_scores

    feats = r.features
    terms = r._query_terms(query)
    kw = keyword_scores(feats, terms, r.options.k1, r.options.b)
    n = len(feats)
    if not n or not terms:
        return kw
    k1, b = r.options.k1, r.options.b
    lengths = np.array([len(f.terms) for f in feats], dtype=float)
    avgdl = float(lengths.sum()) / n or 1.0
    idf = {}
    for t in terms:
        df = sum(1 for f in feats if t in f.terms)
        if df:
            idf[t] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    out = kw.copy()
    for i, f in enumerate(feats):
        if len(f.terms) <= size or idf.keys().isdisjoint(f.terms):
            continue
        best = 0.0
        for start in range(0, len(f.terms) - size // 2, size // 2):
            window = f.terms[start : start + size]
            norm = k1 * (1.0 - b + b * len(window) / avgdl)
            sc = 0.0
            for t, v in idf.items():
                tf = window.count(t)
                if tf:
                    sc += v * tf * (k1 + 1.0) / (tf + norm)
            best = max(best, sc)
        out[i] = max(kw[i], best)
    return out


def best_passage(size: int) -> Scorer:
    """The default with the keyword signal of long turns taken from their best passage."""

    def score(r: HybridRanker, sig: Signals, q: Question) -> FloatArray:
        kw = passage_keyword(r, q.text, size)
        ids = r.structure.ids
        s2 = r.signals(q.text, query_vector=q.qvec, keyword_scores=dict(zip(ids, kw, strict=True)))
        return r.combine(s2)

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
    "aggregate-quota": {f"q={n}": (None, aggregate_quota(n)) for n in (1, 2, 3, 4)},
    "time-anchor": {f"w={w}": (None, time_anchor(w)) for w in (0.2, 0.5, 1.0)},
    "best-passage": {f"size={n}": (None, best_passage(n)) for n in (20, 40, 80)},
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
    p = sub.add_parser("joint")
    p.add_argument("paths", type=Path, nargs="+")
    p = sub.add_parser("joint-grid")
    p.add_argument("paths", type=Path, nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "joint-grid":
        joint_grid(args.paths)
        return
    if args.cmd == "joint":
        joint(args.paths)
        return
    if args.cmd == "eval":
        evaluate(args.paths, args.family or [*VARIANTS, "linear"])
        return
    cap = capture_locomo(args) if args.cmd == "capture-locomo" else capture_lme(args)
    with args.out.open("wb") as fh:
        pickle.dump(cap, fh)


if __name__ == "__main__":
    main()
