"""``memorybank events``: switch the change feed on, read it as JSON lines after a cursor,
filtered by kinds (repeated or comma-separated), and refuse a kind that is none."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from memorybank.cli import app
from memorybank.memory._sync.memory import Memory


def _events(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["events", "--url", url, "--tenant", "t", *args])


def test_the_feed_read_filtered_and_after_a_cursor(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with Memory(url, tenant_id="t") as memory:
        memory.events.enable()  # before any write: nothing before it is recorded
        thread = memory.threads.create(user_id="ana")
        memory.entries.add(thread.id, {"role": "user", "content": "hello"})
        memory.entries.add(thread.id, {"role": "user", "content": "again"})
    every = _events(url)
    assert every.exit_code == 0, every.output
    lines = [json.loads(line) for line in every.output.splitlines()]
    assert [e["kind"] for e in lines] == ["thread.created", "entry.added", "entry.added"]
    assert {e["thread_id"] for e in lines} == {thread.id}
    assert all(e["user_id"] == "ana" for e in lines)

    after = _events(url, "--after", lines[1]["cursor"])
    assert [json.loads(line)["id"] for line in after.output.splitlines()] == [lines[2]["id"]]

    for form in (["--kinds", "entry.added"], ["--kinds", "entry.added,entry.deleted"]):
        got = _events(url, *form)
        assert [json.loads(line)["kind"] for line in got.output.splitlines()] == ["entry.added"] * 2

    asked = _events(url, "--after", lines[1]["cursor"], "--content")
    assert [json.loads(line)["content"] for line in asked.output.splitlines()] == ["again"]
    assert "content" not in lines[2]

    refused = _events(url, "--kinds", "entry.eaten")
    assert refused.exit_code != 0
    assert "entry.eaten" in refused.output
