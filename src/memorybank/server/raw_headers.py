"""``X-User-Id`` exactly as sent: the whitespace the HTTP parsers drop, made visible.

HTTP parsers drop the optional whitespace around a header's value before the
application sees it: both of uvicorn's parsers turn ``X-User-Id:  alice`` (two
spaces) and ``X-User-Id:\\talice`` into ``alice``, and h11 also drops trailing
spaces and tabs. For an id header that is an impersonation: ids compare exactly,
so ``" alice"`` is another user than ``"alice"`` and must never act as her.

``ExactUserHeaders`` is mixed into uvicorn's HTTP protocol (``memorybank.server.limits.
ServeHttpProtocol``, what ``memorybank serve`` runs) and looks at the raw bytes before the parser
does: an ``X-User-Id`` (or ``X-User-Id-Encoded``) line whose value has whitespace
beyond the single space after the colon, or any at its end, is renamed
``X-User-Id-Padded`` (same value), so the application sees no ``X-User-Id`` but
the padded one and refuses the request (422 naming ``X-User-Id``, see ``memorybank.server.deps``).
A line split across reads is held back until its end arrives (at most
``MAX_HELD`` bytes). The rename is applied anywhere in the stream, bodies
included: a JSON body cannot hold a raw line break followed by an unquoted
``X-User-Id:``, so no valid body changes.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_HELD",
    "PADDED",
    "ExactUserHeaders",
    "mark_padded",
]

#: The header the application sees instead of an ``X-User-Id`` sent with extra whitespace.
PADDED = "x-user-id-padded"
#: Longest incomplete ``X-User-Id`` line held back waiting for its end (bytes).
MAX_HELD = 16 * 1024

_NAMES = (b"x-user-id:", b"x-user-id-encoded:")
_LINE = re.compile(rb"\r\n(x-user-id(?:-encoded)?):([^\r\n]*)\r\n", re.IGNORECASE)


def _padded(value: bytes) -> bool:
    """Whether a raw header value (what follows the colon) carries whitespace an id does
    not: more than one space or a tab before it, or any space or tab after it."""
    body = value[1:] if value.startswith(b" ") else value
    if not body:  # an empty id, not whitespace around one: refused as empty
        return False
    return body[:1] in (b" ", b"\t") or value[-1:] in (b" ", b"\t")


def mark_padded(tail: bytes, data: bytes) -> tuple[bytes, bytes]:
    """``data`` with every padded ``X-User-Id`` line renamed (see the module docstring), and
    the end of it held back for the next read (an ``X-User-Id`` line not yet complete).

    ``tail`` is the last two bytes already passed on (a line break split across reads).
    """
    joined = tail + data
    out: list[bytes] = []
    last = len(tail)
    for match in _LINE.finditer(joined):
        if _padded(match.group(2)):
            out.append(joined[last : match.start(1)])
            out.append(PADDED.encode())
            last = match.end(1)
    end = len(joined)
    line = joined.rfind(b"\r\n")
    start = line + 2
    if line >= 0 and start >= last:
        rest = joined[start:].lower()
        opening = any(
            (0 < len(rest) < len(name) and name.startswith(rest))
            or (rest.startswith(name) and len(rest) <= MAX_HELD)
            for name in _NAMES
        )
        if opening:
            end = start
    out.append(joined[last:end])
    return b"".join(out), joined[end:]


class ExactUserHeaders:
    """Mixin for a uvicorn HTTP protocol: ``data_received`` passes the bytes through
    ``mark_padded`` first."""

    _mb_tail: bytes = b""
    _mb_held: bytes = b""

    def data_received(self, data: bytes) -> None:
        passed, self._mb_held = mark_padded(self._mb_tail, self._mb_held + data)
        if passed:
            self._mb_tail = (self._mb_tail + passed)[-2:]
            super().data_received(passed)  # type: ignore[misc]
