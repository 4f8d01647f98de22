"""The library's logger, quiet unless the application configures logging.

A library logs and the application decides where records go: without a
handler on ``memorybank``, logging's last-resort handler would print our
warnings to stderr in an application that never configured logging. The
handler is attached here, by the modules that log, rather than in
``memorybank/__init__.py``: a script that only reads history never imports
``logging`` (cold start).
"""

from __future__ import annotations

import logging

__all__ = ["logger"]

logger = logging.getLogger("memorybank")
logger.addHandler(logging.NullHandler())
