"""Globally unique, time-sortable ids (ULID layout, Crockford base32, 26 characters),
and ids derived from other ids (``compound_id``).

Written by hand because it is 30 lines and every store needs ids that two server
processes can never mint twice (a per-process counter was a bug in a reference
system): 48 bits of milliseconds, then 80 random bits; ids minted in the same
millisecond by one process increment the random part so they still sort.
"""

from __future__ import annotations

import os
import threading
import time

from memorybank.rules.validate import MAX_ID_LENGTH

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


#: Every pair of base32 digits (10 bits): half the steps of one digit at a time.
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]


def _encode(value: int, length: int) -> str:
    """``value`` as ``length`` (even) Crockford base32 digits, most significant first."""
    pairs = []
    for _ in range(length // 2):
        pairs.append(_PAIRS[value & 1023])
        value >>= 10
    return "".join(reversed(pairs))


def new_id() -> str:
    """Return a new ULID string; later calls in one process sort after earlier ones."""
    global _last_ms, _last_rand
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms = _last_ms
            rand = (_last_rand + 1) & ((1 << 80) - 1)
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last_ms, _last_rand = ms, rand
    # ``_encode(ms, 10) + _encode(rand, 16)`` unrolled (one id per appended message):
    # the random part in two 40-bit halves, each four pairs of digits.
    p = _PAIRS
    high, low = rand >> 40, rand & 0xFF_FFFF_FFFF
    return (
        f"{p[ms >> 40 & 1023]}{p[ms >> 30 & 1023]}{p[ms >> 20 & 1023]}{p[ms >> 10 & 1023]}"
        f"{p[ms & 1023]}{p[high >> 30]}{p[high >> 20 & 1023]}{p[high >> 10 & 1023]}"
        f"{p[high & 1023]}{p[low >> 30]}{p[low >> 20 & 1023]}{p[low >> 10 & 1023]}{p[low & 1023]}"
    )


def compound_id(readable: str) -> str:
    """An id derived from other ids, at most ``MAX_ID_LENGTH`` characters long.

    Stores hold ids of up to ``MAX_ID_LENGTH`` characters (MySQL's id columns are
    exactly that wide), so an id joining several validated ids (a core fact's user
    and key, a fact and one of its source entries) must not be longer. ``readable``
    is kept when it fits, so every id stored so far is unchanged; a longer one
    becomes ``"#"`` and the 64 hex digits of its BLAKE2b-256. Callers' readable
    forms never start with ``"#"`` (a JSON array, a ULID), so the two forms cannot
    meet.
    """
    if len(readable) <= MAX_ID_LENGTH:
        return readable
    import hashlib  # on first use: most processes never need it (cold start)

    return "#" + hashlib.blake2b(readable.encode(), digest_size=32).hexdigest()
