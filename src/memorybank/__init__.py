"""memorybank: memory for LLM agents.

Persistent conversation threads with branches and time travel, working memory,
snapshots and summaries, exact token windows; embedded on one SQLite file or on
PostgreSQL, Redis and MySQL/MariaDB. ``AsyncMemory`` is the primary API,
``Memory`` its synchronous twin with the same names.
"""

from typing import TYPE_CHECKING, Any

from memorybank.errors import (
    ConfigurationError,
    Conflict,
    CursorExpired,
    ExtractionError,
    HistoryDiverged,
    InvalidInput,
    MemoryBankError,
    NotFound,
    OutOfScope,
    StoreClosed,
    StoreError,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.records import (
    Branch,
    Document,
    Entry,
    Fact,
    Hit,
    Message,
    Summary,
    Thread,
    ToolCall,
)

if TYPE_CHECKING:
    from memorybank.context.values import (
        CompactionResult,
        CompactionService,
        Context,
        ContextBuilder,
        ContextOptions,
        Session,
        SessionManager,
    )
    from memorybank.memory._async.core_facts import AsyncCoreFacts
    from memorybank.memory._async.memory import AsyncMemory
    from memorybank.memory._sync.core_facts import CoreFacts
    from memorybank.memory._sync.memory import Memory

__version__ = "0.1.0"


_LAZY = {
    "Memory": "memorybank.memory._sync.memory",
    "AsyncMemory": "memorybank.memory._async.memory",
    "CompactionResult": "memorybank.context.values",
    "CompactionService": "memorybank.context.values",
    "Context": "memorybank.context.values",
    "ContextBuilder": "memorybank.context.values",
    "ContextOptions": "memorybank.context.values",
    "CoreFacts": "memorybank.memory._sync.core_facts",
    "AsyncCoreFacts": "memorybank.memory._async.core_facts",
    "Session": "memorybank.context.values",
    "SessionManager": "memorybank.context.values",
}


def __getattr__(name: str) -> Any:
    # Imported on first use: `from memorybank import Memory` loads neither asyncio nor
    # the long-term memory helpers, which keeps a cold start of a script short.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memorybank' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AsyncCoreFacts",
    "AsyncMemory",
    "Branch",
    "CompactionResult",
    "CompactionService",
    "ConfigurationError",
    "Conflict",
    "Context",
    "ContextBuilder",
    "ContextOptions",
    "CoreFacts",
    "CursorExpired",
    "Document",
    "Entry",
    "ExtractionError",
    "Fact",
    "HistoryDiverged",
    "Hit",
    "InvalidInput",
    "Memory",
    "MemoryBankError",
    "Message",
    "NotFound",
    "OutOfScope",
    "Session",
    "SessionManager",
    "StoreClosed",
    "StoreError",
    "StoreUnavailable",
    "Summary",
    "Thread",
    "ThreadForbidden",
    "ToolCall",
    "__version__",
]
