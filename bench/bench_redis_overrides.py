"""Redis: the store's overrides of derived contract methods against the contract's defaults.

A store keeps an override of a method the contract derives only where it is measurably
faster (issue 38). This times, on the same data and interleaved, ``record_page`` (a full
scan of a kind, a page of 500 at a time) and ``text_search`` (BM25 over every text in
scope), each as ``AsyncRedisStore`` answers it and as the contract's default does
(``AsyncBatchReads.record_page``, ``AsyncSearchStore.text_search``), and checks both
return the same.

Run: ``python -m bench.bench_redis_overrides [--url redis://...] [--records N]``. Keys go
under a random prefix and are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from memorybank.records import Thread
from memorybank.stores import AsyncRedisStore
from memorybank.stores.contract._async.batch_reads import AsyncBatchReads
from memorybank.stores.contract._async.search_store import AsyncSearchStore
from memorybank.stores.contract.items import NewEntry, Record
from memorybank.stores.contract.types import Visibility

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
PAGE = 500


async def _fill(store: AsyncRedisStore, records: int) -> None:
    """``records`` facts (every other one of user u1) and 100 threads of 20 entries."""
    facts = [
        Record("fact", f"f{i:06d}", "a", "u1" if i % 2 else None, f"{WORDS[i % 10]} fact {i}",
               {"n": i}, T0 + timedelta(seconds=i), T0 + timedelta(seconds=i))
        for i in range(records)
    ]  # fmt: skip
    for start in range(0, records, PAGE):
        await store.record_put("x", facts[start : start + PAGE])
    for t in range(100):
        thread = Thread(f"t{t}", "x", f"u{t % 5}", "a", None, {}, "active", T0, T0)
        await store.thread_create(thread)
        batch = [
            NewEntry(f"t{t}e{i}", "user", f"{WORDS[i % 10]} {WORDS[(3 * i + t) % 10]} note {i}",
                     None, (), None, {}, {}, 3, T0 + timedelta(seconds=i))
            for i in range(20)
        ]  # fmt: skip
        await store.entry_append("x", thread.id, batch, updated_at=T0)


async def _best(run: Callable[[], Awaitable[Any]], rounds: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        out = await run()
        best = min(best, time.perf_counter() - start)
    return best, out


async def _scan(page: Callable[..., Awaitable[list[Record]]], visible_to: Any) -> list[str]:
    after: tuple[datetime, str] | None = None
    ids: list[str] = []
    while True:
        got = await page("x", "fact", limit=PAGE, after=after, visible_to=visible_to)
        ids += [r.id for r in got]
        if len(got) < PAGE:
            return ids
        after = (got[-1].created_at, got[-1].id)


def partial_scan(page: Callable[..., Awaitable[list[Record]]], visible_to: Any) -> Any:
    return functools.partial(_scan, page, visible_to)


async def main(url: str, records: int, rounds: int) -> None:
    store = AsyncRedisStore.from_url(url, prefix=f"mbbench_{uuid.uuid4().hex[:8]}:")
    user = Visibility(agent_id="a", user_id="u1")
    try:
        await _fill(store, records)
        print(f"### Redis: overrides vs the contract's derived defaults ({records:,} facts)\n")
        print("| method | scope | override ms | derived ms | derived / override | same |")
        print("|---|---|---|---|---|---|")
        derived_page = functools.partial(AsyncBatchReads.record_page, store)
        derived_text = functools.partial(AsyncSearchStore.text_search, store)
        query = {"kinds": ["entry", "fact"], "k": 10}
        for scope, v in (("all", None), ("user u1", user)):
            cases = (
                ("record_page", partial_scan(store.record_page, v), partial_scan(derived_page, v)),
                (
                    "text_search",
                    functools.partial(store.text_search, "x", "gamma delta", **query, visible_to=v),
                    functools.partial(derived_text, "x", "gamma delta", **query, visible_to=v),
                ),
            )
            for name, mine, derived in cases:
                ms, got = await _best(mine, rounds)
                ds, expected = await _best(derived, rounds)
                row = (name, scope, f"{ms * 1000:.1f}", f"{ds * 1000:.1f}", f"{ds / ms:.1f}")
                print("| " + " | ".join(row) + f" | {got == expected} |")
    finally:
        keys = [k async for k in store._client.scan_iter(match=store._prefix + "*")]
        for start in range(0, len(keys), PAGE):
            await store._client.delete(*keys[start : start + PAGE])
        await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.records, args.rounds))
