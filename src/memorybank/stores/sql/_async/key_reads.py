"""``record_list_keys`` and ``record_list_keys_by_kind`` over one read of several kinds.

The SQL stores read records by key for any number of kinds in one go (one
statement or one round trip on their ``records_key`` index); this mixin gives
both contract reads from that one ``_list_keys``, so each store writes only the
read itself.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from memorybank.stores.contract._async.store import AsyncStore, Record, Visibility
from memorybank.stores.contract.types import by_kind


class KeyReads(AsyncStore):
    """The two key reads of the store contract, from ``_list_keys``."""

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One ``_list_keys`` read."""
        return await self._list_keys(tenant, [kind], keys, visible_to)

    async def record_list_keys_by_kind(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> dict[str, list[Record]]:
        """The same read for every kind at once, split by kind."""
        wanted = list(dict.fromkeys(kinds))
        return by_kind(wanted, await self._list_keys(tenant, wanted, keys, visible_to))

    @abc.abstractmethod
    async def _list_keys(
        self,
        tenant: str,
        kinds: Sequence[str],
        keys: Sequence[str],
        visible_to: Visibility | None,
    ) -> list[Record]:
        """Records of ``kinds`` whose key is one of ``keys`` and that ``visible_to`` may
        see, oldest first (``created_at``, then id), each once."""
