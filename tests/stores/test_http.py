"""The remote store beyond the conformance suite: the wire, tenancy, errors and retries.

Everything runs against a live server (uvicorn on loopback, SQLite behind it);
raw requests use httpx like any client in another language would.
"""

from __future__ import annotations

import inspect
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from memorybank import ConfigurationError, Memory
from memorybank.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    StoreClosed,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Entry, Thread, ToolCall
from memorybank.server.store_rpc import SEPARATOR, server_tenant
from memorybank.stores.contract import OVERRIDES, REQUIRED
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.contract._sync.store import Store
from memorybank.stores.contract.types import UNSET, NewEntry, Record, RecordGuard, Visibility
from memorybank.stores.http import wire as _wire
from memorybank.stores.http._async.methods import AsyncHTTPStoreMethods
from memorybank.stores.http._async.store import AsyncHTTPStore
from memorybank.stores.http._sync.methods import HTTPStoreMethods
from memorybank.stores.http._sync.store import HTTPStore
from memorybank.stores.sqlite._async import AsyncSQLiteStore
from tests.stores.http_server import LiveServer, live_server

A, B = "tenant-a", "tenant-b"
ROOT = Path(__file__).resolve().parent.parent.parent
WHEN = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def _id(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    path: Path = tmp_path_factory.mktemp("http") / "server.db"
    with live_server(lambda: AsyncSQLiteStore(path), [A, B]) as live:
        yield live


def _post(
    server: LiveServer, method: str, body: Any, key: str | None = None, **headers: str
) -> Any:
    content = body if isinstance(body, bytes) else _wire.dumps(body)
    auth = {} if key == "" else {"authorization": f"Bearer {key or server.keys[A]}"}
    return httpx.post(f"{server.url}/v1/store/{method}", content=content, headers=auth | headers)


# -- the wire ---------------------------------------------------------------------------


def test_the_method_table_is_the_store_contract() -> None:
    abstract = {
        name
        for name, member in inspect.getmembers(AsyncStore)
        if getattr(member, "__isabstractmethod__", False)
    }
    assert abstract == set(REQUIRED)
    # plus every derived method a served store may answer itself (its override groups and
    # the single reads), so that the served store's own answer reaches the client
    derived = {name for group in OVERRIDES.values() for name in group}
    singles = {"entry_get", "entry_count", "entry_clear"}
    # and the change feed's reads and prune (its switch is the server operator's)
    assert set(_wire.METHODS) == (
        (abstract - {"close"}) | _wire.BATCH_METHODS | derived | singles | _wire.EVENT_METHODS
    )
    for name, method in _wire.METHODS.items():
        signature = inspect.signature(getattr(AsyncStore, name))
        params = [p for p in signature.parameters.values() if p.name != "self"]
        assert [p.name for p in method.params] == [p.name for p in params], name
        for wire, real in zip(method.params, params, strict=True):
            if real.default is inspect.Parameter.empty and "Unset" in str(real.annotation):
                assert wire.default is UNSET, (name, real.name)  # UNSET travels as absence
            elif real.default is inspect.Parameter.empty:
                assert wire.default is _wire._REQUIRED, (name, real.name)
            else:
                assert wire.default is real.default or wire.default == real.default, (name, real)


def _gen_wire() -> Any:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_wire
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return gen_wire


def test_the_client_methods_are_generated_from_the_contract_and_current() -> None:
    """``methods.py`` is what ``scripts/gen_wire.py`` writes; each of its methods has the
    contract's signature, async and sync; the client writes none of them by hand."""
    gen_wire = _gen_wire()
    assert gen_wire.TARGET.read_text() == gen_wire.render(), "run python scripts/gen_wire.py"
    for methods, contract in ((AsyncHTTPStoreMethods, AsyncStore), (HTTPStoreMethods, Store)):
        generated = {
            name for name, member in vars(methods).items() if inspect.isfunction(member)
        } - {"_call"}
        assert generated == set(_wire.METHODS), methods
        for name in generated:
            mine, theirs = getattr(methods, name), getattr(contract, name)
            assert inspect.signature(mine) == inspect.signature(theirs), name
    for store in (AsyncHTTPStore, HTTPStore):
        assert not set(vars(store)) & set(_wire.METHODS), "a hand-written forwarder"


@pytest.mark.parametrize(
    ("method", "name", "raw", "accepted"),
    [
        # a str is an id unless the table says otherwise: JSON text, search text, a label
        ("working_set", "key", "k" * 256, False),
        ("working_set", "value", "v" * 256, True),
        ("snapshot_save", "value", "v" * 256, True),
        ("text_search", "query", "two\nlines" * 30, True),
        ("thread_update", "title", "t" * 256, True),
        ("thread_update", "title", "t" * 1001, False),
        ("thread_update", "status", "gone", False),
        ("thread_list", "status", None, True),
        ("thread_list", "status", "archived", True),
        # an int is a count unless it is a position
        ("entry_list", "offset", 2**31, False),
        ("entry_compact", "through_position", 2**40, True),
        ("entry_compact", "through_position", -1, True),
    ],
)
def test_each_parameter_is_decoded_as_what_it_means(
    method: str, name: str, raw: Any, accepted: bool
) -> None:
    (param,) = (p for p in _wire.METHODS[method].params if p.name == name)
    if accepted:
        assert param.codec.decode(raw, name) == raw
    else:
        with pytest.raises(InvalidInput) as refused:
            param.codec.decode(raw, name)
        assert refused.value.field == name


def test_a_contract_type_without_a_codec_is_refused_when_the_table_is_built() -> None:
    with pytest.raises(TypeError, match=r"wire\._CODECS"):
        _wire._codec(frozenset[str], "thread_get(tenant)")
    assert _wire._codec(list[str] | None, "x").decode(None, "x") is None
    assert _wire.METHODS["working_get"].result.decode("[1]", "result") == "[1]"


def _round_trip(method: str, values: dict[str, Any]) -> dict[str, Any]:
    spec = _wire.METHODS[method]
    return _wire.decode_args(spec, _wire.loads(_wire.dumps(_wire.encode_args(spec, values))))


def test_values_cross_the_wire_exactly() -> None:
    data = {"f": 1e16, "z": -0.0, "big": 2**63 - 1, "small": -(2**63), "s": "é😀\x1f", "$date": "x"}
    record = Record(
        kind="fact",
        id="r " * 2,
        agent_id=None,
        user_id="ü",
        content="c",
        data=data,
        created_at=WHEN,
        updated_at=WHEN + timedelta(microseconds=1),
        key="k",
        expires_at=None,
        revision=7,
    )
    guard = RecordGuard("fact", record.id, None)
    got = _round_trip("record_put", {"tenant": "t", "records": [record], "guard": guard})
    assert got == {"tenant": "t", "records": [record], "guard": guard}
    (back,) = got["records"]
    assert str(back.data["z"]) == "-0.0" and isinstance(back.data["f"], float)
    entry = NewEntry(
        id="e",
        role="assistant",
        content=None,
        name=None,
        tool_calls=(),
        tool_call_id=None,
        metadata={},
        state={"n": [1, 2.5, None, True]},
        token_count=3,
        created_at=WHEN,
        idempotency_key="key\x1f1",
        fingerprint="f" * 64,
    )
    values = {"tenant": "t", "thread_id": "x", "entries": [entry], "updated_at": WHEN}
    assert _round_trip("entry_append", values) == values | {"branch": None, "owner": UNSET}
    for agent in ("bot", None, UNSET):
        for user in ("alice", None, UNSET):
            visibility = Visibility(agent, user)
            got = _round_trip("record_list", {"tenant": "t", "kind": "k", "visible_to": visibility})
            assert got["visible_to"] == visibility
            assert (got["user_id"], got["key"], got["limit"]) == (UNSET, UNSET, None)
    shifted = WHEN.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert _round_trip("thread_get", {"tenant": "t", "thread_id": "x"})["thread_id"] == "x"
    args = {"tenant": "t", "run_id": "r", "value": "1", "user_id": None, "saved_at": shifted}
    saved = _round_trip("snapshot_save", args)
    assert saved["saved_at"] == WHEN and saved["saved_at"].utcoffset() == timedelta(0)


# -- forged requests: 4xx in the one error shape, never 500 ----------------------------------

_THREAD_ARGS = {"tenant": "default", "thread_id": "x"}
_ENTRY: dict[str, Any] = {
    "id": "e",
    "role": "user",
    "content": "hi",
    "name": None,
    "tool_calls": [],
    "tool_call_id": None,
    "metadata": {},
    "state": {},
    "token_count": 1,
    "created_at": WHEN.isoformat(),
}


def _append(**entry: Any) -> dict[str, Any]:
    args = {**_THREAD_ARGS, "entries": [_ENTRY | entry], "updated_at": WHEN.isoformat()}
    return {"v": 1, "args": args}


@pytest.mark.parametrize(
    ("method", "body", "field"),
    [
        ("thread_get", b"{not json", "body"),
        ("thread_get", b"[1, 2]", "body"),
        ("thread_get", b'{"v": 1, "args": {"tenant": "default", "thread_id": NaN}}', "body"),
        ("thread_get", {"v": 2, "args": _THREAD_ARGS}, "v"),
        ("thread_get", {"v": 1, "args": []}, "args"),
        ("thread_get", {"v": 1, "args": {"tenant": "default"}}, "thread_id"),
        ("thread_get", {"v": 1, "args": _THREAD_ARGS | {"extra": 1}}, "args"),
        ("thread_get", {"v": 1, "args": _THREAD_ARGS | {"thread_id": "a\x00b"}}, "thread_id"),
        ("thread_get", {"v": 1, "args": _THREAD_ARGS | {"thread_id": "x" * 256}}, "thread_id"),
        ("thread_get", {"v": 1, "args": _THREAD_ARGS | {"tenant": 7}}, "tenant"),
        ("thread_list", {"v": 1, "args": {"tenant": "default", "limit": -1}}, "limit"),
        ("thread_list", {"v": 1, "args": {"tenant": "default", "limit": True}}, "limit"),
        ("thread_list", {"v": 1, "args": {"tenant": "default", "status": "gone"}}, "status"),
        ("entry_append", _append(content="\ud800"), "entries[0].content"),
        ("entry_append", _append(role="wizard"), "entries[0].role"),
        ("entry_append", _append(created_at="2026-01-01T00:00:00"), "entries[0].created_at"),
        ("entry_append", _append(created_at="yesterday"), "entries[0].created_at"),
        ("entry_append", _append(token_count=2**40), "entries[0].token_count"),
        ("entry_append", _append(metadata={"n": 2**64}), "entries[0].metadata"),
        ("entry_append", _append(surprise=1), "entries[0]"),
        ("entry_append", _append(tool_calls=[{"id": "c"}]), "entries[0].tool_calls[0].name"),
        (
            "vector_put",
            {
                "v": 1,
                "args": {
                    "tenant": "default",
                    "items": [{"kind": "k", "id": "i", "model_id": "m", "vector": ["1"]}],
                },
            },
            "items[0].vector",
        ),
        (
            "record_list",
            {"v": 1, "args": {"tenant": "default", "kind": "k", "visible_to": {"who": 1}}},
            "visible_to",
        ),
    ],
)
def test_forged_requests_are_invalid_input_naming_the_field(
    server: LiveServer, method: str, body: Any, field: str
) -> None:
    response = _post(server, method, body)
    assert response.status_code == 422, response.text
    error = response.json()
    assert (error["code"], error["field"]) == ("invalid_input", field)
    assert error["request_id"] == response.headers["x-request-id"]


@pytest.mark.parametrize("method", ["close", "__init__", "_call", "connect", "nope"])
def test_only_the_tables_methods_exist(server: LiveServer, method: str) -> None:
    response = _post(server, method, {"v": 1, "args": {}})
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_keys_are_required_and_checked(server: LiveServer) -> None:
    body = {"v": 1, "args": _THREAD_ARGS}
    assert _post(server, "thread_get", body, key="").status_code == 401
    assert _post(server, "thread_get", body, key="mb_0123456789ab_forged").status_code == 401
    store = HTTPStore(server.url, api_key="mb_0123456789ab_forged")
    with pytest.raises(ConfigurationError, match="refused the API key"):
        store.thread_get("default", "x")
    store.close()


def test_a_named_end_user_is_refused_not_widened(server: LiveServer) -> None:
    response = _post(server, "thread_get", {"v": 1, "args": _THREAD_ARGS}, **{"x-user-id": "bob"})
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


# -- tenancy -------------------------------------------------------------------------


def test_server_tenants_are_unambiguous_and_fit_an_id() -> None:
    pairs = [(A, "default"), (A, "x"), (A, "x y"), (A + "x", "y"), (A + "x", "default")]
    pairs += [(A, "é" * 255), ("b" * 255, "x"), ("b" * 255, "y"), ("a", "b"), ("b", "a")]
    mapped = [server_tenant(key, name) for key, name in pairs]
    assert len(set(mapped)) == len(set(pairs))
    assert server_tenant(A, "default") == A
    for (_, name), tenant in zip(pairs, mapped, strict=True):
        assert len(tenant) <= 255
        if name != "default":
            assert not tenant.isprintable()  # never a name a key's tenant can have
    assert server_tenant("b" * 255, "x").startswith(SEPARATOR)


async def test_a_key_reaches_only_its_own_tenant(server: LiveServer) -> None:
    async with (
        AsyncMemory(server.url, api_key=server.keys[A]) as a,
        AsyncMemory(server.url, api_key=server.keys[B]) as b,
    ):
        tid = (await a.threads.create(thread_id=_id(), user_id="alice")).id
        await a.remember(tid, "user", "secret of A")
        sub = (await a.tenant("x").threads.create(thread_id=_id())).id
        long_name = "é" * 255
        far = await a.tenant(long_name).threads.create(thread_id=_id())
        assert far.tenant_id == long_name
        for handle in (b, b.tenant(A), b.tenant("x")):
            assert await handle.threads.get(tid) is None
            assert await handle.threads.get(sub) is None
            assert await handle.threads.list() == []
            with pytest.raises(NotFound):
                await handle.remember(tid, "user", "intrusion")
        assert await a.threads.get(sub) is None  # a namespace is not the tenant itself
        got = await a.tenant("x").threads.get(sub)
        assert got is not None and got.tenant_id == "x"
    # On the server: "default" is the key's tenant itself (what the REST routes use).
    assert server.memory is not None
    store = server.memory.store
    assert isinstance(server.run(store.thread_get(A, tid)), Thread)
    assert server.run(store.thread_get(A + SEPARATOR + "x", sub)) is not None
    assert server.run(store.thread_get(server_tenant(A, long_name), far.id)) is not None


# -- the library over HTTP -----------------------------------------------------------------


def test_memory_opens_an_http_url_with_a_key(server: LiveServer) -> None:
    with Memory(server.url, api_key=server.keys[A]) as memory:
        tid = memory.threads.create(user_id="alice").id
        memory.remember(tid, "user", "hello", user_id="alice")
        assert [m["content"] for m in memory.history(tid, user_id="alice")] == ["hello"]
        with pytest.raises(ThreadForbidden):
            memory.history(tid, user_id="bob")
        with pytest.raises(InvalidInput) as info:
            memory.threads.update(tid, status="deleted")
        assert info.value.field == "status"
        with pytest.raises(Conflict):
            memory.threads.create(thread_id=tid)


def test_the_key_comes_from_the_environment(
    server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYBANK_API_KEY", server.keys[B])
    with Memory(server.url + "/") as memory:
        assert memory.threads.create().tenant_id == "default"
    monkeypatch.delenv("MEMORYBANK_API_KEY")
    with pytest.raises(ConfigurationError, match="API key"):
        Memory(server.url)


def test_an_api_key_is_for_http_urls_only(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="api_key"):
        Memory(f"sqlite:///{tmp_path}/x.db", api_key="mb_x_y")
    with pytest.raises(ConfigurationError, match="api_key"):
        Memory(HTTPStore("http://127.0.0.1:1", api_key="k"), api_key="k")


async def test_an_unreachable_server_is_store_unavailable_with_the_cause() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        store = AsyncHTTPStore(f"http://127.0.0.1:{port}", api_key="k", retries=1)
        with pytest.raises(StoreUnavailable) as info:
            await store.thread_get("default", "x")
        assert isinstance(info.value.__cause__, httpx.ConnectError)
        await store.close()
        with pytest.raises(StoreClosed):
            await store.thread_get("default", "x")


# -- retries: only what is safe to repeat ------------------------------------------------------


def test_lost_answers_are_retried_only_when_repeating_is_harmless(server: LiveServer) -> None:
    assert server.faults is not None
    lose, seen = server.faults.lose, server.faults.seen
    store = HTTPStore(server.url, api_key=server.keys[A], retries=2)
    with Memory(store) as memory:
        tid = memory.threads.create().id
        # A read: retried, answered.
        lose["/v1/store/thread_get"] = 2
        before = seen.get("/v1/store/thread_get", 0)
        assert memory.threads.get(tid) is not None
        assert seen["/v1/store/thread_get"] - before == 3
        # A keyed append whose answer is lost: the retry returns the stored entry.
        lose["/v1/store/entry_append"] = 1
        entry = memory.entries.add(tid, {"role": "user", "content": "once"}, idempotency_key="k1")
        assert [e.id for e in memory.entries.list(tid)] == [entry.id]
        # An append without a key is not repeated: the caller hears of the failure.
        lose["/v1/store/entry_append"] = 1
        before = seen["/v1/store/entry_append"]
        with pytest.raises(StoreUnavailable):
            memory.remember(tid, "user", "maybe")
        assert seen["/v1/store/entry_append"] - before == 1
        # Nor a delete (its count would be wrong on a replay).
        lose["/v1/store/thread_delete"] = 1
        with pytest.raises(StoreUnavailable):
            memory.threads.delete(tid)
        assert memory.threads.get(tid) is None  # it did apply: only the answer was lost
        # A record replace is repeated; a guarded write is not (its replay would fail the guard).
        lose["/v1/store/record_put"] = 1
        before = seen.get("/v1/store/record_put", 0)
        record = Record("note", _id("r"), None, None, "x", {}, WHEN, WHEN)
        store.record_put("default", [record])
        assert seen["/v1/store/record_put"] - before == 2
        guarded = Record("note", _id("r"), None, None, "y", {}, WHEN, WHEN)
        lose["/v1/store/record_put"] = 1
        with pytest.raises(StoreUnavailable):
            store.record_put("default", [guarded], guard=RecordGuard("note", guarded.id, None))
        assert store.record_get("default", "note", guarded.id) == guarded
        # Out of retries: the error reaches the caller.
        lose["/v1/store/entry_count"] = 3
        with pytest.raises(StoreUnavailable):
            memory.entries.count(tid)
        lose.clear()
    store.close()


def test_results_load_as_they_decode_and_malformed_ones_are_refused() -> None:
    thread = Thread("t", "default", None, "bot", "T", {"k": [1]}, "active", WHEN, WHEN)
    entry = Entry(
        "e", "t", "main", 3, "user", "hi", None, (ToolCall("c", "f"),), None, {}, {}, 2, WHEN
    )
    spec = _wire.METHODS["entry_list"]
    raw = _wire.loads(_wire.dumps(_wire.encode_result(spec, (thread, [entry]))))
    assert _wire.decode_result(spec, raw) == spec.result.decode(raw, "result") == (thread, [entry])
    for bad in (None, [], [raw[0]], [raw[0], [{"id": "e"}]], [raw[0] | {"x": 1}, []]):
        with pytest.raises(InvalidInput) as info:
            _wire.decode_result(spec, bad)
        assert info.value.field == "result"


def test_https_urls_open_the_remote_store() -> None:
    with Memory("https://memory.example:8443/base/", api_key="mb_x_y") as memory:
        assert isinstance(memory.store, HTTPStore)
        assert memory.store.url == "https://memory.example:8443/base"


def test_schemathesis_finds_no_server_error_on_the_store_route(
    server: LiveServer, tmp_path: Path
) -> None:
    """Property-based requests, negative data included, against the live schema."""
    from tests.server.test_schemathesis import schemathesis

    schemathesis(
        server.url, server.keys[A], "--include-path-regex", "^/v1/store", tmp_path=tmp_path
    )
