"""Documents as stored records: their kind, and the record of a document and back.

Read by recall (documents are searched), the dump's checks, the importers and
``memory.documents`` (``memorybank.memory._async.documents``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memorybank.records import Document
from memorybank.stores.contract.items import Record

__all__ = ["DOCUMENT_KIND", "document_from_record", "document_record"]

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


def document_record(
    document_id: str,
    content: str,
    metadata: dict[str, Any],
    *,
    agent_id: str | None,
    user_id: str | None,
    created_at: datetime,
    updated_at: datetime,
) -> Record:
    """The stored record of a document."""
    return Record(
        kind=DOCUMENT_KIND,
        id=document_id,
        agent_id=agent_id,
        user_id=user_id,
        content=content,
        data={"metadata": metadata},
        created_at=created_at,
        updated_at=updated_at,
    )
