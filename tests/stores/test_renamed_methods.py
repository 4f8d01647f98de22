"""The contract's methods renamed to ``noun_verb``: the old names still work for one
release, both ways, with a ``DeprecationWarning``; and over the wire.

Old names are read from ``RENAMED`` in the code; the rename script
(/work/helpers/rename_store_methods.py, which rewrites every old name it finds) skips
this file.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from memorybank.records import Thread
from memorybank.stores import AsyncInMemoryStore, InMemoryStore
from memorybank.stores.contract import AsyncStore, Store
from memorybank.stores.contract.renamed import RENAMED
from memorybank.stores.http import wire as _wire
from memorybank.stores.sqlite._async import AsyncSQLiteStore
from memorybank.testing import AsyncContract
from tests.stores.http_server import LiveServer, live_server
from tests.stores.test_contract_example import dict_store

OLD = {new: old for old, new in RENAMED.items()}
NOW = datetime(2026, 1, 2, tzinfo=UTC)


def _thread(tid: str = "t1") -> Thread:
    return Thread(tid, "default", "alice", "bot", None, {}, "active", NOW, NOW)


def test_every_old_name_is_a_deprecated_alias_of_a_contract_method() -> None:
    for old, new in RENAMED.items():
        assert not re.fullmatch(r"(thread|branch|entry)_\w+", old), old
        assert re.fullmatch(r"(thread|branch|entry)_\w+", new), new
        for base in (AsyncStore, Store):
            assert callable(getattr(base, new)), new
            assert getattr(base, old).__doc__ == f"Deprecated (one release): ``{new}``."


def test_calling_an_old_name_warns_and_calls_the_new_one() -> None:
    store = InMemoryStore()
    with pytest.warns(DeprecationWarning, match=f"{OLD['thread_create']} is deprecated"):
        created = getattr(store, OLD["thread_create"])(_thread())
    assert created == store.thread_get("default", "t1")
    with pytest.warns(DeprecationWarning, match="call thread_get"):
        assert getattr(store, OLD["thread_get"])("default", "t1") == created
    store.close()


async def test_calling_an_old_name_of_an_async_store_warns_and_calls_the_new_one() -> None:
    store = AsyncInMemoryStore()
    await store.thread_create(_thread())
    with pytest.warns(DeprecationWarning, match="call entry_count"):
        assert await getattr(store, OLD["entry_count"])("default", "t1") == 0
    await store.close()


async def test_a_store_overriding_an_old_name_answers_the_new_one() -> None:
    """A subclass written before the rename overrides ``get_thread``: ``thread_get``
    (what the library calls) reaches its override, with a warning."""
    seen: list[str] = []

    async def old_get(self: Any, tenant: str, thread_id: str) -> Thread | None:
        seen.append(thread_id)
        return await AsyncInMemoryStore.thread_get(self, tenant, thread_id)

    Legacy = type("Legacy", (AsyncInMemoryStore,), {OLD["thread_get"]: old_get})
    store = Legacy()
    await store.thread_create(_thread())
    with pytest.warns(DeprecationWarning, match=f"implements {OLD['thread_get']}, deprecated"):
        assert (await store.thread_get("default", "t1")) is not None
    assert seen == ["t1"]
    await store.close()


def _legacy_dict_store() -> type[AsyncStore]:
    """``DictStore`` as it would have been written before the rename: every renamed
    method under its old name only, straight on ``AsyncStore``."""
    namespace = {
        OLD.get(name, name): member
        for name, member in vars(dict_store.DictStore).items()
        if name not in ("__dict__", "__weakref__")
    }
    assert not set(namespace) & set(RENAMED.values())
    return type("LegacyDictStore", (AsyncStore,), namespace)


def test_a_store_written_against_the_old_names_is_complete() -> None:
    legacy = _legacy_dict_store()
    assert not legacy.__abstractmethods__  # every new abstract name answered by an old one
    with pytest.raises(TypeError, match="abstract"):
        type("Empty", (AsyncStore,), {})()  # and a store implementing neither is refused


@pytest.mark.filterwarnings("ignore:.*deprecated:DeprecationWarning")
class TestLegacyDictStore(AsyncContract):
    """The whole conformance suite on a store that implements only the old names."""

    @pytest.fixture
    async def store(self) -> AsyncIterator[AsyncStore]:
        store = _legacy_dict_store()()
        yield store
        await store.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    path: Path = tmp_path_factory.mktemp("renamed") / "server.db"
    with live_server(lambda: AsyncSQLiteStore(path), ["a"]) as live:
        yield live


def test_the_server_accepts_a_call_by_its_old_name(server: LiveServer) -> None:
    """An HTTP store of the release before the rename calls ``/v1/store/get_thread``: the
    server answers it as ``thread_get`` (and a name that never existed is 404)."""
    headers = {"authorization": f"Bearer {server.keys['a']}"}
    body = _wire.dumps({"v": 1, "args": {"tenant": "default", "thread_id": "nope"}})
    for name in ("thread_get", OLD["thread_get"]):
        response = httpx.post(f"{server.url}/v1/store/{name}", content=body, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json() == {"v": 1, "result": None}
    response = httpx.post(f"{server.url}/v1/store/get_threads", content=body, headers=headers)
    assert response.status_code == 404
