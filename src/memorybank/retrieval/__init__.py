"""The ranking core's former name: ``memorybank.recall`` now (same names).

``from memorybank.retrieval import HybridRanker`` keeps working.
"""

from memorybank.recall import *  # noqa: F403
from memorybank.recall import __all__ as __all__
