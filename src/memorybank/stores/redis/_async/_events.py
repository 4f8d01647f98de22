"""RedisEvents: the Redis store's change feed (``Capability.EVENTS`` on a single node).

Every change is recorded in the Lua script that makes it (``lua.py``: ``feed()``,
``emit``); keys, why a stream, costs and cluster mode: ``docs/redis.md`` (Change feed).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memorybank.errors import ConfigurationError
from memorybank.events.types import Event, check_floor, cursor_number, no_feed
from memorybank.stores.contract.types import Unset
from memorybank.stores.redis._async._base import RedisBase
from memorybank.stores.redis.codec import as_str, who
from memorybank.stores.redis.lua_tenant import S_EVENTS_LIST, S_EVENTS_PRUNE
from memorybank.stores.sql.common import to_us
from memorybank.stores.sql.events import event_of_row

__all__ = ["RedisEvents"]


def _event(number: bytes | str, fields: Sequence[Any]) -> Event:
    """The ``Event`` of a stream entry (ID ``0-<number>``, fields as stored by ``emit``)."""
    f = {as_str(fields[i]): as_str(fields[i + 1]) for i in range(0, len(fields), 2)}
    seq = int(as_str(number).partition("-")[2])
    row = (seq, f["k"], int(f["t"]), f.get("u"), f.get("a"), f.get("h"), f.get("i"), f.get("d"))
    return event_of_row(row)


class RedisEvents(RedisBase):
    """``events_enable``, ``events_disable``, ``events_keep``, ``events_list``, ``events_prune``."""

    def _feed_here(self) -> None:
        if reason := self._without_feed():
            raise ConfigurationError(f"the Redis store keeps no change feed with {reason}")

    async def events_enable(self, *, keep: timedelta) -> None:
        self._feed_here()
        seconds = max(1, int(keep.total_seconds()))
        switch = self._feed_switch()
        async with self._io():
            if not await self._client.exists(switch):
                await self._raise_floors()  # the changes while off were not recorded
            await self._client.hset(switch, "keep", seconds)

    async def _raise_floors(self) -> None:
        """Every tenant's floor above its last number drawn (the feed is off: no script
        draws one meanwhile)."""
        async for tag in self._scan_ids(self._prefix + "{", "}:fe", _type="stream"):
            last = await self._feed_drawn(f"{self._prefix}{{{tag}}}:fe")
            await self._client.hset(f"{self._prefix}{{{tag}}}:fm", "floor", last + 1)

    async def events_disable(self) -> None:
        self._feed_here()
        async with self._io():
            await self._client.delete(self._feed_switch())

    async def events_keep(self) -> timedelta | None:
        if self._without_feed():
            return None
        async with self._io():
            seconds = await self._client.hget(self._feed_switch(), "keep")
        return None if seconds is None else timedelta(seconds=int(seconds))

    async def events_list(
        self,
        tenant: str,
        *,
        after: str | None,
        kinds: Sequence[str] | None,
        user_id: str | Unset | None,
        agent_id: str | Unset | None,
        limit: int,
    ) -> list[Event]:
        number = cursor_number(after)
        if self._without_feed():
            return no_feed(number)
        out = await self._tenant_eval(
            S_EVENTS_LIST, tenant, number, limit, who(user_id), who(agent_id), *(kinds or ())
        )
        check_floor(after, number, int(out[0]))
        return [_event(out[i], out[i + 1]) for i in range(1, len(out), 2)]

    async def events_prune(self, tenant: str, *, limit: int) -> int:
        keep = await self.events_keep()
        if keep is None:
            return 0
        cutoff = to_us(datetime.now(UTC) - keep)
        return int(await self._tenant_eval(S_EVENTS_PRUNE, tenant, cutoff, limit))
