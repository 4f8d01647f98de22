"""I/O-free parts of the external vector index (``memorybank.vector_index``).

Point ids, collection names, payloads and the Qdrant scope filter live here,
once, for the async index and its generated sync twin.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memorybank.errors import ConfigurationError
from memorybank.stores.contract.types import Unset, Visibility

if TYPE_CHECKING:
    from qdrant_client import models

__all__ = [
    "SHARED",
    "IndexPoint",
    "collection_name",
    "payload",
    "point_id",
    "qdrant_models",
    "scope_filter",
]

#: The payload value of an owner axis (``user_id``/``agent_id``) of a shared record.
#: Never a real id: ids are 1 to 255 characters. A plain keyword (not null) keeps
#: the scope condition one indexed ``MatchAny`` per axis.
SHARED = ""

_NAMESPACE = uuid.UUID("6c1f3f0e-5b9e-5c1e-9a57-6d656d6f7279")


@dataclass(frozen=True, slots=True)
class IndexPoint:
    """One vector as an index keeps it: what it is, whose it is, and the vector.

    ``agent_id``/``user_id`` are the owners the scope rule checks: the record's
    own, or for an entry (``kind="entry"``) its thread's.
    """

    kind: str
    id: str
    model_id: str
    vector: Sequence[float]
    thread_id: str | None
    agent_id: str | None
    user_id: str | None


def point_id(tenant: str, kind: str, record_id: str) -> str:
    """The Qdrant point id of a record or entry: a UUID5 of ``(tenant, kind, id)``."""
    return str(uuid.uuid5(_NAMESPACE, json.dumps([tenant, kind, record_id])))


def collection_name(prefix: str, model_id: str, dim: int) -> str:
    """One collection per (prefix, embedder model, dimension): vectors are never mixed.

    Readable (a slug of the model id) and exact (a hash of it, since the slug folds).
    """
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", model_id).strip("-")[:48] or "model"
    digest = hashlib.sha256(model_id.encode()).hexdigest()[:10]
    return f"{prefix}_{slug}_{digest}_{dim}"


def payload(tenant: str, point: IndexPoint) -> dict[str, Any]:
    """What a point carries besides its vector: scope and identity, never content."""
    return {
        "tenant": tenant,
        "kind": point.kind,
        "rid": point.id,
        "thread_id": point.thread_id,
        "agent_id": SHARED if point.agent_id is None else point.agent_id,
        "user_id": SHARED if point.user_id is None else point.user_id,
        "model_id": point.model_id,
    }


def qdrant_models() -> Any:
    """``qdrant_client.models``, or ``ConfigurationError`` naming the extra."""
    try:
        from qdrant_client import models
    except ImportError as error:
        raise ConfigurationError(
            "QdrantIndex needs qdrant-client: pip install 'memorybank[qdrant]'"
        ) from error
    return models


def scope_filter(
    tenant: str,
    *,
    kinds: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
    thread_id: str | None = None,
    user_id: str | None = None,
    visible_to: Visibility | None = None,
) -> models.Filter:
    """The Qdrant filter of the scope rule (``Visibility``), per axis, inside the tenant.

    ``visible_to``: an axis asked as a name matches that owner or shared, asked
    as ``None`` matches shared only, ``UNSET`` is not checked. ``user_id``
    (erasure) matches that owner exactly.
    """
    m = qdrant_models()

    def field(key: str, value: str) -> Any:
        return m.FieldCondition(key=key, match=m.MatchValue(value=value))

    must: list[Any] = [field("tenant", tenant)]
    if kinds is not None:
        must.append(m.FieldCondition(key="kind", match=m.MatchAny(any=list(kinds))))
    if ids is not None:
        must.append(m.FieldCondition(key="rid", match=m.MatchAny(any=list(ids))))
    if thread_id is not None:
        must.append(field("thread_id", thread_id))
    if user_id is not None:
        must.append(field("user_id", user_id))
    if visible_to is not None:
        for axis, asking in (("agent_id", visible_to.agent_id), ("user_id", visible_to.user_id)):
            if isinstance(asking, Unset):
                continue
            allowed = [SHARED] if asking is None else [asking, SHARED]
            must.append(m.FieldCondition(key=axis, match=m.MatchAny(any=allowed)))
    result: models.Filter = m.Filter(must=must)
    return result
