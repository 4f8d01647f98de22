"""``memory.documents``: searchable knowledge beside the conversations.

A document is a scoped record (``kind="document"`` in the store contract): its
text is indexed by the store's keyword search and, when an embedder is
configured, its embedding is stored with the embedder's ``model_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from memorybank import _validate as v
from memorybank._async.stores.base import UNSET, Record, Unset, VectorItem, Visibility
from memorybank._ids import new_id
from memorybank.errors import InvalidInput
from memorybank.records import Document, Hit

if TYPE_CHECKING:
    from memorybank._async.memory import _Core
    from memorybank.retrieval import SearchOptions

__all__ = ["DOCUMENT_KIND", "AsyncDocuments", "document_from_record"]

#: The store-contract ``kind`` of documents.
DOCUMENT_KIND = "document"


def document_from_record(record: Record) -> Document:
    """The public ``Document`` of a stored record."""
    metadata = record.data.get("metadata")
    return Document(
        id=record.id,
        content=record.content,
        metadata=dict(metadata) if isinstance(metadata, dict) else {},
        agent_id=record.agent_id,
        user_id=record.user_id,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _visible(doc: Record, agent_id: str | Unset | None, user_id: str | Unset | None) -> bool:
    if not isinstance(agent_id, Unset) and doc.agent_id not in (None, agent_id):
        return False
    return isinstance(user_id, Unset) or doc.user_id in (None, user_id)


class AsyncDocuments:
    """``memory.documents``: add, get, delete, list and search documents.

    Scoping follows DESIGN.md: ``agent_id=None``/``user_id=None`` on a document
    shares it with every agent/user of the tenant. ``get``/``delete`` check
    visibility only for the ids you name (like ``threads.get``); ``list`` and
    ``search`` return what the given agent and user may see.
    """

    def __init__(self, core: _Core, tenant: str) -> None:
        self._core = core
        self._tenant = tenant

    async def add(
        self,
        content: str,
        *,
        metadata: dict[str, Any] | None = None,
        agent_id: str | None = None,
        user_id: str | None = None,
        embedding: Sequence[float] | None = None,
    ) -> Document:
        """Store a document; embed it when an embedder is configured.

        ``embedding`` stores a vector you computed with the *same* model as the
        configured embedder (checked against its dimensions) instead of calling it.
        Without an embedder, ``embedding`` is refused: the vector could never be
        compared with a query vector.
        """
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput("content must be a non-empty string", field="content")
        v.check_text(content, "content", max_chars=self._core.max_content_chars)
        embedder = self._core.embedder
        vector: list[float] | None = None
        if embedding is not None:
            if embedder is None:
                raise InvalidInput(
                    "embedding needs an embedder: Memory(embedder=...) tags every vector"
                    " with the embedder's model_id",
                    field="embedding",
                )
            vector = v.check_vector(
                embedding, "embedding", dimensions=embedder.dimensions, allow_zero=False
            )
        now = self._core.now()
        record = Record(
            kind=DOCUMENT_KIND,
            id=new_id(),
            agent_id=v.check_optional_id(agent_id, "agent_id"),
            user_id=v.check_optional_id(user_id, "user_id"),
            content=content,
            data={"metadata": v.check_json_object(metadata, "metadata")},
            created_at=now,
            updated_at=now,
        )
        if embedder is not None and vector is None:
            from memorybank._async.search import embed_texts

            vector = (await embed_texts(embedder, [content]))[0]
        await self._core.store.record_put(self._tenant, [record])
        if embedder is not None and vector is not None:
            await self._core.store.vector_put(
                self._tenant,
                [VectorItem(DOCUMENT_KIND, record.id, embedder.model_id, vector)],
            )
        return document_from_record(record)

    async def get(
        self,
        document_id: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Document | None:
        """The document, or ``None`` (also when the named agent/user may not see it)."""
        record = await self._core.store.record_get(
            self._tenant, DOCUMENT_KIND, v.check_id(document_id, "document_id")
        )
        if record is None or not _visible(record, agent_id, user_id):
            return None
        return document_from_record(record)

    async def delete(
        self,
        document_id: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> bool:
        """Delete the document and its embeddings; whether it existed (and was visible)."""
        document_id = v.check_id(document_id, "document_id")
        if not isinstance(agent_id, Unset) or not isinstance(user_id, Unset):
            record = await self._core.store.record_get(self._tenant, DOCUMENT_KIND, document_id)
            if record is None or not _visible(record, agent_id, user_id):
                return False
        removed = await self._core.store.record_delete(self._tenant, DOCUMENT_KIND, [document_id])
        return removed > 0

    async def search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: Literal["hybrid", "semantic", "keyword"] = "hybrid",
        agent_id: str | None = None,
        user_id: str | None = None,
        min_score: float | None = None,
        filters: dict[str, Any] | None = None,
        options: SearchOptions | None = None,
    ) -> list[Hit]:
        """``memory.search(..., kinds=("documents",))``: documents only."""
        from memorybank._async.search import run_search

        return await run_search(
            self._core,
            self._tenant,
            query,
            k=k,
            mode=mode,
            thread_id=None,
            agent_id=agent_id,
            user_id=user_id,
            kinds=("documents",),
            min_score=min_score,
            filters=filters,
            options=options,
        )

    async def list(
        self,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[Document]:
        """Documents the agent and user may see (theirs and shared ones), oldest first.

        ``filters`` keeps documents whose metadata has exactly these values.
        """
        wanted = v.check_json_object(filters, "filters")
        limit = v.check_limit(limit, "limit")
        records = await self._core.store.record_list(
            self._tenant,
            DOCUMENT_KIND,
            visible_to=Visibility(
                v.check_optional_id(agent_id, "agent_id"), v.check_optional_id(user_id, "user_id")
            ),
            limit=None if wanted else limit,
        )
        docs = [document_from_record(r) for r in records]
        if wanted:
            docs = [d for d in docs if all(d.metadata.get(k) == x for k, x in wanted.items())]
        return docs if limit is None else docs[:limit]
