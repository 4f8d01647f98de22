"""The conformance suite, importable by third-party stores (needs pytest).

``AsyncContract`` runs every behaviour through ``AsyncMemory`` on an async store;
``SyncContract`` (generated from it) runs the same through ``Memory`` on a sync
store. Subclass one and provide a ``store`` fixture; see the ``contract`` package.
``AsyncGraphContract`` / ``SyncGraphContract`` do the same for the knowledge
graph (``graph.py``).
"""

from memorybank.testing._async.contract import AsyncContract
from memorybank.testing._async.graph import AsyncGraphContract
from memorybank.testing._sync.contract import SyncContract
from memorybank.testing._sync.graph import SyncGraphContract

__all__ = ["AsyncContract", "AsyncGraphContract", "SyncContract", "SyncGraphContract"]
