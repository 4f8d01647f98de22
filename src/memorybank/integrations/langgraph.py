"""LangGraph on memorybank: a checkpointer (``pip install 'memorybank[langgraph]'``).

- ``AsyncMemorybankSaver(memory)`` with an ``AsyncMemory``; ``MemorybankSaver(memory)``
  with a ``Memory``: LangGraph checkpointers on any memorybank store, passing
  ``langgraph-checkpoint-conformance`` (base capabilities plus ``copy_thread``,
  ``delete_for_runs`` and ``prune``). Channel values are stored once per
  version, not once per checkpoint.

The memory handle decides tenant and scope: pass ``memory.scoped(user_id=...)``
to keep one user's graphs apart from another's.
"""

from memorybank._async.integrations.langgraph import AsyncMemorybankSaver
from memorybank._sync.integrations.langgraph import MemorybankSaver

__all__ = ["AsyncMemorybankSaver", "MemorybankSaver"]
