"""Hand-made bad inputs on every store: each one is ``InvalidInput`` naming its field,
and writes nothing.

Every case runs against a tenant seeded with one of each record (a thread with
entries, a fact, a document, a summary, a snapshot, working memory, core facts, a
session); the tenant's whole visible state is read before and after the call and
must not change. The validation lives above the stores, so the five stores must
answer alike; a raw driver exception (``UnicodeEncodeError``, ``OverflowError``,
``TypeError``, a store's syntax error) fails the case.
"""

from __future__ import annotations

import math
import pickle
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memorybank import (
    CompactionService,
    ConfigurationError,
    CoreFacts,
    InvalidInput,
    Memory,
    SessionManager,
    StoreUnavailable,
)
from memorybank.stores import Store
from memorybank.stores.contract.types import VectorItem

AGENT = "agent"
USER = "u1"
RUN = "run-1"
DIMENSIONS = 8
HUGE = 10**30


class Embedder:
    """A real embedder (letters hashed into 8 dimensions) whose output a test can replace."""

    model_id = "test:letters@8"
    dimensions = DIMENSIONS

    def __init__(self, override: Sequence[Any] | None = None) -> None:
        self.override = override

    def embed(self, texts: Sequence[str]) -> list[list[Any]]:
        if self.override is not None:
            return [list(self.override) for _ in texts]
        out = []
        for text in texts:
            vector = [0.0] * DIMENSIONS
            for char in text.lower():
                vector[ord(char) % DIMENSIONS] += 1.0
            vector[0] += 1.0  # never the zero vector
            out.append(vector)
        return out

    async def aembed(self, texts: Sequence[str]) -> list[list[Any]]:
        return self.embed(texts)


class Seeded:
    """A fresh tenant holding one record of every kind."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        root = Memory(store, embedder=embedder)
        self.memory = root.tenant(f"bad-{uuid.uuid4().hex[:10]}")
        m = self.memory
        self.thread_id = m.threads.create(user_id=USER, agent_id=AGENT, title="seed").id
        m.entries.add_many(
            self.thread_id,
            [
                {"role": "user", "content": "what is the weather in Paris"},
                {"role": "assistant", "content": "sunny and warm"},
            ],
        )
        self.fact_id = m.facts.add(agent_id=AGENT, content="Paris is in France").id
        m.documents.add("Paris guide: museums and cafes", metadata={"k": 1})
        m.summaries.add(agent_id=AGENT, content="they talked about Paris")
        m.snapshots.save(RUN, {"step": 1})
        m.working(RUN).set("k", [1, 2])
        CoreFacts(memory=m, user_id=USER).set("city", "Paris")
        self.session_id = (
            SessionManager(m)
            .get_or_create(user_id=USER, channel_type="web", channel_id="c1", agent_id=AGENT)
            .id
        )

    def footprint(self) -> dict[str, Any]:
        """Everything the tenant holds, as plain values."""
        m = self.memory
        threads = m.threads.list()
        core = CoreFacts(memory=m, user_id=USER)
        return {
            "threads": [(t.id, t.title, t.metadata, t.status) for t in threads],
            "entries": {
                t.id: [
                    (e.id, e.role, e.content, e.metadata, e.state, e.token_count)
                    for e in m.entries.list(t.id)
                ]
                for t in threads
            },
            "branches": {t.id: [b.name for b in m.branches.list(t.id)] for t in threads},
            "facts": [(f.id, f.content, f.metadata, f.version) for f in m.facts.list()],
            "fact_history": [f.content for f in m.facts.history(self.fact_id)],
            "documents": [(d.id, d.content, d.metadata) for d in m.documents.list()],
            "summaries": [s.content for s in m.summaries.list(agent_id=AGENT)],
            "snapshot": m.snapshots.load(RUN),
            "working": m.working(RUN).items(),
            "core": core.all(),
            "core_history": core.history("city"),
        }


Call = Callable[[Seeded], object]


def _add(message: dict[str, Any], **kw: Any) -> Call:
    return lambda s: s.memory.entries.add(s.thread_id, message, **kw)


def _user(content: Any = "hi", **fields: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, **fields}


def _call(arguments: Any, call_id: str = "c1", name: str = "f") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


EAST = timezone(timedelta(hours=5))
WEST = timezone(timedelta(hours=-5))
YEAR_1_EAST = datetime(1, 1, 1, 2, tzinfo=EAST)
LATE_WEST = datetime(9999, 12, 31, 23, tzinfo=WEST)


def _compact(summary: str, **kw: Any) -> Call:
    def run(s: Seeded) -> object:
        service = CompactionService(memory=s.memory, summarize=lambda messages, options: summary)
        return service.compact(s.thread_id, **{"threshold": 0, "keep_recent": 1, **kw})

    return run


def _context(**kw: Any) -> Call:
    return lambda s: s.memory.build_context(
        s.thread_id, **{"agent_id": AGENT, "user_id": USER, "max_tokens": 1000, **kw}
    )


CASES: dict[str, tuple[Call, str]] = {
    # -- entries: text ------------------------------------------------------------------
    "content lone surrogate": (_add(_user("a\ud800b")), "content"),
    "content NUL": (_add(_user("a\x00b")), "content"),
    "content not a string": (_add(_user(b"bytes")), "content"),
    "name lone surrogate": (_add(_user(name="\udc00")), "name"),
    "name NUL": (_add(_user(name="a\x00")), "name"),
    "name too long": (_add(_user(name="n" * 1001)), "name"),
    # -- entries: provider payloads (extra fields, content parts, Responses items) ----------
    "extra field NUL": (_add(_user(refusal="a\x00")), "extra"),
    "extra field key surrogate": (_add({"role": "user", "content": "x", "\ud800": 1}), "extra"),
    "extra field a set": (_add(_user(audio={1, 2})), "extra"),
    "content part text NUL": (_add(_user([{"type": "text", "text": "a\x00"}])), "content"),
    "content part url surrogate": (
        _add(_user([{"type": "image_url", "image_url": {"url": "\ud800"}}])),
        "content",
    ),
    "content part without a type": (_add(_user([{"text": "x"}])), "content"),
    "content part a string": (_add(_user(["x"])), "content"),
    "content text part without text": (_add(_user([{"type": "text"}])), "content"),
    "content parts beyond 16 MiB": (
        _add(_user([{"type": "image_url", "image_url": {"url": "x" * 2**24}}])),
        "content",
    ),
    "item type not a string": (_add({"type": 5, "role": "user", "content": "x"}), "item"),
    "item summary NUL": (
        _add({"type": "reasoning", "summary": [{"type": "summary_text", "text": "\x00"}]}),
        "item",
    ),
    "item message unknown role": (
        _add({"type": "message", "role": "robot", "content": "x"}),
        "role",
    ),
    "item call id with a newline": (
        _add({"type": "function_call", "call_id": "c\n1", "name": "f", "arguments": "{}"}),
        "tool_calls",
    ),
    "item output call id with a newline": (
        _add({"type": "function_call_output", "call_id": "c\n1", "output": "x"}),
        "tool_call_id",
    ),
    "role not hashable": (_add({"role": ["user"], "content": "x"}), "role"),
    # -- entries: JSON ------------------------------------------------------------------
    "metadata key surrogate": (_add(_user(metadata={"\ud800": 1})), "metadata"),
    "metadata key NUL": (_add(_user(metadata={"a\x00": 1})), "metadata"),
    "metadata string NUL": (_add(_user(metadata={"a": ["x\x00"]})), "metadata"),
    "metadata int beyond 64 bits": (_add(_user(metadata={"a": 2**64})), "metadata"),
    "metadata int of 400 digits": (_add(_user(metadata={"a": 10**400})), "metadata"),
    "metadata negative int beyond 64 bits": (_add(_user(metadata={"a": -(2**63) - 1})), "metadata"),
    "metadata inf": (_add(_user(metadata={"a": math.inf})), "metadata"),
    "state nan": (_add(_user(state={"a": math.nan})), "state"),
    "metadata set": (_add(_user(metadata={"a": {1, 2}})), "metadata"),
    "metadata bytes": (_add(_user(metadata={"a": b"x"})), "metadata"),
    "metadata too deep": (_add(_user(metadata=_nested(100))), "metadata"),
    "state int key": (_add(_user(state={1: "x"})), "state"),
    # -- entries: tool calls ------------------------------------------------------------
    "tool arguments with a set": (_add(_call({"a": {1, 2}})), "tool_calls"),
    "tool arguments with bytes": (_add(_call({"a": b"x"})), "tool_calls"),
    "tool arguments with an object": (_add(_call({"a": object()})), "tool_calls"),
    "tool arguments with nan": (_add(_call({"a": math.nan})), "tool_calls"),
    "tool arguments surrogate": (_add(_call('{"a": "\ud800"}')), "tool_calls"),
    "tool arguments NUL": (_add(_call('{"a": "\x00"}')), "tool_calls"),
    "tool call id NUL": (_add(_call("{}", call_id="c\x00")), "tool_calls"),
    "tool name surrogate": (_add(_call("{}", name="\ud800")), "tool_calls"),
    "tool arguments a number": (_add(_call(5)), "tool_calls"),
    # -- entries: numbers and times -----------------------------------------------------
    "token_count huge": (_add(_user(), token_count=HUGE), "token_count"),
    "token_count 2**31": (_add(_user(), token_count=2**31), "token_count"),
    "token_count negative": (_add(_user(), token_count=-1), "token_count"),
    "token_count float": (_add(_user(), token_count=1.5), "token_count"),
    "created_at year 1 east of UTC": (_add(_user(), created_at=YEAR_1_EAST), "created_at"),
    "created_at year 999": (
        _add(_user(), created_at=datetime(999, 12, 31, tzinfo=UTC)),
        "created_at",
    ),
    "created_at 9999-12-31 west of UTC": (_add(_user(), created_at=LATE_WEST), "created_at"),
    "created_at naive": (_add(_user(), created_at=datetime(2024, 1, 1)), "created_at"),  # noqa: DTZ001
    "idempotency key NUL": (_add(_user(), idempotency_key="k\x00"), "idempotency_key"),
    "idempotency key too long": (_add(_user(), idempotency_key="k" * 256), "idempotency_key"),
    "thread id too long": (lambda s: s.memory.entries.add("t" * 256, _user()), "thread_id"),
    "add_many: third message bad": (
        lambda s: s.memory.entries.add_many(
            s.thread_id, [_user("one"), _user("two"), _user("th\ud800ree")]
        ),
        "content",
    ),
    "remember metadata surrogate": (
        lambda s: s.memory.remember(s.thread_id, "user", "x", metadata={"a": "\ud800"}),
        "metadata",
    ),
    # -- reads with numbers no store can hold ---------------------------------------------
    "history last huge": (lambda s: s.memory.history(s.thread_id, last=HUGE), "last"),
    "list limit huge": (lambda s: s.memory.entries.list(s.thread_id, limit=HUGE), "limit"),
    "list offset 2**63": (lambda s: s.memory.entries.list(s.thread_id, offset=2**63), "offset"),
    "list max_tokens huge": (
        lambda s: s.memory.entries.list(s.thread_id, max_tokens=HUGE),
        "max_tokens",
    ),
    "list before year 1 east": (
        lambda s: s.memory.entries.list(s.thread_id, before=YEAR_1_EAST),
        "before",
    ),
    "threads.list limit huge": (lambda s: s.memory.threads.list(limit=HUGE), "limit"),
    "search k huge": (lambda s: s.memory.search("Paris", k=HUGE), "k"),
    "search query surrogate": (lambda s: s.memory.search("Par\udc80is"), "query"),
    "search query NUL": (lambda s: s.memory.search("Paris\x00", mode="keyword"), "query"),
    "search filters nan": (lambda s: s.memory.search("Paris", filters={"a": math.nan}), "filters"),
    "embed_pending batch huge": (lambda s: s.memory.embed_pending(batch_size=HUGE), "batch_size"),
    # -- threads ----------------------------------------------------------------------
    "thread title surrogate": (lambda s: s.memory.threads.create(title="\ud800"), "title"),
    "thread title NUL": (lambda s: s.memory.threads.create(title="a\x00"), "title"),
    "thread metadata inf": (
        lambda s: s.memory.threads.create(metadata={"x": -math.inf}),
        "metadata",
    ),
    "thread user id too long": (lambda s: s.memory.threads.create(user_id="u" * 256), "user_id"),
    "thread update metadata NUL key": (
        lambda s: s.memory.threads.update(s.thread_id, metadata={"\x00": 1}),
        "metadata",
    ),
    "thread update title surrogate": (
        lambda s: s.memory.threads.update(s.thread_id, title="\udfff"),
        "title",
    ),
    # -- facts ------------------------------------------------------------------------
    "fact content NUL": (lambda s: s.memory.facts.add(agent_id=AGENT, content="a\x00"), "content"),
    "fact category surrogate": (
        lambda s: s.memory.facts.add(agent_id=AGENT, content="x", category="\ud800"),
        "category",
    ),
    "fact confidence 10**400": (
        lambda s: s.memory.facts.add(agent_id=AGENT, content="x", confidence=10**400),
        "confidence",
    ),
    "fact confidence nan": (
        lambda s: s.memory.facts.add(agent_id=AGENT, content="x", confidence=math.nan),
        "confidence",
    ),
    "fact expires_at year 1 east": (
        lambda s: s.memory.facts.add(agent_id=AGENT, content="x", expires_at=YEAR_1_EAST),
        "expires_at",
    ),
    "fact metadata 2**64": (
        lambda s: s.memory.facts.add(agent_id=AGENT, content="x", metadata={"n": 2**64}),
        "metadata",
    ),
    "fact source entry NUL": (
        lambda s: s.memory.facts.add(agent_id=AGENT, content="x", source_entries=["e\x00"]),
        "source_entries",
    ),
    "fact update content surrogate": (
        lambda s: s.memory.facts.update(s.fact_id, content="\ud800", supersede=True),
        "content",
    ),
    "fact update metadata set": (
        lambda s: s.memory.facts.update(s.fact_id, metadata={"a": {1}}),
        "metadata",
    ),
    "fact search query surrogate": (lambda s: s.memory.facts.search("\ud800 Paris"), "query"),
    "fact search k huge": (lambda s: s.memory.facts.search("Paris", k=HUGE), "k"),
    # -- documents ----------------------------------------------------------------------
    "document content surrogate": (lambda s: s.memory.documents.add("\ud800 guide"), "content"),
    "document content NUL": (lambda s: s.memory.documents.add("guide\x00"), "content"),
    "document metadata NUL": (
        lambda s: s.memory.documents.add("guide", metadata={"a": "\x00"}),
        "metadata",
    ),
    "document embedding 1e39": (
        lambda s: s.memory.documents.add("guide", embedding=[1e39] + [0.0] * 7),
        "embedding",
    ),
    "document embedding 10**400": (
        lambda s: s.memory.documents.add("guide", embedding=[10**400] + [0.0] * 7),
        "embedding",
    ),
    "document embedding nan": (
        lambda s: s.memory.documents.add("guide", embedding=[math.nan] * 8),
        "embedding",
    ),
    "document embedding strings": (
        lambda s: s.memory.documents.add("guide", embedding=["1"] * 8),  # type: ignore[list-item]
        "embedding",
    ),
    "document embedding booleans": (
        lambda s: s.memory.documents.add("guide", embedding=[True] * 8),
        "embedding",
    ),
    "document embedding nested": (
        lambda s: s.memory.documents.add("guide", embedding=[[1.0]] * 8),  # type: ignore[list-item]
        "embedding",
    ),
    "document embedding wrong length": (
        lambda s: s.memory.documents.add("guide", embedding=[1.0] * 9),
        "embedding",
    ),
    "documents.list limit huge": (lambda s: s.memory.documents.list(limit=HUGE), "limit"),
    # -- summaries, snapshots, working memory ---------------------------------------------
    "summary content surrogate": (
        lambda s: s.memory.summaries.add(agent_id=AGENT, content="\ud800"),
        "content",
    ),
    "summary content NUL": (
        lambda s: s.memory.summaries.add(agent_id=AGENT, content="a\x00"),
        "content",
    ),
    "snapshot surrogate": (lambda s: s.memory.snapshots.save(RUN, {"a": "\ud800"}), "value"),
    "snapshot int beyond 64 bits": (lambda s: s.memory.snapshots.save(RUN, [2**64]), "value"),
    "snapshot set": (lambda s: s.memory.snapshots.save(RUN, {1, 2}), "value"),
    "snapshot nan": (lambda s: s.memory.snapshots.save(RUN, math.nan), "value"),
    "working surrogate": (lambda s: s.memory.working(RUN).set("k", "\ud800"), "value"),
    "working key NUL": (lambda s: s.memory.working(RUN).set("k\x00", 1), "key"),
    "working inf": (lambda s: s.memory.working(RUN).set("k", [math.inf]), "value"),
    # -- core facts ---------------------------------------------------------------------
    "core fact user id too long": (
        lambda s: CoreFacts(memory=s.memory, user_id="u" * 256),
        "user_id",
    ),
    "core fact value surrogate": (
        lambda s: CoreFacts(memory=s.memory, user_id=USER).set("city", "\ud800"),
        "value",
    ),
    "core fact value NUL": (
        lambda s: CoreFacts(memory=s.memory, user_id=USER).set("city", "a\x00"),
        "value",
    ),
    "core fact key NUL": (
        lambda s: CoreFacts(memory=s.memory, user_id=USER).set("c\x00", "x"),
        "key",
    ),
    # -- sessions -----------------------------------------------------------------------
    "session channel NUL": (
        lambda s: SessionManager(s.memory).get_or_create(
            user_id=USER, channel_type="w\x00", channel_id="c", agent_id=AGENT
        ),
        "channel_type",
    ),
    "session metadata surrogate": (
        lambda s: SessionManager(s.memory).update(s.session_id, metadata={"a": "\ud800"}),
        "metadata",
    ),
    "session config nan": (
        lambda s: SessionManager(s.memory).update(s.session_id, config={"t": math.nan}),
        "config",
    ),
    "sessions.list limit huge": (lambda s: SessionManager(s.memory).list(limit=HUGE), "limit"),
    # -- compaction and context ---------------------------------------------------------
    "compact threshold huge": (_compact("ok", threshold=HUGE), "threshold"),
    "compact keep_recent negative": (_compact("ok", keep_recent=-1), "keep_recent"),
    "compact summary NUL": (_compact("sum\x00mary"), "summarize"),
    "compact summary surrogate": (_compact("\ud800"), "summarize"),
    "context input surrogate": (_context(current_input="\ud800"), "current_input"),
    "context system prompt NUL": (_context(system_prompt="\x00"), "system_prompt"),
    "context max_tokens huge": (_context(max_tokens=HUGE), "max_tokens"),
    # -- scope ids ------------------------------------------------------------------------
    "forget_user NUL": (lambda s: s.memory.forget_user("u\x00"), "user_id"),
    "tenant surrogate": (lambda s: s.memory.tenant("\ud800"), "tenant_id"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_refused_and_writes_nothing(every_store: Store, case: str) -> None:
    seeded = Seeded(every_store, Embedder())
    before = seeded.footprint()
    call, field = CASES[case]
    with pytest.raises(InvalidInput) as info:
        call(seeded)
    assert info.value.field == field, info.value
    assert info.value.code == "invalid_input"
    assert seeded.footprint() == before


#: Vectors an embedder may return that no store can keep: each is refused before a write.
BAD_VECTORS: dict[str, list[Any]] = {
    "1e39": [1e39] + [0.0] * 7,
    "10**400": [10**400] + [0.0] * 7,
    "nan": [math.nan] * 8,
    "-inf": [-math.inf] + [1.0] * 7,
    "wrong length": [1.0] * 3,
    "strings": ["0.5"] * 8,
}


@pytest.mark.parametrize("vector", list(BAD_VECTORS))
@pytest.mark.parametrize(
    "verb",
    ["documents.add", "facts.add", "facts.update", "search", "facts.search"],
)
def test_a_bad_vector_from_the_embedder_writes_nothing(
    every_store: Store, vector: str, verb: str
) -> None:
    seeded = Seeded(every_store, Embedder())
    before = seeded.footprint()
    m = Memory(every_store, embedder=Embedder(BAD_VECTORS[vector])).tenant(seeded.memory.tenant_id)
    calls: dict[str, Callable[[], object]] = {
        "documents.add": lambda: m.documents.add("a guide"),
        "facts.add": lambda: m.facts.add(agent_id=AGENT, content="new fact"),
        "facts.update": lambda: m.facts.update(seeded.fact_id, content="changed"),
        "search": lambda: m.search("Paris", mode="semantic"),
        "facts.search": lambda: m.facts.search("Paris"),
    }
    with pytest.raises(InvalidInput) as info:
        calls[verb]()
    assert info.value.field == "embedding"
    assert seeded.footprint() == before


def test_entries_are_kept_when_the_embedder_returns_a_bad_vector(every_store: Store) -> None:
    """The conversation is never lost: the entry is stored, its vector is left pending."""
    seeded = Seeded(every_store, Embedder())
    m = Memory(every_store, embedder=Embedder([1e39] + [0.0] * 7)).tenant(seeded.memory.tenant_id)
    entry = m.entries.add(seeded.thread_id, _user("kept"))
    assert m.entries.get(seeded.thread_id, entry.id) == entry


def test_search_never_returns_a_nan_score(every_store: Store) -> None:
    """Even a NaN vector written past ``Memory`` (straight to the store) scores no NaN."""
    seeded = Seeded(every_store, Embedder())
    m = seeded.memory
    doc = m.documents.add("Paris at night")
    every_store.vector_put(
        m.tenant_id,
        [VectorItem("document", doc.id, Embedder.model_id, [math.nan] * DIMENSIONS)],
    )
    for mode in ("semantic", "hybrid"):
        hits = m.search("Paris", mode=mode, kinds=("documents",), min_score=-1.0)
        assert all(math.isfinite(h.score) for h in hits), hits


def test_every_limit_is_one_number_on_every_store(every_store: Store) -> None:
    """The largest accepted value of each kind is accepted by every store alike."""
    seeded = Seeded(every_store, Embedder())
    m = seeded.memory
    longest = "i" * 255
    thread = m.threads.create(thread_id=longest, user_id=longest, agent_id=longest)
    entry = m.entries.add(
        thread.id,
        _user("x", name="n" * 1000),
        token_count=2**31 - 1,
        created_at=datetime(1000, 1, 1, tzinfo=UTC),
        idempotency_key=longest,
    )
    assert m.entries.get(thread.id, entry.id) == entry
    late = m.entries.add(
        thread.id, _user("y"), created_at=datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    )
    assert [e.id for e in m.entries.list(thread.id, limit=2**31 - 1, offset=0)] == [
        entry.id,
        late.id,
    ]
    assert len(m.history(thread.id, last=2**31 - 1)) == 2
    most = 2**31 - 1  # the paged scan asks the store for limit + offset rows at once
    assert m.entries.list(thread.id, limit=most, offset=most, max_tokens=most) == []
    assert len(m.entries.list(thread.id, limit=most, include_tool_calls=False)) == 2
    assert len(m.search("x", k=most, mode="keyword")) <= 2
    assert m.threads.list(limit=most) and m.documents.list(limit=most)
    found = m.threads.get(thread.id)
    assert found is not None and (found.id, found.user_id, found.agent_id) == (longest,) * 3
    CoreFacts(memory=m, user_id="c" * 200).set("k", "v")
    assert CoreFacts(memory=m, user_id="c" * 200).get("k") == "v"


# -- store URLs and paths --------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("sqlite:////proc/nope/x.db", StoreUnavailable),
        ("sqlite:////dev/null/x.db", StoreUnavailable),
        ("sqlite:///{tmp}", StoreUnavailable),  # a directory
        ("sqlite:///{tmp}/not-a-database.db", StoreUnavailable),
        ("sqlite:///{tmp}/nul\x00.db", ConfigurationError),
        ("bogus://host/db", ConfigurationError),
        ("sqlite:relative.db", ConfigurationError),
        ("mysql://root@127.0.0.1:99999/test", ConfigurationError),
        ("redis://127.0.0.1:notaport/0", ConfigurationError),
    ],
)
def test_a_bad_store_url_raises_a_typed_error(
    tmp_path: Path, url: str, error: type[Exception]
) -> None:
    (tmp_path / "not-a-database.db").write_bytes(b"this is not SQLite " * 100)
    with pytest.raises(error) as info:
        with Memory(url.replace("{tmp}", str(tmp_path))) as memory:
            memory.threads.list()
    if error is StoreUnavailable:
        assert info.value.__cause__ is not None


def test_invalid_input_always_names_its_field() -> None:
    with pytest.raises(TypeError):
        InvalidInput("no field")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        InvalidInput("empty field", field="")
    error = pickle.loads(pickle.dumps(InvalidInput("bad", field="content")))
    assert isinstance(error, InvalidInput) and (str(error), error.field) == ("bad", "content")
