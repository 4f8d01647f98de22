"""``import-from langgraph``: a graph run by LangGraph itself (a scripted model and a real
tool node, no LLM) with SQLite and PostgreSQL savers and stores, imported into SQLite and
PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_openai_messages
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.base import BaseStore

from memorybank import Memory
from memorybank.importers import apply, langgraph
from tests.importers.conftest import run


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"18C in {city}"


def _model(state: MessagesState) -> dict[str, Any]:
    """A scripted model: asks the tool about the last user message, then answers."""
    last = state["messages"][-1]
    if isinstance(last, HumanMessage):
        call = {"name": "weather", "args": {"city": str(last.content)}, "id": f"call-{last.id}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}
    return {"messages": [AIMessage(content=f"It is {last.content}.")]}


def _route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def _run(saver: BaseCheckpointSaver[Any], store: BaseStore) -> None:
    """Two turns on thread t1, then a replay of turn two from after turn one (a fork), a
    one-turn thread t2, and two store items."""
    graph = StateGraph(MessagesState)
    graph.add_node("model", _model)
    graph.add_node("tools", ToolNode([weather]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", _route)
    graph.add_edge("tools", "model")
    app = graph.compile(checkpointer=saver)
    t1 = RunnableConfig(configurable={"thread_id": "t1"})
    app.invoke(MessagesState(messages=[HumanMessage("Paris")]), t1)
    after_one = app.get_state(t1).config
    app.invoke(MessagesState(messages=[HumanMessage("Rome")]), t1)
    app.invoke(MessagesState(messages=[HumanMessage("Oslo")]), after_one)  # time travel: a fork
    t2 = RunnableConfig(configurable={"thread_id": "t2"})
    app.invoke(MessagesState(messages=[HumanMessage("Lima")]), t2)
    store.put(("memories", "alice"), "food", {"content": "likes ramen", "tags": ["food"]})
    store.put(("prefs",), "theme", {"color": "blue"})


@contextmanager
def _sqlite(path: Path) -> Iterator[tuple[BaseCheckpointSaver[Any], BaseStore]]:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.store.sqlite import SqliteStore

    with (
        SqliteSaver.from_conn_string(str(path)) as saver,
        SqliteStore.from_conn_string(str(path)) as store,
    ):
        store.setup()
        yield saver, store


@contextmanager
def _postgres(url: str) -> Iterator[tuple[BaseCheckpointSaver[Any], BaseStore]]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore

    with PostgresSaver.from_conn_string(url) as saver, PostgresStore.from_conn_string(url) as store:
        saver.setup()
        store.setup()
        yield saver, store


def _openai(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return [dict(convert_to_openai_messages(m)) for m in messages]


def _check(target: str, saver: BaseCheckpointSaver[Any], store: BaseStore) -> None:
    """Every message, branch, time and store item arrived as LangGraph holds it."""
    latest = saver.get_tuple({"configurable": {"thread_id": "t1"}})
    assert latest is not None
    messages = latest.checkpoint["channel_values"]["messages"]
    with Memory(target) as memory:
        thread = memory.threads.get("t1", user_id="alice")
        assert thread is not None
        assert (thread.user_id, thread.agent_id) == ("alice", "graph")
        main = memory.entries.list("t1", user_id="alice")
        assert [e.to_message() for e in main] == _openai(messages)
        assert [e.metadata["source"]["id"] for e in main] == [m.id for m in messages]
        assert [e.role for e in main] == ["user", "assistant", "tool", "assistant"] * 2
        branches = [b for b in memory.branches.list("t1", user_id="alice") if b.name != "main"]
        assert len(branches) == 1
        forked = memory.entries.list("t1", branch=branches[0].name, user_id="alice")
        leaf = branches[0].name.removeprefix("checkpoint-")
        other = saver.get_tuple({"configurable": {"thread_id": "t1", "checkpoint_id": leaf}})
        assert other is not None
        assert [e.to_message() for e in forked] == _openai(
            other.checkpoint["channel_values"]["messages"]
        )
        assert [e.id for e in forked[:4]] == [e.id for e in main[:4]]  # the shared turn
        # a message's time is the time of the first checkpoint that held it
        first_seen: dict[str, str] = {}
        for found in sorted(saver.list(None), key=lambda c: c.checkpoint["ts"]):
            for m in found.checkpoint["channel_values"].get("messages", []):
                first_seen.setdefault(m.id, found.checkpoint["ts"])
        assert [e.created_at.isoformat() for e in main] == [
            first_seen[m.id].replace("Z", "+00:00") for m in messages
        ]
        assert len(memory.entries.list("t2", user_id="alice")) == 4
        documents = {d.metadata["key"]: d for d in memory.documents.list(user_id="alice")}
        for item in store.search((), limit=10):
            document = documents[item.key]
            assert document.metadata["namespace"] == list(item.namespace)
            assert document.metadata["value"] == item.value
            assert document.user_id == "alice"
        assert documents["food"].content == "likes ramen"


def test_sqlite_checkpointer_and_store(tmp_path: Path, target: str) -> None:
    source = tmp_path / "graph.db"
    with _sqlite(source) as (saver, store):
        _run(saver, store)
    args = (
        "import-from",
        "langgraph",
        "--source",
        str(source),
        "--url",
        target,
        "--user",
        "alice",
        "--agent",
        "graph",
    )
    first = run(*args)
    assert first.exit_code == 0, first.output
    assert "added 21 new items (branch: 1, document: 2, entry: 16, thread: 2)" in first.output
    again = run(*args)
    assert "added 0 new items" in again.output, again.output
    with _sqlite(source) as (saver, store):
        _check(target, saver, store)


def test_postgres_checkpointer_and_store(pg_schema: str, target: str) -> None:
    with _postgres(pg_schema) as (saver, store):
        _run(saver, store)
    plan = langgraph.read(pg_schema, user_id="alice", agent_id="graph")
    with Memory(target) as memory:
        assert apply(memory, plan, dry_run=True).total_new == 21
        assert apply(memory, plan).total_new == 21
        assert apply(memory, langgraph.read(pg_schema, user_id="alice", agent_id="graph")).new == {}
    with _postgres(pg_schema) as (saver, store):
        _check(target, saver, store)


def test_a_database_without_langgraph_tables_is_refused(tmp_path: Path, target: str) -> None:
    import sqlite3

    empty = tmp_path / "other.db"
    sqlite3.connect(empty).execute("CREATE TABLE t (x)").connection.close()
    result = run("import-from", "langgraph", "--source", str(empty), "--url", target)
    assert result.exit_code == 1
    assert "neither LangGraph checkpoints nor a LangGraph store" in result.output
