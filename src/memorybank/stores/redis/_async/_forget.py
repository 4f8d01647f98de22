"""RedisForget: ``forget_user`` across threads and records (run state included)."""

from __future__ import annotations

from typing import cast

from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import as_str, esc
from memorybank.stores.redis.lua_tenant import S_RECORD_FORGET
from memorybank.stores.redis.lua_threads import S_DELETE


class RedisForget(RedisBase):
    """Erasure of a user's data in ``AsyncRedisStore``."""

    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Threads (via the user index), then records (owner sets: snapshots and summaries
        are records too)."""
        idx = self._idx(tenant)
        removed = 0
        async with self._io():
            threads_key = idx + "u:" + esc(user_id)
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
                        await self._index(tenant, as_str(tid), user_id, "gone", vectors=vectors)
                await self._client.zrem(threads_key, *ids)
                await self._client.zrem(idx + "threads", *ids)
            removed += int(await self._tenant_eval(S_RECORD_FORGET, tenant, user_id))
        return removed
