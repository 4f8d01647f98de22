"""The worker process of the reliability suite: ``python -m tests.reliability._child``.

``MODE SPEC_JSON ARGS...``; prints ``{"ready": true}`` once its store is open,
then one JSON line per operation, written and flushed only after the call
returned: a printed line is an acknowledged write, which must survive a kill.

Modes:
    append THREAD TAG       forever: ``add_many`` batches of 1-5 messages
                            (``{"batch", "ids"}``); the parent SIGKILLs it.
    compact TAG SIZE        forever, on threads ``TAG-0``, ``TAG-1``...: create
                            (``created``), fill with SIZE messages in one batch
                            (``filled``), fork branch ``fork`` at the middle
                            (``branched``), compact keeping ``KEEP`` (``compacted``).
    append_each THREAD TAG COUNT GO
                            after file GO exists: COUNT single ``add`` calls
                            (``{"i", "id"}``), then exit.
    idempotent THREAD KEYS GO
                            after GO: for each key, ``add`` with key ``key-j`` and
                            ``add_many`` of two with key ``batch-j``, same payloads
                            in every process (``{"key", "id"}``, ``{"batch", "ids"}``).
    embed_stuck COUNT [LEASE]
                            with ``embed="background"`` and an embedder that never
                            returns: one ``add_many`` of COUNT messages and one
                            document (``{"thread", "entries", "document"}``), then
                            waits for the kill, its vectors pending (its journal
                            records leased for LEASE seconds, default 1).
    embed_journal WRITES SIZE LEASE
                            as ``embed_stuck``, with WRITES ``add_many`` calls of
                            SIZE messages over three threads (one journal record
                            each) and one document (``{"entries", "document"}``).
    embed_worker LOGDIR GO LEASE HANG
                            after file GO exists: a background memory whose
                            embedder (``Logged``) appends every text it is given to
                            ``LOGDIR/<pid>.log`` before embedding it (and with HANG
                            ``1`` then never returns); works until the journal is
                            empty (``{"done": true}``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memorybank import CompactionService, Memory
from tests.recall.conftest import HashEmbedder
from tests.reliability._harness import StoreSpec

#: Entries a compaction keeps (the rest become one summary).
KEEP = 4


def _say(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def _wait_for(path: str) -> None:
    """A start line for racing processes: poll for the parent's file."""
    go = Path(path)
    while not go.exists():
        time.sleep(0.002)


def batch_message(batch: str, i: int, n: int) -> dict[str, Any]:
    """Message ``i`` of ``n`` of batch ``batch``, saying so in its metadata."""
    return {
        "role": "user",
        "content": f"{batch} part {i} of {n}",
        "metadata": {"batch": batch, "i": i, "n": n},
    }


def append(memory: Memory, thread_id: str, tag: str) -> None:
    rng = random.Random()
    number = 0
    while True:
        batch = f"{tag}-{number}"
        n = rng.randint(1, 5)
        stored = memory.entries.add_many(thread_id, [batch_message(batch, i, n) for i in range(n)])
        _say({"batch": batch, "ids": [e.id for e in stored]})
        number += 1


def summarize(messages: list[dict[str, Any]], options: Any) -> str:
    return f"{len(messages)} messages"


def compact(memory: Memory, tag: str, size: int) -> None:
    service = CompactionService(memory=memory, summarize=summarize)
    number = 0
    while True:
        thread_id = f"{tag}-{number}"
        memory.threads.create(thread_id=thread_id)
        _say({"created": thread_id})
        messages = [{"role": "user", "content": f"m{i}"} for i in range(size)]
        ids = [e.id for e in memory.entries.add_many(thread_id, messages)]
        _say({"filled": thread_id, "ids": ids})
        memory.branches.create(thread_id, "fork", from_entry=ids[size // 2 - 1])
        _say({"branched": thread_id})
        result = service.compact(thread_id, threshold=1, keep_recent=KEEP)
        assert result.action == "summary", result
        _say({"compacted": thread_id})
        number += 1


def append_each(memory: Memory, thread_id: str, tag: str, count: int, go: str) -> None:
    _wait_for(go)
    for i in range(count):
        entry = memory.entries.add(thread_id, {"role": "user", "content": f"{tag} {i}"})
        _say({"i": i, "id": entry.id})


def idempotent(memory: Memory, thread_id: str, keys: int, go: str) -> None:
    _wait_for(go)
    for j in range(keys):
        entry = memory.entries.add(
            thread_id, {"role": "user", "content": f"payload {j}"}, idempotency_key=f"key-{j}"
        )
        _say({"key": j, "id": entry.id})
        pair = [{"role": "user", "content": f"batch {j} part {i}"} for i in range(2)]
        stored = memory.entries.add_many(thread_id, pair, idempotency_key=f"batch-{j}")
        _say({"batch": j, "ids": [e.id for e in stored]})


class Logged(HashEmbedder):
    """A real embedder (``HashEmbedder``) that first appends every text it is given to
    its own log file, one line each, in one write (so a kill leaves whole lines); with
    ``hang`` it then never returns (a worker killed mid-batch)."""

    def __init__(self, log: Path, *, hang: bool = False) -> None:
        super().__init__()
        self._log = log
        self._hang = hang

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        line = "".join(json.dumps(text) + "\n" for text in texts).encode()
        fd = os.open(self._log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        if self._hang:
            threading.Event().wait()  # never: the kill comes mid-batch
        time.sleep(0.2)  # a model takes a while: workers resuming together overlap
        return super().embed(texts)


class Stuck(HashEmbedder):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        threading.Event().wait()  # never: the vectors stay pending until the kill
        raise AssertionError("unreachable")


def embed_stuck(memory: Memory, count: int, lease: float) -> None:
    background = Memory(memory.store, embedder=Stuck(), embed="background", embed_lease=lease)
    thread = background.threads.create()
    messages = [{"role": "user", "content": f"the zebra number {i}"} for i in range(count)]
    entries = background.entries.add_many(thread.id, messages)
    document = background.documents.add("a document about zebras")
    _say({"thread": thread.id, "entries": [e.id for e in entries], "document": document.id})
    threading.Event().wait()


def embed_journal(memory: Memory, writes: int, size: int, lease: float) -> None:
    background = Memory(memory.store, embedder=Stuck(), embed="background", embed_lease=lease)
    threads = [background.threads.create().id for _ in range(3)]
    entries: list[str] = []
    for w in range(writes):
        messages = [{"role": "user", "content": f"write {w} text {i}"} for i in range(size)]
        entries += [e.id for e in background.entries.add_many(threads[w % 3], messages)]
    document = background.documents.add("a document about zebras")
    _say({"entries": entries, "document": document.id})
    threading.Event().wait()


def embed_worker(memory: Memory, log_dir: str, go: str, lease: float, hang: bool) -> None:
    from memorybank.core._sync.embedding import EMBED_JOB, JOURNAL_TENANT

    embedder = Logged(Path(log_dir) / f"{os.getpid()}.log", hang=hang)
    bg = Memory(memory.store, embedder=embedder, embed="background", embed_lease=lease)
    try:
        _wait_for(go)  # opened before: the workers start resuming at the same moment
        bg.embedding.start()
        # work until no journal record is left (those other workers hold are
        # taken over when their leases run out)
        while memory.store.record_page(JOURNAL_TENANT, EMBED_JOB, limit=1):
            bg.embedding.flush()
            time.sleep(0.02)
    finally:
        bg.close()
    _say({"done": True})


def main(argv: list[str]) -> None:
    mode, spec_json, *args = argv
    spec = StoreSpec.from_json(spec_json)
    with spec.memory() as memory:
        _say({"ready": True})
        if mode == "append":
            append(memory, args[0], args[1])
        elif mode == "compact":
            compact(memory, args[0], int(args[1]))
        elif mode == "append_each":
            append_each(memory, args[0], args[1], int(args[2]), args[3])
        elif mode == "idempotent":
            idempotent(memory, args[0], int(args[1]), args[2])
        elif mode == "embed_stuck":
            embed_stuck(memory, int(args[0]), float(args[1]) if len(args) > 1 else 1.0)
        elif mode == "embed_journal":
            embed_journal(memory, int(args[0]), int(args[1]), float(args[2]))
        elif mode == "embed_worker":
            embed_worker(memory, args[0], args[1], float(args[2]), args[3] == "1")
        else:
            raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
