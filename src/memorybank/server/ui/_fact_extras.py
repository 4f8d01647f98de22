"""What the inspector shows of a fact beside its value: its importance and use
(``memory.usage``), the feedback given on it, and the consolidation links of its
versions (merged from, supersedes, superseded by, the runs that changed it)."""

from __future__ import annotations

from typing import Any

from memorybank.consolidation._async.feedback import FEEDBACK
from memorybank.importance import ItemUsage
from memorybank.memory._async.memory import AsyncMemory
from memorybank.records import Fact

__all__ = ["fact_extras", "importance_of"]

_LINKS = ("merged_from", "supersedes")


async def importance_of(memory: AsyncMemory, facts: list[Fact]) -> dict[str, ItemUsage]:
    """Each fact's importance and use (``memory.usage.get``)."""
    return {f.id: await memory.usage.get("fact", f.id) for f in facts}


async def fact_extras(memory: AsyncMemory, fact_id: str, history: list[Fact]) -> dict[str, Any]:
    """What the fact page shows beside the history: importance, the feedback given (newest
    first), and the consolidation links of every version (ids the run named)."""
    usage = await memory.usage.get("fact", fact_id)
    core = memory._core  # the feedback records, read with this handle's scope
    records = await core.store.record_list(
        memory.tenant_id, FEEDBACK, key=fact_id, visible_to=memory._scope.visibility()
    )
    feedback = sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)
    links: dict[str, list[str]] = {name: [] for name in (*_LINKS, "superseded_by")}
    runs: list[str] = []
    for version in history:
        meta = version.metadata
        for name in _LINKS:
            for other in meta.get(name) or []:
                if isinstance(other, str) and other not in links[name]:
                    links[name].append(other)
        later = meta.get("superseded_by")
        if isinstance(later, str) and later not in links["superseded_by"]:
            links["superseded_by"].append(later)
        run = meta.get("consolidation_run")
        if isinstance(run, str) and run not in runs:
            runs.append(run)
    return {
        "usage": usage,
        "feedback": [
            {
                "useful": bool(r.data.get("useful")),
                "reason": r.data.get("reason"),
                "confidence": r.data.get("confidence"),
                "at": r.created_at,
            }
            for r in feedback
        ],
        "links": links,
        "runs": runs,
    }
