"""One worker per embedding job: several processes sharing one journal embed each text once.

A child writes 60 batches of 5 messages over three threads and a document with
``embed="background"`` and an embedder that never returns (61 journal records,
leased for a second), and is killed. Then three worker processes
(``embed_worker``) open background memories on the same store and work until the
journal is empty. Their embedder (``tests.reliability._child.Logged``, a real
deterministic embedder) logs every text it is handed to its own file, so the test
counts the embedder calls per text.

* All three start at once: every text is embedded exactly once, every entry and
  the document have their vector, the journal is empty.
* One of them is killed with SIGKILL mid-batch, holding leases (2 s): the two
  others take its records over once the leases run out. Every text reaches the
  survivors' embedder exactly once (the killed worker's work never got stored),
  and nothing is left behind.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank.core._sync.embedding import EMBED_JOB, JOURNAL_TENANT
from tests.recall.conftest import HashEmbedder
from tests.reliability._harness import Child, StoreSpec, provide, store_params

WRITES = 60
SIZE = 5
#: Seconds the killed writer's journal records stay leased.
WRITER_LEASE = "1"
#: Seconds a worker that is not killed holds a record: longer than any batch here.
WORKER_LEASE = "30"
#: Seconds the worker killed mid-batch holds its records.
KILLED_LEASE = "2"
DOCUMENT = "a document about zebras"


@pytest.fixture
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


STORES = store_params(("sqlite-full", "postgres", "mysql", "redis"))


def _journal(spec: StoreSpec, tmp_path: Path) -> dict[str, object]:
    """The killed writer's ids, with its 61 journal records left behind."""
    child = Child("embed_journal", spec, str(WRITES), str(SIZE), WRITER_LEASE, directory=tmp_path)
    try:
        child.wait_for(1, timeout=120)
        child.kill()
    finally:
        child.stop()
    (written,) = child.records()
    store = spec.open()
    try:
        assert len(store.record_list(JOURNAL_TENANT, EMBED_JOB)) == WRITES + 1
    finally:
        store.close()
    return written


def _texts() -> list[str]:
    return [f"write {w} text {i}" for w in range(WRITES) for i in range(SIZE)] + [DOCUMENT]


def _embedded(log: Path) -> Counter[str]:
    """How many times each text was handed to the embedder of the worker logging to ``log``."""
    if not log.exists():
        return Counter()
    return Counter(json.loads(line) for line in log.read_text(encoding="utf-8").splitlines())


def _worker(spec: StoreSpec, logs: Path, go: Path, lease: str, *, hang: bool, tmp: Path) -> Child:
    args = (str(logs), str(go), lease, "1" if hang else "0")
    return Child("embed_worker", spec, *args, directory=tmp)


def _check_once(workers: list[Child], logs: Path) -> None:
    """The ``workers`` finished, and handed every text to their embedders exactly once."""
    counts: Counter[str] = Counter()
    for worker in workers:
        assert worker.records() == [{"done": True}]
        counts.update(_embedded(logs / f"{worker.proc.pid}.log"))
    assert sorted(counts) == sorted(_texts())
    twice = {text: n for text, n in counts.items() if n != 1}
    assert twice == {}, f"embedded more than once: {twice}"


def _check_stored(spec: StoreSpec, written: dict[str, object]) -> None:
    """Every entry and the document have their vector; the journal is empty."""
    entries = written["entries"]
    assert isinstance(entries, list) and len(entries) == WRITES * SIZE
    model = HashEmbedder().model_id
    store = spec.open()
    try:
        assert store.record_list(JOURNAL_TENANT, EMBED_JOB) == []
        assert len(store.vector_get("default", "entry", entries, model_id=model)) == len(entries)
        document = str(written["document"])
        assert list(store.vector_get("default", "document", [document], model_id=model)) == [
            document
        ]
    finally:
        store.close()


@pytest.mark.parametrize("spec", STORES, indirect=True)
def test_three_workers_embed_every_journal_text_exactly_once(
    spec: StoreSpec, tmp_path: Path
) -> None:
    written = _journal(spec, tmp_path)
    logs, go = tmp_path / "logs", tmp_path / "go"
    logs.mkdir()
    workers = [_worker(spec, logs, go, WORKER_LEASE, hang=False, tmp=tmp_path) for _ in range(3)]
    try:
        for worker in workers:
            worker.wait_for(0, timeout=120)  # ready: its store is open
        go.touch()  # all three start together
        for worker in workers:
            worker.wait(timeout=300)
    finally:
        for worker in workers:
            worker.stop()
    _check_once(workers, logs)
    _check_stored(spec, written)


@pytest.mark.parametrize("spec", STORES, indirect=True)
def test_the_leases_of_a_worker_killed_mid_batch_are_taken_over(
    spec: StoreSpec, tmp_path: Path
) -> None:
    written = _journal(spec, tmp_path)
    logs, first, rest = tmp_path / "logs", tmp_path / "go-first", tmp_path / "go-rest"
    logs.mkdir()
    doomed = _worker(spec, logs, first, KILLED_LEASE, hang=True, tmp=tmp_path)
    survivors = [
        _worker(spec, logs, rest, WORKER_LEASE, hang=False, tmp=tmp_path) for _ in range(2)
    ]
    try:
        for worker in (doomed, *survivors):
            worker.wait_for(0, timeout=120)
        first.touch()
        # the doomed worker claims its first batch and hangs in the embedder
        doomed_log = logs / f"{doomed.proc.pid}.log"
        deadline = time.monotonic() + 120
        while not _embedded(doomed_log):
            assert doomed.proc.poll() is None, "the hanging worker exited"
            assert time.monotonic() < deadline, "the hanging worker never embedded"
            time.sleep(0.02)
        rest.touch()  # the two others start while it holds its leases
        doomed.kill()  # SIGKILL mid-batch
        for worker in survivors:
            worker.wait(timeout=300)
    finally:
        for worker in (doomed, *survivors):
            worker.stop()
    held = _embedded(doomed_log)
    assert held and set(held) <= set(_texts())
    # the killed worker stored nothing: the survivors embedded every text, its own
    # batch included (after its leases ran out), each exactly once
    _check_once(survivors, logs)
    _check_stored(spec, written)
