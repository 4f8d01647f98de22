"""``memory.documents``: searchable knowledge beside the conversations.

A document is a scoped record (``kind="document"`` in the store contract): its
text is indexed by the store's keyword search and, when an embedder is
configured, its embedding is stored with the embedder's ``model_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from memorybank.core._async.core import Namespace
from memorybank.core._async.embed import embed_texts
from memorybank.core._async.usage import given_importance
from memorybank.core.documents import DOCUMENT_KIND, document_from_record, document_record
from memorybank.errors import InvalidInput
from memorybank.importance import check_importance
from memorybank.records import Document, Hit
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.stores.contract._async.store import UNSET, Record, Unset, VectorItem
from memorybank.stores.contract.types import visible

if TYPE_CHECKING:
    from memorybank.recall.hybrid import SearchOptions

__all__ = ["AsyncDocuments"]


class AsyncDocuments(Namespace):
    """``memory.documents``: add, get, delete, list and search documents.

    Scoping follows DESIGN.md: ``agent_id=None``/``user_id=None`` on a document
    shares it with every agent/user of the tenant. Every verb takes
    ``user_id=``/``agent_id=``: given, the caller sees its own and shared
    documents (one it may not see behaves like a missing id); left out, the
    handle's scope applies (nothing on the root handle).
    """

    async def _visible(self, document_id: str, user_id: object, agent_id: object) -> Record | None:
        seen = self._scope.visibility(user_id=user_id, agent_id=agent_id)
        record = await self._core.store.record_get(
            self._tenant, DOCUMENT_KIND, v.check_id(document_id, "document_id")
        )
        if record is None or not visible(seen, record.agent_id, record.user_id):
            return None
        return record

    async def add(
        self,
        content: str,
        *,
        metadata: dict[str, Any] | None = None,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        embedding: Sequence[float] | None = None,
        importance: float | None = None,
    ) -> Document:
        """Store a document; embed it when an embedder is configured.

        ``embedding`` stores a vector you computed with the *same* model as the
        configured embedder (checked against its dimensions) instead of calling it.
        Without an embedder, ``embedding`` is refused: the vector could never be
        compared with a query vector. ``importance``: from 0 to 1, how much it matters
        (``memory.usage``; default: derived from use and feedback, see
        ``memorybank.importance``).
        """
        weight = None if importance is None else check_importance(importance)
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
        record = document_record(
            new_id(),
            content,
            v.check_json_object(metadata, "metadata"),
            agent_id=self._scope.owner(agent_id, "agent_id"),
            user_id=self._scope.owner(user_id),
            created_at=now,
            updated_at=now,
        )
        records = [record]
        if weight is not None:
            records.append(
                given_importance(DOCUMENT_KIND, document_from_record(record), weight, now)
            )
        service = self._core.embed_service
        if embedder is not None and vector is None and service is not None:
            # the journal first: a stop after the write loses nothing
            jobs = await service.journal(self._tenant, "document", None, None, [record.id])
            try:
                await self._core.store.record_put(self._tenant, records)
            except BaseException:
                await service.abandon(jobs)
                raise
            await service.submit(jobs)
            return document_from_record(record)
        if embedder is not None and vector is None:
            vector = (await embed_texts(embedder, [content]))[0]
        await self._core.store.record_put(self._tenant, records)
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
        record = await self._visible(document_id, user_id, agent_id)
        return None if record is None else document_from_record(record)

    async def delete(
        self,
        document_id: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> bool:
        """Delete the document and its embeddings; whether it existed (and was visible)."""
        if await self._visible(document_id, user_id, agent_id) is None:
            return False
        removed = await self._core.store.record_delete(self._tenant, DOCUMENT_KIND, [document_id])
        return removed > 0

    async def search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: Literal["hybrid", "semantic", "keyword"] = "hybrid",
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        min_score: float | None = None,
        filters: dict[str, Any] | None = None,
        options: SearchOptions | None = None,
    ) -> list[Hit]:
        """``memory.search(..., kinds=("documents",))``: documents only."""
        from memorybank.recall._async.search import run_search

        return await run_search(
            self._core,
            self._tenant,
            query,
            k=k,
            mode=mode,
            thread_id=None,
            visible=self._scope.visibility(user_id=user_id, agent_id=agent_id),
            kinds=("documents",),
            min_score=min_score,
            filters=filters,
            options=options,
        )

    async def list(
        self,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[Document]:
        """Documents the agent and user may see (theirs and shared ones), oldest first.

        ``None`` keeps shared ones only on that axis; left out, the handle's
        scope applies. ``filters`` keeps documents whose metadata has exactly
        these values.
        """
        wanted = v.check_json_object(filters, "filters")
        limit = v.check_limit(limit, "limit")
        records = await self._core.store.record_list(
            self._tenant,
            DOCUMENT_KIND,
            visible_to=self._scope.visibility(user_id=user_id, agent_id=agent_id),
            limit=None if wanted else limit,
        )
        docs = [document_from_record(r) for r in records]
        if wanted:
            docs = [d for d in docs if all(d.metadata.get(k) == x for k, x in wanted.items())]
        return docs if limit is None else docs[:limit]
