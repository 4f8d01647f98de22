"""memorybank.integrations.langgraph against LangGraph itself (no mocks).

The checkpointers run LangGraph's own conformance package
(``langgraph-checkpoint-conformance``) on SQLite and PostgreSQL, every
capability they implement, and drive a real compiled graph over several
steps, resumed from a stored checkpoint.
"""

from __future__ import annotations

import operator
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.graph import END, START, StateGraph

from memorybank import AsyncMemory, Memory
from memorybank.integrations.langgraph import (
    AsyncMemorybankSaver,
    MemorybankSaver,
)
from tests.stores.test_contract_postgres import URL as PG_URL
from tests.stores.test_contract_postgres import drop_tables

SERVER_URL = os.environ.get("MEMORYBANK_POSTGRES_URL", PG_URL)


@pytest.fixture
def pg_prefix() -> Iterator[str]:
    """A fresh table prefix on the shared PostgreSQL, dropped afterwards."""
    from tests.stores.test_contract_postgres import require_postgres

    require_postgres()
    prefix = f"lg{uuid.uuid4().hex[:10]}_"
    yield prefix
    drop_tables(SERVER_URL, prefix)


async def _conformance(memory: Any, saver_type: Callable[[Any], BaseCheckpointSaver[Any]]) -> None:
    async def factory() -> AsyncIterator[BaseCheckpointSaver[Any]]:
        # every capability suite gets its own tenant: a fresh, empty checkpointer
        yield saver_type(memory.tenant(f"t{uuid.uuid4().hex[:12]}"))

    registered = checkpointer_test(name=getattr(saver_type, "__name__", "saver"))(factory)
    report = await validate(registered)
    failures = {
        name: result.failures for name, result in report.results.items() if not result.passed
    }
    assert not failures, failures
    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}


async def test_conformance_sqlite(tmp_path: Path) -> None:
    async with AsyncMemory(f"sqlite:///{tmp_path / 'lg.db'}") as memory:
        await _conformance(memory, AsyncMemorybankSaver)


@pytest.mark.server
async def test_conformance_postgres(pg_prefix: str) -> None:
    from memorybank._async.stores.postgres import AsyncPostgresStore

    store = AsyncPostgresStore.from_url(SERVER_URL, prefix=pg_prefix, pool_size=2, timeout=5)
    try:
        await _conformance(AsyncMemory(store), AsyncMemorybankSaver)
    finally:
        await store.close()


class _SyncUnderTest(MemorybankSaver):
    """The sync saver seen through the async methods the conformance package calls
    (each one a direct call of the sync method: the sync code does all the work)."""

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for item in self.list(config, **kwargs):
            yield item

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        return self.put(*args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        self.put_writes(*args, **kwargs)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Any) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)


async def test_conformance_sync_sqlite(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path / 'lg.db'}") as memory:
        await _conformance(memory, _SyncUnderTest)


# -- a real graph --------------------------------------------------------------


class _State(TypedDict):
    steps: Annotated[list[int], operator.add]
    note: str


def _graph(checkpointer: BaseCheckpointSaver[Any], *, limit: int) -> Any:
    def work(state: _State) -> dict[str, Any]:
        return {"steps": [len(state["steps"]) + 1]}

    def review(state: _State) -> dict[str, Any]:
        return {"note": f"reviewed {len(state['steps'])}"}

    def route(state: _State) -> str:
        return "review" if len(state["steps"]) >= limit else "work"

    builder = StateGraph(_State)
    builder.add_node("work", work)
    builder.add_node("review", review)
    builder.add_edge(START, "work")
    builder.add_conditional_edges("work", route, ["work", "review"])
    builder.add_edge("review", END)
    return builder.compile(checkpointer=checkpointer, interrupt_before=["review"])


def test_graph_runs_and_resumes_sync(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'graph.db'}"
    config: Any = {"configurable": {"thread_id": "chat-1"}}
    with Memory(url) as memory:
        graph = _graph(MemorybankSaver(memory.scoped(user_id="u1")), limit=5)
        paused = graph.invoke({"steps": [], "note": ""}, config)
        assert paused["steps"] == [1, 2, 3, 4, 5]
        assert graph.get_state(config).next == ("review",)
        history = list(graph.get_state_history(config))
        assert len(history) == 7  # input, 5 work steps... newest first
        # another user of the same store sees none of it
        other = _graph(MemorybankSaver(memory.scoped(user_id="u2")), limit=5)
        assert other.get_state(config).values == {}
    with Memory(url) as memory:  # a new process: resume from the stored checkpoint
        graph = _graph(MemorybankSaver(memory.scoped(user_id="u1")), limit=5)
        done = graph.invoke(None, config)
        assert done == {"steps": [1, 2, 3, 4, 5], "note": "reviewed 5"}
        # time travel: replay from the checkpoint after the second work step
        second = next(s for s in graph.get_state_history(config) if s.values.get("steps") == [1, 2])
        replayed = graph.invoke(None, second.config)
        assert replayed["steps"] == [1, 2, 3, 4, 5]
        assert graph.get_state(config).next == ("review",)


async def test_graph_runs_and_resumes_async(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'graph.db'}"
    config: Any = {"configurable": {"thread_id": "chat-1"}}
    async with AsyncMemory(url) as memory:
        graph = _graph(AsyncMemorybankSaver(memory), limit=3)
        paused = await graph.ainvoke({"steps": [], "note": ""}, config)
        assert paused["steps"] == [1, 2, 3]
    async with AsyncMemory(url) as memory:
        saver = AsyncMemorybankSaver(memory)
        graph = _graph(saver, limit=3)
        assert await graph.ainvoke(None, config) == {"steps": [1, 2, 3], "note": "reviewed 3"}
        await saver.acopy_thread("chat-1", "chat-2")
        copied = await graph.aget_state({"configurable": {"thread_id": "chat-2"}})
        assert copied.values == {"steps": [1, 2, 3], "note": "reviewed 3"}
        await saver.aprune(["chat-1"])
        assert len([s async for s in graph.aget_state_history(config)]) == 1
        assert (await graph.aget_state(config)).values["note"] == "reviewed 3"
