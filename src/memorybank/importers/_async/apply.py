"""Write a ``Plan`` into memorybank: what is new, the write, the vectors."""

from __future__ import annotations

from memorybank.core._async.embed import embed_texts
from memorybank.dump._async.portability import import_dump
from memorybank.errors import InvalidInput
from memorybank.importers.plan import UNCOUNTED, ImportResult, Plan, PlannedThread, branch_length
from memorybank.memory._async.memory import AsyncMemory
from memorybank.rules.scope import ROOT
from memorybank.stores.contract._async.store import AsyncStore

__all__ = ["apply"]

#: Record kinds whose vectors an import carries or re-embeds.
_EMBEDDED = ("fact", "document")


async def _thread_news(store: AsyncStore, tenant: str, thread: PlannedThread) -> dict[str, int]:
    """What importing ``thread`` adds: all of it when the target lacks it, else the
    branches it lacks and the entries beyond each branch's stored length (``import_dump``
    then writes the thread again whole; a thread at full length is skipped)."""
    if await store.thread_get(tenant, thread.id) is None:
        return {
            "thread": 1,
            "branch": len(thread.branches) - 1,
            "entry": sum(len(b.entries) for b in thread.branches),
        }
    have = {b.name for b in await store.branch_list(tenant, thread.id)}
    news = {"branch": 0, "entry": 0}
    for branch in thread.branches:
        if branch.name not in have:
            news["branch"] += 1
            news["entry"] += len(branch.entries)
            continue
        count = await store.entry_count(tenant, thread.id, branch=branch.name)
        news["entry"] += max(0, branch_length(thread, branch) - count)
    return news


async def _new(store: AsyncStore, tenant: str, plan: Plan) -> tuple[dict[str, int], set[str]]:
    """What writing ``plan`` adds, by kind, and the ids of its new records."""
    new: dict[str, int] = {}
    for thread in plan.threads:
        for kind, n in (await _thread_news(store, tenant, thread)).items():
            if n:
                new[kind] = new.get(kind, 0) + n
    fresh: set[str] = set()
    for record, _ in plan.records:
        if await store.record_get(tenant, record.kind, record.id) is None:
            if record.kind not in UNCOUNTED:
                new[record.kind] = new.get(record.kind, 0) + 1
            fresh.add(record.id)
    return new, fresh


async def apply(memory: AsyncMemory, plan: Plan, *, dry_run: bool = False) -> ImportResult:
    """Write ``plan`` into ``memory``'s tenant; what was found and what was added.

    Each item has an id derived from the other system's id, and the write is
    ``import_dump(..., on_conflict="skip")``: an item already imported is kept, so a
    second run adds nothing. A thread that grew in the other system since is written
    again whole (what was added to it in memorybank meanwhile is then replaced); nothing
    is written when nothing is new.

    Vectors: the other system's are carried when ``plan.vector_model`` is the memory's
    embedder's ``model_id``; otherwise, with an embedder, facts and documents are
    embedded here and entries by ``embed_pending``.

    ``dry_run`` checks every message as the write would and writes nothing. ``memory``
    must be an unscoped handle (the import writes every owner it reads).
    """
    if memory.scope != ROOT:
        raise InvalidInput("import into an unscoped memory handle", field="memory")
    store, tenant = memory.store, memory.tenant_id
    new, fresh = await _new(store, tenant, plan)
    result = ImportResult(plan.system, dry_run, plan.counts(), new, list(plan.unmapped))
    core = memory._core
    if dry_run:
        for _ in plan.lines(tenant, core.tokenizer, max_content_chars=core.max_content_chars):
            pass  # each message checked as entries.add checks it
        return result
    if not new:
        return result
    embedder = memory.embedder
    model = None if embedder is None else embedder.model_id
    vectors: dict[str, list[float]] | None = None
    if embedder is not None and plan.vector_model != model:
        wanted = [r for r, _ in plan.records if r.kind in _EMBEDDED and r.id in fresh]
        computed = await embed_texts(embedder, [r.content for r in wanted])
        vectors = {r.id: vector for r, vector in zip(wanted, computed, strict=True)}
        result.vectors_embedded = len(vectors)
    lines = plan.lines(
        tenant,
        core.tokenizer,
        max_content_chars=core.max_content_chars,
        vectors=vectors,
        vector_model=model,
    )
    report = await import_dump(store, tenant, lines, on_conflict="skip", model_id=model)
    if vectors is None:
        result.vectors_carried = report.vectors_written
    if embedder is not None and new.get("entry"):
        result.vectors_embedded += await memory.embed_pending()
    return result
