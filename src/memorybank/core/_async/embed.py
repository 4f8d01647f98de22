"""Embedding at write time: every vector that reaches a store passes ``embed_texts``;
``embed_entries`` embeds fresh entries, ``embed_pending`` what has no vector yet.

Below recall (which ranks with NumPy) so that the writers (facts, documents, entries,
the graph and the background worker) embed without loading it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorybank.core.documents import DOCUMENT_KIND
from memorybank.errors import ConfigurationError, InvalidInput, NotFound
from memorybank.records import Entry
from memorybank.rules import validate as v
from memorybank.runtime.log import logger
from memorybank.stores.contract._async.store import VectorItem

if TYPE_CHECKING:
    from memorybank.embeddings.base import Embedder
    from memorybank.stores.contract._async.store import AsyncStore

__all__ = ["EMBED_BATCH", "embed_entries", "embed_pending", "embed_texts"]

#: Texts per embedder call when embedding many entries or documents.
EMBED_BATCH = 256


async def embed_texts(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    """The embedder's vectors for ``texts``, checked: every vector that reaches a store or
    a ranking passes here.

    Raises ``InvalidInput(field="embedding")`` for a vector no store can keep
    exactly (non-finite, beyond float32, not ``embedder.dimensions`` long):
    from a broken embedder, or an input it cannot encode, before anything is
    written. Vectors come back unit-length.
    """
    out: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = texts[start : start + EMBED_BATCH]
        vectors = await embedder.aembed(chunk)
        if len(vectors) != len(chunk):
            raise ConfigurationError(
                f"embedder returned {len(vectors)} vectors for {len(chunk)} texts"
            )
        dimensions = embedder.dimensions
        out.extend(v.check_vector(vector, "embedding", dimensions=dimensions) for vector in vectors)
    return out


async def embed_entries(
    store: AsyncStore, embedder: Embedder | None, tenant: str, entries: Sequence[Entry]
) -> int:
    """Embed freshly written entries in one batch; never raises (logs and leaves a backlog)."""
    if embedder is None:
        return 0
    todo = [e for e in entries if e.content]
    if not todo:
        return 0
    try:
        vectors = await embed_texts(embedder, [e.content or "" for e in todo])
        await store.vector_put(
            tenant,
            [
                VectorItem("entry", e.id, embedder.model_id, vec, e.thread_id)
                for e, vec in zip(todo, vectors, strict=True)
            ],
        )
    except Exception as error:  # the entries are stored; embed_pending() catches up
        logger.warning(
            "memorybank: could not embed %d new entries (%s: %s); run memory.embed_pending()",
            len(todo),
            type(error).__name__,
            error,
        )
        return 0
    return len(todo)


async def embed_pending(
    store: AsyncStore,
    embedder: Embedder | None,
    tenant: str,
    *,
    thread_id: str | None = None,
    batch_size: int = EMBED_BATCH,
) -> int:
    """Embed every entry (and document) lacking a vector of the embedder's model; how many."""
    if embedder is None:
        raise ConfigurationError("embed_pending needs an embedder: Memory(url, embedder=...)")
    if not v.check_limit(batch_size, "batch_size", allow_none=False):
        raise InvalidInput("batch_size must be a positive integer", field="batch_size")
    model = embedder.model_id
    if thread_id is not None:
        thread = await store.thread_get(tenant, v.check_id(thread_id, "thread_id"))
        if thread is None:
            raise NotFound(f"thread {thread_id!r} not found")
        threads = [thread]
    else:
        threads = await store.thread_list(tenant)
    pending: list[tuple[str, str, str | None, str]] = []  # kind, id, thread, text
    done = 0

    async def flush() -> None:
        nonlocal done
        if not pending:
            return
        vectors = await embed_texts(embedder, [p[3] for p in pending])
        await store.vector_put(
            tenant,
            [
                VectorItem(kind, rid, model, vec, tid)
                for (kind, rid, tid, _), vec in zip(pending, vectors, strict=True)
            ],
        )
        done += len(pending)
        pending.clear()

    for thread in threads:
        texts: dict[str, str] = {}
        for branch in await store.branch_list(tenant, thread.id):
            _, rows = await store.entry_list(tenant, thread.id, branch=branch.name)
            for entry in rows:
                if entry.content:
                    texts.setdefault(entry.id, entry.content)
        have = await store.vector_get(tenant, "entry", list(texts), model_id=model)
        for eid, text in texts.items():
            if eid not in have:
                pending.append(("entry", eid, thread.id, text))
                if len(pending) >= batch_size:
                    await flush()
    if thread_id is None:
        docs = await store.record_list(tenant, DOCUMENT_KIND)
        have = await store.vector_get(tenant, DOCUMENT_KIND, [d.id for d in docs], model_id=model)
        for doc in docs:
            if doc.id not in have:
                pending.append((DOCUMENT_KIND, doc.id, None, doc.content))
                if len(pending) >= batch_size:
                    await flush()
    await flush()
    return done
