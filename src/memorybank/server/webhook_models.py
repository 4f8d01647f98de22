"""Bodies of the webhook admin routes (``/v1/admin/webhooks``).

``WebhookOut`` mirrors ``memorybank.webhooks.WebhookInfo`` field for field (never the
secret: ``WebhookCreated`` carries it once).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["WebhookCreated", "WebhookIn", "WebhookOut", "WebhookPatch"]

_ATTRS = ConfigDict(from_attributes=True)
_STRICT = ConfigDict(extra="forbid")


class WebhookIn(BaseModel):
    """A new endpoint of ``tenant``. ``kinds``: the event kinds to deliver (null: all);
    ``secret``: the signing secret (null: generated, returned once); ``start``: ``now``
    delivers events written from now on, ``beginning`` also those the feed still keeps."""

    model_config = _STRICT
    tenant: str
    url: str
    kinds: list[str] | None = None
    secret: str | None = None
    description: str | None = None
    start: Literal["now", "beginning"] = "now"


class WebhookPatch(BaseModel):
    """Fields to change; ``paused``: true pauses deliveries, false resumes them from the
    endpoint's cursor (its failures reset). Fields left out stay as they are."""

    model_config = _STRICT
    url: str | None = None
    kinds: list[str] | None = None
    description: str | None = None
    paused: bool | None = None


class WebhookOut(BaseModel):
    """An endpoint and its delivery state (``memorybank.webhooks.WebhookInfo``):
    ``state`` ``active`` or ``paused`` (``paused_reason`` says why), ``failures`` the
    consecutive failed deliveries, ``cursor`` the feed cursor of the last event delivered."""

    model_config = _ATTRS
    id: str
    tenant: str
    url: str
    kinds: list[str] | None
    description: str | None
    state: str
    paused_reason: str | None
    paused_at: datetime | None
    failures: int
    last_error: str | None
    last_attempt_at: datetime | None
    last_success_at: datetime | None
    delivered: int
    cursor: str | None
    created_at: datetime
    updated_at: datetime


class WebhookCreated(BaseModel):
    """A new endpoint: ``secret`` signs its deliveries and is shown this once."""

    webhook: WebhookOut
    secret: str
