"""RedisEntries: appends, reads, deletes, compaction and in-place updates of entries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memorybank.errors import NotFound, StoreError
from memorybank.records import Entry, Thread
from memorybank.rules.entry_ids import check_batch_ids
from memorybank.stores.contract._async.store import UNSET, AppendResult, NewEntry, Unset
from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import (
    as_str,
    decode_entry,
    decode_thread,
    entry_json,
    raise_status,
    who,
)
from memorybank.stores.redis.lua_threads import (
    S_APPEND,
    S_COMPACT,
    S_COUNT,
    S_DELETE_ENTRIES,
    S_GET_MEMBERS,
    S_LIST,
    S_REPLACE_MEMBERS,
    S_TRUNCATE,
)
from memorybank.stores.sql.common import dump, to_us


class RedisEntries(RedisBase):
    """Entries of ``AsyncRedisStore``: one script per operation on the thread's slot."""

    async def entry_append(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        *,
        updated_at: datetime,
        branch: str | None = None,
        owner: str | Unset | None = UNSET,
    ) -> AppendResult:
        """One script: checks, idempotency, ids, positions, write, ``updated_at``, TTL."""
        check_batch_ids(entries)
        texts = [entry_json(e) for e in entries]
        args: list[Any] = [branch or "", who(owner), to_us(updated_at)]
        for new, text in zip(entries, texts, strict=True):
            args += [new.idempotency_key or "", new.id, text, new.fingerprint or "", new.role]
        out = await self._thread_eval(S_APPEND, tenant, thread_id, *args)
        raise_status(out, thread_id)
        name = as_str(out[1])
        thread = decode_thread(out[2])
        stored = [
            decode_entry(out[4 + 2 * i] or f"[{int(out[3 + 2 * i])},{text[1:]}", thread_id, name)
            for i, text in enumerate(texts)
        ]
        await self._index(tenant, thread_id, thread.user_id, "set", to_us(thread.updated_at))
        return AppendResult(stored, thread)

    async def entry_list(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        newest_first: bool = False,
    ) -> tuple[Thread, list[Entry]]:
        """``ZREVRANGE`` by rank in one script (a filtered page scans newest first)."""
        out = await self._thread_eval(
            S_LIST,
            tenant,
            thread_id,
            branch or "",
            -1 if limit is None else limit,
            offset,
            "" if before is None else to_us(before),
            "" if after is None else to_us(after),
        )
        raise_status(out, thread_id)
        name = as_str(out[1])
        page = [decode_entry(member, thread_id, name) for member in out[3:]]
        if not newest_first:
            page.reverse()
        return decode_thread(out[2]), page

    async def entry_get(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        found = await self.entry_get_many(tenant, thread_id, [entry_id], branch=branch)
        return found.get(entry_id)

    async def entry_get_many(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> dict[str, Entry]:
        """One script reads them all (a missing thread or branch: none)."""
        wanted = list(dict.fromkeys(entry_ids))
        if not wanted:
            return {}
        out = await self._thread_eval(S_GET_MEMBERS, tenant, thread_id, branch or "", *wanted)
        if as_str(out[0]) != "OK":
            return {}
        found = zip(wanted, out[2:], strict=True)
        return {eid: decode_entry(m, thread_id, as_str(out[1])) for eid, m in found if m}

    async def entry_delete(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        return await self._thread_count(
            S_DELETE_ENTRIES, tenant, thread_id, branch or "", *entry_ids
        )

    async def entry_truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        n = await self._thread_count(S_TRUNCATE, tenant, thread_id, branch or "", entry_id)
        if n == -2:
            raise NotFound(f"entry {entry_id!r} not found on this branch")
        return n

    async def entry_count(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        return await self._thread_count(S_COUNT, tenant, thread_id, branch or "")

    # -- compaction ------------------------------------------------------------------------

    async def entry_compact(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        through_position: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> bool:
        """One script: compare the ids up to ``through_position``, then splice the summary."""
        out = await self._thread_eval(
            S_COMPACT,
            tenant,
            thread_id,
            branch,
            through_position,
            to_us(updated_at),
            "" if summary is None else summary.id,
            (summary and summary.idempotency_key) or "",
            "" if summary is None else entry_json(summary),
            *expected_ids,
        )
        raise_status(out, thread_id)
        if as_str(out[0]) != "OK":  # STALE
            return False
        thread = decode_thread(out[1])
        at = to_us(thread.updated_at)
        await self._index(tenant, thread_id, thread.user_id, "set", at, vectors=out[2])
        return True

    async def entry_update(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        """Read the members, rebuild them here, replace them all in one script if unchanged.

        The JSON members are rebuilt in Python (a Lua re-encode would not keep them
        byte-exact); the replacing script checks each member is still the one read
        (compare-and-set) and the read is retried when a writer got in between.
        """
        wanted = {c[0]: c for c in changes}
        ids = list(wanted)
        for _ in range(32):
            read = await self._thread_eval(S_GET_MEMBERS, tenant, thread_id, branch, *ids)
            raise_status(read, thread_id)
            args: list[Any] = []
            same = 0  # entries the update leaves as they were: not written, no event
            for entry_id, member in zip(ids, read[2:], strict=True):
                if member is None:
                    continue
                _, content, state, tokens = wanted[entry_id]
                data = json.loads(member)
                if (data[4], data[9], data[10]) == (content, state, tokens):
                    same += 1
                    continue
                data[4], data[9], data[10] = content, state, tokens
                args += [entry_id, member, dump(data)]
            if not args:
                return same
            n = await self._thread_count(S_REPLACE_MEMBERS, tenant, thread_id, branch, *args)
            if n >= 0:
                return n + same
        raise StoreError("entry_update: entries kept changing under the update")
