"""A LangGraph graph whose checkpoints and long-term store live in memorybank (SQLite).

    pip install 'memorybank[langgraph]'
    python examples/langgraph_saver.py [path/to/graph.db]

Each run continues the same graph thread where the last run left it: the notes grow by one
per run, and the per-user store keeps how many runs there were.
"""

from __future__ import annotations

import operator
import sys
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from memorybank import Memory
from memorybank.integrations.langgraph import MemorybankSaver, MemorybankStore


class State(TypedDict):
    notes: Annotated[list[str], operator.add]


def note(state: State, *, store: BaseStore) -> dict[str, list[str]]:
    """Add one note, and count the runs in the long-term store."""
    runs = store.get(("counters",), "runs")
    count = (runs.value["count"] if runs else 0) + 1
    store.put(("counters",), "runs", {"count": count})
    return {"notes": [f"note {len(state['notes']) + 1} (run {count})"]}


path = sys.argv[1] if len(sys.argv) > 1 else "graph.db"
with Memory(f"sqlite:///{path}") as memory:
    alice = memory.scoped(user_id="alice")  # checkpoints and items are alice's alone
    builder = StateGraph(State)
    builder.add_node("note", note)
    builder.add_edge(START, "note")
    builder.add_edge("note", END)
    graph = builder.compile(checkpointer=MemorybankSaver(alice), store=MemorybankStore(alice))
    config: Any = {"configurable": {"thread_id": "notes"}}
    print(graph.invoke({"notes": []}, config)["notes"])
