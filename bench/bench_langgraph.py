"""LangGraph checkpoints on disk: ``MemorybankSaver`` against the official ``SqliteSaver``.

The same small graph runs for ``--steps`` super-steps on each (one checkpoint
per step). Its state has a growing message list, a 20 KB context document set
once and never changed, and a step counter. ``SqliteSaver`` writes the full
state into every checkpoint; ``MemorybankSaver`` writes a channel's value only
when its version changes, so the document is stored once. The growing list is
still stored once per version on both (each step changes it).

Run: ``python -m bench.bench_langgraph [--steps N]`` (needs the ``langgraph``
extra and ``langgraph-checkpoint-sqlite``).
"""

from __future__ import annotations

import argparse
import operator
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from memorybank import Memory
from memorybank.integrations.langgraph import MemorybankSaver

DOCUMENT = "Background the agent keeps in its state but never edits. " * 350  # ~20 KB


class State(TypedDict):
    messages: Annotated[list[str], operator.add]
    context: str
    step: int


def build(checkpointer: BaseCheckpointSaver[Any], steps: int) -> Any:
    def agent(state: State) -> dict[str, Any]:
        n = state["step"] + 1
        return {"messages": [f"step {n}: the agent notes something short."], "step": n}

    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", lambda s: END if s["step"] >= steps else "agent")
    return builder.compile(checkpointer=checkpointer)


def run(checkpointer: BaseCheckpointSaver[Any], steps: int) -> float:
    graph = build(checkpointer, steps)
    started = time.perf_counter()
    config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": steps + 10}
    out = graph.invoke({"messages": [], "context": DOCUMENT, "step": 0}, config)
    assert out["step"] == steps
    return time.perf_counter() - started


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    steps = parser.parse_args().steps
    with tempfile.TemporaryDirectory() as tmp:
        official = Path(tmp) / "official.db"
        conn = sqlite3.connect(official, check_same_thread=False)
        seconds_official = run(SqliteSaver(conn), steps)
        conn.close()
        ours, empty = Path(tmp) / "memorybank.db", Path(tmp) / "empty.db"
        with Memory(f"sqlite:///{empty}") as memory:
            memory.store.record_list(memory.tenant_id, "none")  # create the schema only
        with Memory(f"sqlite:///{ours}") as memory:
            seconds_ours = run(MemorybankSaver(memory), steps)
        print(f"{steps} steps, one checkpoint each")
        print(f"  SqliteSaver      {size(official) / 1e6:8.2f} MB  {seconds_official:6.2f} s")
        print(
            f"  MemorybankSaver  {size(ours) / 1e6:8.2f} MB  {seconds_ours:6.2f} s"
            f"  (empty memorybank file: {size(empty) / 1e6:.2f} MB)"
        )


if __name__ == "__main__":
    main()
