"""Webhooks: every change of a tenant's memory, posted signed to the endpoints it registered.

* ``Webhooks``: register, list, pause, resume and delete endpoints (per tenant; kept as
  records of a reserved tenant, on every store).
* ``WebhookWorker``: delivers each tenant's change feed (``memory.events``) to its
  endpoints, at least once, in order, with retries; one worker per endpoint at a time
  across processes and nodes (a lease). The HTTP service runs one.
* ``verify_signature``: the receiver's check of a delivery's ``Memorybank-Signature``.

See ``docs/webhooks.md`` for the delivery format and its guarantees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.webhooks.registry import WEBHOOK_KIND, WEBHOOK_TENANT, WebhookInfo, Webhooks
from memorybank.webhooks.signing import (
    DEFAULT_TOLERANCE,
    EVENT_ID_HEADER,
    EVENT_KIND_HEADER,
    SIGNATURE_HEADER,
    SignatureError,
    sign,
    signature_header,
    verify_signature,
)

if TYPE_CHECKING:
    from memorybank.webhooks.delivery import WebhookWorker

__all__ = [
    "DEFAULT_TOLERANCE",
    "EVENT_ID_HEADER",
    "EVENT_KIND_HEADER",
    "SIGNATURE_HEADER",
    "WEBHOOK_KIND",
    "WEBHOOK_TENANT",
    "SignatureError",
    "WebhookInfo",
    "WebhookWorker",
    "Webhooks",
    "sign",
    "signature_header",
    "verify_signature",
]


def __getattr__(name: str) -> object:
    # the worker needs httpx (the ``server`` extra): loaded on first use
    if name == "WebhookWorker":
        from memorybank.webhooks.delivery import WebhookWorker

        return WebhookWorker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
