"""``verify_signature``: the receiver's check of a delivery (good, tampered, stale, malformed)."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from memorybank.webhooks import SignatureError, sign, signature_header, verify_signature

SECRET = "whsec_a-secret-of-the-test"
BODY = b'{"id":"ev_1","kind":"entry.added","note":"zo\xc3\xab"}'
T = 1_780_000_000


def test_the_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    expected = hmac.new(SECRET.encode(), f"{T}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert sign(SECRET, T, BODY) == expected
    assert signature_header(SECRET, BODY, timestamp=T) == f"t={T},v1={expected}"
    assert sign(SECRET, T, BODY.decode()) == expected  # str bodies are their UTF-8 bytes


def test_a_good_signature_verifies_within_the_tolerance() -> None:
    header = signature_header(SECRET, BODY, timestamp=T)
    assert verify_signature(SECRET, header, BODY, now=T) == T
    assert verify_signature(SECRET, header, BODY, now=T + 300) == T
    assert verify_signature(SECRET, header, BODY, now=T - 300) == T
    assert verify_signature(SECRET, header, BODY, tolerance=3600, now=T + 3000) == T
    # a rotating sender may put several v1 values: one match is enough
    both = f"t={T},v1={'0' * 64},v1={sign(SECRET, T, BODY)}"
    assert verify_signature(SECRET, both, BODY, now=T) == T


@pytest.mark.parametrize(
    ("secret", "body", "shift"),
    [
        (SECRET, BODY + b" ", 0),  # the body was changed
        ("whsec_another-secret-entirely", BODY, 0),  # another endpoint's secret
        (SECRET, BODY, 1),  # the timestamp was changed
    ],
    ids=["body", "secret", "timestamp"],
)
def test_a_bad_signature_is_a_mismatch(secret: str, body: bytes, shift: int) -> None:
    header = signature_header(SECRET, BODY, timestamp=T).replace(f"t={T}", f"t={T + shift}")
    with pytest.raises(SignatureError) as error:
        verify_signature(secret, header, body, now=T)
    assert error.value.reason == "mismatch" and error.value.code == "webhook_signature"


@pytest.mark.parametrize("offset", [301, -301, 86_400])
def test_a_stale_signature_is_refused(offset: int) -> None:
    """A replayed (or far-future) delivery: the signature matches, the time does not."""
    header = signature_header(SECRET, BODY, timestamp=T)
    with pytest.raises(SignatureError) as error:
        verify_signature(SECRET, header, BODY, now=T + offset)
    assert error.value.reason == "stale"


@pytest.mark.parametrize(
    "header", [None, "", f"t={T}", "v1=abc", "t=soon,v1=abc", "garbage", f"v1={'0' * 64}"]
)
def test_a_malformed_header_is_refused(header: str | None) -> None:
    with pytest.raises(SignatureError) as error:
        verify_signature(SECRET, header, BODY, now=T)
    assert error.value.reason == "malformed"
