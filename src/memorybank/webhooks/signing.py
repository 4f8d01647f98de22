"""Signing webhook deliveries, and checking a delivery's signature (the receiver's side).

Every delivery is a ``POST`` of a JSON body with these headers:

``Memorybank-Signature: t=<unix seconds>,v1=<hex>``
    ``<hex>`` is HMAC-SHA256 with the endpoint's secret (its UTF-8 bytes) over the
    bytes ``"<t>." + body``: the timestamp, a dot, then the raw request body exactly as
    received (verify before parsing it). A header may carry several ``v1=`` values
    (while a secret is being replaced); one match is enough.
``Memorybank-Event-Id``
    The event's id: the same on every retry of one event, so a receiver that stores
    the ids it handled drops the duplicates an at-least-once delivery may bring.

A receiver checks the signature with ``verify_signature`` (or ``verifyWebhook`` in the
TypeScript client), which also refuses a timestamp more than ``tolerance`` seconds
from its clock, so a captured delivery cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from memorybank.errors import MemoryBankError

__all__ = [
    "DEFAULT_TOLERANCE",
    "EVENT_ID_HEADER",
    "EVENT_KIND_HEADER",
    "SIGNATURE_HEADER",
    "SignatureError",
    "sign",
    "signature_header",
    "verify_signature",
]

#: The header carrying ``t=<unix seconds>,v1=<hex HMAC-SHA256>``.
SIGNATURE_HEADER = "Memorybank-Signature"
#: The header carrying the event's id (stable across retries: deduplicate on it).
EVENT_ID_HEADER = "Memorybank-Event-Id"
#: The header carrying the event's kind.
EVENT_KIND_HEADER = "Memorybank-Event-Kind"
#: Seconds a signature's timestamp may differ from the receiver's clock by default.
DEFAULT_TOLERANCE = 300


class SignatureError(MemoryBankError):
    """A webhook delivery's signature is missing, malformed, wrong or too old.

    ``reason`` says which: ``"malformed"`` (no ``t=`` or no ``v1=``), ``"mismatch"``
    (no ``v1=`` value matches the body and secret) or ``"stale"`` (the timestamp is
    more than the tolerance away from now)."""

    code = "webhook_signature"

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _as_bytes(value: str | bytes) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else value


def sign(secret: str | bytes, timestamp: int, body: str | bytes) -> str:
    """The hex HMAC-SHA256 of ``"<timestamp>." + body`` under ``secret``."""
    message = str(int(timestamp)).encode("ascii") + b"." + _as_bytes(body)
    return hmac.new(_as_bytes(secret), message, hashlib.sha256).hexdigest()


def signature_header(
    secret: str | bytes, body: str | bytes, *, timestamp: int | None = None
) -> str:
    """The ``Memorybank-Signature`` value for ``body``: ``t=<timestamp>,v1=<hex>``
    (``timestamp``: now, in whole Unix seconds)."""
    when = int(time.time()) if timestamp is None else int(timestamp)
    return f"t={when},v1={sign(secret, when, body)}"


def verify_signature(
    secret: str | bytes,
    header: str | None,
    body: str | bytes,
    tolerance: float = DEFAULT_TOLERANCE,
    *,
    now: float | None = None,
) -> int:
    """Check a delivery: ``header`` is its ``Memorybank-Signature`` value, ``body`` the raw
    request body. Returns the signature's timestamp (Unix seconds).

    Raises ``SignatureError`` when the header is missing or malformed, when no ``v1=``
    value is the HMAC of this body under ``secret`` (compared in constant time), or when
    the timestamp is more than ``tolerance`` seconds from ``now`` (default: the clock).
    """
    if not header:
        raise SignatureError(f"no {SIGNATURE_HEADER} header", "malformed")
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if name == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise SignatureError(
                    f"bad timestamp {value!r} in the signature", "malformed"
                ) from None
        elif name == "v1":
            candidates.append(value.strip())
    if timestamp is None or not candidates:
        raise SignatureError("the signature needs t= and v1=", "malformed")
    expected = sign(secret, timestamp, body)
    # every candidate is compared (constant time each), whatever matched first
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(
            candidate.encode("ascii", "replace"), expected.encode("ascii")
        )
    if not matched:
        raise SignatureError("the signature does not match the body and secret", "mismatch")
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise SignatureError(
            f"the signature's timestamp is {abs(current - timestamp):.0f} s from now"
            f" (tolerance {tolerance:g} s)",
            "stale",
        )
    return timestamp
