"""RedisRecords: records (facts, documents, ...) and summaries, in the tenant's slot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from memorybank.records import Summary
from memorybank.stores.contract._async.store import UNSET, Record, RecordGuard, Unset, Visibility
from memorybank.stores.contract.pages import record_matches
from memorybank.stores.contract.types import visible
from memorybank.stores.redis._async._scope import RedisScope
from memorybank.stores.redis.codec import (
    CHUNK,
    as_str,
    decode_record,
    esc,
    guard_args,
    record_json,
    unesc,
    who,
)
from memorybank.stores.redis.lua_tenant import (
    S_RECORD_DELETE,
    S_RECORD_KEYS,
    S_RECORD_PAGE,
    S_RECORD_PUT,
)
from memorybank.stores.sql.common import dump, from_us, to_us


class RedisRecords(RedisScope):
    """Records and summaries of ``AsyncRedisStore``."""

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        """One script over the tenant slot: the guard's check and the batch are atomic."""
        if not records and guard is None:
            return
        args = guard_args(guard)
        for record in records:
            args += [record.kind, record.id, who(record.user_id), record_json(record)]
        with self._op():
            applied = int(await self._tenant_eval(S_RECORD_PUT, tenant, *args))
        if applied < 0 and guard is not None:
            raise guard.failed()

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        async with self._io():
            text = await self._client.hget(self._idx(tenant) + "r:" + esc(kind), record_id)
        return None if text is None else decode_record(kind, record_id, json.loads(text))

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        ids = list(dict.fromkeys(record_ids))
        if not ids and guard is None:
            return 0
        with self._op():
            deleted = int(
                await self._tenant_eval(S_RECORD_DELETE, tenant, *guard_args(guard), kind, *ids)
            )
        if deleted < 0 and guard is not None:
            raise guard.failed()
        return deleted

    async def record_list(
        self,
        tenant: str,
        kind: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        key: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        """Reads the kind's records in the owner scope, then filters and sorts here."""
        with self._op():
            rows = await self._records_in_scope(
                tenant, [kind], user_id=user_id, visible_to=visible_to
            )
        found = [
            decode_record(kind, rid, data)
            for _, rid, data, _ in rows
            if record_matches((data[0], data[1], data[2]), agent_id, user_id, key, visible_to)
        ]
        found.sort(key=lambda r: (r.created_at, r.id))
        return found if limit is None else found[:limit]

    async def record_get_many(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, Record]:
        """``HMGET`` of the kind's hash, ``CHUNK`` ids per command, in one pipeline; what
        ``visible_to`` may not see is left out of the answer."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        key = self._idx(tenant) + "r:" + esc(kind)
        async with self._io():
            async with self._client.pipeline(transaction=False) as pipe:
                for start in range(0, len(ids), CHUNK):
                    pipe.hmget(key, ids[start : start + CHUNK])
                replies = await pipe.execute()
        texts = [text for reply in replies for text in reply]
        return {
            rid: record
            for rid, text in zip(ids, texts, strict=True)
            if text is not None
            and visible(
                visible_to, (record := decode_record(kind, rid, json.loads(text))).agent_id,
                record.user_id,
            )
        }  # fmt: skip

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One script: the records of the owner scope whose key matches (no key index in
        this layout: the scope's records are read and matched inside Redis)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        mode, owner = self._owner_scope(visible_to)
        with self._op():
            out = await self._tenant_eval(S_RECORD_KEYS, tenant, mode, owner, kind, *wanted)
        found = [
            decode_record(kind, as_str(out[i]), json.loads(out[i + 1]))
            for i in range(0, len(out), 2)
        ]
        found = [r for r in found if visible(visible_to, r.agent_id, r.user_id)]
        found.sort(key=lambda r: (r.created_at, r.id))
        return found

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One script picks the candidates (visible, from about the cursor, about the oldest
        ``limit``); they are filtered and ordered exactly here. Without a time index in
        this layout the script reads the scope's records on every page."""
        if limit <= 0:
            return []
        mode, owner = self._owner_scope(visible_to)
        agent = "*" if visible_to is None else who(visible_to.agent_id)
        user = "*" if visible_to is None else who(visible_to.user_id)
        cursor = "" if after is None else str(to_us(after[0]))
        with self._op():
            out = await self._tenant_eval(
                S_RECORD_PAGE, tenant, mode, owner, kind, agent, user, cursor, limit
            )
        found = [
            decode_record(kind, as_str(out[i]), json.loads(out[i + 1]))
            for i in range(0, len(out), 2)
        ]
        found = [
            r
            for r in found
            if visible(visible_to, r.agent_id, r.user_id)
            and (after is None or (r.created_at, r.id) > after)
        ]
        found.sort(key=lambda r: (r.created_at, r.id))
        return found[:limit]

    # -- summaries ---------------------------------------------------------------------------

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        idx = self._idx(tenant)
        agent = esc(summary.agent_id)
        record = dump([summary.id, summary.user_id, summary.content, to_us(summary.created_at)])
        async with self._io():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.rpush(idx + "sum:" + agent, record)
                if summary.user_id is not None:
                    pipe.sadd(idx + "sumu:" + esc(summary.user_id), agent)
                await pipe.execute()
        return summary

    async def summary_agents(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Found by ``SCAN`` over the tenant's ``sum:<agent>`` lists (one slot, hash-tagged)."""
        async with self._io():
            found = {unesc(a) async for a in self._scan_ids(self._idx(tenant) + "sum:", "")}
        agents = sorted(a for a in found if after is None or a > after)
        return agents if limit is None else agents[:limit]

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        async with self._io():
            items = await self._client.lrange(self._idx(tenant) + "sum:" + esc(agent_id), 0, -1)
        found = []
        for item in items:
            sid, owner, content, created = json.loads(item)
            if isinstance(user_id, Unset) or owner is None or owner == user_id:
                found.append(
                    Summary(
                        id=sid,
                        agent_id=agent_id,
                        user_id=owner,
                        content=content,
                        created_at=from_us(created),
                    )
                )
        return found
