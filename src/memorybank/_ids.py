"""Globally unique, time-sortable ids (ULID layout, Crockford base32, 26 characters).

Written by hand because it is 30 lines and every store needs ids that two server
processes can never mint twice (a per-process counter was a bug in a reference
system): 48 bits of milliseconds, then 80 random bits; ids minted in the same
millisecond by one process increment the random part so they still sort.
"""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


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
    return _encode(ms, 10) + _encode(rand, 16)
