"""Importance and last use (memory.usage), decay in search, and the long-term retention
rules, on every store: explicit importance at write, uses written in batches, rankings
untouched without decay, scope, erasure, dumps, and prune by importance and disuse."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memorybank import Memory
from memorybank.dump._sync.portability import export_dump, import_dump
from memorybank.errors import InvalidInput, NotFound, ThreadForbidden
from memorybank.importance import (
    DEFAULT_IMPORTANCE,
    USAGE,
    USAGE_BATCH,
    USAGE_WRITE,
    USE_STEP,
    HalfLife,
    used,
)
from memorybank.retention import RetentionPolicy
from memorybank.testing._embedder import SynonymEmbedder
from tests.all_stores import STORE_KINDS, open_store

START = datetime(2026, 3, 1, tzinfo=UTC)
TENANT = "usage"


class Clock:
    """A settable clock."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(params=STORE_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def memory(kind: str, tmp_path: Path) -> Iterator[Memory]:
    with open_store(kind, tmp_path) as store:
        memory = Memory(store, clock=Clock(), embedder=SynonymEmbedder(), tenant_id=TENANT)
        yield memory


def clock(memory: Memory) -> Clock:
    value = memory._core.clock
    assert isinstance(value, Clock)
    return value


def usage_records(memory: Memory) -> list[str]:
    return sorted(r.key or "" for r in memory.store.record_list(TENANT, USAGE))


def test_importance_given_at_write_is_kept_and_checked(memory: Memory) -> None:
    fact = memory.facts.add(content="User is allergic to peanuts", user_id="u", importance=0.9)
    doc = memory.documents.add("The office opens at nine", importance=0.1)
    plain = memory.facts.add(content="User likes jazz", user_id="u")
    got = memory.usage.get("fact", fact.id)
    assert (got.importance, got.explicit, got.uses, got.last_used_at) == (0.9, True, 0, None)
    assert memory.usage.get("document", doc.id).importance == 0.1
    default = memory.usage.get("fact", plain.id)
    assert (default.importance, default.explicit) == (DEFAULT_IMPORTANCE, False)
    assert usage_records(memory) == sorted([fact.id, doc.id])  # one write with the item
    for bad in (1.5, -0.1, float("nan"), True, "high"):
        with pytest.raises(InvalidInput):
            memory.facts.add(content="never stored", importance=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            memory.documents.add("never stored", importance=bad)  # type: ignore[arg-type]
    assert [f.content for f in memory.facts.list()] == [
        "User is allergic to peanuts",
        "User likes jazz",
    ]
    assert len(memory.documents.list()) == 1


def test_a_search_notes_its_hits_and_writes_them_only_in_a_batch(memory: Memory) -> None:
    thread = memory.threads.create(user_id="u").id
    entry = memory.entries.add(thread, {"role": "user", "content": "I drink green tea daily"})
    doc = memory.documents.add("Green tea is a drink made from leaves")
    fact = memory.facts.add(content="User likes green tea", user_id="u", importance=0.6)
    kinds = ["entries", "documents", "facts"]
    clock(memory).now = START + timedelta(hours=1)
    first = memory.search("green tea", kinds=kinds, user_id="u")
    assert {h.id for h in first} == {entry.id, doc.id, fact.id}
    clock(memory).now = START + timedelta(hours=2)
    memory.search("green tea", kinds=kinds, user_id="u")
    assert usage_records(memory) == [fact.id]  # only the write-time record: no write per hit
    # the buffered uses are visible before they are written
    seen = memory.usage.get("entry", entry.id, thread_id=thread, user_id="u")
    assert (seen.uses, seen.last_used_at) == (2, START + timedelta(hours=2))
    assert memory.usage.flush() == 3
    assert usage_records(memory) == sorted([entry.id, doc.id, fact.id])
    assert memory.usage.flush() == 0
    stored = memory.usage.get("fact", fact.id)
    assert stored.uses == 2 and stored.explicit
    assert stored.importance == pytest.approx(used(0.6, 2))
    assert memory.usage.get("document", doc.id).importance == pytest.approx(
        1 - (1 - DEFAULT_IMPORTANCE) * (1 - USE_STEP) ** 2
    )
    # the entry's record is owned like its thread: forget_user erases it
    [record] = [r for r in memory.store.record_list(TENANT, USAGE) if r.key == entry.id]
    assert record.user_id == "u"


def test_the_buffer_is_bounded_and_close_writes_what_is_left(kind: str, tmp_path: Path) -> None:
    with open_store(kind, tmp_path) as store:
        memory = Memory(store, clock=Clock(), tenant_id=TENANT)
        for i in range(USAGE_BATCH + 5):
            memory.documents.add(f"note number {i} about kites")
        seen: set[str] = set()
        while len(seen) < USAGE_BATCH + 5:
            hits = memory.search("kites", kinds=["documents"], k=USAGE_BATCH + 5, mode="keyword")
            seen |= {h.id for h in hits}
        # the search that filled the buffer wrote it: never more than a batch waits
        assert len(memory._core.usage.items) < USAGE_BATCH
        written = len(usage_records(memory))
        assert written >= USAGE_BATCH - len(memory._core.usage.items)
        # with the hits of the search that filled it (one batch): none of them waits
        assert not memory._core.usage.items and written == USAGE_BATCH + 5
        memory.close()
        assert len(usage_records(memory)) == USAGE_BATCH + 5


def test_a_flush_writes_more_than_a_batch(memory: Memory) -> None:
    buffer, at = memory._core.usage, clock(memory).now
    for i in range(USAGE_WRITE + 3):
        buffer.note(TENANT, "document", f"d{i}", at, agent_id=None, user_id=None)
    assert memory.usage.flush() == USAGE_WRITE + 3
    assert len(usage_records(memory)) == USAGE_WRITE + 3


def test_rankings_without_decay_ignore_importance_and_use(memory: Memory) -> None:
    thread = memory.threads.create(user_id="u").id
    for text in ("we went hiking in the alps", "the alps trip was cold", "I like hiking boots"):
        memory.entries.add(thread, {"role": "user", "content": text})
    memory.documents.add("Hiking in the alps needs boots", importance=0.0)
    memory.facts.add(content="User likes hiking", user_id="u", importance=1.0)
    kinds = ["entries", "documents", "facts"]

    def ranking() -> list[tuple[str, str, float, dict[str, float]]]:
        return [
            (h.kind, h.id, h.score, h.signals)
            for h in memory.search("hiking alps", kinds=kinds, user_id="u", k=10)
        ]

    before = ranking()
    for _ in range(5):
        memory.search("boots", kinds=kinds, user_id="u")
    memory.usage.flush()
    clock(memory).now = START + timedelta(days=400)
    assert ranking() == before
    assert [
        (h.kind, h.id, h.score, h.signals)
        for h in memory.search("hiking alps", kinds=kinds, user_id="u", decay=None)
    ] == before


def test_decay_prefers_recently_used_and_important_memories(memory: Memory) -> None:
    old = memory.documents.add("Kites fly well in strong wind")
    clock(memory).now = START + timedelta(days=90)
    new = memory.documents.add("Kites fly well in strong wind!")
    # (a search is a use: the first one sees both as never used)
    decayed = memory.search(
        "kites wind", kinds=["documents"], mode="keyword", decay=HalfLife(days=30)
    )
    assert {h.id for h in decayed} == {old.id, new.id}
    assert decayed[0].id == new.id and decayed[0].signals["decay"] > decayed[1].signals["decay"]
    # made important, the old one wins again
    memory.usage.set("document", old.id, 1.0)
    memory.usage.set("document", new.id, 0.0)
    again = memory.search(
        "kites wind", kinds=["documents"], mode="keyword", decay=HalfLife(days=30)
    )
    assert again[0].id == old.id
    for bad in (0, -1, float("inf")):
        with pytest.raises(InvalidInput):
            HalfLife(days=bad)
    with pytest.raises(InvalidInput):
        memory.search("kites", decay=30)  # type: ignore[arg-type]


def test_usage_is_scoped_like_its_item(memory: Memory) -> None:
    doc = memory.documents.add("Ana's tax return notes", user_id="ana")
    thread = memory.threads.create(user_id="ana").id
    entry = memory.entries.add(thread, {"role": "user", "content": "my secret"})
    bob = memory.scoped(user_id="bob")
    with pytest.raises(NotFound):
        bob.usage.get("document", doc.id)
    with pytest.raises(NotFound):
        bob.usage.set("document", doc.id, 1.0)
    with pytest.raises(NotFound):
        bob.usage.rate("document", doc.id, useful=True)
    with pytest.raises(ThreadForbidden):
        bob.usage.rate("entry", entry.id, thread_id=thread, useful=False)
    with pytest.raises(InvalidInput):
        memory.usage.get("entry", entry.id)  # an entry is named with its thread
    with pytest.raises(InvalidInput):
        memory.usage.get("thing", doc.id)
    assert usage_records(memory) == []  # nothing written by a refused call
    ana = memory.scoped(user_id="ana")
    assert ana.usage.rate("document", doc.id, useful=True).importance == 0.75
    assert ana.usage.rate("entry", entry.id, thread_id=thread, useful=False).importance == 0.25
    assert memory.forget_user("ana") > 0
    assert usage_records(memory) == []


def test_a_dump_carries_importance_and_use(memory: Memory, tmp_path: Path) -> None:
    doc = memory.documents.add("Remember the milk", importance=0.8)
    memory.search("milk", kinds=["documents"])
    memory.usage.flush()
    with open_store("memory", tmp_path) as target:
        import_dump(target, None, export_dump(memory.store, TENANT, now=START))
        back = Memory(target, tenant_id=TENANT)
        assert back.usage.get("document", doc.id) == memory.usage.get("document", doc.id)


def test_retention_by_importance_and_disuse(memory: Memory) -> None:
    keep_important = memory.facts.add(content="User is diabetic", user_id="u", importance=0.9)
    drop = memory.facts.add(content="User once mentioned a red car", user_id="u", importance=0.1)
    memory.facts.update(drop.id, content="User once mentioned a blue car", user_id="u")
    used_doc = memory.documents.add("How to reset the router", importance=0.2)
    idle_doc = memory.documents.add("Old menu of the canteen", importance=0.2)
    clock(memory).now = START + timedelta(days=100)
    assert memory.search("reset router", kinds=["documents"], mode="keyword")[0].id == used_doc.id
    clock(memory).now = START + timedelta(days=120)
    policy = RetentionPolicy(min_importance=0.3, unused_for=timedelta(days=60))
    dry = memory.prune(policy, dry_run=True)
    assert [(k, i) for k, i, _, _ in dry.long_term] == [
        ("fact", drop.id),
        ("document", idle_doc.id),
    ]
    assert (dry.facts_deleted, dry.documents_deleted) == (1, 1)
    assert memory.facts.get(drop.id) is not None and memory.documents.get(idle_doc.id) is not None
    report = memory.prune(policy)
    assert [(k, i) for k, i, _, _ in report.long_term] == [(k, i) for k, i, _, _ in dry.long_term]
    assert memory.facts.get(drop.id) is None and memory.facts.history(drop.id) == []
    assert memory.documents.get(idle_doc.id) is None
    assert memory.facts.get(keep_important.id) is not None
    assert memory.documents.get(used_doc.id) is not None
    assert drop.id not in usage_records(memory) and idle_doc.id not in usage_records(memory)
    # one rule alone: what it names
    only_idle = memory.prune(RetentionPolicy(unused_for=timedelta(days=60)), dry_run=True)
    assert [i for _, i, _, _ in only_idle.long_term] == [keep_important.id]
    for bad in ({"min_importance": 2.0}, {"unused_for": timedelta(0)}):
        with pytest.raises(InvalidInput):
            RetentionPolicy(**bad)


def test_feedback_moves_importance_of_facts_documents_and_entries(memory: Memory) -> None:
    thread = memory.threads.create(user_id="u").id
    entry = memory.entries.add(thread, {"role": "user", "content": "the blue kettle is broken"})
    doc = memory.documents.add("How to descale a blue kettle", user_id="u")
    fact = memory.facts.add(content="User owns a blue kettle", user_id="u")
    hits = {
        h.kind: h
        for h in memory.search("blue kettle", kinds=["entries", "documents", "facts"], user_id="u")
    }
    rated_fact = memory.feedback(hits["fact"], useful=True, user_id="u")
    assert rated_fact.id == fact.id and rated_fact.confidence == 0.75  # type: ignore[union-attr]
    # (the search's use, still buffered, counts on top of the rated importance)
    assert memory.usage.get("fact", fact.id).importance == pytest.approx(used(0.75, 1))
    on_doc = memory.feedback(hits["document"], useful=False, user_id="u")
    assert on_doc.importance == pytest.approx(used(0.25, 1))  # type: ignore[union-attr]
    on_entry = memory.feedback(hits["entry"], useful=True, user_id="u")
    assert (on_entry.kind, on_entry.id) == ("entry", entry.id)  # type: ignore[union-attr]
    assert on_entry.importance == pytest.approx(used(0.75, 1))  # type: ignore[union-attr]
    memory.usage.flush()
    assert memory.usage.get("document", doc.id).importance == pytest.approx(used(0.25, 1))
    assert memory.usage.get("fact", fact.id).importance == pytest.approx(used(0.75, 1))
    with pytest.raises(NotFound):
        memory.scoped(user_id="v").feedback(hits["document"], useful=False)
