"""The CLI on the demo of ``make run``: the same store and the same tenant by default,
and the examples of docs/cli.md finding something there with no ``--url`` or ``--tenant``.

``make run`` is ``memorybank serve --demo --embedder local`` from the clone's directory;
its seeding (``_serve_demo``) is run here the same way, with no ``--url``, in a fresh
directory, then the CLI reads it from that directory as a user would.
"""

from __future__ import annotations

import asyncio
import io
import re
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from memorybank.cli import app
from memorybank.cli.app import _serve_demo
from memorybank.cli.demo import run_demo
from memorybank.cli.demo_state import (
    DEMO_KIND,
    DEMO_RECORD,
    DEMO_TENANT,
    LEGACY_DEMO_TENANT,
    prepare_demo,
)
from memorybank.cli.read import KEYWORD_HINT
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.memory import DEFAULT_TENANT, Memory
from memorybank.server.keys import RESERVED_TENANT, KeyRing
from memorybank.stores.contract.items import Record

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
    assert "  from a shell: memorybank threads (from this directory)" in lines, lines
    assert (where / "memorybank.db").is_file()
    return where


def test_make_run_serves_the_store_the_cli_reads_by_default() -> None:
    """``make run`` names neither a store nor a tenant: it uses the CLI's default store
    (``$MEMORYBANK_URL``, else ./memorybank.db) and its default tenant."""
    run = re.search(r"^run:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert run is not None
    command = run.group(1)
    assert "memorybank serve --demo" in command
    assert "--url" not in command and "--tenant" not in command
    assert DEMO_TENANT == DEFAULT_TENANT == "default"


def test_the_cli_lists_the_demo_with_no_flags(clone: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's first surprise: after ``make run``, ``memorybank threads`` printed "no
    threads" (the demo was in tenant ``demo``)."""
    monkeypatch.chdir(clone)
    threads = invoke("threads")
    assert threads.exit_code == 0, threads.output
    assert threads.output.startswith("threads (tenant default)")
    assert "demo-1" in threads.output and "Weekend in Lisbon" in threads.output
    facts = invoke("search", "sunsets", "--kinds", "facts", "--include-history")
    assert "Ana likes sunsets and walking tours" in facts.output, facts.output
    history = invoke("search", "Lisbon", "--kinds", "facts", "--include-history")
    assert "(superseded)" in history.output, history.output


def test_a_keyword_search_that_finds_nothing_says_why(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``search "sun"`` (the issue's line) is a keyword search without an embedder: whole
    words, so "sunsets" is no hit. The empty line names the tenant, the store and why."""
    monkeypatch.chdir(clone)
    result = invoke("search", "sun", "--kinds", "facts", "--include-history")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    where = f"sqlite:///./memorybank.db ({clone.resolve() / 'memorybank.db'})"
    assert text == f"no hits in tenant 'default' of {where}; {KEYWORD_HINT}"
    assert "--embedder local" in KEYWORD_HINT and "whole words" in KEYWORD_HINT
    semantic = invoke("search", "sun", "--mode", "semantic", "--kinds", "facts")
    assert KEYWORD_HINT not in semantic.output  # no keyword search, no keyword hint


def test_an_empty_listing_names_the_tenant_and_store_and_points_to_the_demo(
    clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(clone)
    where = f"sqlite:///./memorybank.db ({clone.resolve() / 'memorybank.db'})"
    for command in ("threads", "facts", "documents", "runs", "snapshots", "search"):
        args = [command, "--tenant", "acme"] + (["Lisbon"] if command == "search" else [])
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        text = " ".join(result.output.split())
        what = "hits" if command == "search" else command
        assert text.startswith(
            f"no {what} in tenant 'acme' of {where}; the demo of `memorybank serve --demo`"
            " (make run) is in tenant 'default': leave out --tenant"
        ), text
    hits = " ".join(invoke("search", "nothing-like-this").output.split())
    assert hits.startswith(f"no hits in tenant 'default' of {where}")
    assert "--tenant" not in hits  # it read the demo's tenant already


@pytest.mark.parametrize("command", ["threads", "facts", "documents", "runs", "snapshots"])
def test_an_empty_listing_of_a_store_without_the_demo_has_no_hint(
    tmp_path: Path, command: str
) -> None:
    url = f"sqlite:///{tmp_path / 'plain.db'}"
    with Memory(url, tenant_id="elsewhere") as memory:
        memory.threads.create(thread_id="t")  # the store exists; tenant 'default' is empty
    text = " ".join(invoke(command, "--url", url).output.split())
    assert text == f"no {command} in tenant 'default' of {url}"
    search = " ".join(invoke("search", "x", "--url", url, "--tenant", "t-1").output.split())
    assert search == f"no hits in tenant 't-1' of {url}; {KEYWORD_HINT}"


def test_a_store_seeded_in_the_old_demo_tenant_is_seeded_again_in_the_default(
    tmp_path: Path,
) -> None:
    """A store whose demo an earlier ``serve --demo`` put in tenant ``demo`` (a saved state
    without ``tenant``): the next start seeds the default tenant, revokes the old key
    (it acts in ``demo``) and keeps the old data; the CLI then lists the demo."""
    url = f"sqlite:///{tmp_path / 'old.db'}"

    async def keys(call: str, *args: str) -> Any:
        async with AsyncMemory(url) as memory:
            return await getattr(KeyRing(memory.store), call)(*args)

    with Memory(url, tenant_id=LEGACY_DEMO_TENANT) as old:
        thread = run_demo(old, Console(file=io.StringIO()))
        info, key = asyncio.run(keys("create", LEGACY_DEMO_TENANT, "make run"))
        now = datetime.now(UTC)
        legacy = {"thread_id": thread, "demo_key": key, "key_id": info.id, "admin_key": "adm-x"}
        saved = Record(
            kind=DEMO_KIND,
            id=DEMO_RECORD,
            agent_id=None,
            user_id=None,
            content="",
            data=legacy,
            created_at=now,
            updated_at=now,
        )
        old.store.record_put(RESERVED_TENANT, [saved])
    before = " ".join(invoke("threads", "--url", url).output.split())
    assert before.endswith(
        "the demo of `memorybank serve --demo` (make run) is in tenant 'demo': add --tenant demo"
    )

    state = prepare_demo(url, None, admin_key=None)
    assert not state.reused and state.demo_key != key and state.admin_key == "adm-x"
    assert asyncio.run(keys("verify", key)) is None  # the old demo key is revoked
    new = asyncio.run(keys("verify", state.demo_key))
    assert getattr(new, "tenant", None) == DEFAULT_TENANT
    listed = invoke("threads", "--url", url).output
    assert state.thread_id in listed and "Weekend in Lisbon" in listed
    assert thread in invoke("threads", "--url", url, "--tenant", "demo").output  # kept
    again = prepare_demo(url, None, admin_key=None)
    assert again.reused and again.demo_key == state.demo_key


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
