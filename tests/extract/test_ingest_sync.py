"""The generated sync twin: Memory.graph.ingest, facts with a chosen id, dumps keep the marks."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memorybank import Conflict, Memory
from memorybank.dump._sync.portability import export_dump, import_dump
from memorybank.extract import IngestReport, RuleExtractor
from memorybank.stores import InMemoryStore, SQLiteStore
from tests.reliability._harness import Words

OWNER: dict[str, Any] = {"user_id": "alice", "agent_id": "helper"}


def test_sync_ingest_and_supersession(tmp_path: Path) -> None:
    with Memory(
        f"sqlite:///{tmp_path / 'm.db'}", tokenizer=Words(), extractor=RuleExtractor()
    ) as memory:
        thread = memory.ensure_thread(None, **OWNER)
        memory.remember(thread.id, "user", "Alice works at Initech since 2019.")
        memory.remember(thread.id, "assistant", "Noted. Alice works at Globex since 2023.")
        report = memory.graph.ingest(thread.id)
        assert report == IngestReport(
            entries=2,
            entities=4,
            relations=2,
            facts_added=1,
            facts_superseded=1,
        )
        (fact,) = memory.facts.list(**OWNER)
        assert fact.content == "Alice works at Globex"
        assert [f.content for f in memory.facts.history(fact.id, **OWNER)] == [
            "Alice works at Initech",
            "Alice works at Globex",
        ]
        (alice,) = memory.graph.find_entities("Alice", **OWNER)
        (works,) = memory.graph.relations(alice.id, **OWNER)
        assert works.valid_at == datetime(2023, 1, 1, tzinfo=UTC)
        (old,) = [
            r
            for r in memory.graph.relations(alice.id, include_invalid=True, **OWNER)
            if r.id != works.id
        ]
        assert old.invalid_at == datetime(2023, 1, 1, tzinfo=UTC)
        assert memory.graph.ingest(thread.id).entries == 0
        assert memory.graph.pending() == memory.graph.pending().__class__()
        assert memory.graph.drain()


def test_fact_with_a_chosen_id_is_added_once() -> None:
    with Memory("memory://") as memory:
        fact = memory.facts.add(content="Alice is vegan", fact_id="diet-of-alice")
        assert fact.id == "diet-of-alice"
        with pytest.raises(Conflict):
            memory.facts.add(content="Alice eats fish", fact_id="diet-of-alice")
        assert [f.content for f in memory.facts.list()] == ["Alice is vegan"]


def test_a_dump_keeps_what_was_ingested() -> None:
    source, target = InMemoryStore(), SQLiteStore(":memory:")
    try:
        memory = Memory(source, tokenizer=Words(), extractor=RuleExtractor())
        thread = memory.ensure_thread("t1", **OWNER)
        memory.remember(thread.id, "user", "Alice lives in Paris.")
        assert memory.graph.ingest(thread.id).entries == 1
        now = datetime(2026, 1, 1, tzinfo=UTC)
        import_dump(target, None, export_dump(source, "default", now=now))
        moved = Memory(target, tokenizer=Words(), extractor=RuleExtractor())
        again = moved.graph.ingest(thread.id)
        assert (again.entries, again.skipped) == (0, 1)
        (alice,) = moved.graph.find_entities("Alice", **OWNER)
        assert [r.weight for r in moved.graph.relations(alice.id, **OWNER)] == [1.0]
    finally:
        source.close()
        target.close()
