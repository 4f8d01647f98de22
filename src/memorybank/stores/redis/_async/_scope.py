"""RedisScope: the threads and records a search or listing reads, found through the indexes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memorybank.stores.contract._async.store import UNSET, Unset, Visibility
from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import as_str, esc, who
from memorybank.stores.redis.lua_tenant import S_RECORD_SCOPE
from memorybank.stores.redis.lua_threads import S_SCOPE


class RedisScope(RedisBase):
    """Scope reads shared by records and search ("Search" in ``docs/redis.md``)."""

    async def _threads_in_scope(
        self, tenant: str, thread_id: str | None, visible_to: Visibility | None, model_id: str
    ) -> list[tuple[str, list[Any]]]:
        """``(thread id, script reply)`` of the visible threads (entry texts or vectors).

        Candidates come from the tenant indexes: the user's threads and the
        shared ones (``u0``) for a visibility, every thread otherwise; the script
        re-checks visibility on the thread itself. Expired threads are dropped
        from the indexes read.
        """
        idx = self._idx(tenant)
        if thread_id is not None:
            indexes: list[str] = []
            tids = [thread_id]
        else:
            if visible_to is None or isinstance(visible_to.user_id, Unset):
                indexes = [idx + "threads"]
            elif visible_to.user_id is None:
                indexes = [idx + "u0"]
            else:
                indexes = [idx + "u:" + esc(visible_to.user_id), idx + "u0"]
            async with self._client.pipeline(transaction=False) as pipe:
                for name in indexes:
                    if name.endswith(":u0"):
                        pipe.smembers(name)
                    else:
                        pipe.zrange(name, 0, -1)
                lists = await pipe.execute()
            tids = list(dict.fromkeys(as_str(t) for ids in lists for t in ids))
        check = "0" if visible_to is None else "1"
        agent = "-" if visible_to is None else who(visible_to.agent_id)
        user = "-" if visible_to is None else who(visible_to.user_id)
        calls = [self._thread_call(tenant, tid, check, agent, user, model_id) for tid in tids]
        replies = await self._eval_many(S_SCOPE, calls)
        found: list[tuple[str, list[Any]]] = []
        gone: list[str] = []
        for tid, reply in zip(tids, replies, strict=True):
            status = as_str(reply[0])
            if status == "OK":
                found.append((tid, reply))
            elif status == "GONE":
                gone.append(tid)
        if gone and indexes:
            await self._drop_gone(idx, indexes, gone)
        return found

    async def _records_in_scope(
        self,
        tenant: str,
        kinds: Sequence[str],
        *,
        user_id: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        model_id: str = "",
        key: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        keys: Sequence[str] = (),
    ) -> list[tuple[str, str, list[Any], bytes | None]]:
        """``(kind, id, decoded JSON, vector)`` of the records an owner index can hold.

        Reads the sets of ``keys`` when given, else the key's set when a ``key`` is
        given, else the user's owner set for a ``user_id``, else the agent's set for an
        ``agent_id``, else the user's and the shared owner sets for a visibility, else
        every record of the kind; callers filter the rest.
        With ``model_id``, only records with a vector of that model (and it).
        """
        if keys:
            scopes = [("key", who(k)) for k in keys]
        elif isinstance(key, str):  # the key's set: smaller than an owner's
            scopes = [("key", who(key))]
        elif isinstance(user_id, str | None):
            scopes = [("only", who(user_id))]
        elif isinstance(agent_id, str):
            scopes = [("agent", who(agent_id))]
        else:
            scopes = [self._owner_scope(visible_to)]
        args = [x for kind in kinds for mode, owner in scopes for x in (mode, owner, kind)]
        out = await self._tenant_eval(S_RECORD_SCOPE, tenant, model_id, *args)
        found: list[tuple[str, str, list[Any], bytes | None]] = []
        step = 3 if model_id else 2
        for i in range(0, len(out), 2):
            kind, rows = as_str(out[i]), out[i + 1]
            for j in range(0, len(rows), step):
                blob = rows[j + 2] if model_id else None
                found.append((kind, as_str(rows[j]), json.loads(rows[j + 1]), blob))
        return found

    @staticmethod
    def _owner_scope(visible_to: Visibility | None) -> tuple[str, str]:
        """The owner sets a visibility reads: ``("vis", owner)`` or ``("all", "-")``."""
        if visible_to is not None and not isinstance(visible_to.user_id, Unset):
            return "vis", who(visible_to.user_id)
        return "all", "-"
