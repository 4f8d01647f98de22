"""Ranking experiments on LoCoMo dev (no LLM), each scored leave-one-conversation-out.

    .venv/bin/python bench/locomo_experiments.py            # every family
    .venv/bin/python bench/locomo_experiments.py prf-keyword mmr

Dev only: nothing here is library behaviour. Each *family* re-orders the
library ranking (``HybridRanker`` with the default ``SearchOptions``, exactly
what ``memory.search(mode="hybrid")`` ranks in thread and user scope) and has a
small grid of settings. A family's LOO row scores each conversation with the
setting (the unchanged ranking included) that is best on the other six, on the
objective of ``locomo_memorybank --loo`` (mean of recall@10 and recall within
1,024 tokens, adversarial questions left out). Families:

* ``prf-vector``: Rocchio, ``q' = q + beta * mean(vectors of the top m hits)``.
* ``prf-keyword``: the ``n`` best terms (tf * idf) of the top ``m`` hits join the
  keyword query with weight ``w``.
* ``prf-entity``: the same, restricted to capitalised words (names, places) of
  the top hits: a second round seeded by the entities of the first.
* ``mmr``: one session's ``j``-th hit beyond ``free`` hits is multiplied by
  ``lam ** j`` (greedy over the best 60): diversity across sessions.
* ``question-penalty``: entries that mostly ask (share of question sentences)
  are multiplied by ``1 - p * share``.
* ``context-vector``: cosine against ``normalise(v + a * (v_prev + v_next))``,
  mixed with the entry's own cosine.
* ``session-centroid``: a session's mean vector against the query multiplies
  its entries by ``1 + w * minmax(cos)``.
* ``semantic-power`` / ``keyword-power``: the normalised signal raised to ``p``.
* ``name-stripped``: the query embedded again without the speakers' names,
  mixed with the plain query's cosine (one more embedding per question).

Embeddings come from the cache of ``locomo_memorybank --emb-cache``
(``/tmp/locomo_emb.npz``); the data is read from ``../shared/data`` (never copied).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from bench import locomo_research as lr  # noqa: E402
from memorybank.recall import SearchOptions  # noqa: E402
from memorybank.recall.conversation import mentioned_speakers  # noqa: E402
from memorybank.recall.fusion import normalize_array  # noqa: E402

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Orderer = Callable[[lr.Conv, lr.Query], IntArray]
CATEGORY = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}


class Lab:
    """The conversations with their signals, the question vectors and the scoring."""

    def __init__(self) -> None:
        self.convs = lr.build(SearchOptions())
        self.embedder = lr.embedder()
        self.qvec: dict[str, FloatArray] = {}
        for conv in self.convs:
            for q in conv.queries:
                v = np.asarray(self.embedder.embed([q.text])[0], dtype=np.float64)
                self.qvec[q.text] = v / np.linalg.norm(v)
        self._memo: dict[tuple[str, int], FloatArray] = {}

    def matrix(self, conv: lr.Conv) -> FloatArray:
        matrix = conv.ranker.structure._matrix  # built when the signals were computed
        assert matrix is not None
        return matrix

    def memo(self, name: str, conv: lr.Conv, make: Callable[[], FloatArray]) -> FloatArray:
        key = (name, id(conv))
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def run(self, orderer: Orderer) -> tuple[FloatArray, float]:
        """Rows (conversation, category, recall@10, recall@1024tok) and ms per question."""
        rows: list[tuple[float, float, float, float]] = []
        start = time.perf_counter()
        for ci, conv in enumerate(self.convs):
            for q in conv.queries:
                order = orderer(conv, q)[:120]
                pos = np.flatnonzero(np.isin(order, q.gold))
                fit = int(np.searchsorted(np.cumsum(conv.tokens[order]), 1024, side="right"))
                n = len(q.gold)
                rows.append((ci, q.category, (pos < 10).sum() / n, (pos < fit).sum() / n))
        ms = 1000 * (time.perf_counter() - start) / len(rows)
        return np.asarray(rows, dtype=np.float64), ms


def order_of(scores: FloatArray) -> IntArray:
    return np.lexsort((np.arange(len(scores)), -scores)).astype(np.int64)


def base(conv: lr.Conv, q: lr.Query) -> IntArray:
    return order_of(conv.ranker.combine(q.signals))


def leave_one_out(per_setting: dict[str, FloatArray], n_convs: int) -> tuple[FloatArray, list[str]]:
    chosen: list[FloatArray] = []
    picks: list[str] = []
    for held in range(n_convs):
        best = max(
            per_setting,
            key=lambda n: float(per_setting[n][per_setting[n][:, 0] != held][:, 2:].mean()),
        )
        picks.append(best)
        rows = per_setting[best]
        chosen.append(rows[rows[:, 0] == held])
    return np.concatenate(chosen), picks


def line(name: str, rows: FloatArray, ms: float | None) -> str:
    cells = [f"{rows[:, 2].mean():.3f} / {rows[:, 3].mean():.3f}"]
    for cat in CATEGORY:
        mine = rows[rows[:, 1] == cat]
        cells.append(f"{mine[:, 2].mean():.3f} / {mine[:, 3].mean():.3f}")
    cost = "" if ms is None else f"{ms:.1f}"
    return f"| {name} | " + " | ".join(cells) + f" | {cost} |"


# -- the families ---------------------------------------------------------------------


def prf_vector(lab: Lab, m: int, beta: float) -> Orderer:
    def order(conv: lr.Conv, q: lr.Query) -> IntArray:
        mat = lab.matrix(conv)
        top = base(conv, q)[:m]
        q2 = lab.qvec[q.text] + beta * mat[top].mean(axis=0)
        sem = mat @ (q2 / np.linalg.norm(q2))
        return order_of(conv.ranker.combine(dataclasses.replace(q.signals, semantic=sem)))

    return order


def prf_keyword(lab: Lab, m: int, n: int, w: float, entities: bool = False) -> Orderer:
    capital = re.compile(r"\b[A-Z][a-z]{2,}\b")

    def order(conv: lr.Conv, q: lr.Query) -> IntArray:
        ranker, st = conv.ranker, conv.ranker.structure
        bm = ranker.bm25
        top = base(conv, q)[:m]
        asked = set(bm.query_terms(q.text)) | ranker._name_terms
        allowed: set[str] | None = None
        if entities:
            allowed = set()
            for i in top:
                body = st.candidates[i].text.split(":", 1)[-1]
                for word in capital.findall(body):
                    allowed.update(ranker.analyzer.terms(word))
        weight: dict[str, float] = {}
        for i in top:
            for term, tf in bm._doc_terms[st.ids[i]].items():
                if term not in asked and (allowed is None or term in allowed):
                    weight[term] = weight.get(term, 0.0) + tf * bm.idf(term)
        terms = sorted(weight, key=lambda t: -weight[t])[:n]
        extra = bm.score_terms(terms)
        more = np.fromiter((extra.get(d, 0.0) for d in st.ids), np.float64, len(st.ids))
        sig = dataclasses.replace(q.signals, keyword=q.signals.keyword + w * more)
        return order_of(ranker.combine(sig))

    return order


def mmr(lam: float, free: int, pool: int = 60) -> Orderer:
    def order(conv: lr.Conv, q: lr.Query) -> IntArray:
        session = conv.ranker.structure.session
        scores = conv.ranker.combine(q.signals)
        ranked = order_of(scores)
        left = [int(i) for i in ranked[:pool]]
        seen: dict[int, int] = {}
        out: list[int] = []
        while left:
            pick = max(
                left,
                key=lambda i: scores[i] * lam ** max(0, seen.get(int(session[i]), 0) - free + 1),
            )
            left.remove(pick)
            out.append(pick)
            seen[int(session[pick])] = seen.get(int(session[pick]), 0) + 1
        return np.asarray(out + [int(i) for i in ranked[pool:]], dtype=np.int64)

    return order


_SENTENCE = re.compile(r"[^.!?]*[.!?]+|[^.!?]+$")


def question_share(conv: lr.Conv) -> FloatArray:
    shares = []
    for c in conv.ranker.structure.candidates:
        body = re.sub(r"\[image:.*?\]", "", c.text.split(":", 1)[-1])
        sentences = [s.strip() for s in _SENTENCE.findall(body) if s.strip()]
        total = sum(len(s) for s in sentences) or 1
        shares.append(sum(len(s) for s in sentences if s.endswith("?")) / total)
    return np.asarray(shares, dtype=np.float64)


def question_penalty(lab: Lab, p: float) -> Orderer:
    def order(conv: lr.Conv, q: lr.Query) -> IntArray:
        share = lab.memo("qshare", conv, lambda: question_share(conv))
        return order_of(conv.ranker.combine(q.signals) * (1 - p * share))

    return order


def context_vector(lab: Lab, a: float, mix: float) -> Orderer:
    def make(conv: lr.Conv) -> FloatArray:
        st, mat = conv.ranker.structure, lab.matrix(conv)
        ctx = mat.copy()
        for links in (st.prev[0], st.next[0]):
            ok = links >= 0
            ctx[ok] += a * mat[links[ok]]
        out: FloatArray = ctx / (np.linalg.norm(ctx, axis=1, keepdims=True) + 1e-12)
        return out

    def order(conv: lr.Conv, q: lr.Query) -> IntArray:
        ctx = lab.memo(f"ctx{a}", conv, lambda: make(conv))
        sem = (1 - mix) * q.signals.semantic + mix * (ctx @ lab.qvec[q.text])
        return order_of(conv.ranker.combine(dataclasses.replace(q.signals, semantic=sem)))

    return order


def session_centroid(lab: Lab, w: float) -> Orderer:
    def make(conv: lr.Conv) -> FloatArray:
        st, mat = conv.ranker.structure, lab.matrix(conv)
        cent = np.zeros((st.n_sessions, mat.shape[1]))
        np.add.at(cent, st.session, mat)
        out: FloatArray = cent / (np.linalg.norm(cent, axis=1, keepdims=True) + 1e-12)
        return out

    def order(conv: lr.Conv, q: lr.Query) -> IntArray:
        cent = lab.memo("centroid", conv, lambda: make(conv))
        sim = normalize_array(cent @ lab.qvec[q.text], "minmax")
        scores = conv.ranker.combine(q.signals)
        return order_of(scores * (1 + w * sim[conv.ranker.structure.session]))

    return order


def power(signal: str, p: float) -> Orderer:
    def order(conv: lr.Conv, q: lr.Query) -> IntArray:
        raw = q.signals.semantic if signal == "semantic" else q.signals.keyword
        norm = normalize_array(raw, "minmax" if signal == "semantic" else "max") ** p
        sig = (
            dataclasses.replace(q.signals, semantic=norm)
            if signal == "semantic"
            else dataclasses.replace(q.signals, keyword=norm)
        )
        return order_of(conv.ranker.combine(sig))

    return order


def name_stripped(lab: Lab, mix: float) -> Orderer:
    def order(conv: lr.Conv, q: lr.Query) -> IntArray:
        text = q.text
        for name in mentioned_speakers(text, conv.ranker.structure.names):
            text = re.sub(r"\b" + re.escape(name) + r"(['\u2019]s)?\b", "", text)
        vec = np.asarray(lab.embedder.embed([re.sub(r"\s+", " ", text).strip()])[0], np.float64)
        sem2 = lab.matrix(conv) @ (vec / np.linalg.norm(vec))
        sem = (1 - mix) * q.signals.semantic + mix * sem2
        return order_of(conv.ranker.combine(dataclasses.replace(q.signals, semantic=sem)))

    return order


def families(lab: Lab) -> dict[str, dict[str, Orderer]]:
    return {
        "prf-vector": {
            f"m={m} beta={b}": prf_vector(lab, m, b) for m in (3, 5, 10) for b in (0.3, 0.6, 1.0)
        },
        "prf-keyword": {
            f"m={m} n={n} w={w}": prf_keyword(lab, m, n, w)
            for m in (2, 3)
            for n in (3, 5, 10)
            for w in (0.1, 0.2, 0.4)
        },
        "prf-entity": {
            f"m={m} n={n} w={w}": prf_keyword(lab, m, n, w, entities=True)
            for m in (3, 5)
            for n in (5, 10)
            for w in (0.3, 0.6)
        },
        "mmr": {f"free={f} lam={lam}": mmr(lam, f) for f in (1, 3) for lam in (0.95, 0.8)},
        "question-penalty": {f"p={p}": question_penalty(lab, p) for p in (0.1, 0.2, 0.3, 0.5)},
        "context-vector": {
            f"a={a} mix={m}": context_vector(lab, a, m) for a in (0.3, 0.6) for m in (0.3, 0.5)
        },
        "session-centroid": {f"w={w}": session_centroid(lab, w) for w in (0.1, 0.2, 0.4)},
        "semantic-power": {f"p={p}": power("semantic", p) for p in (0.7, 1.5, 2.0)},
        "keyword-power": {f"p={p}": power("keyword", p) for p in (0.7, 1.5)},
        "name-stripped": {f"mix={m}": name_stripped(lab, m) for m in (0.3, 0.5, 0.7, 1.0)},
    }


def main(argv: Sequence[str] | None = None) -> None:
    wanted = list(sys.argv[1:] if argv is None else argv)
    lab = Lab()
    every = families(lab)
    unknown = [w for w in wanted if w not in every]
    if unknown:
        raise SystemExit(f"unknown families {unknown}; known: {', '.join(every)}")
    base_rows, base_ms = lab.run(base)
    head = " | ".join(f"{c} R@10 / R@1024" for c in CATEGORY.values())
    print(f"| setting | overall R@10 / R@1024 | {head} | ms/question |")
    print("|---" * (3 + len(CATEGORY)) + "|")
    print(line("library ranking", base_rows, base_ms))
    for family in wanted or list(every):
        per_setting = {"unchanged": base_rows}
        costs: list[float] = []
        for name, orderer in every[family].items():
            rows, ms = lab.run(orderer)
            per_setting[name] = rows
            costs.append(ms)
        best = max(per_setting, key=lambda n: float(per_setting[n][:, 2:].mean()))
        print(line(f"{family}, best on all 7 ({best})", per_setting[best], None))
        held, picks = leave_one_out(per_setting, len(lab.convs))
        print(line(f"{family}, LOO", held, float(np.mean(costs))))
        print(f"<!-- {family} LOO picks: {'; '.join(picks)} -->", flush=True)
    lab.embedder.save()


if __name__ == "__main__":
    main()
