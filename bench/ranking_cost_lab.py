"""Dev only (issue 40): what each signal of the hybrid ranking costs in CPU and earns in recall.

    python -m bench.ranking_cost_lab cpu [--configs default,lean] [--searches 200] [--rounds 2]
    python -m bench.ranking_cost_lab attribute [--configs default]
    python -m bench.ranking_cost_lab lme [--configs ...] [--types T,..]
    python -m bench.ranking_cost_lab locomo [--configs ...] [--fallback-k 33]

(from a checkout, ``PYTHONPATH=src:.``). A configuration (``CONFIGS``) is the
``SearchOptions`` passed to ``memory.search(options=...)`` plus, for the leaner ones, the
search path's module constants (``_EXPAND_HITS = 0``: no neighbour windows read;
``HYBRID_CANDIDATES``: candidates asked of each index) and ``LeanRanker`` in place of
``HybridRanker`` (BM25 over the candidates + cosine, normalised and added: no conversation
structure, no speaker/date/time/role masks, no feedback words), patched in both the async
and the sync search modules. Nothing under ``src/`` changes.

* ``cpu``: hot user-scope searches on the ``bench.profile_search`` SQLite store (20 users x
  2,000 entries at ``--path``, built by ``python -m bench.profile_search`` when absent; this
  does not build it), ``k=10``, the picks of ``profile_search._picks``. Each configuration:
  one unmeasured pass over the picks (text memo hot), then ``--rounds`` measured passes
  (configurations interleaved); CPU = ``time.process_time`` per search of the best round,
  p50 = that round's median wall time.
* ``attribute``: the same searches with timers (``time.thread_time``, exclusive of timed
  callees, per thread) on the ranking's steps and the store's reads; each group's ms per
  search and share of the timed run's process CPU (the rest: the event loop, the search
  path's own Python, usage writes).
* ``lme``: LongMemEval_S dev without the embedder (with ``--emb-cache PATH [--backend B]``:
  with it, the vectors read from the bench's cache, which this never writes),
  ``bench_longmemeval``'s ingestion and metrics; each question is written once and
  searched with every configuration.
* ``locomo``: LoCoMo dev at user scope without the embedder (or ``--emb-cache``, as for
  ``lme``; ``locomo_memorybank``'s ingestion and the shared harness), every configuration
  on the same store; with
  ``--fallback-k 33`` (default) each search asks for ``k <= 33`` (a ``k = 10`` search's
  candidates), 0: the harness's k (every turn a candidate).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import asyncio
import functools
import importlib.util
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from memorybank import AsyncMemory, Memory
from memorybank.recall import hybrid
from memorybank.recall._async import search as async_search
from memorybank.recall._sync import search as sync_search
from memorybank.recall.conversation import Candidate, ConversationStructure
from memorybank.recall.features import text_features
from memorybank.recall.fusion import normalize_array
from memorybank.recall.hybrid import HybridRanker, HybridWeights, SearchOptions, Signals
from memorybank.rules import validate
from memorybank.stores.keyword.text import Analyzer, default_analyzer

# -- the lean ranker ----------------------------------------------------------------------


class _LeanStructure:
    """What ``LeanRanker`` keeps of ``ConversationStructure``: ids, names, the cosine."""

    cosine = ConversationStructure.cosine

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        self.candidates = list(candidates)
        self.ids = [c.id for c in self.candidates]
        self.names = list(dict.fromkeys(c.name for c in self.candidates if c.name))
        self._matrix: Any = None
        self._has_vec: Any = None

    def __len__(self) -> int:
        return len(self.candidates)


class LeanRanker(HybridRanker):
    """keyword * max_norm(BM25) + semantic * minmax_norm(cosine), nothing else (the speakers'
    names still left out of the query's terms, as the full ranker does)."""

    def __init__(
        self,
        candidates: Sequence[Candidate],
        options: SearchOptions | None = None,
        analyzer: Analyzer | None = None,
    ) -> None:
        self.options = options or SearchOptions()
        self.analyzer = analyzer or default_analyzer()
        self.features = text_features(self.analyzer, [c.text for c in candidates])
        self.structure = _LeanStructure(candidates)  # type: ignore[assignment]
        self._bm25 = None
        self._name_terms: set[str] = set()
        for name in self.structure.names:
            self._name_terms.update(self.analyzer.terms(name))

    def signals(
        self,
        query: str,
        query_vector: Any = None,
        keyword_scores: Mapping[str, float] | None = None,
        semantic_scores: Mapping[str, float] | None = None,
    ) -> Signals:
        n = len(self.structure)
        kw = self.keyword_scores(query)
        if query_vector is not None:
            sem, mask = self.structure.cosine(query_vector)
        else:
            sem, mask = np.zeros(n), np.zeros(n, dtype=bool)
        zero = np.zeros(n)
        return Signals(kw, sem, mask, zero, zero, zero, zero)

    def combine_parts(self, sig: Signals, weights: HybridWeights | None = None) -> Any:
        w = weights or self.options.weights
        rel = w.keyword * normalize_array(sig.keyword, self.options.keyword_normalization)
        if w.semantic and sig.semantic_mask.any():
            sem = np.zeros(len(rel))
            sem[sig.semantic_mask] = self._semantic_norm(sig.semantic[sig.semantic_mask])
            rel = rel + w.semantic * sem
        return rel, rel


# -- configurations -----------------------------------------------------------------------

_D = SearchOptions()
_LEAN_WEIGHTS = HybridWeights(
    keyword=1.0,
    semantic=1.2,
    after=(),
    question_after=0.0,
    before=(),
    session=0.0,
    speaker=0.0,
    date=0.0,
    time_word=0.0,
    role=0.0,
    feedback=0.0,
)
_LEAN = SearchOptions(weights=_LEAN_WEIGHTS, context_strength=0.0)
_NO_WINDOWS = {"_EXPAND_HITS": 0}


@dataclass(frozen=True)
class Config:
    options: SearchOptions | None = None
    knobs: Mapping[str, int] = field(default_factory=dict)
    lean: bool = False  # LeanRanker
    cap: int | None = None  # candidates asked of each index, whatever k


CONFIGS: dict[str, Config] = {
    "default": Config(),
    # every signal, fewer candidates asked of each index (the neighbours still read)
    "default-cap50": Config(None, {"HYBRID_CANDIDATES": 50}, cap=50),
    "default-cap30": Config(None, {"HYBRID_CANDIDATES": 30}, cap=30),
    # every weight but keyword/semantic 0, through the library's own ranker and path
    "lean-options": Config(_LEAN),
    # the same scores on a lean path: no neighbour windows read, LeanRanker
    "lean": Config(_LEAN, _NO_WINDOWS, lean=True),
    "lean-cap30": Config(_LEAN, {**_NO_WINDOWS, "HYBRID_CANDIDATES": 30}, lean=True, cap=30),
    "lean-cap50": Config(_LEAN, {**_NO_WINDOWS, "HYBRID_CANDIDATES": 50}, lean=True, cap=50),
    # the lean fusion with the speakers' names kept among the query's words (the full
    # ranker drops them because its speaker boost stands for them)
    "lean-keep-names": Config(
        replace(_LEAN, drop_speaker_names_from_keywords=False), _NO_WINDOWS, lean=True
    ),
    # one group off at a time
    "no-context": Config(_D.with_weights(after=(), before=(), question_after=0.0), _NO_WINDOWS),
    "no-context-keep-windows": Config(_D.with_weights(after=(), before=(), question_after=0.0)),
    "no-windows": Config(None, _NO_WINDOWS),
    "no-feedback-no-windows": Config(_D.with_weights(feedback=0.0), _NO_WINDOWS),
    "no-feedback-no-session": Config(_D.with_weights(feedback=0.0, session=0.0)),
    "no-session": Config(_D.with_weights(session=0.0)),
    "no-feedback": Config(_D.with_weights(feedback=0.0)),
    "no-text-signals": Config(_D.with_weights(speaker=0.0, date=0.0, time_word=0.0, role=0.0)),
    "no-speaker": Config(_D.with_weights(speaker=0.0)),
    "no-date": Config(_D.with_weights(date=0.0)),
    "no-time-word": Config(_D.with_weights(time_word=0.0)),
    "no-role": Config(_D.with_weights(role=0.0)),
    # the lean fusion plus one group back
    "lean+context": Config(
        replace(_LEAN, context_strength=_D.context_strength).with_weights(
            after=_D.weights.after, before=_D.weights.before, question_after=0.7
        )
    ),
    "lean+session": Config(_LEAN.with_weights(session=0.8), _NO_WINDOWS),
    "lean+feedback": Config(_LEAN.with_weights(feedback=0.4), _NO_WINDOWS),
    "no-feedback-cap30": Config(_D.with_weights(feedback=0.0), {"HYBRID_CANDIDATES": 30}, cap=30),
    # candidates of 30 per index, no neighbour windows read, the cheap signals kept
    "no-feedback-no-windows-cap30": Config(
        _D.with_weights(feedback=0.0), {**_NO_WINDOWS, "HYBRID_CANDIDATES": 30}, cap=30
    ),
    "lean+text-signals-cap30": Config(
        _LEAN.with_weights(speaker=0.3, date=1.0, time_word=0.3, role=1.0),
        {**_NO_WINDOWS, "HYBRID_CANDIDATES": 30},
        cap=30,
    ),
    "lean+speaker": Config(_LEAN.with_weights(speaker=0.3), _NO_WINDOWS),
    "lean+text-signals": Config(
        _LEAN.with_weights(speaker=0.3, date=1.0, time_word=0.3, role=1.0), _NO_WINDOWS
    ),
}

_MODULES = (async_search, sync_search)
#: candidates asked of each index (``Config.cap``), read by the capped store methods
_CAP: list[int | None] = [None]


@contextmanager
def applied(config: Config) -> Iterator[None]:
    """The configuration's module constants and ranker in both search modules, and its cap."""
    saved: list[tuple[Any, str, Any]] = []
    changes: dict[str, Any] = dict(config.knobs)
    if config.lean:
        changes["HybridRanker"] = LeanRanker
    for module in _MODULES:
        for name, value in changes.items():
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, value)
    _CAP[0] = config.cap
    try:
        yield
    finally:
        _CAP[0] = None
        for module, name, value in reversed(saved):
            setattr(module, name, value)


def cap_store(store: Any) -> None:
    """The store's text and vector searches asked for at most ``_CAP`` candidates (when
    set), as ``locomo_memorybank.cap_candidates`` does once for all."""
    for name in ("text_search", "vector_search"):
        method = getattr(store, name)

        def capped(*args: Any, _method: Any = method, k: int, **kw: Any) -> Any:
            return _method(*args, k=k if _CAP[0] is None else min(k, _CAP[0]), **kw)

        setattr(store, name, capped)


def _chosen(text: str) -> list[str]:
    names = [c.strip() for c in text.split(",") if c.strip()] or list(CONFIGS)
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configurations {unknown}: {', '.join(CONFIGS)}")
    return names


def _load() -> str:
    try:
        return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "load ?"


# -- CPU ----------------------------------------------------------------------------------

_TLS = threading.local()
_TIMES: dict[str, float] = defaultdict(float)
_CALLS: dict[str, int] = defaultdict(int)
_LOCK = threading.Lock()
Group = str | Callable[[list[list[Any]], tuple[Any, ...]], str]


def _timed(fn: Callable[..., Any], group: Group) -> Callable[..., Any]:
    """``fn`` timed by this thread's CPU time into ``group``, less its timed callees'."""

    @functools.wraps(fn)
    def timed(*args: Any, **kw: Any) -> Any:
        stack: list[list[Any]] | None = getattr(_TLS, "stack", None)
        if stack is None:
            stack = _TLS.stack = []
        name = group if isinstance(group, str) else group(stack, args)
        frame: list[Any] = [name, 0.0]
        stack.append(frame)
        start = time.thread_time()
        try:
            return fn(*args, **kw)
        finally:
            spent = time.thread_time() - start
            stack.pop()
            if stack:
                stack[-1][1] += spent
            with _LOCK:
                _TIMES[name] += spent - frame[1]
                _CALLS[name] += 1

    return timed


def _store_group(stack: list[list[Any]], args: tuple[Any, ...]) -> str:
    fn = args[-1]
    where = getattr(fn, "__qualname__", "?").replace(".<locals>", "")
    return f"store read: {where}"


def _combine_group(stack: list[list[Any]], args: tuple[Any, ...]) -> str:
    # the first ranking inside ``signals`` picks the feedback words
    return "feedback words" if stack[:-1] and stack[-2][0] == "signals (rest)" else "combine (rest)"


@contextmanager
def timers(store_class: type) -> Iterator[None]:
    """Timers on the ranking's steps and the store's reads (restored on exit)."""
    targets: list[tuple[Any, str, Group]] = [
        (store_class, "_read_snapshot", _store_group),
        (store_class, "_read", _store_group),
        (store_class, "_write", "store write (usage of the hits)"),
        (validate, "check_vector", "query vector check"),
        (hybrid, "text_features", "text analysis (memo)"),
        (ConversationStructure, "__init__", "structure (neighbours, sessions, names)"),
        (HybridRanker, "keyword_scores", "BM25 of the query"),
        (ConversationStructure, "cosine", "cosine"),
        (ConversationStructure, "speaker_mask", "speaker"),
        (ConversationStructure, "role_mask", "role"),
        (hybrid, "parse_date_spans", "date/time words"),
        (hybrid, "has_temporal_intent", "date/time words"),
        (hybrid, "date_match", "date/time words"),
        (HybridRanker, "feedback_scores", "feedback words"),
        (HybridRanker, "signals", "signals (rest)"),
        (HybridRanker, "combine_parts", _combine_group),
        (ConversationStructure, "spread", "context (neighbours)"),
        (ConversationStructure, "session_pool", "session pool"),
        (HybridRanker, "order", "order"),
        (HybridRanker, "__init__", "ranker init (rest)"),
        (LeanRanker, "__init__", "ranker init (rest)"),
        (LeanRanker, "signals", "signals (rest)"),
        (LeanRanker, "combine_parts", "combine (rest)"),
        (async_search, "_candidates", "candidates from rows"),
        (async_search, "_interleave", "fuse: interleave"),
    ]
    # a method is timed on the class that defines it (the store's is on a base class)
    owners = [
        (next(c for c in obj.__mro__ if name in c.__dict__) if isinstance(obj, type) else obj)
        for obj, name, _ in targets
    ]
    saved = [
        (owner, name, owner.__dict__[name])
        for owner, (_, name, _) in zip(owners, targets, strict=True)
    ]
    for (owner, name, value), (_, _, group) in zip(saved, targets, strict=True):
        setattr(owner, name, _timed(value, group))
    timed_candidates = async_search._candidates

    def candidates(*args: Any) -> list[Candidate]:
        out: list[Candidate] = timed_candidates(*args)
        _CALLS["(candidates ranked)"] += len(out)
        return out

    async_search._candidates = candidates  # type: ignore[assignment]
    original_offload = async_search.aoffload  # type: ignore[attr-defined]

    def offload(fn: Callable[[], Any]) -> Any:
        return original_offload(_timed(fn, "ranking loop (_rank, keep)"))

    async_search.aoffload = offload  # type: ignore[attr-defined]
    try:
        yield
    finally:
        async_search.aoffload = original_offload  # type: ignore[attr-defined]
        for obj, name, value in saved:
            setattr(obj, name, value)


async def _cpu(args: argparse.Namespace, attribute: bool) -> None:
    from bench.bench_search_scale import AGENT, Known, _one_blas_thread, queries
    from bench.profile_search import _picks

    _one_blas_thread()
    qtexts, qvecs = queries(512, seed=99)
    lookup = Known()
    lookup.fixed = dict(zip(qtexts, qvecs, strict=True))
    memory = AsyncMemory(f"sqlite:///{args.path}", embedder=lookup)
    cap_store(memory.store)
    users = [f"user-{n:02d}" for n in range(20)]
    picks = _picks(users, args.searches, len(qtexts))
    names = _chosen(args.configs)
    print(f"{len(picks)} searches a pass, {_load()}")

    async def run(config: Config) -> tuple[float, list[float], int]:
        lat: list[float] = []
        hits = 0
        with applied(config):
            cpu = time.process_time()
            for user, q in picks:
                start = time.perf_counter()
                got = await memory.search(
                    qtexts[q], user_id=user, agent_id=AGENT, k=10, options=config.options
                )
                lat.append(time.perf_counter() - start)
                hits += len(got)
            cpu = time.process_time() - cpu
        return cpu / len(picks) * 1000, lat, hits

    try:
        for n, user in enumerate(users):
            await memory.search(qtexts[n], user_id=user, agent_id=AGENT, k=10)
        for name in names:  # every candidate text analysed once: the memo hot
            await run(CONFIGS[name])
        if attribute:
            for name in names:
                _TIMES.clear()
                _CALLS.clear()
                with timers(type(memory.store)):
                    cpu, lat, _ = await run(CONFIGS[name])
                _report_groups(name, cpu, len(picks))
            return
        best: dict[str, tuple[float, float, int]] = {}
        for _ in range(args.rounds):
            for name in names:
                cpu, lat, hits = await run(CONFIGS[name])
                p50 = statistics.median(lat) * 1000
                if name not in best or cpu < best[name][0]:
                    best[name] = (cpu, p50, hits)
        print("| configuration | CPU ms/search | p50 ms | hits |")
        print("|---|---|---|---|")
        for name in names:
            cpu, p50, hits = best[name]
            print(f"| {name} | {cpu:.2f} | {p50:.2f} | {hits} |")
        print(_load())
    finally:
        await memory.close()


def _report_groups(name: str, cpu: float, n: int) -> None:
    ranked = _CALLS.pop("(candidates ranked)", 0) / n
    print(f"\n{name}: CPU {cpu:.2f} ms/search with timers, {ranked:.0f} candidates ({_load()})")
    print("| group | ms/search | share | calls/search |")
    print("|---|---|---|---|")
    total = 0.0
    for group, spent in sorted(_TIMES.items(), key=lambda kv: -kv[1]):
        ms = spent / n * 1000
        total += ms
        print(f"| {group} | {ms:.3f} | {ms / cpu:.0%} | {_CALLS[group] / n:.1f} |")
    print(
        f"| rest (event loop, search path, usage writes) | {cpu - total:.3f} | "
        f"{(cpu - total) / cpu:.0%} | |"
    )


# -- LongMemEval ----------------------------------------------------------------------------

#: configuration -> the turn ranking (session id, turn) of the question being searched
_TURNS: dict[str, list[tuple[str, int]]] = {}


class _EveryConfig(Memory):
    """A ``Memory`` whose ``search`` runs every configuration of ``_RUN`` (keeping each
    one's turn ranking in ``_TURNS``) and returns the first one's hits."""

    run: ClassVar[list[str]] = []

    def __init__(self, url: str, embedder: Any = None) -> None:
        super().__init__(url, embedder=embedder)
        cap_store(self.store)

    def search(self, query: str, **kw: Any) -> Any:
        first: Any = None
        titles: dict[str, str] = {}
        for name in self.run:
            config = CONFIGS[name]
            with applied(config):
                hits = super().search(query, options=config.options, **kw)
            turns = []
            for hit in hits:
                if hit.entry is None:
                    continue
                tid = hit.entry.thread_id
                if tid not in titles:
                    thread = self.threads.get(tid)
                    titles[tid] = (thread.title if thread is not None else None) or tid
                turns.append((titles[tid], int(hit.entry.metadata["turn"])))
            _TURNS[name] = turns
            if first is None:
                first = hits
        return first


def run_lme(args: argparse.Namespace) -> None:
    from bench import bench_longmemeval as lme

    names = _chosen(args.configs)
    path = args.data or lme.default_data()
    if not path.exists():
        raise SystemExit(f"LongMemEval data not found at {path}")
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    questions = lme.load(path, args.per_type, types)
    embedder: Any = None
    if args.emb_cache is not None:
        from memorybank.embeddings import LocalEmbedder

        embedder = lme.CachedEmbedder(LocalEmbedder(backend=args.backend), args.emb_cache)
        missing = embedder.missing([t for q in questions for t in lme._texts(q)])
        if missing:  # this lab embeds nothing but (uncached) questions, and writes no cache
            raise SystemExit(f"{len(missing)} texts are not in {args.emb_cache}")
    _EveryConfig.run = names
    lme.Memory = _EveryConfig  # type: ignore[attr-defined, assignment]
    print(
        f"{len(questions)} questions, {'embedder ' + args.backend if embedder else 'no embedder'},"
        f" {len(names)} configurations, {_load()}"
    )
    rows: dict[str, list[tuple[str, dict[str, float]]]] = {n: [] for n in names}
    start = time.perf_counter()
    for q in questions:
        lme.evaluate_question(q, embedder)
        gold_sessions = set(q["answer_session_ids"])
        gold_turns = {
            (sid, j)
            for sid, session in lme._sessions(q)
            for j, turn in enumerate(session)
            if turn.get("has_answer")
        }
        for name in names:
            rows[name].append(
                (q["question_type"], lme.scores(_TURNS[name], gold_sessions, gold_turns))
            )
    print(f"({time.perf_counter() - start:.0f} s, {_load()})")
    columns = ("any@5", "all@5", "ndcg@10", "turn@10")
    kinds = list(dict.fromkeys(t for t, _ in rows[names[0]]))
    print("| configuration | session any@5 | all@5 | NDCG@10 | turn any@10 | all@5 by type |")
    print("|---|---|---|---|---|---|")
    for name in names:
        cells = []
        for column in columns:
            values = [m[column] for _, m in rows[name] if column in m]
            cells.append(f"{sum(values) / len(values):.3f}")
        by_type = []
        for kind in kinds:
            values = [m["all@5"] for t, m in rows[name] if t == kind]
            by_type.append(f"{lme_abbrev(kind)} {sum(values) / len(values):.2f}")
        print(f"| {name} | " + " | ".join(cells) + " | " + ", ".join(by_type) + " |")


def lme_abbrev(kind: str) -> str:
    return "".join(part[0] for part in kind.split("-"))


# -- LoCoMo -----------------------------------------------------------------------------------


def run_locomo(args: argparse.Namespace) -> None:
    from bench import locomo_memorybank as lm

    names = _chosen(args.configs)
    here = Path(__file__).resolve()
    found = [
        parent / "shared" / "bench" / "locomo_retrieval.py"
        for parent in here.parents
        if (parent / "shared" / "bench" / "locomo_retrieval.py").exists()
    ]
    if not found:
        raise SystemExit("LoCoMo harness (shared/bench/locomo_retrieval.py) not found")
    spec = importlib.util.spec_from_file_location("locomo_retrieval", found[0])
    assert spec is not None and spec.loader is not None
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    data = found[0].parent.parent / "data" / "locomo" / "locomo_dev.json"
    conversations = harness.load_locomo(str(data))
    embedder: Any = None  # none: words and structure alone
    if args.emb_cache is not None:
        from memorybank.embeddings import LocalEmbedder

        embedder = lm.CachedEmbedder(LocalEmbedder(backend=args.backend), args.emb_cache)
        if not embedder.vectors:
            raise SystemExit(f"no vectors of {args.backend} in {args.emb_cache}")
    memory = Memory("sqlite://", embedder=embedder)
    cap_store(memory.store)
    lm._memory = memory
    lm.fallback_k = args.fallback_k or None
    lm.ingest_users([c["turns"] for c in conversations])
    print(
        f"LoCoMo dev, user scope, {'embedder ' + args.backend if embedder else 'no embedder'},"
        f" k <= {args.fallback_k or 'every turn'}, {_load()}"
    )
    ks, budgets = (5, 10, 20), (1024,)
    print(
        "| configuration | recall@10 | within 1,024 tokens | single-hop | multi-hop | temporal"
        " | open-domain | query ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        config = CONFIGS[name]
        lm.options = config.options
        lm._stats.update(query_s=0.0, queries=0.0)
        with applied(config):
            result = harness.evaluate(conversations, lm.retrieve_user, ks, budgets)
        table = result["table"]
        cats = [
            f"{table[c]['recall@10']:.3f}" if c in table else "-"
            for c in ("single-hop", "multi-hop", "temporal", "open-domain")
        ]
        overall = table["overall"]
        print(
            f"| {name} | {overall['recall@10']:.3f} | {overall['recall@1024tok']:.3f} | "
            + " | ".join(cats)
            + f" | {lm.cost()['query_ms']:.1f} |",
            flush=True,
        )
    memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("cpu", "attribute", "lme", "locomo"))
    parser.add_argument("--configs", default="", help="comma-separated names of CONFIGS")
    parser.add_argument("--path", default="/tmp/profile_search.db")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--types", default="")
    parser.add_argument("--per-type", type=int, default=0)
    parser.add_argument("--fallback-k", type=int, default=33)
    parser.add_argument(
        "--emb-cache",
        type=Path,
        default=None,
        help="lme/locomo: the bench's embedding cache (read only; default: no embedder)",
    )
    parser.add_argument("--backend", default="onnx-int8", help="the cache's LocalEmbedder backend")
    args = parser.parse_args()
    if args.what in ("cpu", "attribute"):
        if not Path(args.path).exists():
            raise SystemExit(f"{args.path} not found: build it with python -m bench.profile_search")
        asyncio.run(_cpu(args, args.what == "attribute"))
    elif args.what == "lme":
        run_lme(args)
    else:
        run_locomo(args)


if __name__ == "__main__":
    main()
