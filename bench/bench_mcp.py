"""The MCP server: a tool call through the SDK against the library call it makes, and
what ``read_graph`` costs a model in tokens.

Setup: an SQLite store with a graph the size of the reference memory server's
complaint (``modelcontextprotocol/servers#3953``: 150 entities, 800+
observations, where its ``read_graph`` costs 50-80k tokens), 300 relations,
and a 200-message thread. Each row times the tool through the SDK's in-process
``Client`` and the same work called directly (``memorybank.mcp.graph_tools``
or ``AsyncMemory``), in the same run; the ratio is the MCP layer's cost
(JSON-RPC, validation, serialisation). Then the tokens (``o200k_base``) of the
whole graph in the reference shape against the largest ``read_graph`` page.

Run: ``python -m bench.bench_mcp [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client

from bench._util import Latency, table
from memorybank.mcp import graph_tools
from memorybank.mcp.server import create_server
from memorybank.memory._async.memory import AsyncMemory
from memorybank.tokens import get_tokenizer

WORDS = (
    "the user prefers tea coffee works at acme lives in paris berlin likes hiking chess "
    "reads novels meeting project deadline budget quarterly report office team"
).split()


Call = Callable[[], Awaitable[object]]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(14))


async def _time(call: Callable[[], Awaitable[object]], repeat: int) -> Latency:
    for _ in range(3):
        await call()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return Latency.of(samples)


async def run(entities: int, repeat: int) -> None:
    rng = random.Random(7)
    tokenizer = get_tokenizer(None)
    with tempfile.TemporaryDirectory() as directory:
        async with AsyncMemory(f"sqlite:///{directory}/bench.db") as memory:
            handle = memory.scoped(user_id="u", agent_id="a")
            server = create_server(memory, user_id="u", agent_id="a")
            shapes: list[graph_tools.McpEntity] = [
                {
                    "name": f"Entity {i}",
                    "entityType": rng.choice(["person", "concept", "organization"]),
                    "observations": [_sentence(rng) for _ in range(6)],
                }
                for i in range(entities)
            ]
            relations: list[graph_tools.McpRelation] = [
                {
                    "from": f"Entity {rng.randrange(entities)}",
                    "to": f"Entity {rng.randrange(entities)}",
                    "relationType": rng.choice(["knows", "part_of", "works_with"]),
                }
                for _ in range(entities * 2)
            ]
            async with Client(server) as client:
                start = time.perf_counter()
                for i in range(0, entities, 25):
                    await client.call_tool("create_entities", {"entities": shapes[i : i + 25]})
                for i in range(0, len(relations), 100):
                    await client.call_tool(
                        "create_relations", {"relations": relations[i : i + 100]}
                    )
                build = time.perf_counter() - start
                await handle.ensure_thread("thread")
                await handle.ensure_thread("writes")
                for _ in range(200):
                    await handle.remember("thread", "user", _sentence(rng))

                async def tool(name: str, **arguments: Any) -> object:
                    result = await client.call_tool(name, arguments)
                    assert not result.is_error, result.content
                    return result

                graph = handle.graph
                rows: list[list[object]] = []
                cases: list[tuple[str, Call, Call]] = [
                    (
                        "read_graph (50 entities)",
                        lambda: tool("read_graph", limit=50),
                        lambda: graph_tools.read_graph(graph, limit=50),
                    ),
                    (
                        "search_nodes",
                        lambda: tool("search_nodes", query="budget report"),
                        lambda: graph_tools.search_nodes(graph, "budget report"),
                    ),
                    (
                        "open_nodes (3 names)",
                        lambda: tool("open_nodes", names=["Entity 1", "Entity 2", "Entity 3"]),
                        lambda: graph_tools.open_nodes(graph, ["Entity 1", "Entity 2", "Entity 3"]),
                    ),
                    (
                        "history (20)",
                        lambda: tool("history", thread_id="thread", last=20),
                        lambda: handle.history("thread", last=20),
                    ),
                    (
                        "get_context (2000 tokens)",
                        lambda: tool("get_context", thread_id="thread", max_tokens=2000),
                        lambda: handle.build_context("thread", max_tokens=2000, include_facts=True),
                    ),
                    (
                        "remember",
                        lambda: tool("remember", thread_id="writes", content="hello there"),
                        lambda: handle.remember("writes", "user", "hello there"),
                    ),
                ]
                for label, through_mcp, direct in cases:
                    via = await _time(through_mcp, repeat)
                    lib = await _time(direct, repeat)
                    rows.append([label, via.p50, via.p95, lib.p50, lib.p95, via.p50 / lib.p50])
                pages: list[int] = []
                cursor: str | None = None
                while True:
                    page = await client.call_tool(
                        "read_graph", {"limit": 200, **({"cursor": cursor} if cursor else {})}
                    )
                    content = page.structured_content or {}
                    pages.append(tokenizer.count(json.dumps(content, indent=2)))
                    cursor = content.get("nextCursor")
                    if cursor is None:
                        break
    print(
        f"SQLite, {entities} entities x 6 observations, {len(relations)} relations "
        f"(built through the tools in {build:.1f} s)\n"
    )
    headers = ["tool", "MCP p50 ms", "MCP p95 ms", "library p50 ms", "library p95 ms", "ratio"]
    print(table(headers, rows))
    whole = {"entities": shapes, "relations": relations}
    print(
        f"\nreference read_graph (whole graph): {tokenizer.count(json.dumps(whole, indent=2)):,} "
        f"tokens; memorybank read_graph: {len(pages)} pages (limit 200), largest "
        f"{max(pages):,} tokens"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    asyncio.run(run(40 if args.quick else 150, 10 if args.quick else 50))


if __name__ == "__main__":
    main()
