"""Property tests of every write verb on every store: exact round trip, or ``InvalidInput``.

For generated arguments (text with lone surrogates, NUL, emoji and very long
runs; integers far beyond 64 bits; ``-0.0``, ``1e16``, NaN and infinities;
datetimes across the whole ``datetime`` range in several time zones; JSON
nested in lists, tuples and dicts, with sets and bytes now and then) each verb
must either succeed and read back exactly what it was given, or raise
``InvalidInput`` whose ``field`` is one the oracle below found bad, having
written nothing. The oracle is docs/concepts.md's "Input rules", written
independently of ``memorybank.rules.validate``, so the two can disagree and fail
a test.

Examples are bounded so the file runs in well under two minutes: set
``HYPOTHESIS_PROFILE=soak`` for many more.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memorybank import CoreFacts, InvalidInput, Memory
from memorybank.records import Entry, ToolCall
from memorybank.stores import Store
from tests.context.conftest import Words

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("soak", parent=settings.get_profile("ci"), max_examples=1000)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
if PROFILE.max_examples > 1000:  # hypothesis' own default profile: keep this file bounded
    PROFILE = settings.get_profile("ci")
each_store = settings(PROFILE)

MAX_CONTENT = 20_000
DIMENSIONS = 4
INT64 = (-(2**63), 2**63 - 1)
MIN_TIME = datetime(1000, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


class Embedder:
    """Four letter buckets; documents given their own ``embedding`` never call it."""

    model_id = "test:buckets@4"
    dimensions = DIMENSIONS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0 + sum(ord(c) % 4 == i for c in t) for i in range(4)] for t in texts]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def fresh(store: Store, *, embedder: Embedder | None = None) -> Memory:
    """A memory on a tenant of its own: every example starts empty.

    Words count tokens: token counting is not what these tests are about.
    """
    root = Memory(store, tokenizer=Words(), max_content_chars=MAX_CONTENT, embedder=embedder)
    return root.tenant(f"p-{uuid.uuid4().hex[:12]}")


# -- the oracle: docs/concepts.md's input rules ----------------------------------------


def storable(value: object) -> bool:
    """Text every store keeps: valid UTF-8 (no lone surrogate) and no NUL."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


def id_ok(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 255 and value.isprintable()


def label_ok(value: object) -> bool:
    """A name, title or category: storable, non-empty, at most 1000 characters."""
    return storable(value) and 0 < len(value) <= 1000  # type: ignore[arg-type]


def json_ok(value: object, depth: int = 0) -> bool:
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, int):
        return INT64[0] <= value <= INT64[1]
    if isinstance(value, float):
        return math.isfinite(value)
    if depth >= 64:
        return False
    if isinstance(value, dict):
        return all(storable(k) and json_ok(x, depth + 1) for k, x in value.items())
    if isinstance(value, list | tuple):
        return all(json_ok(x, depth + 1) for x in value)
    return False


def count_ok(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


def time_ok(value: object) -> bool:
    if not isinstance(value, datetime) or value.utcoffset() is None:
        return False
    try:
        return MIN_TIME <= value.astimezone(UTC) <= MAX_TIME
    except OverflowError:
        return False


def as_json(value: Any) -> Any:
    """What a JSON value reads back as: tuples become lists."""
    if isinstance(value, dict):
        return {k: as_json(x) for k, x in value.items()}
    if isinstance(value, list | tuple):
        return [as_json(x) for x in value]
    return value


def same(a: Any, b: Any) -> bool:
    """Equal JSON values of equal types: ``1 != 1.0``, ``-0.0 != 0.0``, ``1e16`` stays a float."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def attempt(bad: set[str], call: Callable[[], Any]) -> Any:
    """Run ``call``: it must succeed iff ``bad`` is empty, else name one of ``bad``.

    Returns the call's result, or ``None`` after the expected ``InvalidInput``.
    """
    if not bad:
        return call()
    with pytest.raises(InvalidInput) as info:
        call()
    assert info.value.field in bad, (info.value.field, bad, str(info.value))
    return None


# -- strategies ---------------------------------------------------------------------------

SPECIAL = ["\x00", "\ud800", "\udbff", "\udc00", "\udfff", "\u2028", "\ufeff", "\U0001f600"]
characters = st.one_of(st.characters(), st.sampled_from([*SPECIAL, "é", " ", "'", "\\", "%"]))
short_text = st.text(characters, max_size=24)
long_text = st.builds(
    lambda unit, n: unit * n,
    st.sampled_from(["a", "é ", "\U0001f600", "word ", "\ud800"]),
    st.integers(900, MAX_CONTENT + 100),
)
texts = st.one_of(short_text, short_text, long_text)
labels = st.one_of(short_text, st.builds(lambda n: "t" * n, st.integers(990, 1010)))
ids = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=["C"]), min_size=1, max_size=12),
    st.text(characters, max_size=8),
    st.builds(lambda n: "i" * n, st.integers(250, 260)),
)
optional_ids = st.one_of(st.none(), ids)
ints = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 2**31 - 1, 2**31, 2**53 + 1, *INT64, INT64[1] + 1, INT64[0] - 1]),
    st.sampled_from([10**30, 10**400, -(10**400)]),
)
floats = st.one_of(
    st.floats(),
    st.sampled_from([-0.0, 0.0, 1e16, -1e16, 0.1, 5e-324, 1.7976931348623157e308, 1e39]),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)
scalars = st.one_of(st.none(), st.booleans(), ints, floats, short_text)
not_json = st.sampled_from([{1, 2}, frozenset({"a"}), b"bytes", bytearray(b"x"), complex(1, 2)])
json_values = st.recursive(
    st.one_of(scalars, scalars, scalars, not_json),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(short_text, inner, max_size=4),
        st.dictionaries(st.integers(0, 3), inner, min_size=1, max_size=2),
    ),
    max_leaves=10,
)
json_objects = st.one_of(st.none(), st.dictionaries(short_text, json_values, max_size=5))
counts = st.one_of(st.integers(0, 10_000), ints)
zones = st.sampled_from(
    [
        UTC,
        timezone(timedelta(hours=14)),
        timezone(-timedelta(hours=12)),
        timezone(timedelta(hours=5, minutes=30)),
    ]
)
# hypothesis takes naive bounds and attaches the zones itself
EARLY = datetime(1000, 1, 1, tzinfo=UTC).replace(tzinfo=None)
LATE = datetime(9999, 12, 30, tzinfo=UTC).replace(tzinfo=None)
datetimes = st.one_of(
    st.datetimes(timezones=zones),
    st.datetimes(min_value=EARLY, max_value=EARLY + timedelta(days=1), timezones=zones),
    st.datetimes(min_value=LATE, timezones=zones),
    st.datetimes(),  # naive
)
optional_datetimes = st.one_of(st.none(), datetimes)


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[list[Any], bool]:
    """1-3 tool calls (dicts or ToolCall) and whether they are all valid."""
    calls: list[Any] = []
    ok = True
    for _ in range(draw(st.integers(1, 3))):
        call_id, name = draw(ids), draw(labels)
        arguments = draw(st.one_of(texts, st.dictionaries(short_text, json_values, max_size=3)))
        ok = ok and id_ok(call_id) and label_ok(name)
        if isinstance(arguments, dict):
            ok = ok and json_ok(arguments)
        else:
            ok = ok and storable(arguments) and len(arguments) <= MAX_CONTENT
        if draw(st.booleans()) and isinstance(arguments, str):
            calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
        else:
            function = {"name": name, "arguments": arguments}
            calls.append({"id": call_id, "type": "function", "function": function})
    return calls, ok


def orphan_fields(batch: list[dict[str, Any]]) -> set[str]:
    """``{"tool_call_id"}`` when a tool result of ``batch`` (written to a fresh thread)
    answers no call made earlier in the batch: an orphan, refused."""
    called: set[Any] = set()
    for message in batch:
        if message["role"] == "tool" and message.get("tool_call_id") not in called:
            return {"tool_call_id"}
        for call in message.get("tool_calls") or ():
            called.add(call.id if isinstance(call, ToolCall) else call.get("id"))
    return set()


@st.composite
def messages(draw: st.DrawFn) -> tuple[dict[str, Any], set[str]]:
    """A provider-shaped message of a consistent shape, and the fields that are bad."""
    role = draw(st.sampled_from(["user", "assistant", "system", "tool"]))
    message: dict[str, Any] = {"role": role}
    bad: set[str] = set()
    content = draw(texts)
    if role == "assistant" and draw(st.booleans()):
        calls, calls_ok = draw(tool_calls())
        message["tool_calls"] = calls
        if not calls_ok:
            bad.add("tool_calls")
        if draw(st.booleans()):
            content = None
    if role == "tool":
        message["tool_call_id"] = call_id = draw(ids)
        if not id_ok(call_id):
            bad.add("tool_call_id")
    message["content"] = content
    if content is not None and not (storable(content) and len(content) <= MAX_CONTENT):
        bad.add("content")
    if draw(st.booleans()):
        message["name"] = name = draw(labels)
        if not label_ok(name):
            bad.add("name")
    for field in ("metadata", "state"):
        value = draw(json_objects)
        if value is not None:
            message[field] = value
            if not json_ok(value):
                bad.add(field)
    return message, bad


def check_entry(entry: Entry, message: dict[str, Any]) -> None:
    """``entry`` holds exactly what ``message`` gave."""
    assert entry.role == message["role"]
    assert entry.content == message["content"]
    assert entry.name == message.get("name")
    assert entry.tool_call_id == message.get("tool_call_id")
    assert same(entry.metadata, as_json(message.get("metadata") or {}))
    assert same(entry.state, as_json(message.get("state") or {}))
    given_calls = message.get("tool_calls") or []
    assert len(entry.tool_calls) == len(given_calls)
    for stored, call in zip(entry.tool_calls, given_calls, strict=True):
        if isinstance(call, ToolCall):
            assert stored == call
            continue
        arguments = call["function"]["arguments"]
        if isinstance(arguments, dict):  # the provider convention: json.dumps of the dict
            arguments = json.dumps(as_json(arguments))
        assert stored == ToolCall(call["id"], call["function"]["name"], arguments)


def entries_of(m: Memory, thread_id: str) -> list[Entry]:
    """Every stored entry, oldest first, as the store holds them.

    ``entries.list`` would drop a tool result whose call is not in the window.
    """
    _, entries = m.store.entry_list(m.tenant_id, thread_id)
    return entries


# -- entries ------------------------------------------------------------------------------


@each_store
@given(
    message=messages(),
    token_count=st.one_of(st.none(), counts),
    created_at=optional_datetimes,
    key=st.one_of(st.none(), ids),
)
def test_entries_add(
    every_store: Store,
    message: tuple[dict[str, Any], set[str]],
    token_count: int | None,
    created_at: datetime | None,
    key: str | None,
) -> None:
    m = fresh(every_store)
    thread = m.threads.create(user_id="u")
    given_message, bad = message
    bad = bad | orphan_fields([given_message])  # a fresh thread has no call to answer
    if token_count is not None and not count_ok(token_count):
        bad = bad | {"token_count"}
    if created_at is not None and not time_ok(created_at):
        bad = bad | {"created_at"}
    if key is not None and not id_ok(key):
        bad = bad | {"idempotency_key"}
    entry = attempt(
        bad,
        lambda: m.entries.add(
            thread.id,
            given_message,
            token_count=token_count,
            created_at=created_at,
            idempotency_key=key,
            user_id="u",
        ),
    )
    stored = entries_of(m, thread.id)
    if entry is None:
        assert stored == []
        return
    assert stored == [entry] and m.entries.get(thread.id, entry.id) == entry
    check_entry(entry, given_message)
    if token_count is not None:
        assert entry.token_count == token_count
    if created_at is not None:
        assert entry.created_at == created_at and entry.created_at.tzinfo is UTC
    assert entry.idempotency_key == key or (key is None and entry.idempotency_key is None)


@each_store
@given(batch=st.lists(messages(), min_size=1, max_size=4), created_at=optional_datetimes)
def test_entries_add_many(
    every_store: Store, batch: list[tuple[dict[str, Any], set[str]]], created_at: datetime | None
) -> None:
    m = fresh(every_store)
    thread = m.threads.create()
    bad = set().union(*(b for _, b in batch))
    bad |= orphan_fields([message for message, _ in batch])
    if created_at is not None and not time_ok(created_at):
        bad.add("created_at")
    given_messages = [message for message, _ in batch]
    added = attempt(
        bad,
        lambda: m.entries.add_many(
            thread.id, given_messages, created_at=created_at, idempotency_key="k"
        ),
    )
    stored = entries_of(m, thread.id)
    if added is None:
        assert stored == []  # all or nothing
        return
    assert stored == added
    for entry, message in zip(added, given_messages, strict=True):
        check_entry(entry, message)


# -- threads ------------------------------------------------------------------------------


@each_store
@given(
    title=st.one_of(st.none(), labels),
    metadata=json_objects,
    user_id=optional_ids,
    agent_id=optional_ids,
    thread_id=optional_ids,
)
def test_threads_create(
    every_store: Store,
    title: str | None,
    metadata: dict[str, Any] | None,
    user_id: str | None,
    agent_id: str | None,
    thread_id: str | None,
) -> None:
    m = fresh(every_store)
    bad = {
        name
        for name, ok in (
            ("title", title is None or label_ok(title) or title == ""),
            ("metadata", json_ok(metadata)),
            ("user_id", user_id is None or id_ok(user_id)),
            ("agent_id", agent_id is None or id_ok(agent_id)),
            ("thread_id", thread_id is None or id_ok(thread_id)),
        )
        if not ok
    }
    if title == "":
        bad.discard("title")  # an empty title is a title
    created = attempt(
        bad,
        lambda: m.threads.create(
            title=title, metadata=metadata, user_id=user_id, agent_id=agent_id, thread_id=thread_id
        ),
    )
    if created is None:
        assert m.threads.list() == []
        return
    found = m.threads.get(created.id)
    assert found is not None and found == created
    assert (found.title, found.user_id, found.agent_id) == (title, user_id, agent_id)
    assert thread_id is None or found.id == thread_id
    assert same(found.metadata, as_json(metadata or {}))


@each_store
@given(title=st.one_of(st.none(), labels), metadata=json_objects)
def test_threads_update(
    every_store: Store, title: str | None, metadata: dict[str, Any] | None
) -> None:
    m = fresh(every_store)
    thread = m.threads.create(title="before", metadata={"v": 1.5})
    bad = set()
    if title is not None and title != "" and not label_ok(title):
        bad.add("title")
    if not json_ok(metadata):
        bad.add("metadata")
    updated = attempt(
        bad, lambda: m.threads.update(thread.id, title=title, metadata=metadata or {})
    )
    found = m.threads.get(thread.id)
    assert found is not None
    if updated is None:
        assert (found.title, found.metadata) == ("before", {"v": 1.5})
        return
    assert found == updated
    assert found.title == title
    assert same(found.metadata, as_json(metadata or {}))


# -- facts --------------------------------------------------------------------------------

confidences = st.one_of(st.none(), st.floats(), ints, st.sampled_from([0, 1, True, 0.5]))


def fact_text_ok(value: object) -> bool:
    """Content of a fact or document: storable, not blank, not too long."""
    return (
        isinstance(value, str)
        and storable(value)
        and bool(value.strip())
        and len(value) <= MAX_CONTENT
    )


def confidence_ok(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 0 <= value <= 1


@each_store
@given(
    content=texts,
    category=st.one_of(st.none(), labels),
    confidence=confidences,
    metadata=json_objects,
    expires_at=optional_datetimes,
    user_id=optional_ids,
    sources=st.lists(ids, max_size=3),
)
def test_facts_add(
    every_store: Store,
    content: str,
    category: str | None,
    confidence: Any,
    metadata: dict[str, Any] | None,
    expires_at: datetime | None,
    user_id: str | None,
    sources: list[str],
) -> None:
    m = fresh(every_store)
    bad = {
        name
        for name, ok in (
            ("content", fact_text_ok(content)),
            ("category", category is None or (label_ok(category) and category.strip() != "")),
            ("confidence", confidence_ok(confidence)),
            ("metadata", json_ok(metadata)),
            ("expires_at", expires_at is None or time_ok(expires_at)),
            ("user_id", user_id is None or id_ok(user_id)),
            ("source_entries", all(id_ok(s) for s in sources)),
        )
        if not ok
    }
    fact = attempt(
        bad,
        lambda: m.facts.add(
            agent_id="a",
            content=content,
            category=category,
            confidence=confidence,
            metadata=metadata,
            expires_at=expires_at,
            user_id=user_id,
            source_entries=sources,
        ),
    )
    stored = m.facts.list(include_expired=True)
    if fact is None:
        assert stored == []
        return
    assert stored == [fact]
    assert (fact.content, fact.category, fact.user_id) == (content, category, user_id)
    assert fact.confidence == (None if confidence is None else float(confidence))
    assert same(fact.metadata, as_json(metadata or {}))
    assert fact.expires_at == expires_at
    assert fact.source_entries == tuple(dict.fromkeys(sources))


@each_store
@given(content=texts, metadata=json_objects, supersede=st.booleans())
def test_facts_update(
    every_store: Store, content: str, metadata: dict[str, Any] | None, supersede: bool
) -> None:
    m = fresh(every_store)
    old = m.facts.add(agent_id="a", content="first value", metadata={"n": -0.0})
    bad = set()
    if not fact_text_ok(content):
        bad.add("content")
    if not json_ok(metadata):
        bad.add("metadata")
    new = attempt(
        bad,
        lambda: m.facts.update(
            old.id, content=content, metadata=metadata or {}, supersede=supersede
        ),
    )
    history = m.facts.history(old.id)
    if new is None:
        assert history == [old]
        assert same(m.facts.get(old.id).metadata, {"n": -0.0})  # type: ignore[union-attr]
        return
    assert m.facts.get(old.id) == new
    assert new.content == content
    assert same(new.metadata, as_json(metadata or {}))
    assert [f.content for f in history] == (["first value", content] if supersede else [content])


# -- documents ---------------------------------------------------------------------------

vector_items = st.one_of(
    st.floats(width=64),
    st.integers(-(10**40), 10**40),
    st.sampled_from([3.4e38, 3.5e38, 1e39, 1e-45, -0.0, True, "1"]),
)


def vector_ok(vector: list[Any]) -> bool:
    """Numbers (not bools), finite and within float32, ``DIMENSIONS`` of them, not all zero."""
    if len(vector) != DIMENSIONS:
        return False
    for x in vector:
        if isinstance(x, bool) or not isinstance(x, int | float):
            return False
        if not abs(x) <= 3.4028234663852886e38:  # also False for NaN
            return False
    return any(x != 0 for x in vector)


def unit(vector: list[Any]) -> list[float]:
    """``vector`` scaled to length 1 (by its largest component first, as float64 can)."""
    largest = max(abs(float(x)) for x in vector)
    scaled = [float(x) / largest for x in vector]
    norm = math.sqrt(math.fsum(x * x for x in scaled))
    return [x / norm for x in scaled]


@each_store
@given(
    content=texts,
    metadata=json_objects,
    embedding=st.one_of(st.none(), st.lists(vector_items, min_size=3, max_size=5)),
)
def test_documents_add(
    every_store: Store, content: str, metadata: dict[str, Any] | None, embedding: list[Any] | None
) -> None:
    m = fresh(every_store, embedder=Embedder())
    bad = set()
    if not fact_text_ok(content):
        bad.add("content")
    if not json_ok(metadata):
        bad.add("metadata")
    if embedding is not None and not vector_ok(embedding):
        bad.add("embedding")
    doc = attempt(bad, lambda: m.documents.add(content, metadata=metadata, embedding=embedding))
    stored = m.documents.list()
    if doc is None:
        assert stored == []
        return
    assert stored == [doc] and m.documents.get(doc.id) == doc
    assert doc.content == content
    assert same(doc.metadata, as_json(metadata or {}))
    vectors = every_store.vector_get(m.tenant_id, "document", [doc.id], model_id=Embedder.model_id)
    if embedding is not None:
        assert vectors[doc.id] == pytest.approx(unit(embedding), abs=1e-6)


# -- core facts, summaries, snapshots, working memory ------------------------------------


@each_store
@given(user_id=optional_ids, key=ids, value=texts)
def test_core_facts_set(every_store: Store, user_id: str | None, key: str, value: str) -> None:
    m = fresh(every_store)
    bad = set()
    if user_id is not None and not id_ok(user_id):
        bad.add("user_id")
    if not id_ok(key):
        bad.add("key")
    if not (storable(value) and len(value) <= MAX_CONTENT):
        bad.add("value")
    attempt(bad, lambda: CoreFacts(memory=m, user_id=user_id).set(key, value))
    if "user_id" in bad:
        return
    core = CoreFacts(memory=m, user_id=user_id)
    if bad:
        assert core.all() == {}
        return
    assert core.all() == {key: value}
    assert [v for v, _ in core.history(key)] == [value]


@each_store
@given(agent_id=ids, user_id=optional_ids, content=texts)
def test_summaries_add(
    every_store: Store, agent_id: str, user_id: str | None, content: str
) -> None:
    m = fresh(every_store)
    bad = set()
    if not id_ok(agent_id):
        bad.add("agent_id")
    if user_id is not None and not id_ok(user_id):
        bad.add("user_id")
    if not (storable(content) and 0 < len(content) <= MAX_CONTENT):
        bad.add("content")
    summary = attempt(
        bad, lambda: m.summaries.add(agent_id=agent_id, user_id=user_id, content=content)
    )
    if bad & {"agent_id", "user_id"}:
        return  # nothing to list them by
    listed = m.summaries.list(agent_id=agent_id, user_id=user_id)
    assert listed == ([] if summary is None else [summary])
    if summary is not None:
        assert (summary.content, summary.user_id) == (content, user_id)


@each_store
@given(run_id=ids, value=json_values, user_id=optional_ids)
def test_snapshots_save(every_store: Store, run_id: str, value: Any, user_id: str | None) -> None:
    m = fresh(every_store)
    bad = set()
    if not id_ok(run_id):
        bad.add("run_id")
    if not json_ok(value):
        bad.add("value")
    if user_id is not None and not id_ok(user_id):
        bad.add("user_id")
    attempt(bad, lambda: m.snapshots.save(run_id, value, user_id=user_id))
    if "run_id" in bad:
        return
    loaded = m.snapshots.load(run_id, user_id=user_id if "user_id" not in bad else None)
    if bad:
        assert loaded is None
    else:
        assert same(loaded, as_json(value))


@each_store
@given(key=ids, value=json_values)
def test_working_memory_set(every_store: Store, key: str, value: Any) -> None:
    m = fresh(every_store)
    working = m.working("run")
    bad = set()
    if not id_ok(key):
        bad.add("key")
    if not json_ok(value):
        bad.add("value")
    attempt(bad, lambda: working.set(key, value))
    items = working.items()
    if bad:
        assert items == {}
    else:
        assert items.keys() == {key} and same(items[key], as_json(value))
