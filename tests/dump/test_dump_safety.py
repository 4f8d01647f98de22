"""Dumps that cannot lose or poison data: every kind exported, reserved tenants refused,
every record validated before anything is written, a trailer that catches a cut dump."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from memorybank import Memory
from memorybank.cli import app
from memorybank.dump import checks as dump_checks
from memorybank.dump._sync.portability import export_dump, import_dump
from memorybank.dump.checks import DumpLineError
from memorybank.dump.format import LINE_TYPES, RECORD_KINDS, VERSION, Checksum, trailer
from memorybank.errors import InvalidInput
from memorybank.server.keys import RESERVED_TENANT
from memorybank.stores import Store
from memorybank.stores.contract._async.store import AsyncStore
from tests.all_stores import open_store
from tests.dump.test_portability import NOW, TENANT, body, populate, sealed
from tests.reliability._harness import POSTGRES_URL

SRC = Path(__file__).resolve().parents[2] / "src" / "memorybank"
#: The contract's write methods and the dump line type that carries what each writes
#: (``vector``: the ``vector`` member of entry and record lines). A write method missing
#: here is a kind of data the dump might not carry: this table, and export, must learn it.
WRITES = {
    "thread_create": "thread",
    "thread_update": "thread",
    "branch_create": "thread",
    "entry_append": "entry",
    "entry_update": "entry",
    "entry_compact": "entry",
    "working_set": "working",
    "snapshot_save": "snapshot",
    "summary_add": "summary",
    "record_put": "record",
    "vector_put": "vector",
}
_WRITE_VERBS = ("_create", "_update", "_append", "_compact", "_set", "_save", "_add", "_put")
# the server's keys, and background embedding's journal of pending work: each in its own
# reserved tenant no dump may name (a restored store embeds what lacks a vector itself)
_NOT_DATA = {"api_key", "embed_job"}
# background consolidation's per-tenant schedule, kept in a reserved tenant of its own
_NOT_DATA |= {"consolidate_schedule"}
# the contract's derived run state and vectors (stores without their own): exported as the
# working, snapshot, summary and vector lines they stand for, never as records
_NOT_DATA |= {"derived.working", "derived.snapshot", "derived.summary", "derived.vector"}


def test_every_write_method_of_the_contract_has_a_dump_line_type() -> None:
    writes = {
        name
        for name, _ in inspect.getmembers(AsyncStore, inspect.iscoroutinefunction)
        if not name.startswith("_") and any(verb in name for verb in _WRITE_VERBS)
    }
    assert writes == set(WRITES), "a write method the dump does not know"
    assert set(WRITES.values()) == {*LINE_TYPES, "vector"}


def _record_kinds_written() -> set[str]:
    """Every ``kind`` a ``Record(...)`` in the library's async source, or in the shared
    core's record helpers (``core/documents.py``), is built with."""
    kinds: set[str] = set()
    for path in [*SRC.rglob("_async/*.py"), *(SRC / "core").glob("*.py")]:
        tree = ast.parse(path.read_text())
        module = None
        for node in ast.walk(tree):
            arg: ast.expr | None = None
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Record":
                arg = next((k.value for k in node.keywords if k.arg == "kind"), None)
                if arg is None and node.args:
                    arg = node.args[0]
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "kind" for t in node.targets
            ):
                arg = node.value  # ``record.kind = FACT_VERSION``
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                kinds.add(arg.value)
            elif isinstance(arg, ast.Name):
                if module is None:
                    dotted = path.relative_to(SRC.parent).with_suffix("").as_posix()
                    module = importlib.import_module(dotted.replace("/", "."))
                value = getattr(module, arg.id, None)
                if isinstance(value, str):
                    kinds.add(value)
    return kinds


def test_every_record_kind_the_library_writes_is_exported() -> None:
    written = _record_kinds_written()
    # the graph's relations are written as a loop over (OUT, IN): named by their constants
    from memorybank.graph._async.records import IN, OUT

    assert {"fact", "document", "core_fact", "graph_entity", "graph_ingested"} <= written
    assert written - _NOT_DATA <= set(RECORD_KINDS)
    assert {*written, IN, OUT} - _NOT_DATA == set(RECORD_KINDS)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres", "redis", "mysql"])
def test_an_export_holds_every_line_type_and_summaries_of_any_agent(
    kind: str, tmp_path: Path
) -> None:
    """Summaries of an agent with no thread or record (the bug) are exported and come back."""
    with open_store(kind, tmp_path) as store, open_store("memory", tmp_path) as target:
        populate(store)
        memory = Memory(store, tenant_id=TENANT)
        memory.summaries.add(content="lonely", agent_id="nobody-else", user_id="zed")
        memory.summaries.add(content="shared", agent_id="nobody-else", user_id=None)
        lines = [json.loads(x) for x in export_dump(store, TENANT, now=NOW)]
        assert {x["type"] for x in lines[1:-1]} == set(LINE_TYPES)
        assert lines[-1]["counts"]["summary"] == 4
        import_dump(target, None, export_dump(store, TENANT, now=NOW))
        back = Memory(target, tenant_id=TENANT)
        for agent, user in (("nobody-else", "zed"), ("nobody-else", None), ("atlas", "ana")):
            assert back.summaries.list(agent_id=agent, user_id=user) == memory.summaries.list(
                agent_id=agent, user_id=user
            )


@contextmanager
def _url(kind: str, tmp_path: Path) -> Iterator[str]:
    """A store URL of its own: a SQLite file, or a PostgreSQL schema dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path}/{uuid.uuid4().hex}.db"
        return
    schema = f"dump_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True)
    except psycopg.OperationalError as error:
        from tests.conftest import require_server

        require_server("postgres", error)
        raise
    with admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_cli_export_then_import_carries_summaries(kind: str, tmp_path: Path) -> None:
    with _url(kind, tmp_path) as a, _url(kind, tmp_path) as b:
        with Memory(a, tenant_id=TENANT) as memory:
            memory.summaries.add(content="ana likes tea", agent_id="solo", user_id="ana")
            memory.summaries.add(content="for everyone", agent_id="solo", user_id=None)
            thread = memory.threads.create(agent_id="other")
            memory.entries.add(thread.id, {"role": "user", "content": "hi"})
            expected = memory.summaries.list(agent_id="solo", user_id="ana")
        runner = CliRunner()
        exported = runner.invoke(app, ["export", "--url", a, "--tenant", TENANT])
        assert exported.exit_code == 0, exported.output
        assert "summary: 2" in exported.stderr  # the final count line
        imported = runner.invoke(app, ["import", "--url", b], input=exported.stdout)
        assert imported.exit_code == 0, imported.output
        with Memory(b, tenant_id=TENANT) as memory:
            assert len(expected) == 2
            assert memory.summaries.list(agent_id="solo", user_id="ana") == expected
        quiet = runner.invoke(app, ["export", "--url", a, "--tenant", TENANT, "--quiet"])
        assert quiet.exit_code == 0 and quiet.stderr == ""


# -- reserved tenants --------------------------------------------------------------------


def _dump_of(tenant: str) -> list[str]:
    with open_store("memory", Path(".")) as store:
        memory = Memory(store, tenant_id="source")
        memory.threads.create(user_id="u")
        lines = list(export_dump(store, "source", now=NOW))
    head = {**json.loads(lines[0]), "tenant": tenant}
    return sealed(json.dumps(head), body(lines))


def _key_dump() -> list[str]:
    """A crafted dump holding one API key record for the server's key tenant."""
    head = json.loads(_dump_of("source")[0])
    key = {
        "type": "record",
        "record": {
            "kind": "api_key",
            "id": "0123456789ab",
            "agent_id": None,
            "user_id": None,
            "content": "",
            "data": {"tenant": "victim", "hash": "x"},
            "created_at": NOW.isoformat(),
            "updated_at": NOW.isoformat(),
        },
    }
    return sealed(json.dumps({**head, "tenant": RESERVED_TENANT}), [json.dumps(key)])


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_import_refuses_reserved_tenants(kind: str, tmp_path: Path) -> None:
    with open_store(kind, tmp_path) as store:
        for lines, tenant in (
            (_key_dump(), None),
            (_dump_of("~other"), None),
            (_dump_of("fine"), RESERVED_TENANT),
            (_dump_of("fine"), "~x"),
        ):
            with pytest.raises(InvalidInput, match="reserved") as refused:
                import_dump(store, tenant, lines)
            assert refused.value.field == "tenant"
        assert store.record_list(RESERVED_TENANT, "api_key") == []
        assert store.thread_list("~other") == [] and store.thread_list(RESERVED_TENANT) == []


def test_cli_import_and_migrate_refuse_reserved_tenants(tmp_path: Path) -> None:
    runner = CliRunner()
    target = tmp_path / "t.db"
    for args, dump in (
        ([], _key_dump()),
        (["--tenant", RESERVED_TENANT], _dump_of("fine")),
        (["--tenant", "~x"], _dump_of("fine")),
    ):
        result = runner.invoke(
            app, ["import", "--url", f"sqlite:///{target}", *args], input="\n".join(dump) + "\n"
        )
        assert result.exit_code == 1, result.output
        assert "reserved for the server" in result.stderr
        assert not target.exists()  # refused before the target was opened
    source = f"sqlite:///{tmp_path}/s.db"
    Memory(source).close()
    moved = runner.invoke(
        app, ["migrate", "--from", source, "--to", f"sqlite:///{target}", "--tenant", "~x"]
    )
    assert moved.exit_code == 1 and "reserved for the server" in moved.stderr


def test_library_handles_refuse_reserved_tenants() -> None:
    with open_store("memory", Path(".")) as store:
        makers: list[Callable[[], Memory]] = [
            lambda: Memory(store, tenant_id=RESERVED_TENANT),
            lambda: Memory(store).tenant("~anything"),
        ]
        for make in makers:
            with pytest.raises(InvalidInput, match="reserved") as refused:
                make()
            assert refused.value.field == "tenant_id"
        assert Memory(store).tenant("a~b").tenant_id == "a~b"  # only a leading ~ is reserved


# -- validation ----------------------------------------------------------------------------


def _populated_lines() -> list[str]:
    with open_store("memory", Path(".")) as store:
        populate(store)
        return list(export_dump(store, TENANT, now=NOW))


def _edit(lines: list[str], kind: str, change: Any, which: int = 0) -> tuple[list[str], int]:
    """The dump with the ``which``-th line of ``kind`` (a line type, or a record kind) changed
    by ``change(line_dict)`` and resealed; the changed line's number."""
    out, seen, number = [], 0, 0
    for i, text in enumerate(body(lines)):
        data = json.loads(text)
        match = data["type"] == kind or (
            data["type"] == "record" and data["record"]["kind"] == kind
        )
        if match and seen == which:
            change(data)
            text, number = json.dumps(data), i + 2
        seen += match
        out.append(text)
    assert number, f"no {kind} line"
    return sealed(lines[0], out), number


def _set(path: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[part]
        node[last] = value

    return change


def _first_entry_of(role: str, lines: list[str]) -> int:
    entries = [json.loads(x) for x in body(lines) if '"type":"entry"' in x]
    return next(i for i, e in enumerate(entries) if e["entry"]["role"] == role)


BAD = [
    ("fact", "record.data", [1, 2], "record.data"),
    ("fact", "record.revision", "x", "record.revision"),
    ("fact", "record.data.confidence", 7, "record.data.confidence"),
    ("fact", "record.data.created_at", "yesterday", "record.data.created_at"),
    ("fact_version", "record.data.source_entries", "e1", "record.data.source_entries"),
    ("graph_entity", "record.data", None, "record.data"),
    ("graph_entity", "record.data.name", "", "record.data.name"),
    ("graph_out", "record.data.weight", "heavy", "record.data.weight"),
    ("graph_in", "record.data.valid_at", 5, "record.data.valid_at"),
    ("core_fact", "record.key", None, "record.key"),
    ("document", "record.content", "a\x00b", "record.content"),
    ("record", "record.kind", "api_key", "record.kind"),
    ("snapshot", "snapshot.value", "{not json", "snapshot.value"),
    ("working", "working.items", {"k": "[1,"}, "working.items['k']"),
    ("summary", "summary.agent_id", None, "summary.agent_id"),
    ("entry", "entry.content", "nul \x00 inside", "entry.content"),
    ("entry", "entry.role", "root", "entry.role"),
    ("entry", "entry.token_count", -5, "entry.token_count"),
    ("entry", "entry.metadata", [], "entry.metadata"),
    ("thread", "thread.status", "deleted", "thread.status"),
    ("thread", "thread.metadata", "x", "thread.metadata"),
    ("thread", "branches", [], "branches"),
    ("entry", "vector", [float("nan")], "vector"),
]


@pytest.mark.parametrize(("kind", "path", "value", "field"), BAD, ids=[b[1] for b in BAD])
@pytest.mark.parametrize("store_kind", ["sqlite", "postgres"])
def test_an_invalid_record_fails_naming_line_and_field_and_writes_nothing(
    store_kind: str, kind: str, path: str, value: Any, field: str, tmp_path: Path
) -> None:
    lines = _populated_lines()
    bad, number = _edit(lines, kind, _set(path, value))
    with open_store(store_kind, tmp_path) as store:
        with pytest.raises(DumpLineError) as refused:
            import_dump(store, None, bad)
        assert refused.value.line == number
        assert refused.value.field == field
        assert f"line {number} of the dump" in str(refused.value)
        _assert_empty(store)


def _assert_empty(store: Store) -> None:
    assert store.thread_list(TENANT) == []
    for kind in RECORD_KINDS:
        assert store.record_page(TENANT, kind, limit=1) == []
    assert store.summary_agents(TENANT) == []
    assert store.snapshot_runs(TENANT) == [] and store.working_runs(TENANT) == []


def test_a_deeply_nested_line_and_a_non_object_line_are_errors() -> None:
    lines = _populated_lines()
    deep = '{"type": "record", "record": ' + "[" * 100_000 + "]" * 100_000 + "}"
    for line, problem in (
        (deep, "nested too deeply"),
        ("[1, 2]", "not an object"),
        ('"text"', "not an object"),
        ("7", "not an object"),
        ('{"type": "nonsense"}', "unknown line type"),
    ):
        with open_store("memory", Path(".")) as store:
            dump = [lines[0], body(lines)[0], line, *body(lines)[1:], lines[-1]]
            with pytest.raises(DumpLineError, match=problem) as refused:
                import_dump(store, None, dump)
            assert refused.value.line == 3
            _assert_empty(store)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_reads_that_failed_on_poisoned_imports_work(kind: str, tmp_path: Path) -> None:
    """What validation lets through reads back: facts, search, snapshots, the graph."""
    with open_store(kind, tmp_path) as store:
        import_dump(store, None, _populated_lines())
        memory = Memory(store, tenant_id=TENANT)
        scoped = memory.scoped(user_id="ana", agent_id="atlas")
        facts = scoped.facts.list()
        assert facts and scoped.facts.get(facts[0].id) is not None
        assert scoped.search("sun") is not None
        assert memory.snapshots.load("run-1", user_id="ana") == {"step": 3, "f": 1e16}
        assert scoped.graph.find_entities("ana")


# -- the trailer ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_dump_cut_at_a_line_boundary_fails_unless_partial_is_allowed(
    kind: str, tmp_path: Path
) -> None:
    lines = _populated_lines()
    assert json.loads(lines[0])["version"] == VERSION == 3
    cut = lines[:20]
    with open_store(kind, tmp_path) as store:
        with pytest.raises(InvalidInput, match="no trailer") as refused:
            import_dump(store, None, cut)
        assert refused.value.field == "trailer"
        _assert_empty(store)
        report = import_dump(store, None, cut, allow_partial=True)
        assert report.partial is not None and "no trailer" in report.partial
        written = sum(report.written.values())
        assert 0 < written < len(lines) - 2


def test_a_dump_cut_inside_a_line_fails_and_partial_drops_the_cut_line() -> None:
    lines = _populated_lines()
    cut = [*lines[:12], lines[12][:30]]
    with open_store("memory", Path(".")) as store:
        with pytest.raises(DumpLineError, match="line 13 of the dump: the line is not JSON"):
            import_dump(store, None, cut)
        _assert_empty(store)
        report = import_dump(store, None, cut, allow_partial=True)
        assert report.partial is not None and "line 13" in report.partial


def test_counts_or_checksum_that_disagree_with_the_trailer_fail() -> None:
    lines = _populated_lines()
    end = json.loads(lines[-1])
    wrong_counts = [*lines[:-1], json.dumps({**end, "counts": {**end["counts"], "entry": 99}})]
    with open_store("memory", Path(".")) as store:
        with pytest.raises(InvalidInput, match="entry: 99 announced") as refused:
            import_dump(store, None, wrong_counts)
        assert refused.value.field == "trailer"
        # a line changed (a valid change): the checksum tells
        changed = [*lines[:-1]]
        i = next(i for i, x in enumerate(changed) if '"type":"summary"' in x)
        changed[i] = changed[i].replace("ana likes sun", "ana likes rain")
        with pytest.raises(InvalidInput, match="checksum"):
            import_dump(store, None, [*changed, lines[-1]])
        # a line dropped and the trailer's counts adjusted: the checksum still tells
        dropped = [x for j, x in enumerate(lines[:-1]) if j != i]
        counts = {**end["counts"], "summary": end["counts"]["summary"] - 1}
        with pytest.raises(InvalidInput, match="checksum"):
            import_dump(store, None, [*dropped, json.dumps({**end, "counts": counts})])
        with pytest.raises(DumpLineError, match="follows the dump's trailer"):
            import_dump(store, None, [*lines, lines[1]])
        _assert_empty(store)


def test_an_old_dump_without_a_trailer_imports_with_a_warning() -> None:
    lines = _populated_lines()
    old = [json.dumps({**json.loads(lines[0]), "version": 2}), *body(lines)]
    with open_store("memory", Path(".")) as store:
        report = import_dump(store, None, old)
        assert report.partial is None and report.written["thread"] == 2
        assert report.warnings and "no trailer" in report.warnings[0]


def test_cli_import_exits_non_zero_on_a_cut_dump_and_says_partial(tmp_path: Path) -> None:
    source = f"sqlite:///{tmp_path}/a.db"
    with Memory(source, tenant_id=TENANT) as memory:
        populate(memory.store)
    runner = CliRunner()
    exported = runner.invoke(app, ["export", "--url", source, "--tenant", TENANT])
    cut = "\n".join(exported.stdout.splitlines()[:20]) + "\n"
    target = f"sqlite:///{tmp_path}/b.db"
    refused = runner.invoke(app, ["import", "--url", target], input=cut)
    assert refused.exit_code == 1 and "cut short" in refused.stderr
    with Memory(target, tenant_id=TENANT) as memory:
        assert memory.threads.list() == []
    taken = runner.invoke(app, ["import", "--url", target, "--allow-partial"], input=cut)
    assert taken.exit_code == 0, taken.output
    assert "PARTIAL import" in taken.stderr
    old = runner.invoke(
        app,
        ["import", "--url", f"sqlite:///{tmp_path}/c.db", "--quiet"],
        input="\n".join(_old_lines(exported.stdout)) + "\n",
    )
    assert old.exit_code == 0 and "warning:" in old.stderr and "written:" not in old.stderr


def _old_lines(text: str) -> list[str]:
    lines = text.splitlines()
    return [json.dumps({**json.loads(lines[0]), "version": 2}), *lines[1:-1]]


# -- naming the real problem ---------------------------------------------------------------


def test_a_dump_cut_before_a_fork_entry_says_the_fork_entry_is_missing() -> None:
    with open_store("memory", Path(".")) as source:
        memory = Memory(source, tenant_id=TENANT)
        thread = memory.threads.create()
        first = memory.entries.add(thread.id, {"role": "user", "content": "a"})
        memory.entries.add(thread.id, {"role": "user", "content": "b"})
        memory.branches.create(thread.id, "alt", from_entry=first.id)
        memory.entries.add(thread.id, {"role": "user", "content": "c"}, branch="alt")
        lines = list(export_dump(source, TENANT, now=NOW))
    without_fork = [x for x in body(lines) if first.id not in x or '"type":"thread"' in x]
    with open_store("memory", Path(".")) as store:
        with pytest.raises(DumpLineError, match="fork entry is missing") as refused:
            import_dump(store, None, sealed(lines[0], without_fork))
        assert refused.value.line == 2 and refused.value.field == "fork_entry"
        assert first.id in str(refused.value) and "'alt'" in str(refused.value)
        _assert_empty(store)


def test_the_checks_know_every_record_kind() -> None:
    assert set(dump_checks._KINDS) == set(RECORD_KINDS)
    checksum = Checksum()
    checksum.add("x")
    assert trailer(checksum)["counts"] == dict.fromkeys(LINE_TYPES, 0)
