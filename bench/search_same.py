"""Whether two checkouts find the same hits, and the CPU time of a hot user-scope search.

``--dump FILE``: ``--queries`` varied searches (user, thread and tenant scope; hybrid,
keyword and semantic; entries, documents and facts; some with ``k``, ``min_score``,
``filters``) on a copy of the ``bench.profile_search`` store, every hit's kind, id,
score and signals written to ``FILE``; ``--compare A B`` then checks two dumps hit for
hit (ids and order equal, scores and signals within 1e-9). ``--cpu N``: the CPU time
(``time.process_time``) of N hot user-scope hybrid searches after every user's first.
Run each on two checkouts (``PYTHONPATH=<src>:.``) against the same ``--path``.

Run: ``python -m bench.search_same [--path /tmp/profile_search.db] [--users 20]
(--dump FILE | --cpu N | --compare A B)``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from bench.bench_search_scale import AGENT, Known, _one_blas_thread, queries
from memorybank import AsyncMemory, Hit

T = TypeVar("T")


def _hit(hit: Hit) -> list[Any]:
    return [hit.kind, hit.id, hit.score, sorted(hit.signals.items()), hit.superseded]


def _calls(users: list[str], threads: dict[str, list[str]], n: int) -> list[Any]:
    """``n`` varied searches: (query number, keyword arguments)."""
    rng = np.random.default_rng(11)
    kinds = [("entries", "documents"), ("entries",), ("entries", "documents", "facts"), ("facts",)]
    out: list[Any] = []
    for i in range(n):
        user = users[int(rng.integers(len(users)))]
        args: dict[str, Any] = {"mode": ("hybrid", "keyword", "semantic")[i % 3]}
        scope = ("user", "user", "thread", "tenant", "user-only")[(i // 3) % 5]
        if scope == "thread":
            args["thread_id"] = threads[user][int(rng.integers(len(threads[user])))]
            args["user_id"] = user
        elif scope == "user":
            args.update(user_id=user, agent_id=AGENT)
        elif scope == "user-only":
            args["user_id"] = user
        args["kinds"] = kinds[int(rng.integers(len(kinds)))]
        args["k"] = (10, 5, 20, 10)[i % 4]
        if i % 17 == 5:
            args["min_score"] = 0.2
        if i % 23 == 7:
            args["kinds"] = ("documents",)
            args["filters"] = {"n": int(rng.integers(3))}
        if i % 29 == 3:
            args["include_history"] = True
            args["kinds"] = ("entries", "facts")
        out.append((int(rng.integers(512)), args))
    return out


def questions() -> tuple[list[str], Known]:
    """The 512 questions, and an embedder knowing their vectors."""
    qtexts, qvecs = queries(512, seed=99)
    lookup = Known()
    lookup.fixed = dict(zip(qtexts, qvecs, strict=True))
    return qtexts, lookup


async def _run(args: argparse.Namespace, path: str) -> list[Any]:
    qtexts, lookup = questions()
    users = [f"user-{n:02d}" for n in range(args.users)]
    async with AsyncMemory(f"sqlite:///{path}", embedder=lookup) as memory:
        for n, user in enumerate(users):  # warm every user's memos
            await memory.search(qtexts[n], user_id=user, agent_id=AGENT, k=10)
        if args.cpu:
            rng = np.random.default_rng(5)
            picks = [(users[int(rng.integers(len(users)))], int(rng.integers(512)))]
            picks += [
                (users[int(rng.integers(len(users)))], int(rng.integers(512)))
                for _ in range(args.cpu - 1)
            ]
            cpu = time.process_time()
            for user, q in picks:
                await memory.search(qtexts[q], user_id=user, agent_id=AGENT, k=10)
            cpu = time.process_time() - cpu
            print(f"{args.cpu} searches: CPU {cpu / args.cpu * 1000:.3f} ms/search")
            return []
        threads = {
            u: [t.id for t in await memory.threads.list(user_id=u, limit=100)] for u in users
        }
        results = []
        for q, kwargs in _calls(users, threads, args.queries):
            hits = await memory.search(qtexts[q], **kwargs)
            results.append({"q": q, "args": kwargs, "hits": [_hit(h) for h in hits]})
    return results


def on_a_copy(source: str, run: Callable[[str], Coroutine[Any, Any, T]]) -> T:
    """``run`` on a copy of the store at ``source`` (searches note their uses)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "store.db")
        shutil.copyfile(source, path)
        if Path(source + ".ann").exists():
            shutil.copytree(source + ".ann", path + ".ann")
        return asyncio.run(run(path))


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def compare(a: str, b: str) -> int:
    left, right = json.loads(Path(a).read_text()), json.loads(Path(b).read_text())
    bad = [i for i, (x, y) in enumerate(zip(left, right, strict=True)) if not _close(x, y)]
    hits = sum(len(r["hits"]) for r in left)
    exact = sum(x == y for x, y in zip(left, right, strict=True))
    print(f"{len(left)} searches, {hits} hits: {len(bad)} differ, {exact} bit-identical")
    for i in bad[:5]:
        print("differs:", left[i]["args"], left[i]["hits"][:3], right[i]["hits"][:3])
    return 1 if bad or len(left) != len(right) else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default="/tmp/profile_search.db")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dump", default="")
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument("--compare", nargs=2, default=None)
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    _one_blas_thread()
    results = on_a_copy(args.path, lambda path: _run(args, path))
    if args.dump:
        Path(args.dump).write_text(json.dumps(results))
        print(
            f"{len(results)} searches, {sum(len(r['hits']) for r in results)} hits -> {args.dump}"
        )


if __name__ == "__main__":
    main()
