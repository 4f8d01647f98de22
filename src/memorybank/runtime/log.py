"""The library's logger, quiet unless the application configures logging.

A library logs and the application decides where records go: without a
handler on ``memorybank``, logging's last-resort handler would print our
warnings to stderr in an application that never configured logging. The
handler is attached here, when something first logs, rather than in
``memorybank/__init__.py``.

``logger`` stands for ``logging.getLogger("memorybank")`` and loads ``logging``
(with ``traceback``, ``string`` and ``threading``'s hooks, a few ms) on its first
use: the modules that log import it at module level, and a script that only reads
history never logs, so never imports ``logging`` (cold start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["logger"]

if TYPE_CHECKING:
    import logging


class _Logger:
    """Forwards every attribute to the ``memorybank`` logger, made on first use."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        import logging

        real = logging.getLogger("memorybank")
        if not any(isinstance(h, logging.NullHandler) for h in real.handlers):
            real.addHandler(logging.NullHandler())
        return getattr(real, name)


logger: logging.Logger = _Logger()  # type: ignore[assignment]
