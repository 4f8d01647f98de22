"""RedisRecords: records (facts, documents, run state, ...), in the tenant's slot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from memorybank.stores.contract._async.store import UNSET, Record, RecordGuard, Unset, Visibility
from memorybank.stores.contract.pages import page_records, pick_records, select_records
from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import (
    as_str,
    chunks,
    decode_record,
    esc,
    guard_args,
    record_json,
    who,
)
from memorybank.stores.redis.lua_tenant import (
    S_RECORD_DELETE,
    S_RECORD_EXPIRE,
    S_RECORD_PAGE,
    S_RECORD_PUT,
)
from memorybank.stores.sql.common import dump, to_us


class RedisRecords(RedisBase):
    """Records of ``AsyncRedisStore``."""

    async def _fresh(self, tenant: str, *kinds: str) -> None:
        """Before reading a kind with a TTL (``working_ttl``, ``snapshot_ttl``): delete the
        tenant's record groups that are due (``lua.TENANT_PRELUDE``: ``expire_due``)."""
        if not self._kind_ttls.keys().isdisjoint(kinds):
            await self._tenant_eval(S_RECORD_EXPIRE, tenant)

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        """One script over the tenant slot: the guard's check and the batch are atomic."""
        if not records and guard is None:
            return
        ttls = {r.kind: self._kind_ttls[r.kind] for r in records if r.kind in self._kind_ttls}
        args = [*guard_args(guard), dump(ttls)]
        for record in records:
            args += [record.kind, record.id, who(record.user_id), who(record.key)]
            args += [who(record.agent_id), record_json(record)]
        applied = int(await self._tenant_eval(S_RECORD_PUT, tenant, *args))
        if applied < 0 and guard is not None:
            raise guard.failed()

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        async with self._io():
            await self._fresh(tenant, kind)
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
        await self._fresh(tenant, kind)
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
        """Reads the kind's records in the narrowest set that holds them all (``rq:``/``ra:``
        /owner sets, ``_records_in_scope``), then filters and sorts here."""
        await self._fresh(tenant, kind)
        rows = await self._records_in_scope(
            tenant, [kind], user_id=user_id, visible_to=visible_to, key=key, agent_id=agent_id
        )
        found = (decode_record(kind, rid, data) for _, rid, data, _ in rows)
        return select_records(
            found, agent_id=agent_id, user_id=user_id, key=key, visible_to=visible_to, limit=limit
        )

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
            await self._fresh(tenant, kind)
            async with self._client.pipeline(transaction=False) as pipe:
                for part in chunks(ids):
                    pipe.hmget(key, part)
                replies = await pipe.execute()
        texts = zip(ids, (text for reply in replies for text in reply), strict=True)
        found = {i: decode_record(kind, i, json.loads(t)) for i, t in texts if t is not None}
        return pick_records(ids, found.get, visible_to)

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One script reads the keys' records (their ``rq:`` key sets)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        await self._fresh(tenant, kind)
        rows = await self._records_in_scope(tenant, [kind], keys=wanted)
        found = (decode_record(kind, rid, data) for _, rid, data, _ in rows)
        return select_records(found, visible_to=visible_to)

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
        out = await self._tenant_eval(
            S_RECORD_PAGE, tenant, mode, owner, kind, agent, user, cursor, limit
        )
        pairs = zip(out[::2], out[1::2], strict=True)
        records = (decode_record(kind, as_str(rid), json.loads(text)) for rid, text in pairs)
        return page_records(records, limit=limit, after=after, visible_to=visible_to)
