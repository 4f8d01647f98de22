"""RedisForget: ``forget_user`` across threads, snapshots, summaries and records."""

from __future__ import annotations

from typing import cast

from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import as_str, esc
from memorybank.stores.redis.lua_tenant import (
    S_FORGET_SNAPSHOT,
    S_FORGET_SUMMARIES,
    S_RECORD_FORGET,
)
from memorybank.stores.redis.lua_threads import S_DELETE


class RedisForget(RedisBase):
    """Erasure of a user's data in ``AsyncRedisStore``."""

    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Threads (via the user index), snapshots (owner set), summaries (agent set)."""
        idx = self._idx(tenant)
        user = esc(user_id)
        removed = 0
        async with self._io():
            threads_key = idx + "u:" + user
            while True:
                ids = cast("list[bytes]", await self._client.zrange(threads_key, 0, 499))
                if not ids:
                    break
                for tid in ids:
                    deleted, entries, _, vectors = await self._thread_eval(
                        S_DELETE, tenant, as_str(tid), user_id
                    )
                    if deleted:
                        removed += 1 + int(entries)
                        await self._unindex(tenant, as_str(tid), user_id, vectors)
                await self._client.zrem(threads_key, *ids)
                await self._client.zrem(idx + "threads", *ids)
            snaps_key = idx + "su:" + user
            for run in await self._client.smembers(snaps_key):
                key = self._run_key(tenant, as_str(run), "s")
                removed += int(await self._eval(S_FORGET_SNAPSHOT, (key,), (user_id,)))
            await self._client.delete(snaps_key)
            removed += int(
                await self._eval(
                    S_FORGET_SUMMARIES, (idx + "sumu:" + user,), (idx + "sum:", user_id)
                )
            )
            removed += int(await self._tenant_eval(S_RECORD_FORGET, tenant, user_id))
        return removed
