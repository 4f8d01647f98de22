"""memorybank's own recall on LoCoMo, through the public API only.

    .venv/bin/python ../shared/bench/locomo_retrieval.py \\
        --retriever bench/locomo_memorybank.py:retrieve --budgets 1024
    .venv/bin/python bench/locomo_memorybank.py --scope user      # or thread, both
    .venv/bin/python bench/locomo_memorybank.py --scope both --emb-cache /tmp/locomo_emb.npz

``--emb-cache`` (dev only) keeps every embedding in a file outside the
repository, keyed by the SHA-256 of the text, so a rerun embeds nothing and a
full run takes about a minute per scope; the query time it reports then leaves
out the question's embedding. The file is tied to the model and the backend: a
file made by another backend is not read. ``--backend`` picks the
``LocalEmbedder`` backend (default ``auto``), e.g. ``numpy`` (the reference
vectors), ``onnx``, ``onnx-int8``.

Two ingestions, both with the rule below:

* ``thread`` scope (``retrieve``): each conversation is one thread, searched with
  ``thread_id=``.
* ``user`` scope (``retrieve_user``): the way an agent recalls from its whole
  history with a user. Each conversation is a user (``user_id`` =
  ``"locomo-<n>"``, ``agent_id="locomo"``), each of its sessions a thread of
  that user, every conversation in the same store; retrieval is
  ``memory.search(question, user_id=..., agent_id="locomo")`` without
  ``thread_id``. ``main()`` stores every conversation before the first question.

Ingestion (the rule every memorybank LoCoMo evaluation uses): each turn one
entry with role ``user``, ``name`` = the speaker, content ``"<speaker>: <text>"``
plus ``" [image: <caption>]"`` when the turn shared one, the turn id in
``metadata["dia_id"]`` and the session's date as ``created_at`` (wall-clock time
read as UTC). A session's turns are added with one ``entries.add_many`` call
(same entries as one ``add`` per turn, one embedding batch). Retrieval is
``memory.search(question, k=k, mode="hybrid", ...)`` with the local
all-MiniLM-L6-v2 embedder and default options.

Set ``MEMORYBANK_LOCOMO_URL`` to evaluate another store (default: an in-memory
SQLite database, the embedded default store). Prints nothing itself: the shared
harness prints the table; ``cost()`` reports ingestion and per-query time.
"""

from __future__ import annotations

import os

# One BLAS/torch thread per process: several threads oversubscribe a busy machine
# and make a one-sentence embedding 10x slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import hashlib
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorybank import Memory
from memorybank.embeddings import Embedder, LocalEmbedder
from memorybank.importance import HalfLife
from memorybank.recall import SearchOptions

__all__ = [
    "cap_candidates",
    "cost",
    "ingest_users",
    "parse_candidates",
    "parse_session_date",
    "retrieve",
    "retrieve_user",
]

AGENT = "locomo"
_memory: Memory | None = None
#: The embedder ``_get_memory`` gives a new store (replaceable, e.g. by a cached one).
make_embedder: Callable[[], Embedder] = LocalEmbedder
_threads: dict[int, tuple[object, str]] = {}
_users: dict[int, tuple[object, str]] = {}
_stats = {"ingest_s": 0.0, "turns": 0.0, "query_s": 0.0, "queries": 0.0}
#: The ranking options of every search (``None``: the library defaults); ``--loo`` varies them.
options: SearchOptions | None = None
#: ``--fallback-k K``: search with ``k=min(k, K)``. The harness asks for every turn of a
#: conversation (for its token-budget column); a caller asks for 10 or 20, and what a
#: search reads grows with ``k`` (``max(HYBRID_CANDIDATES, 3k)`` per index), so
#: ``K = 33`` measures the candidates a ``k <= 33`` search really has.
fallback_k: int | None = None
#: ``--candidates N[/M]``: the candidates of a ``k = 10`` search at
#: ``HYBRID_CANDIDATES = N`` (or N full-text and M vector ones), all of them ranked.
candidates: tuple[int, int] | None = None
#: ``--decay DAYS``: every search with ``decay=HalfLife(days=DAYS)`` (None: off, the default).
decay: HalfLife | None = None
#: ``--loo``: the settings scored leave-one-conversation-out (name -> options).
LOO_GRID: dict[str, SearchOptions] = {
    "defaults": SearchOptions(),
    "semantic 0.9": SearchOptions().with_weights(semantic=0.9),
    "semantic 1.5": SearchOptions().with_weights(semantic=1.5),
}


class CachedEmbedder:
    """Dev-only: an embedder whose vectors are kept in an ``.npz`` file keyed by the
    SHA-256 of the text (``--emb-cache /tmp/locomo_emb.npz``), so a rerun embeds
    nothing. Same ``model_id`` and vectors as the embedder it wraps; the file
    lives outside the repository and holds no text."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.backend = str(getattr(inner, "backend", ""))
        self.vectors: dict[str, list[float]] = {}
        self._dirty = False
        if path.exists():
            import numpy as np

            data = np.load(path)
            made_by = str(data["backend"]) if "backend" in data else self.backend
            if str(data["model_id"]) == inner.model_id and made_by == self.backend:
                for key, vec in zip(data["keys"].tolist(), data["vectors"], strict=True):
                    self.vectors[str(key)] = vec.tolist()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [self._key(t) for t in texts]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}
        if missing:
            fresh = self.inner.embed(list(missing.values()))
            self.vectors.update(zip(missing, fresh, strict=True))
            self._dirty = True
        return [self.vectors[k] for k in keys]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)

    def save(self) -> None:
        if not self._dirty:
            return
        import numpy as np

        keys = list(self.vectors)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(
            tmp,
            model_id=np.array(self.inner.model_id),
            backend=np.array(self.backend),
            keys=np.array(keys),
            vectors=np.asarray([self.vectors[k] for k in keys], dtype=np.float32),
        )
        tmp.replace(self.path)
        self._dirty = False


def cap_candidates(store: Any, keyword: int, vector: int | None = None) -> None:
    """Dev (``--candidates N[/M]``, here and in ``bench_longmemeval``): the hybrid search
    with ``HYBRID_CANDIDATES`` the larger of the two, the store's full-text search asked
    for at most ``keyword`` candidates and its vector search for at most ``vector``
    (default: as many), so a search of any ``k`` reads the candidates of a ``k = 10``
    one and ranks them all (the recall benches ask for every turn, or 30, which would
    read more)."""
    from memorybank.recall._sync import search

    caps = {"text_search": keyword, "vector_search": keyword if vector is None else vector}
    search.HYBRID_CANDIDATES = max(caps.values())
    for name, cap in caps.items():
        method = getattr(store, name)

        def capped(*args: Any, _method: Any = method, _cap: int = cap, k: int, **kw: Any) -> Any:
            return _method(*args, k=min(k, _cap), **kw)

        setattr(store, name, capped)


def parse_candidates(text: str) -> tuple[int, int]:
    """``--candidates``: ``"50"`` (each index) or ``"60/40"`` (full text / vectors)."""
    keyword, _, vector = text.partition("/")
    return int(keyword), int(vector or keyword)


def parse_session_date(text: str) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` -> 2023-05-08 13:56 UTC."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _get_memory() -> Memory:
    global _memory
    if _memory is None:
        url = os.environ.get("MEMORYBANK_LOCOMO_URL", "sqlite://")
        _memory = Memory(url, embedder=make_embedder())
        if candidates is not None:
            cap_candidates(_memory.store, *candidates)
    return _memory


def _sessions(turns: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    sessions: dict[int, list[dict[str, Any]]] = {}
    for turn in turns:
        sessions.setdefault(int(turn["session"]), []).append(turn)
    return list(sessions.values())


def _messages(session_turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages = []
    for turn in session_turns:
        content = f"{turn['speaker']}: {turn['text']}"
        if turn.get("image_caption"):
            content += f" [image: {turn['image_caption']}]"
        messages.append(
            {
                "role": "user",
                "name": str(turn["speaker"]),
                "content": content,
                "metadata": {"dia_id": turn["id"]},
            }
        )
    return messages


def _ingest(memory: Memory, turns: list[dict[str, Any]]) -> str:
    """Thread scope: the conversation as one thread; its id."""
    start = time.perf_counter()
    thread = memory.threads.create(title="locomo")
    for session_turns in _sessions(turns):
        memory.entries.add_many(
            thread.id,
            _messages(session_turns),
            created_at=parse_session_date(str(session_turns[0]["date_time"])),
        )
    _stats["ingest_s"] += time.perf_counter() - start
    _stats["turns"] += len(turns)
    return thread.id


def _ingest_user(memory: Memory, turns: list[dict[str, Any]]) -> str:
    """User scope: the conversation as a user, each session a thread of it; the user id."""
    start = time.perf_counter()
    user = f"locomo-{len(_users)}"
    for number, session_turns in enumerate(_sessions(turns), 1):
        thread = memory.threads.create(user_id=user, agent_id=AGENT, title=f"session {number}")
        memory.entries.add_many(
            thread.id,
            _messages(session_turns),
            created_at=parse_session_date(str(session_turns[0]["date_time"])),
        )
    _stats["ingest_s"] += time.perf_counter() - start
    _stats["turns"] += len(turns)
    _users[id(turns)] = (turns, user)
    return user


def ingest_users(conversations: list[list[dict[str, Any]]]) -> None:
    """Store every conversation as its own user before the first question (user scope)."""
    memory = _get_memory()
    for turns in conversations:
        known = _users.get(id(turns))
        if known is None or known[0] is not turns:
            _ingest_user(memory, turns)


def retrieve(conversation_turns: list[dict[str, Any]], question: str, k: int) -> list[str]:
    """The harness's retriever: the dia_ids of the ``k`` best entries, best first."""
    memory = _get_memory()
    known = _threads.get(id(conversation_turns))
    if known is None or known[0] is not conversation_turns:
        thread_id = _ingest(memory, conversation_turns)
        _threads[id(conversation_turns)] = (conversation_turns, thread_id)
    else:
        thread_id = known[1]
    start = time.perf_counter()
    if fallback_k is not None:
        k = min(k, fallback_k)
    hits = memory.search(
        question, k=k, mode="hybrid", thread_id=thread_id, options=options, decay=decay
    )
    _stats["query_s"] += time.perf_counter() - start
    _stats["queries"] += 1
    return [str(hit.entry.metadata["dia_id"]) for hit in hits if hit.entry is not None]


def retrieve_user(conversation_turns: list[dict[str, Any]], question: str, k: int) -> list[str]:
    """User scope: the conversation's user searched without ``thread_id``."""
    memory = _get_memory()
    known = _users.get(id(conversation_turns))
    if known is None or known[0] is not conversation_turns:
        user = _ingest_user(memory, conversation_turns)
    else:
        user = known[1]
    start = time.perf_counter()
    if fallback_k is not None:
        k = min(k, fallback_k)
    hits = memory.search(
        question, k=k, mode="hybrid", user_id=user, agent_id=AGENT, options=options, decay=decay
    )
    _stats["query_s"] += time.perf_counter() - start
    _stats["queries"] += 1
    return [str(hit.entry.metadata["dia_id"]) for hit in hits if hit.entry is not None]


def cost() -> dict[str, float]:
    """Ingestion throughput and mean query latency so far."""
    return {
        "ingest_turns_per_s": _stats["turns"] / _stats["ingest_s"] if _stats["ingest_s"] else 0.0,
        "query_ms": 1000 * _stats["query_s"] / _stats["queries"] if _stats["queries"] else 0.0,
        "queries": _stats["queries"],
    }


def _objective(rows: list[dict[str, Any]]) -> float:
    """What ``--loo`` maximises: the mean of recall@10 and recall within 1,024 tokens."""
    if not rows:
        return 0.0
    return sum(float(r["recall@10"]) + float(r["recall@1024tok"]) for r in rows) / (2 * len(rows))


def leave_one_out(per_setting: dict[str, list[dict[str, Any]]]) -> tuple[dict[str, Any], str]:
    """Per conversation, the rows of the setting that scores best on the *other*
    conversations (adversarial questions left out of the choice); the combined
    table and which setting each conversation got."""
    names = list(per_setting)
    samples = list(dict.fromkeys(r["sample_id"] for r in per_setting[names[0]]))
    chosen: list[dict[str, Any]] = []
    picks = []
    for held in samples:
        best = max(
            names,
            key=lambda n: _objective(
                [r for r in per_setting[n] if r["sample_id"] != held and r["category"] != 5]
            ),
        )
        picks.append(f"{held}: {best}")
        chosen += [r for r in per_setting[best] if r["sample_id"] == held]
    return _table(chosen), "; ".join(picks)


def _table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The harness's result layout (categories, overall without adversarial) for ``rows``."""
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
    metrics = [m for m in rows[0] if "@" in m]
    table: dict[str, Any] = {}
    for cat in (4, 1, 2, 3, 5):
        mine = [r for r in rows if r["category"] == cat]
        if mine:
            table[names[cat]] = {
                "n": len(mine),
                **{m: sum(r[m] for r in mine) / len(mine) for m in metrics},
            }
    scored = [r for r in rows if r["category"] != 5]
    table["overall"] = {
        "n": len(scored),
        **{m: sum(r[m] for r in scored) / len(scored) for m in metrics},
    }
    return {"table": table}


def main(argv: list[str] | None = None) -> None:
    """``python bench/locomo_memorybank.py [--scope thread|user|both] [--conversations N]``:
    the shared harness's table per scope, plus the cost."""
    import argparse
    import importlib.util
    from pathlib import Path

    parser = argparse.ArgumentParser(description="memorybank recall on LoCoMo")
    parser.add_argument("--scope", choices=("thread", "user", "both"), default="thread")
    parser.add_argument(
        "--conversations", type=int, default=0, help="only the first N conversations (0: all)"
    )
    parser.add_argument(
        "--loo",
        action="store_true",
        help="score each setting of LOO_GRID, then each conversation with the setting"
        " that is best on the other ones (leave-one-conversation-out)",
    )
    parser.add_argument(
        "--emb-cache",
        type=Path,
        default=None,
        help="dev only: keep the embeddings in this .npz (keyed by text hash; e.g."
        " /tmp/locomo_emb.npz, never inside the repository) so a rerun embeds nothing",
    )
    parser.add_argument(
        "--fallback-k",
        type=int,
        default=None,
        help="each search with k=min(k, K), as a caller asks (the harness asks for every"
        " turn); 33 keeps the candidates of a k=10 search",
    )
    parser.add_argument(
        "--backend",
        default="auto",
        choices=("auto", "numpy", "onnx", "onnx-int8", "sentence-transformers"),
        help="the LocalEmbedder backend (numpy: the reference vectors)",
    )
    parser.add_argument(
        "--decay",
        type=float,
        default=None,
        help="search with decay=HalfLife(days=DAYS): recency of use and importance weigh in",
    )
    parser.add_argument(
        "--decay-floor", type=float, default=0.5, help="with --decay: HalfLife's floor"
    )
    parser.add_argument(
        "--candidates",
        type=parse_candidates,
        default=None,
        help="N or N/M: the candidates of a k=10 search at HYBRID_CANDIDATES=N (or N full-text"
        " and M vector ones), all ranked (without it every turn is a candidate: the bench"
        " asks for every turn)",
    )
    args = parser.parse_args(argv)
    global fallback_k, decay, candidates
    candidates = args.candidates
    if args.decay is not None:
        decay = HalfLife(days=args.decay, floor=args.decay_floor)
    if args.fallback_k is not None:
        from memorybank.recall._sync import search as sync_search

        fallback_k = args.fallback_k
        # dev: LOCOMO_NATIVE="_EXPAND_HITS=10,HYBRID_CANDIDATES=120" sets the path's constants
        for knob in os.environ.get("LOCOMO_NATIVE", "").split(","):
            if knob:
                name, _, value = knob.partition("=")
                setattr(sync_search, name, int(value))
    global make_embedder
    backend = args.backend
    make_embedder = lambda: LocalEmbedder(backend=backend)  # noqa: E731
    print(f"embedder: LocalEmbedder(backend={backend!r}) -> {make_embedder().backend}")
    cached: CachedEmbedder | None = None
    if args.emb_cache is not None:
        cached = CachedEmbedder(make_embedder(), args.emb_cache)
        shared: Embedder = cached
        make_embedder = lambda: shared  # noqa: E731
    # ../shared next to the checkout (a worktree may sit one level deeper)
    here, name = Path(__file__).resolve(), "locomo_retrieval.py"
    found = [
        parent / "shared" / "bench" / name
        for parent in here.parents
        if (parent / "shared" / "bench" / name).exists()
    ]
    harness_path = found[0] if found else here.parents[2] / "shared" / "bench" / name
    spec = importlib.util.spec_from_file_location("locomo_retrieval", harness_path)
    if spec is None or spec.loader is None or not harness_path.exists():
        raise SystemExit(f"LoCoMo harness not found at {harness_path}: skipping")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    data = harness_path.parent.parent / "data" / "locomo" / "locomo_dev.json"
    if not data.exists():
        raise SystemExit(f"LoCoMo data not found at {data}: skipping")
    conversations = harness.load_locomo(str(data))
    if args.conversations:
        conversations = conversations[: args.conversations]
    ks, budgets = (5, 10, 20), (1024,)
    global _memory, options
    for scope in ("thread", "user") if args.scope == "both" else (args.scope,):
        # a fresh store per scope: thread-scope threads have no user, so they are
        # shared and every user would see them
        if _memory is not None:
            _memory.close()
        _memory = None
        _threads.clear()
        _users.clear()
        _stats.update(ingest_s=0.0, turns=0.0, query_s=0.0, queries=0.0)
        if scope == "user":
            ingest_users([c["turns"] for c in conversations])
        if cached is not None:
            cached.save()
        retriever = retrieve_user if scope == "user" else retrieve
        grid = LOO_GRID if args.loo else {"": options}
        per_setting: dict[str, list[dict[str, Any]]] = {}
        for name, setting in grid.items():
            options = setting
            result = harness.evaluate(conversations, retriever, ks, budgets)
            per_setting[name] = result["per_question"]
            if cached is not None:
                cached.save()
            print(f"{scope} scope" + (f", {name} (all conversations)" if name else ""))
            print(harness.format_table(result, ks, budgets))
        options = None
        if args.loo:
            held_out, picks = leave_one_out(per_setting)
            print(f"{scope} scope, leave-one-conversation-out ({picks})")
            print(harness.format_table(held_out, ks, budgets))
        c = cost()
        print(
            f"ingest: {c['ingest_turns_per_s']:,.0f} turns/s (embedding included);"
            f" query: {c['query_ms']:.1f} ms mean over {c['queries']:.0f} questions"
            + (" (question embeddings from the cache)" if cached is not None else "")
        )


if __name__ == "__main__":
    main()
