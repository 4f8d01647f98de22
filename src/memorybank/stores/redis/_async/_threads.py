"""RedisThreads: thread records and their branches (one script on the thread's slot each),
and ``forget_user``."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, cast

from memorybank.errors import Conflict, NotFound
from memorybank.records import Branch, Thread
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.contract.pages import thread_matches
from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import (
    THREAD_FIELDS,
    as_str,
    decode_thread,
    esc,
    raise_status,
)
from memorybank.stores.redis.lua_tenant import S_RECORD_FORGET
from memorybank.stores.redis.lua_threads import (
    S_CREATE,
    S_CREATE_BRANCH,
    S_DELETE,
    S_DELETE_BRANCH,
    S_UPDATE,
)
from memorybank.stores.sql.common import dump, row_to_branch, to_us


class RedisThreads(RedisBase):
    """Threads and branches of ``AsyncRedisStore``, and the erasure of a user's data."""

    async def thread_create(self, thread: Thread) -> Thread:
        tenant, at = thread.tenant_id, to_us(thread.updated_at)
        named: dict[str, Any] = {
            "id": thread.id,
            "ten": thread.tenant_id,
            "m": dump(thread.metadata),
            "s": thread.status,
            "c": to_us(thread.created_at),
            "up": at,
            "cb": thread.current_branch,
            "b:" + thread.current_branch: dump([to_us(thread.created_at), None, None]),
            "u": thread.user_id,
            "a": thread.agent_id,
            "ti": thread.title,
        }
        fields = [x for pair in named.items() if pair[1] is not None for x in pair]
        if not await self._thread_eval(S_CREATE, tenant, thread.id, at, *fields):
            raise Conflict(f"thread {thread.id!r} already exists")
        await self._index(tenant, thread.id, thread.user_id, "new", at)
        return thread

    async def thread_get(self, tenant: str, thread_id: str) -> Thread | None:
        async with self._io():
            row = await self._client.hmget(self._base(tenant, thread_id) + "t", THREAD_FIELDS)
        return None if row[0] is None else decode_thread(row)

    async def thread_list(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        """Walks the tenant (or user) index newest first; drops members of expired threads."""
        idx = self._idx(tenant)
        index = idx + ("u:" + esc(user_id) if isinstance(user_id, str) else "threads")
        found: list[Thread] = []
        if limit == 0:
            return found
        batch = 100 if limit is None else max(limit, 20)
        start = 0
        async with self._io():
            while True:
                ids = cast(
                    "list[bytes]", await self._client.zrevrange(index, start, start + batch - 1)
                )
                if not ids:
                    break
                async with self._client.pipeline(transaction=False) as pipe:
                    for tid in ids:
                        pipe.hmget(self._base(tenant, as_str(tid)) + "t", THREAD_FIELDS)
                    rows = await pipe.execute()
                gone = [tid for tid, row in zip(ids, rows, strict=True) if row[0] is None]
                if gone:
                    await self._drop_gone(idx, [index], gone)
                for row in rows:
                    if row[0] is None:
                        continue
                    t = decode_thread(row)
                    if thread_matches(t, user_id, agent_id, status):
                        found.append(t)
                        if limit is not None and len(found) >= limit:
                            return found
                if len(ids) < batch:
                    break
                start += batch - len(gone)
        return found

    async def thread_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        updated_at: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        status: str | Unset = UNSET,
        current_branch: str | Unset = UNSET,
    ) -> Thread:
        branch = "" if isinstance(current_branch, Unset) else current_branch
        meta = metadata if isinstance(metadata, Unset) else dump(metadata)
        given = {"ti": title, "m": meta, "s": status, "cb": branch or UNSET}
        drop = ["ti"] if title is None else []
        sets = [
            x
            for f, v in given.items()
            if not isinstance(v, Unset) and f not in drop
            for x in (f, v)
        ]
        out = await self._thread_eval(
            S_UPDATE, tenant, thread_id, to_us(updated_at), branch, len(drop), *drop, *sets
        )
        raise_status(out, thread_id)
        thread = decode_thread(out[1])
        await self._index(tenant, thread_id, thread.user_id, "set", to_us(thread.updated_at))
        return thread

    async def thread_delete(self, tenant: str, thread_id: str) -> bool:
        deleted, _, owner, vectors = await self._thread_eval(S_DELETE, tenant, thread_id, "")
        if deleted:
            await self._index(tenant, thread_id, as_str(owner) or None, "gone", vectors=vectors)
        return bool(deleted)

    # -- branches ------------------------------------------------------------------------

    async def branch_create(
        self,
        tenant: str,
        thread_id: str,
        name: str,
        *,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Branch:
        """``COPY`` of the source branch's keys, trimmed after ``from_entry``, in one script."""
        record = dump([to_us(created_at), from_branch, from_entry])
        raise_status(
            await self._thread_eval(
                S_CREATE_BRANCH, tenant, thread_id, name, from_branch, from_entry or "", record
            ),
            thread_id,
        )
        return Branch(name, thread_id, created_at, from_branch, from_entry)

    async def branch_list(self, tenant: str, thread_id: str) -> list[Branch]:
        async with self._io():
            fields = await self._client.hgetall(self._base(tenant, thread_id) + "t")
        if not fields:
            raise NotFound(f"thread {thread_id!r} not found")
        found = [
            row_to_branch((as_str(field)[2:], thread_id, *json.loads(value)))
            for field, value in fields.items()
            if as_str(field).startswith("b:")
        ]
        return sorted(found, key=lambda b: (b.created_at, b.name))

    async def branch_delete(self, tenant: str, thread_id: str, name: str) -> bool:
        n = await self._thread_count(S_DELETE_BRANCH, tenant, thread_id, name)
        if n == -2:
            raise Conflict(f"cannot delete the current branch {name!r}")
        return n == 1

    # -- erasure -------------------------------------------------------------------------

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
