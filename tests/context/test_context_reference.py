"""``build_context`` against a brute-force reference on a fixed dataset.

The builder reads pages, asks the store's vector search for candidates in
growing steps and checks their scope in SQL; the reference scores every
vector exactly and applies the rules of ``memorybank.context._async.builder`` in
the plainest way. Their picks (facts, semantic texts, entries, totals) must
be the same, with out-of-scope rows planted near the query (another user's
thread and documents, another agent's document, a deleted document whose
vector is left behind, a vector of no entry) and budgets that make the
greedy fits skip.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memorybank import AsyncMemory, ContextOptions
from memorybank.context._async.builder import AsyncContextBuilder
from memorybank.core._async.facts import fact_rank
from memorybank.records import Entry
from memorybank.stores import AsyncSQLiteStore
from memorybank.stores.contract._async.store import AsyncStore, Record, VectorItem
from memorybank.tokens import count_message_tokens

from .conftest import StepClock, Words

DIM = 32
WORDS = "budget office berlin plan review meeting report numbers team launch roadmap".split()


class Fixed:
    """Embeds every text as the query vector (entries' vectors are written directly)."""

    model_id = "test:fixed-32"
    dimensions = DIM

    def __init__(self, query: list[float]) -> None:
        self.query = query

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(self.query) for _ in texts]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def _unit(v: np.ndarray) -> list[float]:
    return [float(x) for x in v / np.linalg.norm(v)]


class Data:
    def __init__(self, memory: AsyncMemory, rng: np.random.Generator, query: list[float]) -> None:
        self.memory = memory
        self.rng = rng
        self.query = query
        self.vectors: dict[tuple[str, str], list[float]] = {}
        self.thread = ""

    def vector(self, near: bool) -> list[float]:
        q = np.asarray(self.query)
        if near:
            return _unit(q + self.rng.normal(0, 0.08, DIM))
        return _unit(self.rng.standard_normal(DIM))


async def build(memory: AsyncMemory, query: list[float], seed: int) -> Data:
    rng = np.random.default_rng(seed)
    words = random.Random(seed)
    data = Data(memory, rng, query)
    store, tenant, model = memory.store, memory.tenant_id, Fixed.model_id
    mine = await memory.threads.create(user_id="alice", agent_id="a")
    other = await memory.threads.create(user_id="bob", agent_id="a")
    data.thread = mine.id
    items: list[VectorItem] = []
    for thread, count, share in ((mine.id, 400, 0.12), (other.id, 60, 1.0)):
        messages: list[dict[str, Any]] = []
        for i in range(count):
            role = ("user", "assistant")[i % 2] if i % 37 else "system"
            size = 2 if i % 23 == 0 else words.randint(4, 40)  # a few too short to pick
            text = f"Turn {i}: " + " ".join(words.choice(WORDS) for _ in range(size))
            messages.append({"role": role, "content": text})
        user = "alice" if thread == mine.id else "bob"
        stored = await memory.entries.add_many(thread, messages, user_id=user)
        for n, entry in enumerate(stored):
            near = words.random() < share or (thread == mine.id and n >= count - 12)
            vec = data.vector(near)
            data.vectors[(thread, entry.id)] = vec
            items.append(VectorItem("entry", entry.id, model, vec, thread_id=thread))
    # a vector of the thread with no entry behind it: in scope, but nothing to pick
    items.append(VectorItem("entry", "ghost", model, data.vector(True), thread_id=mine.id))
    await store.vector_put(tenant, items)

    for i in range(12):
        await memory.facts.add(
            agent_id="a" if i % 3 else None,
            user_id="alice" if i % 2 else None,
            content=f"Fact {i}: prefers option {i}",
            confidence=None if i % 5 == 0 else words.random(),
        )
    await memory.facts.add(agent_id="a", user_id="bob", content="Fact of bob")

    now = memory._core.now()
    records, vectors = [], []
    for i in range(300):
        owner: tuple[str | None, str | None] = (None, None)
        if i % 10 == 3:
            owner = ("a", "bob")  # another user's: never shown
        elif i % 10 == 7:
            owner = ("other", None)  # another agent's: never shown
        elif i % 10 == 5:
            owner = ("a", "alice")
        rid = f"doc-{i:04d}"
        records.append(
            Record("document", rid, owner[0], owner[1], f"Document {i} text", {}, now, now)
        )
        vectors.append(VectorItem("document", rid, model, data.vector(words.random() < 0.15)))
    await store.record_put(tenant, records)
    await store.vector_put(tenant, vectors)
    return data


async def forget_a_near_document(data: Data) -> None:
    """Delete the best visible document's record, leaving its vector (a stale cache)."""
    best = max(await reference_documents(data))
    await data.memory.store.record_delete(data.memory.tenant_id, "document", [best[1]])


async def reference_documents(data: Data) -> list[tuple[float, str, str]]:
    """(score, id, content) of every visible document, exactly scored."""
    memory = data.memory
    records = await memory.store.record_list(memory.tenant_id, "document")
    got = await memory.store.vector_get(
        memory.tenant_id, "document", [r.id for r in records], model_id=Fixed.model_id
    )
    q = np.asarray(data.query, dtype=np.float32)
    out = []
    for record in records:
        if record.agent_id not in (None, "a") or record.user_id not in (None, "alice"):
            continue
        score = float(np.asarray(got[record.id], dtype=np.float32) @ q)
        out.append((score, record.id, record.content))
    return out


def _scored(entry: Entry) -> bool:
    return entry.role in ("user", "assistant") and bool((entry.content or "").strip())


async def reference(data: Data, options: ContextOptions, system_tokens: int) -> dict[str, Any]:
    memory = data.memory
    facts = sorted(await memory.facts.list(agent_id="a", user_id="alice"), key=fact_rank)
    docs = sorted(await reference_documents(data), key=lambda d: (-d[0], d[1]))[:20]
    semantic = [d[2] for d in docs if d[0] >= 0.7][:5]

    _, entries = await memory.store.entry_list(memory.tenant_id, data.thread)
    q = np.asarray(data.query, dtype=np.float32)
    scored = sorted(
        (
            (float(np.asarray(data.vectors[(data.thread, e.id)], dtype=np.float32) @ q), e)
            for e in entries
        ),
        key=lambda pair: (-pair[0], pair[1].id),
    )
    budget = options.available - system_tokens
    if options.strategy == "relevant":
        share, min_score, boundary, min_chars = budget, 0.0, math.inf, 0
    else:
        share, min_score, min_chars = math.floor(budget * 0.3), 0.6, 20
        boundary = entries[-10].position
    picked: list[Entry] = []
    used = 0
    for score, entry in scored:
        if score <= min_score:
            break
        if not _scored(entry) or entry.position >= boundary:
            continue
        if len(entry.content or "") <= min_chars:
            continue
        if used + entry.token_count <= share:
            picked.append(entry)
            used += entry.token_count
    recent: list[Entry] = []
    if options.strategy != "relevant":
        left = budget - used
        ids = {e.id for e in picked}
        for entry in reversed(entries):
            if entry.id in ids:
                continue
            if entry.token_count > left:
                break
            left -= entry.token_count
            recent.append(entry)
    chosen = sorted([*picked, *recent], key=lambda e: e.position)
    return {
        "facts": [f.id for f in facts],
        "semantic": semantic,
        "entries": [e.id for e in chosen],
        "total": len(entries),
    }


@pytest.fixture
async def data(store: AsyncStore) -> AsyncIterator[Data]:
    query = _unit(np.random.default_rng(5).standard_normal(DIM))
    memory = AsyncMemory(store, clock=StepClock(), tokenizer=Words(), embedder=Fixed(query))
    data = await build(memory, query, 11)
    yield data
    await memory.close()


@pytest.mark.parametrize("strategy", ["hybrid", "relevant"])
@pytest.mark.parametrize("max_tokens", [1200, 3000, 20000])
async def test_picks_match_a_brute_force_reference(
    data: Data, strategy: str, max_tokens: int
) -> None:
    await forget_a_near_document(data)
    options = ContextOptions(
        max_tokens=max_tokens,
        strategy=strategy,  # type: ignore[arg-type]
        include_facts=True,
        include_semantic_context=True,
    )
    builder = AsyncContextBuilder(options, data.memory)
    for _ in range(2):  # the second build runs on warm caches
        context = await builder.build(
            data.thread, agent_id="a", user_id="alice", current_input="the budget plan"
        )
        assert context.errors == []
        system = context.messages[0]
        assert system["role"] == "system"
        system_tokens = count_message_tokens(data.memory._core.tokenizer, system)
        expected = await reference(data, options, system_tokens)
        assert [f.id for f in context.facts] == expected["facts"]
        assert context.semantic == expected["semantic"]
        assert len(expected["semantic"]) == 5
        assert [e.id for e in context.entries] == expected["entries"]
        assert context.total_entries == expected["total"]
        assert context.token_count == system_tokens + sum(e.token_count for e in context.entries)
        assert context.truncated == (len(context.entries) < expected["total"])


class UnscopedVectors(AsyncSQLiteStore):
    """A SQLite store whose vector search ignores ``visible_to`` (as a vector index shared
    by every owner might): the builder's own check of each document's owner decides."""

    async def vector_search(self, *args: Any, **kwargs: Any) -> list[Any]:
        kwargs["visible_to"] = None
        return await super().vector_search(*args, **kwargs)


async def test_semantic_texts_skip_documents_the_search_let_through(tmp_path: Path) -> None:
    query = _unit(np.random.default_rng(5).standard_normal(DIM))
    store = UnscopedVectors(tmp_path / "unscoped.db")
    memory = AsyncMemory(store, clock=StepClock(), tokenizer=Words(), embedder=Fixed(query))
    try:
        data = await build(memory, query, 11)
        hits = await store.vector_search(
            memory.tenant_id, query, model_id=Fixed.model_id, kinds=["document"], k=20
        )
        # the best two become bob's: the first five records read give three texts, so
        # more are read
        best = await store.record_get_many(memory.tenant_id, "document", [h.id for h in hits[:2]])
        await store.record_put(
            memory.tenant_id,
            [dataclasses.replace(r, agent_id="a", user_id="bob") for r in best.values()],
        )
        visible = {d[1] for d in await reference_documents(data)}
        assert [h.id in visible for h in hits[:6]] == [False, False, True, True, True, True]
        options = ContextOptions(
            max_tokens=3000, include_facts=False, include_semantic_context=True
        )
        builder = AsyncContextBuilder(options, memory)
        context = await builder.build(
            data.thread, agent_id="a", user_id="alice", current_input="the budget plan"
        )
        assert context.errors == []
        expected = await reference(data, options, 0)
        assert len(expected["semantic"]) == 5
        assert context.semantic == expected["semantic"]
    finally:
        await memory.close()
