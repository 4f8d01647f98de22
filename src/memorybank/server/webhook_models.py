"""Bodies of the webhook admin routes (``/v1/admin/webhooks``).

``WebhookOut`` is generated from ``memorybank.webhooks.WebhookInfo`` (never the secret:
``WebhookCreated`` carries it once).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from memorybank.server.responses_generated import WebhookOut

__all__ = ["WebhookCreated", "WebhookIn", "WebhookOut", "WebhookPatch"]

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


class WebhookCreated(BaseModel):
    """A new endpoint: ``secret`` signs its deliveries and is shown this once."""

    webhook: WebhookOut
    secret: str
