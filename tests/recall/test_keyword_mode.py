"""``mode="keyword"`` returns only records that share a query term, on every store."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.stores.keyword.text import default_analyzer
from tests.all_stores import STORE_KINDS, open_store

from .conftest import HashEmbedder

TEXTS = [
    "I'm allergic to cilantro, please never suggest it.",
    "Got it.",
    "I take oat milk in my coffee.",
    "My dog Rex is a three-year-old beagle.",
    "We also have a cat called Mochi who sleeps all day.",
    "Our pets sleep on the sofa.",
    "I prefer short answers.",
    "What do you have for me?",
]


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_keyword_mode_only_returns_records_sharing_a_term(kind: str, tmp_path: Path) -> None:
    analyzer = default_analyzer()
    with open_store(kind, tmp_path) as store:
        memory = Memory(store, embedder=HashEmbedder())
        thread = memory.threads.create(user_id="u", agent_id="a")
        memory.entries.add_many(thread.id, [{"role": "user", "content": t} for t in TEXTS])
        memory.documents.add("Pets need a vet check every year.", user_id="u", agent_id="a")
        memory.documents.add("I do have it all.", user_id="u", agent_id="a")
        for query in ("What pets do I have?", "Do I have it?", "coffee with milk", "pet"):
            terms = set(analyzer.terms(query))
            for thread_id in (thread.id, None):
                hits = memory.search(
                    query, mode="keyword", user_id="u", agent_id="a", k=20, thread_id=thread_id
                )
                for hit in hits:
                    assert terms & set(analyzer.terms(hit.content or "")), (query, hit.content)
        hits = memory.search("What pets do I have?", mode="keyword", user_id="u", agent_id="a")
        assert {h.content for h in hits} == {
            "Our pets sleep on the sofa.",
            "Pets need a vet check every year.",
        }
        # only stop words: nothing to match
        assert memory.search("Do I have it?", mode="keyword", user_id="u", agent_id="a") == []


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_forked_thread_is_searched_on_its_current_branch_once(kind: str, tmp_path: Path) -> None:
    # A fork copies entries under the same ids; the store's full-text search returns
    # each copy, and only the current branch's copy counts (once), whichever comes first.
    with open_store(kind, tmp_path) as store:
        memory = Memory(store, embedder=HashEmbedder())
        thread = memory.threads.create(user_id="u", agent_id="a")
        memory.remember(thread.id, "user", "My dog Biscuit loves the beach.")
        memory.remember(thread.id, "assistant", "Biscuit sounds lovely.")
        memory.branches.create(thread.id, "alt")  # not checked out: "main" stays current
        memory.remember(thread.id, "user", "Biscuit ate my shoe on main.")
        memory.branches.checkout(thread.id, "alt")
        memory.remember(thread.id, "user", "Biscuit learned to swim on alt.")
        memory.branches.checkout(thread.id, "main")
        on_main = {
            "My dog Biscuit loves the beach.",
            "Biscuit sounds lovely.",
            "Biscuit ate my shoe on main.",
        }
        for mode in ("keyword", "hybrid"):
            for thread_id in (thread.id, None):
                hits = memory.search(
                    "Biscuit", mode=mode, user_id="u", agent_id="a", thread_id=thread_id
                )
                contents = [h.content or "" for h in hits]
                assert sorted(contents) == sorted(on_main), (mode, thread_id, contents)
        memory.branches.checkout(thread.id, "alt")
        hits = memory.search("Biscuit", mode="keyword", user_id="u", agent_id="a")
        assert sorted(h.content or "" for h in hits) == sorted(
            [
                "My dog Biscuit loves the beach.",
                "Biscuit sounds lovely.",
                "Biscuit learned to swim on alt.",
            ]
        )
