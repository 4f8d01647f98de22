"""Guessing a key's secret is bounded in Argon2 runs, per key id and per client; real keys
keep working. Counted on the ring's own ``verifications`` (every Argon2 run), never timed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from typing import Any

import pytest

from memorybank.server.keys import (
    ARGON2_PARALLEL,
    CLIENT_BURST,
    FAILURE_BURST,
    FAILURE_REFILL_SECONDS,
    KeyRing,
    TooManyAttempts,
)
from memorybank.stores.memory._async.store import AsyncInMemoryStore
from tests.server.conftest import CHEAP_HASH, Api


def _wrong(key_id: str, n: int) -> dict[str, str]:
    return {"Authorization": f"Bearer mb_{key_id}_wrong-secret-{n}"}


async def test_wrong_secrets_for_one_key_id_run_argon2_a_bounded_number_of_times(
    api: Api,
) -> None:
    info, secret = await api.keys.create("flood", "real")
    good = {"Authorization": f"Bearer {secret}"}
    assert (await api.client.get("/v1/threads", headers=good)).status_code == 200
    before = api.keys.verifications

    statuses: Counter[int] = Counter()
    for n in range(60):
        answer = await api.client.get("/v1/threads", headers=_wrong(info.id, n))
        statuses[answer.status_code] += 1
        if answer.status_code == 429:
            assert answer.json()["code"] == "too_many_attempts"
            assert int(answer.headers["retry-after"]) >= 1
    assert api.keys.verifications - before == FAILURE_BURST
    assert statuses == {401: FAILURE_BURST, 429: 60 - FAILURE_BURST}
    # The same wrong secret again: refused without another Argon2 run.
    assert (await api.client.get("/v1/threads", headers=_wrong(info.id, 0))).status_code == 401
    assert api.keys.verifications - before == FAILURE_BURST

    # The key itself keeps working, past its cache time too (no new Argon2 run).
    assert (await api.client.get("/v1/threads", headers=good)).status_code == 200
    await asyncio.sleep(2.1)
    assert (await api.client.get("/v1/threads", headers=good)).status_code == 200
    assert api.keys.verifications - before == FAILURE_BURST


async def test_a_concurrent_flood_on_one_key_id_is_bounded_too(api: Api) -> None:
    info, secret = await api.keys.create("flood", "real")
    good = {"Authorization": f"Bearer {secret}"}
    assert (await api.client.get("/v1/threads", headers=good)).status_code == 200  # in use
    answers = await asyncio.gather(
        *(api.client.get("/v1/threads", headers=_wrong(info.id, n)) for n in range(40))
    )
    assert api.keys.verifications <= 1 + FAILURE_BURST
    assert {a.status_code for a in answers} <= {401, 429}
    assert sum(a.status_code == 401 for a in answers) <= FAILURE_BURST
    spent = api.keys.verifications
    # The key in use keeps working, from many requests at once; a key used for
    # the first time after the flood gets in with one Argon2 run.
    answers = await asyncio.gather(*(api.client.get("/v1/threads", headers=good) for _ in range(8)))
    assert [a.status_code for a in answers] == [200] * 8
    _, fresh = await api.keys.create("flood", "fresh")
    fresh_key = {"Authorization": f"Bearer {fresh}"}
    answers = await asyncio.gather(
        *(api.client.get("/v1/threads", headers=fresh_key) for _ in range(8))
    )
    assert [a.status_code for a in answers] == [200] * 8
    assert api.keys.verifications == spent + 1  # one run for the eight


async def test_a_key_id_gets_one_more_attempt_per_refill_period() -> None:
    now = [100.0]
    ring = KeyRing(AsyncInMemoryStore(), hasher=CHEAP_HASH, monotonic=lambda: now[0])
    info, _ = await ring.create("refill")
    for n in range(FAILURE_BURST):
        assert await ring.verify(f"mb_{info.id}_bad{n}") is None
    with pytest.raises(TooManyAttempts) as refused:
        await ring.verify(f"mb_{info.id}_bad-more")
    assert refused.value.retry_after == pytest.approx(FAILURE_REFILL_SECONDS, abs=1)
    now[0] += FAILURE_REFILL_SECONDS
    assert await ring.verify(f"mb_{info.id}_bad-more") is None  # one more ran
    with pytest.raises(TooManyAttempts):
        await ring.verify(f"mb_{info.id}_bad-again")
    assert ring.verifications == FAILURE_BURST + 1


async def test_one_client_guessing_across_key_ids_is_bounded() -> None:
    ring = KeyRing(AsyncInMemoryStore(), hasher=CHEAP_HASH)
    made = [await ring.create("many", f"k{n}") for n in range(CLIENT_BURST + 5)]
    guesser, someone = "203.0.113.9", "198.51.100.7"
    refused = 0
    for info, _ in made:
        try:
            assert await ring.verify(f"mb_{info.id}_guess", client=guesser) is None
        except TooManyAttempts:
            refused += 1
    assert ring.verifications == CLIENT_BURST
    assert refused == len(made) - CLIENT_BURST
    # Another client is not held back by the guesser: its real key verifies.
    info, secret = made[-1]
    found = await ring.verify(secret, client=someone)
    assert found is not None and found.id == info.id
    # Unknown key ids cost no Argon2 and are never refused as "too many".
    for n in range(50):
        assert await ring.verify(f"mb_{n:012x}_nothing", client=guesser) is None
    assert ring.verifications == CLIENT_BURST + 1
    # A real key's first verification gives its client the budget back.
    fresh, fresh_secret = await ring.create("many", "fresh")
    assert await ring.verify(fresh_secret, client=someone) is not None
    for info, _ in made[:CLIENT_BURST]:
        assert await ring.verify(f"mb_{info.id}_other-guess", client=someone) is None
    with pytest.raises(TooManyAttempts):
        await ring.verify(f"mb_{fresh.id}_guess", client=someone)


class _Overlap(type(CHEAP_HASH)):  # type: ignore[misc]
    """A real Argon2 hasher that records how many verifications ran at once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self.running = 0
        self.most = 0

    def verify(self, hash: str | bytes, password: str | bytes) -> bool:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(0.02)  # long enough for the runs of a flood to overlap
            return bool(super().verify(hash, password))
        finally:
            with self._lock:
                self.running -= 1


async def test_argon2_runs_at_most_a_few_at_once_whatever_the_flood() -> None:
    hasher = _Overlap(time_cost=1, memory_cost=1024, parallelism=1)
    ring = KeyRing(AsyncInMemoryStore(), hasher=hasher)
    made = [await ring.create("parallel", f"k{n}") for n in range(8)]
    guesses = [
        ring.verify(f"mb_{info.id}_guess{n}", client=f"10.0.0.{n}")
        for info, _ in made
        for n in range(FAILURE_BURST)
    ]
    outcomes = await asyncio.gather(*guesses, return_exceptions=True)
    assert all(o is None for o in outcomes)
    assert ring.verifications == len(guesses)
    assert 1 <= hasher.most <= ARGON2_PARALLEL
