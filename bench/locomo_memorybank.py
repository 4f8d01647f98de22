"""memorybank's own recall on LoCoMo, through the public API only.

    .venv/bin/python ../shared/bench/locomo_retrieval.py \\
        --retriever bench/locomo_memorybank.py:retrieve --budgets 1024

Ingestion (the rule every memorybank LoCoMo evaluation uses): each conversation
is one thread; each turn one entry with role ``user``, ``name`` = the speaker,
content ``"<speaker>: <text>"`` plus ``" [image: <caption>]"`` when the turn
shared one, the turn id in ``metadata["dia_id"]`` and the session's date as
``created_at`` (wall-clock time read as UTC). A session's turns are added with
one ``entries.add_many`` call (same entries as one ``add`` per turn, one
embedding batch). Retrieval is ``memory.search(question, k=k, mode="hybrid",
thread_id=...)`` with the local all-MiniLM-L6-v2 embedder and default options.

Set ``MEMORYBANK_LOCOMO_URL`` to evaluate another store (default: an in-memory
SQLite database, the embedded default store). Prints nothing itself: the shared
harness prints the table; ``cost()`` reports ingestion and per-query time.
"""

from __future__ import annotations

import os

# One BLAS/torch thread per process: several threads oversubscribe a busy machine
# and make a one-sentence embedding 10x slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time
from datetime import UTC, datetime
from typing import Any

from memorybank import Memory
from memorybank.embeddings import LocalEmbedder

__all__ = ["cost", "parse_session_date", "retrieve"]

_memory: Memory | None = None
_threads: dict[int, tuple[object, str]] = {}
_stats = {"ingest_s": 0.0, "turns": 0.0, "query_s": 0.0, "queries": 0.0}


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
        _memory = Memory(url, embedder=LocalEmbedder())
    return _memory


def _ingest(memory: Memory, turns: list[dict[str, Any]]) -> str:
    start = time.perf_counter()
    thread = memory.threads.create(title="locomo")
    sessions: dict[int, list[dict[str, Any]]] = {}
    for turn in turns:
        sessions.setdefault(int(turn["session"]), []).append(turn)
    for session_turns in sessions.values():
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
        memory.entries.add_many(
            thread.id, messages, created_at=parse_session_date(str(session_turns[0]["date_time"]))
        )
    _stats["ingest_s"] += time.perf_counter() - start
    _stats["turns"] += len(turns)
    return thread.id


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
    hits = memory.search(question, k=k, mode="hybrid", thread_id=thread_id)
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


def main() -> None:
    """``python bench/locomo_memorybank.py``: the shared harness's table plus the cost."""
    import importlib.util
    from pathlib import Path

    harness_path = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_retrieval.py"
    spec = importlib.util.spec_from_file_location("locomo_retrieval", harness_path)
    if spec is None or spec.loader is None or not harness_path.exists():
        raise SystemExit(f"LoCoMo harness not found at {harness_path}: skipping")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    data = harness_path.parent.parent / "data" / "locomo" / "locomo_dev.json"
    if not data.exists():
        raise SystemExit(f"LoCoMo data not found at {data}: skipping")
    ks, budgets = (5, 10, 20), (1024,)
    result = harness.evaluate(harness.load_locomo(str(data)), retrieve, ks, budgets)
    print(harness.format_table(result, ks, budgets))
    c = cost()
    print(
        f"ingest: {c['ingest_turns_per_s']:,.0f} turns/s (embedding included);"
        f" query: {c['query_ms']:.1f} ms mean over {c['queries']:.0f} questions"
    )


if __name__ == "__main__":
    main()
