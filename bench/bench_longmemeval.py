"""LongMemEval recall, session and turn level: memorybank's hybrid search against BM25.

    python -m bench longmemeval [--data PATH] [--per-type N]
    python -m bench.bench_longmemeval [--data PATH] [--per-type N] [--emb-cache PATH]
        [--types multi-session,temporal-reasoning]

Data: LongMemEval_S (Wu et al., ICLR 2025), by default the dev split in
``../shared/data/longmemeval/longmemeval_s_dev.json.gz`` next to the checkout (never
in the repository); without it the benchmark says so and skips.

Per question, in a fresh in-memory SQLite store: each haystack session one thread
of one user (``agent_id="longmemeval"``), its turns one ``entries.add_many`` (role
as in the data, the turn's index in ``metadata["turn"]``) dated by the haystack's
date; then ``memory.search(question, user_id=..., agent_id=..., k=30)`` at user
scope, default options, the local all-MiniLM-L6-v2 embedder. The question's date is
not passed: the search has no reference time (see ``docs/search.md``). ``k=30`` asks
the store for the same candidates as any ``k <= 33``, so its first 10 hits are a
``k=10`` search's. BM25 in the same run: memorybank's ``BM25Index`` (stop words
removed, stemmed) over every turn of the question's haystack.

Metrics, the benchmark's own (``src/retrieval/eval_utils.py``): sessions ranked by
their first turn in the turn ranking; ``recall_any@k`` (an evidence session among
the first k), ``recall_all@k`` (every one), ``NDCG@k`` (binary relevance); turn
``recall_any@10`` over the turns marked ``has_answer``. Per question type and
overall, the mean over questions.

Embeddings are kept in ``--emb-cache`` (default
``~/.cache/memorybank-bench/longmemeval-<backend>.npz``, keyed by the SHA-256 of the
text, tied to the model and backend), so a re-run embeds nothing but the questions
it has not seen and costs the writes and the searches.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import gzip
import hashlib
import itertools
import json
import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo_memorybank import cap_candidates, parse_candidates
from memorybank import Memory
from memorybank.embeddings import Embedder, LocalEmbedder
from memorybank.recall import BM25Index

__all__ = ["evaluate_question", "load", "main", "parse_date", "ranked_sessions", "session_places"]

AGENT = "longmemeval"
USER = "longmemeval-user"
FILE = "longmemeval_s_dev.json.gz"
SEARCH_K = 30
#: ``--candidates N[/M]``: the candidates of a ``k = 10`` search at
#: ``HYBRID_CANDIDATES = N`` (``k = 30`` reads ``max(N, 90)``), or N full-text and M
#: vector ones, all of them ranked.
candidates: tuple[int, int] | None = None
KS = (5, 10)
TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)


def default_data() -> Path:
    """``shared/data/longmemeval/`` beside the checkout (a worktree may sit deeper)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        path = parent / "shared" / "data" / "longmemeval" / FILE
        if path.exists():
            return path
    return here.parents[2] / "shared" / "data" / "longmemeval" / FILE


def parse_date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` -> 2023-05-20 02:21 UTC."""
    day, _, clock = text.partition(" (")
    clock = clock.partition(") ")[2] or "00:00"
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def load(path: Path, per_type: int = 0, types: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The questions (abstention ones left out), at most ``per_type`` of each type, only
    those of ``types`` when given."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        questions = [q for q in json.load(handle) if not q["question_id"].endswith("_abs")]
    if types:
        unknown = set(types) - set(TYPES)
        if unknown:
            raise SystemExit(f"unknown question types {sorted(unknown)}; known: {TYPES}")
        questions = [q for q in questions if q["question_type"] in types]
    if per_type:
        seen: dict[str, int] = {}
        kept = []
        for q in questions:
            seen[q["question_type"]] = seen.get(q["question_type"], 0) + 1
            if seen[q["question_type"]] <= per_type:
                kept.append(q)
        questions = kept
    return questions


class CachedEmbedder:
    """An embedder whose vectors live in an ``.npz`` outside the repository, keyed by
    the SHA-256 of the text (no text is stored); same ``model_id`` and vectors as the
    embedder it wraps."""

    def __init__(self, inner: Embedder, path: Path | None) -> None:
        self.inner = inner
        self.path = path
        self.backend = str(getattr(inner, "backend", ""))
        self.rows: dict[str, int] = {}
        self.blocks: list[np.ndarray] = []
        self._fresh: list[list[float]] = []
        self._dirty = False
        if path is not None and path.exists():
            data = np.load(path)
            if str(data["model_id"]) == inner.model_id and str(data["backend"]) == self.backend:
                self.blocks.append(np.asarray(data["vectors"], dtype=np.float32))
                self.rows = {str(key): i for i, key in enumerate(data["keys"].tolist())}

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _matrix(self) -> np.ndarray:
        if self._fresh:
            self.blocks.append(np.asarray(self._fresh, dtype=np.float32))
            self._fresh = []
        if len(self.blocks) > 1:
            self.blocks = [np.concatenate(self.blocks)]
        return self.blocks[0] if self.blocks else np.zeros((0, self.dimensions), np.float32)

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct texts of ``texts`` the cache lacks."""
        out: dict[str, str] = {}
        for text in texts:
            key = self.key(text)
            if key not in self.rows:
                out.setdefault(key, text)
        return list(out.values())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [self.key(t) for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.rows}
        if todo:
            fresh = self.inner.embed(list(todo.values()))
            base = len(self.rows)
            for i, key in enumerate(todo):
                self.rows[key] = base + i
            self._fresh.extend(fresh)
            self._dirty = True
        matrix = self._matrix()
        return [matrix[self.rows[k]].tolist() for k in keys]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)

    def save(self) -> None:
        if not self._dirty or self.path is None:
            return
        matrix = self._matrix()
        keys = sorted(self.rows, key=self.rows.__getitem__)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(
            tmp,
            model_id=np.array(self.inner.model_id),
            backend=np.array(self.backend),
            keys=np.array(keys),
            vectors=matrix,
        )
        tmp.replace(self.path)
        self._dirty = False


def _texts(question: dict[str, Any]) -> list[str]:
    return [t["content"] for s in question["haystack_sessions"] for t in s if t["content"]]


def ranked_sessions(turns: Sequence[tuple[str, int]]) -> list[str]:
    """Sessions in the order of their first turn in a turn ranking."""
    return list(dict.fromkeys(session for session, _ in turns))


def _dcg(relevances: Sequence[float]) -> float:
    # the benchmark's form: rel_1 + sum_{i >= 2} rel_i / log2(i)
    return sum(r if i == 0 else r / math.log2(i + 1) for i, r in enumerate(relevances))


def scores(
    turns: Sequence[tuple[str, int]], gold_sessions: set[str], gold_turns: set[tuple[str, int]]
) -> dict[str, float]:
    """The benchmark's metrics for one question's turn ranking."""
    sessions = ranked_sessions(turns)
    out: dict[str, float] = {}
    for k in KS:
        top = sessions[:k]
        found = gold_sessions.intersection(top)
        out[f"any@{k}"] = float(bool(found))
        out[f"all@{k}"] = float(found == gold_sessions)
        ideal = _dcg([1.0] * min(k, len(gold_sessions)))
        out[f"ndcg@{k}"] = _dcg([1.0 if s in gold_sessions else 0.0 for s in top]) / ideal
    if gold_turns:
        out["turn@10"] = float(bool(gold_turns.intersection(turns[:10])))
    return out


def _sessions(question: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    return list(zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True))


def _bm25(question: dict[str, Any]) -> list[tuple[str, int]]:
    index = BM25Index()
    for sid, session in _sessions(question):
        for j, turn in enumerate(session):
            if turn["content"]:
                index.add(f"{j}\x1f{sid}", turn["content"])
    ranked = index.search(question["question"], limit=SEARCH_K)
    out = []
    for doc, _ in ranked:
        position, _, sid = doc.partition("\x1f")
        out.append((sid, int(position)))
    return out


def evaluate_question(
    question: dict[str, Any], embedder: Embedder | None, url: str = "sqlite://"
) -> tuple[dict[str, dict[str, float]], float, float, list[tuple[str, int]]]:
    """One question: its metrics per system, the write time and the search time (s), and
    memorybank's turn ranking (session id, turn index)."""
    gold_sessions = set(question["answer_session_ids"])
    gold_turns = {
        (sid, j)
        for sid, session in _sessions(question)
        for j, turn in enumerate(session)
        if turn.get("has_answer")
    }
    memory = Memory(url, embedder=embedder)
    if candidates is not None:
        cap_candidates(memory.store, *candidates)
    try:
        start = time.perf_counter()
        session_of: dict[str, str] = {}
        for sid, date, session in zip(
            question["haystack_session_ids"],
            question["haystack_dates"],
            question["haystack_sessions"],
            strict=True,
        ):
            thread = memory.threads.create(user_id=USER, agent_id=AGENT, title=sid)
            session_of[thread.id] = sid
            messages = [
                {"role": turn["role"], "content": turn["content"], "metadata": {"turn": j}}
                for j, turn in enumerate(session)
                if turn["content"]
            ]
            if messages:
                memory.entries.add_many(thread.id, messages, created_at=parse_date(date))
        written = time.perf_counter() - start
        start = time.perf_counter()
        hits = memory.search(question["question"], user_id=USER, agent_id=AGENT, k=SEARCH_K)
        searched = time.perf_counter() - start
    finally:
        memory.close()
    turns = [
        (session_of[hit.entry.thread_id], int(hit.entry.metadata["turn"]))
        for hit in hits
        if hit.entry is not None
    ]
    return (
        {
            "memorybank": scores(turns, gold_sessions, gold_turns),
            "BM25": scores(_bm25(question), gold_sessions, gold_turns),
        },
        written,
        searched,
        turns,
    )


def session_places(question: dict[str, Any], turns: Sequence[tuple[str, int]]) -> str:
    """Each evidence session's place among the ranked sessions ("-" when none of its turns
    is among the hits), and whether its evidence turns are: ``answer_x: 3 (turn 0 at 12)``."""
    sessions = ranked_sessions(turns)
    where = {turn: i + 1 for i, turn in enumerate(turns)}
    parts = []
    for sid, session in _sessions(question):
        if sid not in question["answer_session_ids"]:
            continue
        place = sessions.index(sid) + 1 if sid in sessions else "-"
        evidence = [
            f"turn {j} at {where.get((sid, j), '-')}"
            for j, turn in enumerate(session)
            if turn.get("has_answer")
        ]
        parts.append(f"{sid}: {place}" + (f" ({', '.join(evidence)})" if evidence else ""))
    return "; ".join(parts)


COLUMNS = ("any@5", "all@5", "any@10", "all@10", "ndcg@5", "ndcg@10", "turn@10")


def report(rows: list[tuple[str, dict[str, dict[str, float]]]]) -> str:
    """The markdown table: per type and overall, both systems."""
    lines = [
        "| type | n | system | session any@5 | all@5 | any@10 | all@10 | NDCG@5 | NDCG@10"
        " | turn any@10 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    kinds = [t for t in TYPES if any(kind == t for kind, _ in rows)]
    kinds += sorted({kind for kind, _ in rows} - set(kinds))
    for kind in [*kinds, "overall"]:
        mine = [m for t, m in rows if kind in (t, "overall")]
        for system in ("memorybank", "BM25"):
            cells = []
            for column in COLUMNS:
                values = [m[system][column] for m in mine if column in m[system]]
                cells.append(f"{sum(values) / len(values):.3f}" if values else "-")
            name = f"**{kind}**" if kind == "overall" else kind
            lines.append(f"| {name} | {len(mine)} | {system} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 questions of each type")
    parser.add_argument("--data", type=Path, default=None, help=f"the {FILE} to read")
    parser.add_argument("--per-type", type=int, default=0, help="at most N of each type")
    parser.add_argument(
        "--types",
        default="",
        help="only these question types, comma-separated (e.g. multi-session,temporal-reasoning)",
    )
    parser.add_argument(
        "--emb-cache",
        type=Path,
        default=Path.home() / ".cache" / "memorybank-bench" / "longmemeval.npz",
        help="the embeddings' cache (outside the repository)",
    )
    parser.add_argument("--no-cache", action="store_true", help="embed everything again")
    parser.add_argument("--backend", default="auto", help="the LocalEmbedder backend")
    parser.add_argument(
        "--no-embedder",
        action="store_true",
        help="no embedder: the hybrid search on words and structure alone (embeds nothing)",
    )
    parser.add_argument(
        "--misses",
        action="store_true",
        help="list the turn misses and the session all@5 misses (each evidence session's place)",
    )
    parser.add_argument(
        "--candidates",
        type=parse_candidates,
        default=None,
        help="dev: N or N/M, the candidates of a k=10 search at HYBRID_CANDIDATES=N (or N"
        " full-text and M vector ones), all ranked",
    )
    args = parser.parse_args(argv)
    global candidates
    candidates = args.candidates
    path = args.data or default_data()
    if not path.exists():
        print(f"skipped: LongMemEval data not found at {path} (see --data)")
        return
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    questions = load(path, args.per_type or (2 if args.quick else 0), types)
    embedder: CachedEmbedder | None = None
    embed_s = 0.0
    if args.no_embedder:
        print(f"{len(questions)} questions from {path}; no embedder")
    else:
        inner = LocalEmbedder(backend=args.backend)
        cache_path = None if args.no_cache else args.emb_cache
        if cache_path is not None:
            cache_path = cache_path.with_name(
                f"{cache_path.stem}-{inner.backend}{cache_path.suffix}"
            )
        embedder = CachedEmbedder(inner, cache_path)
        # questions of every type in turn, so an interrupted first run leaves a cache
        # that serves ``--per-type N`` for the first N of each type
        by_type: dict[str, list[dict[str, Any]]] = {}
        for q in questions:
            by_type.setdefault(q["question_type"], []).append(q)
        turns = [q for group in itertools.zip_longest(*by_type.values()) for q in group if q]
        todo = embedder.missing([t for q in turns for t in _texts(q)])
        print(
            f"{len(questions)} questions from {path}; embedder {inner.model_id}"
            f" ({inner.backend}); {len(todo):,} texts to embed"
            + (f", cache {cache_path}" if cache_path else "")
        )
        start = time.perf_counter()
        for at in range(0, len(todo), 512):
            embedder.embed(todo[at : at + 512])
            embedder.save()
            print(f"  embedded {min(at + 512, len(todo)):,}/{len(todo):,}", flush=True)
        embed_s = time.perf_counter() - start
        embedder.embed([q["question"] for q in questions])
        embedder.save()
    rows: list[tuple[str, dict[str, dict[str, float]]]] = []
    write_s = search_s = 0.0
    for q in questions:
        metrics, written, searched, ranking = evaluate_question(q, embedder)
        write_s += written
        search_s += searched
        rows.append((q["question_type"], metrics))
        mine = metrics["memorybank"]
        if args.misses and not mine.get("turn@10", 1.0):
            print(f"  miss {q['question_id']} {q['question_type']}: {q['question']}")
        if args.misses and not mine["all@5"]:
            print(f"  all@5 miss {q['question_id']} {q['question_type']}: {q['question']}")
            print(f"    {session_places(q, ranking)}")
    print(report(rows))
    n = len(questions)
    print(
        f"embedding {embed_s:.0f} s; writes {write_s / n * 1000:.0f} ms a question"
        f" (about {sum(len(_texts(q)) for q in questions) / n:.0f} turns);"
        f" search {search_s / n * 1000:.1f} ms mean"
        + ("" if embedder is None else " (question embeddings cached)")
    )


if __name__ == "__main__":
    main()
