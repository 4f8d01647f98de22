"""The ``memorybank`` command line: demo, threads, show, errors, help texts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner, Result

from memorybank import Memory, __version__
from memorybank.cli import app
from memorybank.cli.demo import DEMO_AGENT, DEMO_USER

# Wide enough that rich never wraps the phrases the tests look for.
WIDE = {"COLUMNS": "200", "NO_COLOR": "1"}

HEADINGS = (
    "1. Store a conversation",
    "2. History window",
    "3. Token-budgeted window",
    "4. Branch",
    "5. Rewind",
    "6. Working memory",
    "7. Fail-closed ownership",
)


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    runner = CliRunner()
    return runner.invoke(app, list(args), env={**WIDE, **(env or {})})


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite file holding one demo run (thread ``demo-1``)."""
    path = tmp_path_factory.mktemp("cli") / "demo.db"
    url = f"sqlite:///{path}"
    result = invoke("demo", "--url", url)
    assert result.exit_code == 0, result.output
    return url


def test_demo_in_a_real_process(tmp_path: Path) -> None:
    """The installed console script runs the demo end to end and explains each step."""
    script = Path(sys.executable).with_name("memorybank")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "memorybank.cli"]
    url = f"sqlite:///{tmp_path}/demo.db"
    env = {k: v for k, v in os.environ.items() if k != "MEMORYBANK_URL"}
    proc = subprocess.run(
        [*command, "demo", "--url", url],
        capture_output=True,
        text=True,
        env={**env, **WIDE},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    for heading in HEADINGS:
        assert heading in out
    # (1) what was stored: owner, system prompt, tool call and result
    assert "Thread demo-1 owned by user ana" in out
    assert "Stored 7 entries" in out
    assert "You are Atlas, a travel assistant." in out
    assert 'get_forecast({"city": "Lisbon", "day": "saturday"})' in out
    # (2) the pairing rule cut the orphaned tool result
    assert "the orphaned tool result was dropped: 3 messages instead of 4" in out
    assert (
        "history(last=5) keeps the pair: assistant(call), tool, assistant, user, assistant" in out
    )
    # (3) token budget with counts
    assert "Kept the 2 newest entries that fit: 41 of 60 tokens" in out
    # (4) both branches, (5) rewind
    assert "Ride tram 28" in out
    assert "Walk the riverside" in out
    assert "deleted the 2 entries after the weather answer" in out
    assert "Branch alt is untouched: 7 entries" in out
    # working memory and ownership
    assert "After the block: wm.items() == {}" in out
    assert "ThreadForbidden [thread_forbidden]" in out
    assert "memorybank show demo-1 --url " + url in out
    assert not (tmp_path / "memorybank.db").exists()  # --url was honoured
    assert Path(f"{tmp_path}/demo.db").exists()


def test_demo_is_deterministic_and_rerunnable(tmp_path: Path) -> None:
    """A re-run on the same file writes a fresh thread and tells the same story."""
    url = f"sqlite:///{tmp_path}/demo.db"
    first = invoke("demo", "--url", url)
    second = invoke("demo", "--url", url)
    assert first.exit_code == 0, first.output
    assert second.exit_code == 0, second.output
    assert "demo-1" in first.output
    assert "demo-2" in second.output
    # the same script, the same clock: only the thread id and the date differ
    normalized = second.output.replace("demo-2", "demo-1").replace("2025-06-07", "2025-06-06")
    assert normalized == first.output
    with Memory(url) as memory:
        threads = memory.threads.list(agent_id=DEMO_AGENT)
        assert sorted(t.id for t in threads) == ["demo-1", "demo-2"]
        assert all(t.user_id == DEMO_USER for t in threads)


def test_threads_lists_the_demo_thread_and_filters(demo_url: str) -> None:
    result = invoke("threads", "--url", demo_url)
    assert result.exit_code == 0, result.output
    assert "demo-1" in result.output
    assert "Weekend in Lisbon" in result.output

    owned = invoke("threads", "--url", demo_url, "--user", DEMO_USER)
    assert owned.exit_code == 0
    assert "demo-1" in owned.output

    other = invoke("threads", "--url", demo_url, "--user", "mallory")
    assert other.exit_code == 0
    assert "demo-1" not in other.output
    assert "no threads" in other.output

    assert "demo-1" in invoke("threads", "--url", demo_url, "--agent", DEMO_AGENT).output
    assert "demo-1" not in invoke("threads", "--url", demo_url, "--agent", "other").output
    assert "demo-1" in invoke("threads", "--url", demo_url, "--status", "active").output
    assert "demo-1" not in invoke("threads", "--url", demo_url, "--status", "archived").output
    assert "demo-1" in invoke("threads", "--url", demo_url, "--limit", "1").output


def test_threads_limit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    with Memory(url) as memory:
        for index in range(3):
            memory.threads.create(thread_id=f"t{index}", user_id="u")
    result = invoke("threads", "--url", url, "--limit", "2")
    assert result.exit_code == 0, result.output
    assert sum(f"t{index} " in result.output for index in range(3)) == 2
    assert invoke("threads", "--url", url, "--limit", "0").exit_code == 2  # usage error


def test_threads_bad_status_is_a_usage_error(demo_url: str) -> None:
    result = invoke("threads", "--url", demo_url, "--status", "deleted")
    assert result.exit_code == 2


def test_show_last_two_entries_exactly(demo_url: str) -> None:
    result = invoke("show", "demo-1", "--url", demo_url, "--last", "2")
    assert result.exit_code == 0, result.output
    out = result.output
    # after the rewind, main ends with the tool result (#4) and the weather answer (#5);
    # show lists what is stored, so the tool result is not hidden by the pairing rule
    assert "showing 2 of 5 entries" in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["4", "5"]
    assert "get_forecast" in out
    assert "No rain expected on Saturday" in out
    assert "I'm in Lisbon" not in out
    assert "You are Atlas" not in out
    for column in ("#", "time", "role", "name", "content", "tokens"):
        assert f" {column} " in out
    assert "09:00:08" in out  # the injected clock, in UTC
    assert "38" in rows[0]  # the tool result's token count


def test_show_default_and_branch(demo_url: str) -> None:
    main = invoke("show", "demo-1", "--url", demo_url)
    assert main.exit_code == 0, main.output
    assert "showing 5 of 5 entries" in main.output
    assert "branch main (current)" in main.output
    alt = invoke("show", "demo-1", "--url", demo_url, "--branch", "alt")
    assert alt.exit_code == 0, alt.output
    assert "showing 7 of 7 entries" in alt.output
    assert "Walk the riverside" in alt.output
    assert "Ride tram 28" not in alt.output


def test_show_truncates_long_content(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/long.db"
    with Memory(url) as memory:
        memory.ensure_thread("long", user_id="u")
        memory.remember("long", "user", "[bold]not markup[/bold] " + "word\n" * 2000 + "END")
    result = invoke("show", "long", "--url", url)
    assert result.exit_code == 0, result.output
    assert "[bold]not markup[/bold] word word" in result.output  # text, on one line
    assert "…" in result.output
    assert "END" not in result.output
    assert len(result.output) < 2000


def test_show_unknown_thread_exits_1(demo_url: str) -> None:
    result = invoke("show", "no-such-thread", "--url", demo_url)
    assert result.exit_code == 1
    assert "not found" in result.stderr
    assert "not_found" in result.stderr
    assert "no-such-thread" in result.stderr
    assert result.stderr.count("\n") == 1  # one line
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_show_unknown_branch_exits_1(demo_url: str) -> None:
    result = invoke("show", "demo-1", "--url", demo_url, "--branch", "nope")
    assert result.exit_code == 1
    assert "error [not_found]: branch 'nope' not found" in result.stderr


def test_other_tenant_sees_nothing(demo_url: str) -> None:
    assert "no threads" in invoke("threads", "--url", demo_url, "--tenant", "acme").output
    result = invoke("show", "demo-1", "--url", demo_url, "--tenant", "acme")
    assert result.exit_code == 1
    assert "not found" in result.stderr


def test_memorybank_errors_are_one_red_line() -> None:
    result = invoke("threads", "--url", "bogus://nowhere")
    assert result.exit_code == 1
    assert result.stderr.startswith("error [configuration_error]: unknown store URL scheme")
    assert result.stderr.count("\n") == 1
    bad = invoke("show", "x" * 1000, "--url", "memory://")
    assert bad.exit_code == 1
    assert bad.stderr.startswith("error [invalid_input]:")
    assert result.exc_info is not None and result.exc_info[0] is SystemExit  # no traceback


def test_memory_url_works() -> None:
    demo = invoke("demo", "--url", "memory://")
    assert demo.exit_code == 0, demo.output
    for heading in HEADINGS:
        assert heading in demo.output
    assert "memorybank show demo-1 --url memory://" in demo.output
    threads = invoke("threads", "--url", "memory://")  # a fresh, empty store
    assert threads.exit_code == 0
    assert "no threads" in threads.output


def test_url_defaults_to_env_then_embedded_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_url: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMORYBANK_URL", raising=False)
    from_env = invoke("threads", env={"MEMORYBANK_URL": demo_url})
    assert "demo-1" in from_env.output
    assert not (tmp_path / "memorybank.db").exists()

    default = invoke("threads")  # sqlite:///./memorybank.db, which a read never creates
    assert default.exit_code == 1
    assert "no SQLite store at './memorybank.db'" in default.output
    assert not (tmp_path / "memorybank.db").exists()
    assert invoke("demo").exit_code == 0  # a write command creates it
    assert "demo-1" in invoke("threads").output


def test_demo_tenant(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/tenants.db"
    result = invoke("demo", "--url", url, "--tenant", "acme")
    assert result.exit_code == 0, result.output
    assert f"memorybank show demo-1 --url {url} --tenant acme" in result.output
    assert "demo-1" in invoke("threads", "--url", url, "--tenant", "acme").output
    assert "no threads" in invoke("threads", "--url", url).output


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"memorybank {__version__}"


def test_module_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "memorybank.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"memorybank {__version__}"


def test_python_dash_m_memorybank_help_exits_0() -> None:
    """``python -m memorybank --help``: the package runs the CLI."""
    proc = subprocess.run(
        [sys.executable, "-m", "memorybank", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "Usage:" in proc.stdout and "context" in proc.stdout and "mcp" in proc.stdout


def _commands() -> dict[str, Any]:
    """Name -> command object (typer's click, vendored or not)."""
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return dict(group.commands)


def test_every_command_and_option_has_help() -> None:
    """Like sqlite-utils' test_docs: nothing in the CLI goes undocumented."""
    commands = _commands()
    assert {"demo", "threads", "show", "search", "facts", "documents", "context"} <= set(commands)
    assert {"delete", "forget-user", "export", "import", "migrate", "serve", "keys"} <= set(
        commands
    )
    keys = commands.pop("keys")
    hooks = commands.pop("webhooks")
    assert keys.help and keys.help.strip() and hooks.help and hooks.help.strip()
    leaves = {
        **commands,
        **{f"keys {n}": c for n, c in keys.commands.items()},
        **{f"webhooks {n}": c for n, c in hooks.commands.items()},
    }
    assert set(leaves) >= {"keys create", "keys list", "keys revoke"}
    assert set(leaves) >= {f"webhooks {n}" for n in ("create", "list", "pause", "resume", "delete")}
    # These answer every tenant (the server: each request's key picks one) or none.
    tenantless = {"serve", "keys list", "keys revoke"}
    tenantless |= {"webhooks pause", "webhooks resume", "webhooks delete"}
    for name, command in leaves.items():
        assert command.help and command.help.strip(), f"{name} has no help text"
        for param in command.params:
            help_text = getattr(param, "help", None)
            assert help_text, f"{name} {param.name} has no help text"
        option_names = {opt for param in command.params for opt in param.opts}
        stores = {"--from", "--to"} if name == "migrate" else {"--url"}
        needed = stores if name in tenantless else {"--tenant"} | stores
        assert needed <= option_names, name
        result = invoke(*name.split(), "--help")
        assert result.exit_code == 0
        assert command.help.splitlines()[0] in result.output


def test_root_help_lists_every_command() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for name in _commands():
        assert name in result.output
    assert "--version" in result.output


def _normalised(text: str) -> str:
    """Help output as plain words: box drawing and wrapping removed."""
    for char in "│╭╮╰╯─┃━":
        text = text.replace(char, " ")
    return " ".join(text.split())


@pytest.mark.parametrize("columns", ["80", "200"])
def test_help_has_no_rest_markup_and_is_not_cut(columns: str) -> None:
    """Every command's --help (and the root's): no reST double backticks, and every word of
    the command's help text is shown, in order (nothing cut at a line break or a width)."""
    commands = _commands()
    keys = commands.pop("keys")
    leaves = {**commands, **{f"keys {n}": c for n, c in keys.commands.items()}}
    root = invoke("--help", env={"COLUMNS": columns})
    assert root.exit_code == 0 and "``" not in root.output
    listing = _normalised(root.output)
    for name, command in {**leaves, "keys": keys}.items():
        result = invoke(*name.split(), "--help", env={"COLUMNS": columns})
        assert result.exit_code == 0, name
        assert "``" not in result.output, name
        assert command.help is not None
        shown = _normalised(result.output)
        for paragraph in command.help.split("\n\n"):
            assert _normalised(paragraph) in shown, (name, paragraph)
        if " " not in name:  # the root lists its commands with their first paragraph whole
            assert _normalised(command.help.split("\n\n")[0]) in listing, name


def test_reset_demo_needs_demo() -> None:
    result = invoke("serve", "--reset-demo", "--port", "1")
    assert result.exit_code == 2
    assert "--reset-demo needs --demo" in result.output


def test_help_shows_flags_without_a_type() -> None:
    """A flag takes no value: no command's --help shows ``--json <bool>`` or
    ``--help <bool>``, while options that take one keep their type."""
    commands = _commands()
    keys = commands.pop("keys")
    leaves = {**commands, **{f"keys {n}": c for n, c in keys.commands.items()}}
    for name in ["", "keys", *leaves]:
        result = invoke(*name.split(), "--help")
        assert result.exit_code == 0, name
        assert "<bool>" not in result.output, name
    threads = invoke("threads", "--help").output
    assert "--limit" in threads and "<int range>" in threads


@pytest.mark.parametrize("value", ["true", "false", "yes", "1"])
def test_a_flag_given_a_value_says_it_is_a_flag(demo_url: str, value: str) -> None:
    """``--json true`` is refused (exit 2) with a line naming the flag and how to write it;
    ``--json`` alone works."""
    refused = invoke("threads", "--json", value, "--url", demo_url)
    assert refused.exit_code == 2
    text = _normalised(refused.output)
    assert "--json is a flag and takes no value: write --json alone" in text
    assert f"(got --json {value})" in text
    assert "unexpected extra argument" not in text
    listed = invoke("threads", "--json", "--url", demo_url)
    assert listed.exit_code == 0 and listed.output.lstrip().startswith("[")


def test_a_query_that_reads_like_a_value_after_a_flag_is_still_a_query(demo_url: str) -> None:
    """``search --json true`` searches for "true": the word is the query, not the flag's."""
    result = invoke("search", "--json", "true", "--url", demo_url)
    assert result.exit_code == 0, result.output
    assert result.output.lstrip().startswith("[")
