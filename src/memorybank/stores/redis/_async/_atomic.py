"""RedisAtomic: ``atomic(tenant)`` in Redis, by a journal of the tenant's keys
(lease, journal, commit and rollback steps: ``docs/redis.md``, ``atomic(tenant)``)."""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from memorybank.errors import Conflict, StoreError
from memorybank.stores.contract._async.store import AsyncStore
from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import as_str, chunks, esc, glob_escape

__all__ = ["LEASE_MS", "RedisAtomic"]

#: How long a block's lease lives without renewal (a killed holder's journal is rolled
#: back once it lapsed); the view renews it every third of that while it works.
LEASE_MS = 60_000


class _Lease:
    """The lease of one ``atomic`` block, renewed by the view's calls."""

    def __init__(self, key: str, token: str) -> None:
        self.key = key
        self.token = token
        self.renewed = time.monotonic()


class RedisAtomic(RedisBase):
    """``atomic`` for ``AsyncRedisStore`` (``docs/redis.md``)."""

    _lease: _Lease | None = None

    def _journal(self, tenant: str) -> str:
        return f"{self._prefix}atomic:{esc(tenant)}:"

    async def _tenant_keys(self, tenant: str) -> list[str]:
        """Every key of the tenant: its slot's (``P{tenant}...``) and its threads' and
        runs' (``P{tenant:...}...``)."""
        head = glob_escape(self._prefix) + "{" + glob_escape(esc(tenant))
        keys: list[str] = []
        for pattern in (head + "}*", head + ":*"):
            async for key in self._client.scan_iter(match=pattern, count=1000):
                keys.append(as_str(key))
        return keys

    async def _renew(self) -> None:
        """The view's calls keep its lease alive (at most one renewal a third of it)."""
        lease = self._lease
        if lease is None or time.monotonic() - lease.renewed < LEASE_MS / 3000:
            return
        if as_str(await self._client.get(lease.key) or b"") != lease.token:
            raise StoreError("the atomic block's lease lapsed: another process rolled it back")
        await self._client.pexpire(lease.key, LEASE_MS)
        lease.renewed = time.monotonic()

    async def _ready(self) -> None:
        await super()._ready()
        if self._lease is not None:
            await self._renew()

    async def _save(self, tenant: str) -> None:
        """Journal every key of the tenant (step 2 in ``docs/redis.md``)."""
        j = self._journal(tenant)
        await self._client.delete(j + "keys", j + "ttl")
        keys = await self._tenant_keys(tenant)
        for part in chunks(keys):
            async with self._client.pipeline(transaction=False) as pipe:
                for key in part:
                    pipe.dump(key)
                    pipe.pttl(key)
                found = await pipe.execute()
            dumped: dict[Any, Any] = {}  # key -> DUMP payload (redis-py's Mapping is invariant)
            ttls: dict[Any, Any] = {}  # key -> remaining milliseconds, 0: none
            for i, key in enumerate(part):
                payload, ttl = found[2 * i], int(found[2 * i + 1])
                if payload is not None:  # expired or deleted meanwhile: nothing to keep
                    dumped[key] = payload
                    ttls[key] = max(ttl, 0)
            if dumped:
                await self._client.hset(j + "keys", mapping=dumped)
                await self._client.hset(j + "ttl", mapping=ttls)

    async def _restore(self, tenant: str) -> None:
        """Put the tenant back as journaled (a rollback; safe to repeat)."""
        j = self._journal(tenant)
        feed = self._idx(tenant) + "fe"
        drawn = await self._feed_drawn(feed)
        keys = await self._tenant_keys(tenant)
        for part in chunks(keys):
            async with self._client.pipeline(transaction=False) as pipe:
                for key in part:
                    pipe.delete(key)
                await pipe.execute()
        names = [as_str(k) for k in cast("list[bytes]", await self._client.hkeys(j + "keys"))]
        for part in chunks(names):
            payloads = await self._client.hmget(j + "keys", part)
            ttls = await self._client.hmget(j + "ttl", part)
            async with self._client.pipeline(transaction=False) as pipe:
                for key, payload, ttl in zip(part, payloads, ttls, strict=True):
                    if payload is not None:
                        pipe.restore(key, int(ttl or 0), payload, replace=True)
                await pipe.execute()
        if drawn > await self._feed_drawn(feed):
            await self._keep_drawn(feed, drawn)

    async def _keep_drawn(self, feed: str, drawn: int) -> None:
        """After a rollback: the feed's events are the journal's, but its numbers go on
        from the last one drawn in the block (a reader may have seen those: a number
        never comes again). An absent stream is made, empty, with that last ID."""
        if await self._client.exists(feed):
            client: Any = self._client  # redis-py has no typed XSETID method
            await client.execute_command("XSETID", feed, f"0-{drawn}")
        else:
            await self._client.xadd(feed, {"k": "-"}, id=f"0-{drawn}")
            await self._client.xdel(feed, f"0-{drawn}")

    async def _forget_journal(self, tenant: str) -> None:
        j = self._journal(tenant)
        await self._client.delete(j + "state")  # the commit point (or the rollback's end)
        await self._client.delete(j + "keys", j + "ttl")
        await self._client.srem(self._prefix + "atomic:open", tenant)

    async def _recover(self, tenant: str) -> None:
        """With the tenant's lease held: roll back a journal left ``writing``, drop one
        left ``saving`` (nothing was written yet) or committed."""
        state = await self._client.get(self._journal(tenant) + "state")
        if state is not None and as_str(state) == "writing":
            await self._restore(tenant)
        await self._forget_journal(tenant)

    async def _recover_all(self) -> None:
        """At a store's first call: finish the journals of blocks whose holder died."""
        for member in await self._client.smembers(self._prefix + "atomic:open"):
            tenant = as_str(member)
            lease = self._journal(tenant) + "lease"
            token = uuid.uuid4().hex
            if await self._client.set(lease, token, nx=True, px=LEASE_MS):
                try:
                    await self._recover(tenant)
                finally:
                    await self._client.delete(lease)

    async def _migrate(self) -> None:
        await super()._migrate()
        await self._recover_all()

    @asynccontextmanager
    async def atomic(self, tenant: str) -> AsyncIterator[AsyncStore]:
        """A view whose writes to ``tenant`` stay, or are undone, together (a journal of
        the tenant, rolled back on an error or after a crash)."""
        async with self._io():
            j = self._journal(tenant)
            token = uuid.uuid4().hex
            if not await self._client.set(j + "lease", token, nx=True, px=LEASE_MS):
                raise Conflict(f"another atomic write of tenant {tenant!r} is under way")
            try:
                await self._recover(tenant)  # a journal left by a killed holder
                await self._client.sadd(self._prefix + "atomic:open", tenant)
                await self._client.set(j + "state", "saving")
                await self._save(tenant)
                await self._client.set(j + "state", "writing")
            except BaseException:
                await self._client.delete(j + "lease")
                raise
        view = copy.copy(self)
        view._lease = _Lease(j + "lease", token)
        try:
            yield view
        except BaseException:
            with self._op():
                await self._restore(tenant)
                await self._forget_journal(tenant)
                await self._client.delete(j + "lease")
            raise
        finally:
            view._lease = None
            view._closed = True
        with self._op():
            if as_str(await self._client.get(j + "lease") or b"") != token:
                raise StoreError(
                    "the atomic block's lease lapsed before its end: another process may"
                    " have rolled it back"
                )
            await self._forget_journal(tenant)
            await self._client.delete(j + "lease")
