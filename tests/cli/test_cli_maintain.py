"""``memorybank consolidate``, ``consolidation-runs``, ``consolidation-report``,
``consolidation-undo``, ``profile`` and ``feedback`` on a SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from memorybank import Memory
from memorybank.cli import app

WIDE = {"COLUMNS": "200", "NO_COLOR": "1"}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=WIDE)


def test_consolidation_runs_report_undo_profile_feedback(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with Memory(url) as memory:
        kept = memory.facts.add(content="User lives in Paris", user_id="u")
        memory.facts.add(content="user lives in paris!", user_id="u")
        memory.facts.add(content="User's name is Ana", user_id="u")
        city = memory.graph.add_entity(
            "New York City", type="location", aliases=["NYC"], user_id="u"
        )
        memory.graph.add_entity("N.Y.C.", type="location", user_id="u")
    done = invoke("consolidate", "--user", "u", "--json", "--url", url)
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    run = report["run_id"]
    assert report["merged"] == 1 and report["entities_merged"] == 1
    assert report["entity_changes"][0]["into"] == city.id

    listed = invoke("consolidation-runs", "--user", "u", "--url", url)
    assert listed.exit_code == 0 and run in listed.output
    shown = invoke("consolidation-report", run, "--url", url)
    assert shown.exit_code == 0, shown.output
    assert "'N.Y.C.' ->" in shown.output and "1 entities merged" in shown.output
    missing = invoke("consolidation-report", run, "--user", "someone-else", "--url", url)
    assert missing.exit_code != 0 and "not found" in missing.output

    profile = invoke("profile", "--user", "u", "--json", "--url", url)
    assert profile.exit_code == 0, profile.output
    assert json.loads(profile.output)["user_id"] == "u"

    undone = invoke("consolidation-undo", run, "--json", "--url", url)
    assert undone.exit_code == 0, undone.output
    assert json.loads(undone.output)["status"] == "undone"
    with Memory(url) as memory:
        assert len(memory.facts.list(user_id="u")) == 3
        assert len(memory.graph.find_entities(user_id="u")) == 2

    fed = invoke(
        "feedback", kept.id, "--not-useful", "--reason", "moved", "--user", "u", "--url", url
    )
    assert fed.exit_code == 0, fed.output
    wrong = invoke("feedback", kept.id, "--useful", "--user", "bob", "--url", url)
    assert wrong.exit_code != 0 and "not found" in wrong.output
