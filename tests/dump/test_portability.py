"""Export/import/migrate: a populated store moves through every store and comes back equal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memorybank import Memory
from memorybank.cli import app
from memorybank.dump._sync.portability import export_dump, import_dump
from memorybank.dump.format import FORMAT, VERSION, Checksum, trailer
from memorybank.errors import Conflict, InvalidInput
from memorybank.memory._sync.core_facts import CoreFacts
from memorybank.stores import Store
from memorybank.stores.contract.types import VectorItem
from tests.all_stores import open_store

TENANT = "port"
MODEL = "m"
NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


class Clock:
    """A clock that ticks one second per read, so every timestamp differs."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1, microseconds=7)
        return self.now


def populate(store: Store) -> None:
    """Every record kind: threads (metadata, status, branches), entries, facts, core facts..."""
    memory = Memory(store, tenant_id=TENANT, clock=Clock())
    one = memory.threads.create(
        user_id="ana", agent_id="atlas", title="Lisbon ✈", metadata={"n": 2**63 - 1, "f": -0.0}
    )
    first = memory.entries.add(one.id, {"role": "system", "content": "be brief"})
    memory.entries.add(one.id, {"role": "user", "content": "rain? 🌧"}, idempotency_key="k1")
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "wx", "arguments": "{}"}}
        ],
    }
    memory.entries.add(one.id, call)
    memory.entries.add(one.id, {"role": "tool", "tool_call_id": "c1", "content": "sun"})
    memory.branches.create(one.id, "alt", from_entry=first.id)
    memory.entries.add(one.id, {"role": "user", "content": "other path"}, branch="alt")
    memory.branches.create(one.id, "whole")
    memory.branches.checkout(one.id, "alt")
    two = memory.threads.create(agent_id="atlas", metadata={"k": [1, 1e16]})
    memory.entries.add_many(
        two.id,
        [{"role": "user", "content": f"m{i}"} for i in range(7)],
        idempotency_key="batch",
    )
    memory.threads.update(two.id, status="archived")
    fact = memory.facts.add(
        content="likes sun", agent_id="atlas", user_id="ana", source_entries=[first.id]
    )
    memory.facts.update(fact.id, content="likes sun a lot", supersede=True)
    memory.documents.add("a guide to Lisbon", metadata={"lang": "en"}, agent_id="atlas")
    memory.summaries.add(content="ana likes sun", agent_id="atlas", user_id="ana")
    memory.summaries.add(content="shared", agent_id="atlas", user_id=None)
    core = CoreFacts(memory=memory.scoped(user_id="ana"))
    core.set("name", "Ana")
    core.set("name", "Ana M.")
    graph = memory.scoped(user_id="ana", agent_id="atlas").graph
    ana = graph.add_entity("Ana", type="person", observations=["likes sun"], provenance=[first.id])
    lisbon = memory.graph.add_entity("Lisbon", type="location")
    portugal = memory.graph.add_entity("Portugal", type="location")
    graph.add_relation(ana.id, "lives_in", lisbon.id, valid_at=NOW, provenance=[first.id])
    memory.graph.add_relation(lisbon.id, "located_in", portugal.id, weight=2.5)
    flat = graph.add_entity("Flat", type="location")
    graph.add_relation(flat.id, "located_in", lisbon.id)
    assert len(graph.infer(rules=["transitive_located_in"])) == 1
    memory.snapshots.save("run-1", {"step": 3, "f": 1e16}, user_id="ana")
    memory.snapshots.save("run:{2}", ["shared", "ü"])
    memory.working("run-1", user_id="ana", agent_id="atlas").set("plan", {"steps": [1, 2]})
    memory.working("run-1", user_id="ana", agent_id="atlas").set("n", 3)
    memory.working("run-3").set("k", None)
    # unit vectors of model "m", exact in float32 (stores may normalise and narrow them)
    doc = memory.documents.list()[0]
    store.vector_put(
        TENANT,
        [
            VectorItem("entry", first.id, MODEL, [0.5, -0.5, 0.5, 0.5], one.id),
            VectorItem("fact", fact.id, MODEL, [1.0, 0.0, 0.0, 0.0]),
            VectorItem("document", doc.id, MODEL, [0.0, 0.0, -1.0, 0.0]),
            VectorItem("graph_entity", ana.id, MODEL, [0.0, 1.0, 0.0, 0.0]),
        ],
    )


def dump(store: Store) -> list[dict[str, Any]]:
    """The store's dump (vectors of MODEL included) without its header and trailer."""
    lines = list(export_dump(store, TENANT, now=NOW, vector_model=MODEL))
    assert json.loads(lines[0])["format"] == FORMAT
    assert json.loads(lines[-1])["type"] == "end"
    return [json.loads(line) for line in lines[1:-1]]


def body(lines: list[str]) -> list[str]:
    """A dump's lines between its header and its trailer."""
    assert json.loads(lines[-1])["type"] == "end"
    return lines[1:-1]


def sealed(head: str, lines: list[str]) -> list[str]:
    """A dump of ``head`` and ``lines`` with its trailer (what export would end it with)."""
    checksum = Checksum()
    checksum.add(head)
    for line in lines:
        checksum.add(line, json.loads(line)["type"])
    return [head, *lines, json.dumps(trailer(checksum))]


def normal(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines with what a fork recreates differently left out (a branch's ``from_entry``)."""
    out = []
    for line in lines:
        if line["type"] == "thread":
            line = {**line, "branches": [{**b, "from_entry": None} for b in line["branches"]]}
        out.append(line)
    return out


def plain(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``normal`` lines without their vectors."""
    return [{k: v for k, v in line.items() if k != "vector"} for line in normal(lines)]


def test_round_trip_through_every_store(tmp_path: Path) -> None:
    """memory -> sqlite -> postgres -> redis -> mysql -> memory: the dump never changes."""
    chain = ("memory", "sqlite", "postgres", "redis", "mysql", "memory")
    with ExitStack() as stack:
        stores = [
            stack.enter_context(open_store(kind, tmp_path / f"{i}")) for i, kind in enumerate(chain)
        ]
        for i in range(len(chain)):
            (tmp_path / f"{i}").mkdir(exist_ok=True)
        populate(stores[0])
        original = dump(stores[0])
        kinds = {line["type"] for line in original}
        assert kinds == {"thread", "entry", "record", "summary", "snapshot", "working"}
        assert sum(line["type"] == "snapshot" for line in original) == 2
        assert sum(line["type"] == "working" for line in original) == 2
        record_kinds = {line["record"]["kind"] for line in original if line["type"] == "record"}
        assert record_kinds == {
            "fact",
            "fact_version",
            "fact_source",
            "core_fact",
            "core_fact_history",
            "document",
            "graph_entity",
            "graph_ident",
            "graph_name",
            "graph_out",
            "graph_in",
            "graph_slot",
            "graph_source",
            "graph_support",
            "working_owner",
        }
        assert sum("vector" in line for line in original) == 4
        for source, target, kind in zip(stores, stores[1:], chain[1:], strict=False):
            lines = export_dump(source, TENANT, now=NOW, vector_model=MODEL)
            report = import_dump(target, None, lines, model_id=MODEL)
            assert report.written["thread"] == 2, kind
            assert report.vectors_written == 4, kind
            assert normal(dump(target)) == normal(original), kind
        # the thread rows themselves: current branch, status and timestamps kept
        back = Memory(stores[-1], tenant_id=TENANT)
        graph = back.scoped(user_id="ana", agent_id="atlas").graph
        (ana,) = graph.find_entities("ana")
        path = graph.shortest_path(ana.id, graph.find_entities("portugal")[0].id)
        assert path is not None and [e.name for e in path.entities] == ["Ana", "Lisbon", "Portugal"]
        (flat,) = graph.find_entities("flat")
        inferred = graph.relations(flat.id, include_inferred=True, direction="out")
        assert [(r.type, r.source) for r in inferred] == [
            ("located_in", "user"),
            ("located_in", "inferred"),
        ]
        again = graph.add_entity("ana", type="person")  # the identity index came along
        assert again.id == ana.id
        threads = {t.title: t for t in back.threads.list()}
        assert threads["Lisbon ✈"].current_branch == "alt"
        assert threads["Lisbon ✈"].metadata == {"n": 2**63 - 1, "f": -0.0}
        assert [b.name for b in back.branches.list(threads["Lisbon ✈"].id)] == [
            "main",
            "alt",
            "whole",
        ]
        # snapshots keep their owner, working memory its principal's partition
        assert back.snapshots.load("run-1", user_id="ana") == {"step": 3, "f": 1e16}
        assert back.snapshots.load("run:{2}", user_id=None) == ["shared", "ü"]
        run = back.working("run-1", user_id="ana", agent_id="atlas")
        assert run.items() == {"n": 3, "plan": {"steps": [1, 2]}}
        assert back.working("run-1").items() == {}


@pytest.fixture
def populated() -> Iterator[Store]:
    with open_store("memory", Path(".")) as store:
        populate(store)
        yield store


def test_on_conflict(populated: Store) -> None:
    """fail raises Conflict; skip keeps complete threads and redoes a half-written one."""
    lines = list(export_dump(populated, TENANT, now=NOW, vector_model=MODEL))
    with open_store("memory", Path(".")) as target:
        import_dump(target, None, lines, model_id=MODEL)
        with pytest.raises(Conflict):
            import_dump(target, None, lines, on_conflict="fail")
        again = import_dump(target, None, lines, on_conflict="skip")
        assert again.skipped["thread"] == 2 and "thread" not in again.written
        assert "record" not in again.written
        assert (again.skipped["snapshot"], again.skipped["working"]) == (2, 2)
        assert "snapshot" not in again.written and "working" not in again.written
        # an interrupted import: the first thread's branch lost entries -> written again
        thread_id = json.loads(lines[1])["thread"]["id"]
        target.entry_clear(TENANT, thread_id, branch="main")
        resumed = import_dump(target, None, lines, on_conflict="skip", model_id=MODEL)
        assert resumed.written["thread"] == 1
        assert normal(dump(target)) == normal(dump(populated))
        # working memory that changed in the target is replaced whole by overwrite
        memory = Memory(target, tenant_id=TENANT)
        memory.working("run-3").set("extra", 1)
        overwrite = import_dump(target, None, lines, on_conflict="overwrite", model_id=MODEL)
        assert overwrite.written["thread"] == 2
        assert (overwrite.written["snapshot"], overwrite.written["working"]) == (2, 2)
        assert memory.working("run-3").items() == {"k": None}
        assert normal(dump(target)) == normal(dump(populated))


def test_conflicting_snapshot_or_working_memory_fails(populated: Store) -> None:
    lines = list(export_dump(populated, TENANT, now=NOW))
    runs = [x for x in lines if '"type":"snapshot"' in x or '"type":"working"' in x]
    for line in runs:
        with open_store("memory", Path(".")) as target:
            import_dump(target, None, sealed(lines[0], [line]))
            with pytest.raises(Conflict, match="run"):
                import_dump(target, None, sealed(lines[0], [line]), on_conflict="fail")


def test_a_version_1_dump_still_imports(populated: Store) -> None:
    lines = list(export_dump(populated, TENANT, now=NOW))
    head = json.loads(lines[0])
    del head["unlisted"]
    old = [json.dumps({**head, "version": 1})]
    old += [x for x in body(lines) if '"type":"snapshot"' not in x and '"type":"working"' not in x]
    with open_store("memory", Path(".")) as target:
        report = import_dump(target, None, old)
        assert report.written["thread"] == 2 and report.unlisted == []
        assert "snapshot" not in report.written


def test_export_resumes_after_a_thread(populated: Store) -> None:
    full = [json.loads(x) for x in export_dump(populated, TENANT, now=NOW)][1:-1]
    ids = sorted(line["thread"]["id"] for line in full if line["type"] == "thread")
    rest = [json.loads(x) for x in export_dump(populated, TENANT, now=NOW, after_thread=ids[0])]
    rest = rest[1:-1]
    assert [x["thread"]["id"] for x in rest if x["type"] == "thread"] == ids[1:]
    assert sum(x["type"] == "record" for x in rest) == sum(x["type"] == "record" for x in full)


def test_vectors_of_another_model_are_dropped_and_said(populated: Store) -> None:
    lines = list(export_dump(populated, TENANT, now=NOW, vector_model=MODEL))
    with open_store("memory", Path(".")) as target:
        report = import_dump(target, None, lines, model_id="another-model")
        assert (report.vector_model, report.vectors_written, report.vectors_dropped) == (
            MODEL,
            0,
            4,
        )
        facts = [json.loads(x)["record"]["id"] for x in lines[1:] if '"kind":"fact"' in x]
        assert target.vector_get(TENANT, "fact", facts, model_id=MODEL) == {}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_branch_whose_source_was_deleted(kind: str, tmp_path: Path) -> None:
    """main deleted after checking out a fork: the fork comes back whole, main stays gone."""
    with open_store("memory", tmp_path) as source, open_store(kind, tmp_path) as target:
        memory = Memory(source, tenant_id=TENANT)
        thread = memory.threads.create().id
        for i in range(3):
            memory.entries.add(thread, {"role": "user", "content": f"m{i}"})
        memory.branches.create(thread, "alt")
        memory.entries.add(thread, {"role": "user", "content": "x"}, branch="alt")
        memory.branches.checkout(thread, "alt")
        memory.branches.delete(thread, "main")
        import_dump(target, None, export_dump(source, TENANT, now=NOW))
        back = Memory(target, tenant_id=TENANT)
        assert [b.name for b in back.branches.list(thread)] == ["alt"]
        assert [e.content for e in back.entries.list(thread)] == ["m0", "m1", "m2", "x"]
        assert normal(dump(target)) == normal(dump(source))


def test_bad_dumps_are_refused() -> None:
    with open_store("memory", Path(".")) as target:
        with pytest.raises(InvalidInput) as empty:
            import_dump(target, None, [])
        assert empty.value.field == "header"
        with pytest.raises(InvalidInput) as newer:
            import_dump(target, None, [json.dumps({"format": FORMAT, "version": VERSION + 1})])
        assert newer.value.field == "header"
        with pytest.raises(InvalidInput):
            import_dump(target, None, ['{"rows": 1}'])


def test_cli_export_import_and_migrate(tmp_path: Path) -> None:
    """export writes a dump to stdout, import reads stdin, migrate pipes one into the other."""
    source = f"sqlite:///{tmp_path}/a.db"
    with Memory(source, tenant_id=TENANT) as memory:
        populate(memory.store)
        full = normal(dump(memory.store))
    expected = plain(full)
    runner = CliRunner()
    exported = runner.invoke(app, ["export", "--url", source, "--tenant", TENANT])
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.stdout.splitlines()[0])["version"] == VERSION
    target = f"sqlite:///{tmp_path}/b.db"
    imported = runner.invoke(app, ["import", "--url", target], input=exported.stdout)
    assert imported.exit_code == 0, imported.output
    assert "the dump carries none" in imported.stderr
    with Memory(target, tenant_id=TENANT) as memory:
        assert plain(dump(memory.store)) == expected
    failed = runner.invoke(app, ["import", "--url", target], input=exported.stdout)
    assert failed.exit_code == 1 and "conflict" in failed.stderr
    third = f"sqlite:///{tmp_path}/c.db"
    moved = runner.invoke(
        app, ["migrate", "--from", source, "--to", third, "--tenant", TENANT, "--vectors", MODEL]
    )
    assert moved.exit_code == 0, moved.output
    assert f"4 of model {MODEL} carried" in moved.stderr
    with Memory(third, tenant_id=TENANT) as memory:
        assert normal(dump(memory.store)) == full
    with_vectors = runner.invoke(
        app, ["export", "--url", source, "--tenant", TENANT, "--vectors", MODEL]
    )
    fourth = f"sqlite:///{tmp_path}/d.db"
    other = runner.invoke(
        app, ["import", "--url", fourth, "--model-id", "other"], input=with_vectors.stdout
    )
    assert other.exit_code == 0, other.output
    assert f"4 of model {MODEL} NOT carried" in " ".join(other.stderr.split())
    missing = runner.invoke(app, ["export", "--url", f"sqlite:///{tmp_path}/nope.db"])
    assert missing.exit_code == 1
    assert not (tmp_path / "nope.db").exists()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_export_pages_records_across_equal_times(kind: str, tmp_path: Path) -> None:
    """Records leave ``PAGE`` at a time by (created_at, id): none lost or repeated at a seam."""
    from memorybank.dump._sync.portability import PAGE
    from memorybank.stores.contract.types import Record

    with open_store(kind, tmp_path) as store:
        count = 2 * PAGE + 7
        records = [
            Record("fact", f"f{i:05d}", None, None, f"fact {i}", {}, NOW, NOW) for i in range(count)
        ]
        store.record_put(TENANT, records[::-1])
        lines = [line for line in dump(store) if line["type"] == "record"]
        assert [line["record"]["id"] for line in lines] == [r.id for r in records]
