"""Memory formation (``ingest``, see ``memorybank.graph._async.formation``) and its undo."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from memorybank.core._async.core import _require_thread
from memorybank.errors import NotFound
from memorybank.graph._async import formation
from memorybank.graph._async.entities import EntityVerbs
from memorybank.graph._async.records import OUT, SOURCE, _relation
from memorybank.rules import validate as v
from memorybank.runtime.concurrency import Backlog
from memorybank.stores.contract._async.store import UNSET, Unset
from memorybank.stores.contract.types import Visibility

if TYPE_CHECKING:
    from memorybank.core.extraction import IngestReport
    from memorybank.records import Entry


class IngestVerbs(EntityVerbs):
    """Extraction into the graph, its backlog, and removal of what an entry gave."""

    async def _cascade(self, entry_ids: Sequence[str], visible_to: Visibility | None = None) -> int:
        """Remove observations and relations whose only provenance was these entries, of the
        nodes and edges ``visible_to`` may change (``None``: all, the trusted call)."""
        store = self._core.store
        gone = 0
        for entry_id in entry_ids:
            links = await store.record_list_keys(
                self._tenant, SOURCE, [entry_id], visible_to=visible_to
            )
            for link in links:
                target = str(link.data["id"])
                if link.data.get("what") == "entity":
                    try:
                        await self._change_observations(target, None, drop_entry=entry_id)
                    except NotFound:
                        pass
                else:
                    record = await store.record_get(self._tenant, OUT, target)
                    if record is not None:
                        relation = _relation(self._tenant, record)
                        if relation.provenance == (entry_id,):
                            await self._remove_relation(relation)
                            gone += 1
                        elif entry_id in relation.provenance:
                            await self._change_relation(
                                relation.id,
                                Visibility(relation.agent_id, relation.user_id),
                                lambda old, now, e=entry_id: replace(
                                    old, provenance=tuple(p for p in old.provenance if p != e)
                                ),
                            )
                await store.record_delete(self._tenant, SOURCE, [link.id])
        return gone

    async def ingest(
        self,
        thread_id: str,
        entries: Sequence[Entry | str] | None = None,
        *,
        user_id: str | Unset | None = UNSET,
    ) -> IngestReport:
        """Extract the thread's user and assistant entries (or ``entries``: objects or ids
        of that thread) with the memory's ``extractor`` into the graph and ``memory.facts``,
        owned like the thread, with the entry ids as provenance; entries already
        ingested are skipped. Under the thread rule (``ThreadForbidden``); see
        ``memorybank.graph._async.formation``."""
        thread = await _require_thread(
            self._core,
            self._tenant,
            v.check_id(thread_id, "thread_id"),
            self._scope.user(user_id),
        )
        return await formation.ingest(self._core, self._tenant, thread, entries)

    def pending(self) -> Backlog:
        """The ``extract_on_write`` backlog of this memory (every handle's; zeros when off)."""
        background = self._core.background
        return Backlog() if background is None else background.counts()

    async def drain(self, within: float | None = None) -> bool:
        """Wait until the ``extract_on_write`` backlog is empty; whether it emptied within
        ``within`` seconds (``None``: no limit)."""
        background = self._core.background
        return True if background is None else await background.drain(within)
