"""The CLI on the demo of ``make run``: the same store, the tenant it is in, and the
examples of docs/cli.md finding something there.

``make run`` is ``memorybank serve --demo --embedder local`` from the clone's directory;
its seeding (``_serve_demo``) is run here the same way, with no ``--url``, in a fresh
directory, then the CLI reads it from that directory as a user would.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from memorybank.cli import app
from memorybank.cli.app import _serve_demo
from memorybank.cli.demo_state import DEMO_TENANT

ROOT = Path(__file__).resolve().parents[2]
#: The commands that list or search (a listing that finds nothing says so).
READS = {"threads", "show", "search", "facts", "documents", "runs", "snapshots", "context"}
WIDE = {"COLUMNS": "250", "NO_COLOR": "1", "MEMORYBANK_URL": ""}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=WIDE)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory where ``make run``'s seeding ran (its ./memorybank.db)."""
    where = tmp_path_factory.mktemp("clone")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(where)
        patch.delenv("MEMORYBANK_URL", raising=False)
        patch.delenv("MEMORYBANK_ADMIN_KEY", raising=False)
        lines = _serve_demo(None, None, reset=False)
    assert any(f"memorybank threads --tenant {DEMO_TENANT}" in line for line in lines), lines
    assert (where / "memorybank.db").is_file()
    return where


def test_make_run_serves_the_store_the_cli_reads_by_default() -> None:
    """``make run`` names neither a store nor a tenant: it uses the CLI's default store
    (``$MEMORYBANK_URL``, else ./memorybank.db) and puts its demo in tenant ``demo``."""
    run = re.search(r"^run:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert run is not None
    command = run.group(1)
    assert "memorybank serve --demo" in command
    assert "--url" not in command and "--tenant" not in command


def test_an_empty_listing_names_the_tenant_and_store_and_points_to_the_demo(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(clone)
    for command in ("threads", "facts", "documents", "runs", "snapshots"):
        result = invoke(command)
        assert result.exit_code == 0, result.output
        text = " ".join(result.output.split())
        assert text == (
            f"no {command} in tenant 'default' of sqlite:///./memorybank.db"
            f" ({clone.resolve() / 'memorybank.db'}); the demo of `memorybank serve --demo`"
            " (make run) is in tenant 'demo': add --tenant demo"
        )
    hits = " ".join(invoke("search", "nothing-like-this", "--tenant", "demo").output.split())
    assert hits.startswith("no hits in tenant 'demo' of sqlite:///./memorybank.db")
    assert "add --tenant" not in hits  # it read the demo's tenant already
    assert "demo-1" in invoke("threads", "--tenant", "demo").output


def test_an_empty_listing_of_a_store_without_the_demo_has_no_hint(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'plain.db'}"
    assert invoke("demo", "--url", url).exit_code == 0
    text = " ".join(invoke("facts", "--url", url).output.split())
    assert text == f"no facts in tenant 'default' of {url}"


def test_a_password_in_the_url_is_never_printed() -> None:
    from memorybank.cli.common import shown_url

    shown = shown_url("postgresql://ana:s3cret@db.example:5432/memory")
    assert shown == "postgresql://ana:***@db.example:5432/memory"


def _examples() -> list[str]:
    text = (ROOT / "docs" / "cli.md").read_text()
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line.split()[1:2] and line.split()[1] in READS]


def test_docs_cli_has_read_examples() -> None:
    assert {line.split()[1] for line in _examples()} == READS


@pytest.mark.parametrize("line", _examples())
def test_a_docs_cli_example_finds_something_on_the_demo(
    clone: Path, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    monkeypatch.chdir(clone)
    words = shlex.split(line)
    assert words[0] == "memorybank"
    result = invoke(*words[1:])
    assert result.exit_code == 0, result.output
    assert not result.output.lstrip().startswith("no "), (line, result.output)
    if "--include-history" in words:
        assert "(superseded)" in result.output
