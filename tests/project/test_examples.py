"""Every program in examples/ runs as its docstring says, on real stores and a real server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.stores.test_contract_postgres import URL, drop_tables, require_postgres

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run one example program; it must exit 0. Its standard output."""
    base = {k: v for k, v in os.environ.items() if k != "MEMORYBANK_URL"}
    result = subprocess.run(
        args, cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_support_bot_on_sqlite_remembers_each_user_apart(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    program = [sys.executable, str(EXAMPLES / "support_bot_sqlite.py"), str(db)]
    first = run(program, tmp_path)
    # Bob never hears of Alice's order; Alice's second question is answered from memory.
    assert "bob: Hello, where is my order?\nbot: Which order number is it?" in first
    assert "alice: Any news about my order?\nbot: Your order #1234 is on its way." in first
    assert 'alice: 4 messages remembered, facts: ["alice\'s order #1234"]' in first
    assert 'bob: 4 messages remembered, facts: ["bob\'s order #98"]' in first
    second = run(program, tmp_path)  # the same file: the memory persisted
    assert 'alice: 8 messages remembered, facts: ["alice\'s order #1234"]' in second
    # The same question with no order named now has an answer for Bob too.
    assert "bob: Hello, where is my order?\nbot: Your order #98 is on its way." in second


def test_support_bot_on_postgres(tmp_path: Path) -> None:
    require_postgres()
    prefix = f"ex{uuid.uuid4().hex[:10]}_"
    try:
        out = run(
            [sys.executable, str(EXAMPLES / "support_bot_postgres.py"), URL, prefix], tmp_path
        )
    finally:
        drop_tables(URL, prefix)
    assert "alice: Any news about my order?\nbot: Your order #1234 is on its way." in out
    assert 'bob: 4 messages remembered, facts: ["bob\'s order #98"]' in out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_service_from_curl(tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.fail("curl is missing (apt-get install curl)")
    url = f"sqlite:///{tmp_path / 'svc.db'}"
    cli = [sys.executable, "-m", "memorybank"]
    key = run([*cli, "keys", "create", "--url", url, "--tenant", "acme"], tmp_path)
    key = key.strip().splitlines()[-1]
    assert key.startswith("mb_")
    port = _free_port()
    server = subprocess.Popen(
        [*cli, "serve", "--url", url, "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            assert server.poll() is None, "the server exited"
            time.sleep(0.2)
        out = run(
            ["bash", str(EXAMPLES / "service_curl.sh")],
            tmp_path,
            env={"MEMORYBANK_BASE": base, "MEMORYBANK_API_KEY": key},
        )
        history = httpx.get(
            f"{base}/v1/threads/support-42/history",
            headers={"Authorization": f"Bearer {key}", "X-User-Id": "alice"},
        )
        other = httpx.get(
            f"{base}/v1/threads/support-42/history",
            headers={"Authorization": f"Bearer {key}", "X-User-Id": "bob"},
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert '"id":"support-42"' in out
    assert '[{"role":"user","content":"My order #1234 never arrived."}' in out
    assert "Known facts:\\n- Alice prefers email over phone" in out
    assert '"field":"role"' in out and "status 422" in out
    assert [m["content"] for m in history.json()["items"]] == [
        "My order #1234 never arrived.",
        "Sorry! Let me check order #1234.",
    ]
    assert other.status_code == 403  # the thread is alice's: it fails closed for bob


def test_langgraph_graph_resumes_from_its_checkpoints(tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    program = [sys.executable, str(EXAMPLES / "langgraph_saver.py"), str(tmp_path / "g.db")]
    assert run(program, tmp_path).strip() == "['note 1 (run 1)']"
    assert run(program, tmp_path).strip() == "['note 1 (run 1)', 'note 2 (run 2)']"


def test_openai_agents_agent_with_a_scripted_model(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    program = [sys.executable, str(EXAMPLES / "openai_agents_agent.py"), str(tmp_path / "a.db")]
    out = run(program, tmp_path)
    assert "turn 1: It is sunny in Lisbon, 24C." in out
    assert "turn 2: You asked about Lisbon: sunny, 24C." in out
    # the second turn's model call got the first turn back from the session
    assert "items the model saw per call: [1, 3, 5]" in out
    assert (
        "history: ['user', 'function_call', 'function_call_output', 'message', 'user', 'message']"
        in out
    )
    assert run(program, tmp_path) == out  # it starts its session afresh on each run


def test_mcp_server_for_a_desktop_client(tmp_path: Path) -> None:
    """The desktop config snippet is valid and launches a working server over stdio."""
    import json

    pytest.importorskip("mcp")
    config = json.loads((EXAMPLES / "mcp_desktop" / "claude_desktop_config.json").read_text())
    server = config["mcpServers"]["memorybank"]
    assert server["command"] == "memorybank" and server["args"][0] == "mcp"
    db = tmp_path / "desk.db"
    src = str(Path(__file__).resolve().parent.parent.parent / "src")
    out = run(
        [sys.executable, str(EXAMPLES / "mcp_desktop" / "stdio_client.py"), str(db)],
        tmp_path,
        env={"PYTHONPATH": src},
    )
    assert "18 tools, among them: consolidate, feedback, forget, history, recall, remember" in out
    assert "history: ['I prefer window seats.']" in out
    assert "facts: ['prefers window seats']" in out
    from memorybank import Memory

    with Memory(f"sqlite:///{db}") as memory:  # written by the server, for the config's user
        thread = memory.threads.get("desk-1")
        assert thread is not None and thread.user_id == "you" and thread.agent_id == "desktop"
