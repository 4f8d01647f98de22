"""RedisRuns: working memory and snapshots of runs (``P{tenant:run}:w`` / ``:s``)."""

from __future__ import annotations

from datetime import datetime

from memorybank.errors import ThreadForbidden
from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import as_str, esc, opt_str, unesc, who
from memorybank.stores.redis.lua_tenant import S_SNAPSHOT_DELETE, S_SNAPSHOT_SAVE
from memorybank.stores.sql.common import to_us


class RedisRuns(RedisBase):
    """Working memory and snapshots of ``AsyncRedisStore``."""

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        name = self._run_key(tenant, run_id, "w")
        async with self._io():
            if self._working_ttl:
                async with self._client.pipeline(transaction=True) as pipe:
                    pipe.hset(name, key, value)
                    pipe.pexpire(name, self._working_ttl)
                    await pipe.execute()
            else:
                await self._client.hset(name, key, value)

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        async with self._io():
            value = await self._client.hget(self._run_key(tenant, run_id, "w"), key)
        return opt_str(value)

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        async with self._io():
            return bool(await self._client.hdel(self._run_key(tenant, run_id, "w"), key))

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        async with self._io():
            items = await self._client.hgetall(self._run_key(tenant, run_id, "w"))
        return {as_str(k): as_str(v) for k, v in items.items()}

    async def working_clear(self, tenant: str, run_id: str) -> None:
        async with self._io():
            await self._client.delete(self._run_key(tenant, run_id, "w"))

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Found by ``SCAN`` over ``P{tenant:*}:w`` (every node with ``cluster=True``), so
        the cost grows with the whole keyspace and the ids are sorted in memory."""
        return await self._run_ids(tenant, "w", after, limit)

    async def _run_ids(
        self, tenant: str, kind: str, after: str | None, limit: int | None
    ) -> list[str]:
        head = f"{self._prefix}{{{esc(tenant)}:"
        async with self._io():
            found = {unesc(run) async for run in self._scan_ids(head, "}:" + kind)}
        runs = sorted(r for r in found if after is None or r > after)
        return runs if limit is None else runs[:limit]

    # -- snapshots -------------------------------------------------------------------------

    async def snapshot_save(
        self,
        tenant: str,
        run_id: str,
        value: str,
        *,
        user_id: str | None,
        saved_at: datetime,
        owner_check: bool = True,
    ) -> None:
        owners = "" if user_id is None else self._idx(tenant) + "su:" + esc(user_id)
        async with self._io():
            if owners and self._cluster:  # another slot: first, by a command of its own
                await self._client.sadd(owners, run_id)
                owners = ""
            saved = await self._eval(
                S_SNAPSHOT_SAVE,
                (self._run_key(tenant, run_id, "s"),),
                (
                    "1" if owner_check else "0",
                    who(user_id),
                    value,
                    to_us(saved_at),
                    self._snapshot_ttl,
                    owners,
                    run_id,
                ),
            )
        if not saved:
            raise ThreadForbidden("snapshot access forbidden")

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        async with self._io():
            value, owner = await self._client.hmget(self._run_key(tenant, run_id, "s"), ["v", "o"])
        return None if value is None else (opt_str(owner), as_str(value))

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Found by ``SCAN`` over ``P{tenant:*}:s``, as :meth:`working_runs`."""
        return await self._run_ids(tenant, "s", after, limit)

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        async with self._io():
            deleted = int(
                await self._eval(
                    S_SNAPSHOT_DELETE,
                    (self._run_key(tenant, run_id, "s"),),
                    ("1" if owner_check else "0", who(user_id)),
                )
            )
        if deleted < 0:
            raise ThreadForbidden("snapshot access forbidden")
        return deleted > 0
