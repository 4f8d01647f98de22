"""The change feed: every change to a tenant's memory as an ordered list of ``Event``.

See ``memorybank.events.types`` and docs/events.md. Its names are the types module's
(``memorybank.events.types.__all__``).
"""

from memorybank.events.types import *  # noqa: F403
from memorybank.events.types import __all__ as __all__
