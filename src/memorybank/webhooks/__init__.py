"""Webhooks: every change of a tenant's memory, posted signed to the endpoints it registered.

* ``Webhooks``: register, list, pause, resume and delete endpoints (per tenant; kept as
  records of a reserved tenant, on every store).
* ``memorybank.webhooks.delivery.WebhookWorker`` (needs the ``server`` extra's
  ``httpx``): delivers each tenant's change feed (``memory.events``) to its
  endpoints, at least once, in order, with retries; one worker per endpoint at a time
  across processes and nodes (a lease). The HTTP service runs one.
* ``verify_signature``: the receiver's check of a delivery's ``Memorybank-Signature``.

See ``docs/webhooks.md`` for the delivery format and its guarantees.
"""

from __future__ import annotations

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

__all__ = [
    "DEFAULT_TOLERANCE",
    "EVENT_ID_HEADER",
    "EVENT_KIND_HEADER",
    "SIGNATURE_HEADER",
    "WEBHOOK_KIND",
    "WEBHOOK_TENANT",
    "SignatureError",
    "WebhookInfo",
    "Webhooks",
    "sign",
    "signature_header",
    "verify_signature",
]
