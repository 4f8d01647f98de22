"""``KeyRing`` on every store: hashed keys in the reserved tenant, verify, revoke."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memorybank.errors import InvalidInput, NotFound
from memorybank.rules.validate import check_tenant
from memorybank.server.keys import RESERVED_TENANT, KeyRing, parse_key
from memorybank.stores.contract._async.store import AsyncStore
from tests.all_stores import STORE_KINDS
from tests.server.conftest import CHEAP_HASH, fresh_store


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncStore]:
    async with fresh_store(str(request.param), tmp_path) as opened:
        yield opened


async def test_keys_round_trip(store: AsyncStore) -> None:
    ring = KeyRing(store, hasher=CHEAP_HASH)
    info, secret = await ring.create("acme", "bot")
    assert parse_key(secret) == info.id and info.tenant == "acme" and info.label == "bot"
    assert await ring.verify(secret) == info
    assert await ring.verify(secret) == info  # the cached path agrees
    assert await ring.verify(secret + "x") is None
    assert await ring.verify(secret.replace(info.id, "0" * 12)) is None
    assert await ring.verify("not a key") is None
    record = await store.record_get(RESERVED_TENANT, "api_key", info.id)
    assert record is not None and secret not in str(record.data)
    other, _ = await ring.create("zeta")
    assert [k.id for k in await ring.list("acme")] == [info.id]
    assert {k.id for k in await ring.list()} == {info.id, other.id}
    # Concurrent revokes: one write wins, every caller gets the same revoked key.
    revoked = await asyncio.gather(*(ring.revoke(info.id) for _ in range(5)))
    assert len({k.revoked_at for k in revoked}) == 1 and revoked[0].revoked
    assert await ring.verify(secret) is None  # also when verified (cached) before
    with pytest.raises(NotFound):
        await ring.revoke("ffffffffffff")


async def test_reserved_and_bad_tenants_are_refused(store: AsyncStore) -> None:
    ring = KeyRing(store, hasher=CHEAP_HASH)
    for bad in (RESERVED_TENANT, "~other", "", "a\x00b", "x" * 256):
        with pytest.raises(InvalidInput) as error:
            await ring.create(bad)
        assert error.value.field == "tenant"
    assert check_tenant("acme~") == "acme~"


async def test_a_verified_key_is_trusted_for_cache_seconds_only(store: AsyncStore) -> None:
    """The staleness bound: a key revoked by another process (another ``KeyRing``
    on the same store) still works here for at most ``cache_seconds``; a key
    revoked through this ring stops at once; failures are never remembered."""
    now = [1000.0]
    ring = KeyRing(store, hasher=CHEAP_HASH, cache_seconds=2.0, monotonic=lambda: now[0])
    elsewhere = KeyRing(store, hasher=CHEAP_HASH)  # e.g. `memorybank keys revoke`
    info, secret = await ring.create("acme")
    assert await ring.verify(secret) == info
    await elsewhere.revoke(info.id)
    now[0] += 1.9
    assert await ring.verify(secret) == info  # within the bound: from memory
    now[0] += 0.2
    assert await ring.verify(secret) is None  # past it: the store says revoked
    assert await ring.verify(secret) is None  # and a failure is not remembered
    # Revoked through this ring: refused on the next request, cache or not.
    mine, mine_secret = await ring.create("acme")
    assert await ring.verify(mine_secret) == mine
    await ring.revoke(mine.id)
    assert await ring.verify(mine_secret) is None
    # A wrong secret of a cached key's id is checked, not answered from memory.
    live, live_secret = await ring.create("acme")
    assert await ring.verify(live_secret) == live
    assert await ring.verify(live_secret[:-1] + ("A" if live_secret[-1] != "A" else "B")) is None
    assert await ring.verify(live_secret) == live


async def test_cache_seconds_zero_reads_every_time(store: AsyncStore) -> None:
    ring = KeyRing(store, hasher=CHEAP_HASH, cache_seconds=0)
    info, secret = await ring.create("acme")
    assert await ring.verify(secret) == info
    await KeyRing(store, hasher=CHEAP_HASH).revoke(info.id)
    assert await ring.verify(secret) is None
    with pytest.raises(InvalidInput):
        KeyRing(store, cache_seconds=-1)
