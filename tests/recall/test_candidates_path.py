"""Hybrid search on the store-native candidate path (a user with too many threads to
rank whole): keyword evidence is BM25 over the candidates with the ranking core's
analyser, not the store's full-text rank, so stop words and the speakers' names in a
question do not outrank the turn that answers it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.recall._sync import search
from tests.all_stores import STORE_KINDS, open_store

from .conftest import HashEmbedder

#: One LoCoMo-style conversation: "<speaker>: <text>", the speaker as ``name``.
TURNS = [
    ("Maria", "Maria: Hi John! Did you see the game, John? Did John's team win?"),
    ("John", "John: Did I see it? Maria, I did, John was there. Which team did you pick?"),
    ("Maria", "Maria: John, which one did John like? Did John cheer?"),
    ("John", "John: We adopted a dog last week, a beagle called Rex."),
    ("Maria", "Maria: The neighbour's dog barks all night."),
    ("John", "John: I baked bread and cooked pasta for dinner."),
]


@pytest.fixture
def candidates_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # every search is on the candidate path; a small pool tests it where it is tight
    monkeypatch.setattr(search, "HYBRID_CANDIDATES", 30)


@pytest.mark.parametrize("kind", STORE_KINDS)
@pytest.mark.usefixtures("candidates_path")
def test_names_and_stop_words_do_not_outrank_the_answer(kind: str, tmp_path: Path) -> None:
    with open_store(kind, tmp_path) as store:
        memory = Memory(store, embedder=HashEmbedder())
        for number in range(3):  # a few threads (sessions) of the same user
            thread = memory.threads.create(user_id="u", agent_id="a", title=f"s{number}")
            memory.entries.add_many(
                thread.id,
                [{"role": "user", "name": n, "content": t} for n, t in TURNS[2 * number :][:2]],
            )
        hits = memory.search("Which dog did John adopt?", user_id="u", agent_id="a", k=3)
        assert hits[0].entry is not None
        assert hits[0].entry.content == TURNS[3][1]
        # the keyword signal is the core's BM25: the name-and-stop-word turns have none
        for hit in hits:
            assert hit.entry is not None
            if "dog" not in (hit.entry.content or ""):
                assert "keyword" not in hit.signals


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_hybrid_hits_are_whole_entries(kind: str, tmp_path: Path) -> None:
    """The candidates are ranked from a narrow read (``EntryRow``); the hits returned are
    the whole entries, as ``entries.get`` reads them (metadata, state, tool calls, the
    neighbours' too), with metadata filters applied to them."""
    with open_store(kind, tmp_path) as store:
        memory = Memory(store, embedder=HashEmbedder())
        thread = memory.threads.create(user_id="u", agent_id="a")
        memory.entries.add_many(
            thread.id,
            [
                {"role": "user", "content": "We adopted a beagle", "metadata": {"n": 0}},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c1", "name": "note", "arguments": "{}"}],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "noted: beagle Rex"},
                {"role": "user", "content": "The beagle is called Rex", "metadata": {"n": 3}},
                {"role": "user", "content": "I baked bread", "metadata": {"n": 4}},
            ],
        )
        hits = memory.search("beagle Rex", user_id="u", agent_id="a", k=10)
        assert len(hits) >= 3
        for hit in hits:
            assert hit.entry is not None
            assert hit.entry == memory.entries.get(thread.id, hit.entry.id)
        assert {h.entry.metadata.get("n") for h in hits if h.entry} >= {0, 3}
        only = memory.search("beagle Rex", user_id="u", agent_id="a", k=10, filters={"n": 3})
        assert [h.entry.content for h in only if h.entry] == ["The beagle is called Rex"]
