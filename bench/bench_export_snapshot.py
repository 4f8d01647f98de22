"""Writers' latency during an export (issue 39): does an export hold writers back?

``python -m bench.bench_export_snapshot --entries 100000 --db /tmp/x.db`` fills a SQLite
file store with N entries (100 threads), then times single-entry appends by a writer
thread on the same store object: first alone for ``--seconds``, then while the main
thread exports the tenant (``export_dump`` to /dev/null); ``--process`` runs the writer
in a process of its own with its own store (another application on the file: no shared
GIL, no shared store object). Prints one JSON line: the
appends' p50/p99/max in ms without and during the export, the export's seconds and lines.
It uses whatever ``memorybank`` is on ``PYTHONPATH``, so the same script measures two
versions in one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime

from bench._util import percentile


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--db", required=True)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--process", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()

    from memorybank.dump._sync.portability import export_dump
    from memorybank.records import Thread
    from memorybank.stores.contract.types import NewEntry
    from memorybank.stores.sqlite._sync import SQLiteStore

    tenant = "bench"
    now = datetime.now(UTC)
    store = SQLiteStore(args.db, synchronous="normal")
    if args.child is not None:  # the writer of --process: appends until told to stop
        written: list[float] = []
        told = threading.Event()

        def wait_for_stop() -> None:
            sys.stdin.readline()
            told.set()

        print("ready", flush=True)
        threading.Thread(target=wait_for_stop, daemon=True).start()
        while not told.is_set():
            began = time.perf_counter()
            store.entry_append(
                tenant,
                args.child,
                [NewEntry(uuid.uuid4().hex, "user", "w", None, (), None, {}, {}, 3, now)],
                updated_at=now,
            )
            written.append((time.perf_counter() - began) * 1000)
        store.close()
        print(" ".join(f"{x:.4f}" for x in written))
        return

    def entry(text: str) -> NewEntry:
        return NewEntry(uuid.uuid4().hex, "user", text, None, (), None, {}, {}, 3, now)

    def thread(thread_id: str) -> None:
        store.thread_create(Thread(thread_id, tenant, None, None, None, {}, "active", now, now))

    if store.thread_get(tenant, "t0") is None:
        per = args.entries // args.threads
        for t in range(args.threads):
            thread(f"t{t}")
            for start in range(0, per, 500):
                batch = [entry(f"m{t}.{i}") for i in range(start, min(per, start + 500))]
                store.entry_append(tenant, f"t{t}", batch, updated_at=now)
    hot = f"w-{uuid.uuid4().hex[:8]}"
    thread(hot)

    def write(until: threading.Event, out: list[float]) -> None:
        while not until.is_set():
            began = time.perf_counter()
            store.entry_append(tenant, hot, [entry("w")], updated_at=now)
            out.append((time.perf_counter() - began) * 1000)

    def timed(during_export: bool) -> tuple[list[float], float, int]:
        if args.process:
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench.bench_export_snapshot",
                    "--db",
                    args.db,
                    "--child",
                    hot,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert child.stdout is not None and child.stdin is not None
            child.stdout.readline()  # ready
        else:
            stop, samples = threading.Event(), list[float]()
            writer = threading.Thread(target=write, args=(stop, samples))
            writer.start()
        began = time.perf_counter()
        lines = 0
        if during_export:
            with open("/dev/null", "w") as sink:
                for line in export_dump(store, tenant, now=now):
                    sink.write(line)
                    lines += 1
        else:
            time.sleep(args.seconds)
        took = time.perf_counter() - began
        if args.process:
            out, _ = child.communicate("stop\n")
            return [float(x) for x in out.split()], took, lines
        stop.set()
        writer.join()
        return samples, took, lines

    def summary(samples: list[float]) -> dict[str, float]:
        return {
            "n": len(samples),
            "p50_ms": round(percentile(samples, 0.5), 3),
            "p99_ms": round(percentile(samples, 0.99), 3),
            "max_ms": round(max(samples), 3),
        }

    alone, _, _ = timed(False)
    during, seconds, lines = timed(True)
    store.close()
    print(
        json.dumps(
            {
                "entries": args.entries,
                "alone": summary(alone),
                "during_export": summary(during),
                "export_s": round(seconds, 2),
                "lines": lines,
            }
        )
    )


if __name__ == "__main__":
    main()
