"""memorybank: memory for LLM agents.

Persistent conversation threads with branches and time travel, working memory,
snapshots and summaries, exact token windows; embedded on one SQLite file or on
PostgreSQL, Redis and MySQL/MariaDB. ``AsyncMemory`` is the primary API,
``Memory`` its synchronous twin with the same names.
"""

from typing import TYPE_CHECKING, Any

from memorybank._longterm import (
    CompactionResult,
    CompactionService,
    Context,
    ContextBuilder,
    ContextOptions,
    CoreFacts,
    Session,
    SessionManager,
)
from memorybank.errors import (
    ConfigurationError,
    Conflict,
    InvalidInput,
    MemoryBankError,
    NotFound,
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
    from memorybank._async.memory import AsyncMemory
    from memorybank._sync.memory import Memory

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Imported on first use so that `from memorybank import Memory` never loads asyncio.
    if name == "Memory":
        from memorybank._sync.memory import Memory

        return Memory
    if name == "AsyncMemory":
        from memorybank._async.memory import AsyncMemory

        return AsyncMemory
    raise AttributeError(f"module 'memorybank' has no attribute {name!r}")


__all__ = [
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
    "Document",
    "Entry",
    "Fact",
    "Hit",
    "InvalidInput",
    "Memory",
    "MemoryBankError",
    "Message",
    "NotFound",
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
