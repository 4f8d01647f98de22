"""Import is all or nothing: a bad dump is refused whole, naming its line, before the first
write (duplicates of every kind, what the target already holds under ``fail``, vectors of
the wrong size), and a dump that passes is written in one ``store.atomic`` step, so an
import stopped half-way (an error, ``kill -9``) leaves the target as it was."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from memorybank import Memory
from memorybank.dump._async.importing import import_dump as aimport_dump
from memorybank.dump._sync.portability import export_dump, import_dump
from memorybank.dump.checks import DumpLineError
from memorybank.errors import Conflict
from memorybank.stores import InMemoryStore, Store
from memorybank.stores.contract.capabilities import Capability
from tests.all_stores import STORE_KINDS, open_store
from tests.dump.test_portability import MODEL, NOW, TENANT, body, populate, sealed
from tests.reliability._harness import StoreSpec, _child_env, provide

Lines = list[str]


@pytest.fixture(scope="module")
def source() -> Lines:
    """The dump of a populated store: every line type, forks, keys, vectors of ``MODEL``."""
    store = InMemoryStore()
    populate(store)
    return list(export_dump(store, TENANT, now=NOW, vector_model=MODEL))


def _state(store: Store) -> Lines:
    """What every read of the tenant returns, as its dump (header and trailer left out)."""
    return body(list(export_dump(store, TENANT, now=NOW, vector_model=MODEL)))


def _before(store: Store) -> None:
    """Something the target holds before the import, which a refused one must keep."""
    memory = Memory(store, tenant_id=TENANT)
    thread = memory.threads.create(user_id="ana", title="kept")
    memory.entries.add(thread.id, {"role": "user", "content": "kept"})
    memory.facts.add(content="kept fact", user_id="ana")


def _typed(lines: Lines, kind: str) -> list[int]:
    """Indexes (in ``lines``) of the lines of type ``kind``."""
    return [i for i, line in enumerate(lines) if json.loads(line)["type"] == kind]


def _with(lines: Lines, at: int, line: str) -> tuple[Lines, int]:
    """``lines`` with ``line`` inserted after index ``at``; and its line number in the dump
    (the header is line 1, the first body line 2)."""
    return [*lines[: at + 1], line, *lines[at + 1 :]], at + 3


def _edit(line: str, change: Callable[[dict[str, Any]], None]) -> str:
    data = json.loads(line)
    change(data)
    return json.dumps(data, ensure_ascii=False)


def _bad_dumps(source: Lines) -> dict[str, tuple[Lines, int, str]]:
    """Name -> (body lines, the line refused, what the error says)."""
    lines = body(source)
    entries, records = _typed(lines, "entry"), _typed(lines, "record")
    out: dict[str, tuple[Lines, int, str]] = {}
    last_entry = entries[-1]
    first_thread = _typed(lines, "thread")[0]
    out["thread"] = (*_with(lines, last_entry, lines[first_thread]), "appears twice")
    out["entry line"] = (*_with(lines, entries[0], lines[entries[0]]), "appears twice")
    keyed = next(i for i in entries if json.loads(lines[i])["entry"]["idempotency_key"])

    def new_id(data: dict[str, Any]) -> None:
        data["entry"]["id"] = "01NEWENTRY"
        data.pop("vector", None)

    out["idempotency key"] = (
        *_with(lines, keyed, _edit(lines[keyed], new_id)),
        "idempotency key",
    )
    # an entry dumped on a fork repeating one of the entries the fork shares with its source
    on_alt = next(i for i in entries if json.loads(lines[i])["entry"]["branch"] == "alt")

    def shared_id(data: dict[str, Any]) -> None:
        data["entry"]["id"] = json.loads(lines[entries[0]])["entry"]["id"]

    out["entry id of a fork's shared prefix"] = (
        *_with(lines, on_alt, _edit(lines[on_alt], shared_id)),
        "shares it with",
    )
    kinds: dict[str, int] = {}
    for i in records:
        kinds.setdefault(json.loads(lines[i])["record"]["kind"], i)
    for kind, i in kinds.items():
        out[f"{kind} record"] = (*_with(lines, i, lines[i]), "appears twice")
    for kind in ("summary", "snapshot", "working"):
        i = _typed(lines, kind)[0]
        out[kind] = (*_with(lines, i, lines[i]), "appears twice")
    vectored = next(i for i in records if "vector" in json.loads(lines[i]))

    def short(data: dict[str, Any]) -> None:
        data["vector"] = [1.0, 0.0, 0.0]

    edited = [*lines]
    edited[vectored] = _edit(lines[vectored], short)
    out["vector size"] = (edited, vectored + 2, "3 numbers")
    return out


BAD = (
    "thread",
    "entry line",
    "idempotency key",
    "entry id of a fork's shared prefix",
    "fact record",
    "fact_version record",
    "core_fact record",
    "document record",
    "graph_entity record",
    "graph_out record",
    "summary",
    "snapshot",
    "working",
    "vector size",
)


@pytest.fixture(params=STORE_KINDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with open_store(request.param, tmp_path) as store:
        _before(store)
        yield store


def test_the_corpus_covers_every_kind_of_line(source: Lines) -> None:
    """Every record kind of the dump, and every other line type, has its duplicate case."""
    names = set(_bad_dumps(source))
    assert set(BAD) <= names
    assert {"thread", "summary", "snapshot", "working"} <= names


def test_every_bad_dump_is_refused_whole_naming_its_line(target: Store, source: Lines) -> None:
    before = _state(target)
    bad = _bad_dumps(source)
    for name in (*BAD, *(n for n in bad if n not in BAD)):
        lines, number, says = bad[name]
        for on_conflict in ("fail", "skip", "overwrite"):
            with pytest.raises(DumpLineError) as refused:
                import_dump(
                    target,
                    None,
                    sealed(source[0], lines),
                    on_conflict=on_conflict,
                    model_id=MODEL,
                )
            assert refused.value.line == number, (name, str(refused.value))
            assert says in str(refused.value), name
            assert _state(target) == before, name


def test_a_vector_of_the_wrong_size_for_the_target_embedder(target: Store, source: Lines) -> None:
    """The dump's vectors have 4 numbers: a target whose embedder of that model has 64
    refuses them all, at the first vector; a model id naming its size is held to it."""
    before = _state(target)
    first = next(i for i, line in enumerate(source) if '"vector"' in line) + 1
    with pytest.raises(DumpLineError, match="64") as refused:
        import_dump(target, None, source, model_id=MODEL, dimensions=64)
    assert refused.value.line == first
    head = _edit(source[0], lambda data: data.update(vector_model="m@64"))
    with pytest.raises(DumpLineError, match="'m@64'") as named:
        import_dump(target, None, sealed(head, body(source)), model_id="m@64")
    assert named.value.line == first
    assert _state(target) == before


def _renamed(lines: Lines, thread: int) -> Lines:
    """The thread line at ``thread`` and its entries, under a new thread id (no vectors)."""
    old = json.loads(lines[thread])["thread"]["id"]
    out = [lines[thread].replace(old, "01FRESHTHREAD")]
    for line in lines[thread + 1 :]:
        data = json.loads(line)
        if data["type"] != "entry":
            break
        data["entry"]["thread_id"] = "01FRESHTHREAD"
        data.pop("vector", None)
        out.append(json.dumps(data, ensure_ascii=False))
    return out


def test_what_the_target_holds_is_refused_under_fail(target: Store, source: Lines) -> None:
    """The target holds the dump (imported before): a dump with a new thread first and then
    one line of each kind the target holds is refused naming that line, and the new
    thread is not written; skip then imports it."""
    import_dump(target, None, source, model_id=MODEL)
    before = _state(target)
    lines = body(source)
    threads = _typed(lines, "thread")
    fresh = _renamed(lines, threads[0])
    held: dict[str, int] = {}
    for i, line in enumerate(lines):
        data = json.loads(line)
        name = data["record"]["kind"] if data["type"] == "record" else data["type"]
        forks = [b for b in data.get("branches", []) if b.get("fork_entry")]
        if name != "entry" and not forks:  # a thread line alone: one without forks
            held.setdefault(name, i)
    assert {"thread", "fact", "summary", "snapshot", "working"} <= set(held)
    for name, i in held.items():
        with pytest.raises(Conflict, match=f"line {len(fresh) + 2} of the dump") as refused:
            import_dump(target, None, sealed(source[0], [*fresh, lines[i]]), model_id=MODEL)
        assert "already exists in the target" in str(refused.value), name
        assert _state(target) == before, name
    report = import_dump(target, None, sealed(source[0], fresh), on_conflict="fail")
    assert report.written["thread"] == 1
    assert report.atomic == (Capability.ATOMIC in target.capabilities)


def test_an_import_stopped_while_writing_leaves_nothing(target: Store, source: Lines) -> None:
    """A failure after the checks (here: the progress callback raising at a random line)
    rolls the whole import back on a store with ``ATOMIC``."""
    assert Capability.ATOMIC in target.capabilities
    before = _state(target)
    total = len(body(source))
    rng = random.Random(7)
    for stop in sorted({1, total, *rng.sample(range(1, total), 3)}):
        seen = 0

        def tick(kind: str, stop: int = stop) -> None:
            nonlocal seen
            seen += 1
            if seen == stop:
                raise RuntimeError("stopped")

        with pytest.raises(RuntimeError, match="stopped"):
            import_dump(target, None, source, model_id=MODEL, progress=tick)
        assert _state(target) == before, stop
    report = import_dump(target, None, source, model_id=MODEL)
    assert report.atomic and report.written["thread"] == 2
    assert _state(target) != before


def test_a_store_without_atomic_writes_checks_first_then_writes(source: Lines) -> None:
    """``examples/dict_store.py`` claims no ``ATOMIC``: a refused dump writes nothing all
    the same (the check is above the stores); a good one imports, not atomically."""
    from tests.stores.test_contract_example import dict_store

    async def run() -> None:
        store: Any = dict_store.DictStore()
        assert Capability.ATOMIC not in store.capabilities
        lines, number, _ = _bad_dumps(source)["idempotency key"]
        with pytest.raises(DumpLineError) as refused:
            await aimport_dump(store, None, sealed(source[0], lines))
        assert refused.value.line == number
        assert await store.thread_list(TENANT) == []
        report = await aimport_dump(store, None, source, model_id=MODEL)
        assert not report.atomic and report.written["thread"] == 2

    asyncio.run(run())


# -- kill -9 while importing ---------------------------------------------------------------

_CHILD = """
import sys
from memorybank.dump._sync.portability import import_dump
from tests.reliability._harness import StoreSpec

spec = StoreSpec.from_json(sys.argv[1])
lines = open(sys.argv[2], encoding="utf-8").read().splitlines()
store = spec.open()
def tick(kind):
    print(kind, flush=True)
import_dump(store, None, lines, model_id="m", progress=tick)
print("done", flush=True)
store.close()
"""


def _big(source: Lines) -> Lines:
    """``source`` with a dozen more threads (renamed copies), so a kill lands anywhere."""
    lines = body(source)
    threads = _typed(lines, "thread")
    extra: Lines = []
    for n in range(12):
        for line in _renamed(lines, threads[n % len(threads)]):
            extra.append(line.replace("01FRESHTHREAD", f"01KILL{n:04d}"))
    return sealed(source[0], [*extra, *lines])


@pytest.mark.parametrize("kind", ["sqlite-full", "postgres", "redis"])
def test_kill_9_while_importing_leaves_nothing_or_everything(
    kind: str, source: Lines, tmp_path: Path
) -> None:
    """On Redis the killed holder's lease is dropped by hand (as if ``LEASE_MS`` passed):
    the next store to open the prefix rolls the journal back."""
    dump_file = tmp_path / "dump.jsonl"
    lines = _big(source)
    dump_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    total = len(lines) - 2
    for whole in provide(kind, tmp_path):
        store = whole.open()
        try:
            import_dump(store, None, lines, model_id=MODEL)
            everything = _state(store)
        finally:
            store.close()
    rng = random.Random(kind)
    outcomes = {"nothing": 0, "everything": 0}
    kills = 20  # the count: 20 kill -9s, the last after the whole import
    with ExitStack() as stack:
        spec = stack.enter_context(contextmanager(provide)(kind, tmp_path))
        for run in range(kills):
            # a random line written, or (the last run) the whole import committed
            last = run == kills - 1
            _kill_at(spec, dump_file, total + 1 if last else rng.randrange(1, total + 1))
            if kind == "redis":
                _lapse_leases(spec)
            store = spec.open()
            try:
                state = _state(store)
            finally:
                store.close()
            assert state in ([], everything), run
            outcomes["nothing" if state == [] else "everything"] += 1
            if state:  # the kill came after the commit: the next runs need an empty target
                spec = stack.enter_context(contextmanager(provide)(kind, tmp_path))
    assert outcomes["nothing"] > 0 and outcomes["everything"] > 0


def _lapse_leases(spec: StoreSpec) -> None:
    client = redis.Redis.from_url(spec.target)
    try:
        for key in client.scan_iter(match=spec.prefix + "atomic:*:lease"):
            client.delete(key)
    finally:
        client.close()


def _kill_at(spec: StoreSpec, dump_file: Path, ticks: int) -> None:
    """Run the import in a child process and ``kill -9`` it after ``ticks`` written lines."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, spec.to_json(), str(dump_file)],
        stdout=subprocess.PIPE,
        text=True,
        env=_child_env(),
        start_new_session=True,
    )
    assert child.stdout is not None
    try:
        seen = 0
        for line in child.stdout:
            seen += 1
            if seen >= ticks or line.strip() == "done":
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL


class _Counting(InMemoryStore):
    """An in-memory store that counts its reads of threads and records: single ones made
    outside a batch read, and batch reads."""

    def __init__(self) -> None:
        super().__init__()
        self.single = 0
        self.batches = 0
        self._in_batch = False

    def thread_get(self, tenant: str, thread_id: str) -> Any:
        self.single += not self._in_batch
        return super().thread_get(tenant, thread_id)

    def record_get(self, tenant: str, kind: str, record_id: str) -> Any:
        self.single += not self._in_batch
        return super().record_get(tenant, kind, record_id)

    def thread_get_many(self, tenant: str, thread_ids: Any) -> Any:
        self.batches += 1
        self._in_batch = True
        try:
            return super().thread_get_many(tenant, thread_ids)
        finally:
            self._in_batch = False

    def record_get_many(
        self, tenant: str, kind: str, record_ids: Any, *, visible_to: Any = None
    ) -> Any:
        self.batches += 1
        self._in_batch = True
        try:
            return super().record_get_many(tenant, kind, record_ids, visible_to=visible_to)
        finally:
            self._in_batch = False


def test_the_target_is_read_once_per_kind_not_once_per_item(source: Lines) -> None:
    """Under ``fail`` the conflicts are found with one batch read per kind (threads, and
    each record kind), before any write and without a read per item."""
    store = _Counting()
    import_dump(store, None, source, model_id=MODEL)
    lines = body(source)
    kinds = {json.loads(lines[i])["record"]["kind"] for i in _typed(lines, "record")}
    store.single = store.batches = 0
    with pytest.raises(Conflict, match="line 2 of the dump"):
        import_dump(store, None, source, model_id=MODEL)
    assert store.batches == 1 + len(kinds)
    assert store.single == 0
