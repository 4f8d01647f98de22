"""Start the MCP server exactly as a desktop client would, from its JSON config, and call
its tools with the official `mcp` client over stdio.

    pip install 'memorybank[mcp]'
    python examples/mcp_desktop/stdio_client.py [path/to/memory.db]

`claude_desktop_config.json` (next to this file) is the snippet for a desktop client's
MCP settings (Claude Desktop: Settings > Developer > Edit Config; other clients take the
same `mcpServers` shape): the client launches `memorybank mcp` and talks to it over the
process's stdin and stdout. This program reads that snippet, points `--url` at a file of
its own, and launches the server the same way: `memorybank` is run as
`python -m memorybank` with this interpreter, so it works where the console script is
not on `PATH`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

CONFIG = Path(__file__).with_name("claude_desktop_config.json")


def server_parameters(db: Path) -> StdioServerParameters:
    """The config's `memorybank` server, with `--url` moved to `db`."""
    server = json.loads(CONFIG.read_text())["mcpServers"]["memorybank"]
    args: list[str] = list(server["args"])
    args[args.index("--url") + 1] = f"sqlite:///{db}"
    command: list[str] = [server["command"]]
    if command == ["memorybank"]:
        command = [sys.executable, "-m", "memorybank"]
    # A launched server gets only a few safe variables by default: pass the config's
    # own, and PYTHONPATH so that it imports the same memorybank as this program.
    env = {**server.get("env", {}), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return StdioServerParameters(command=command[0], args=[*command[1:], *args], env=env)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return dict(result.structured_content or {})


async def main(db: Path) -> None:
    async with Client(server_parameters(db)) as client:
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        print(f"{len(tools)} tools, among them: {', '.join(t for t in tools if '_' not in t)}")
        await call(client, "remember", thread_id="desk-1", content="I prefer window seats.")
        await call(client, "add_fact", content="prefers window seats")
        history = await call(client, "history", thread_id="desk-1")
        print(f"history: {[m['content'] for m in history['messages']]}")
        facts = await call(client, "list_facts")
        print(f"facts: {[f['content'] for f in facts['facts']]}")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1] if len(sys.argv) > 1 else "memory.db").resolve()))
