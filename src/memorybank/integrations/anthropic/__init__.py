"""The Claude memory tool on memorybank (``pip install 'memorybank[anthropic]'``)::

    import anthropic
    from memorybank import Memory
    from memorybank.integrations.anthropic import MemorybankMemoryTool

    memory = Memory("sqlite:///agent.db").scoped(user_id="alice", agent_id="assistant")
    tool = MemorybankMemoryTool(memory)
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=1024, tools=[tool],
        messages=[{"role": "user", "content": "Remember that I like coffee"}],
    )
    for message in runner: ...

``MemorybankMemoryTool(memory)`` (a ``Memory``) and ``AsyncMemorybankMemoryTool(memory)``
(an ``AsyncMemory``, for ``AsyncAnthropic``) subclass the SDK's
``BetaAbstractMemoryTool`` / ``BetaAsyncAbstractMemoryTool``: Claude's
``memory_20250818`` tool (``view``, ``create``, ``str_replace``, ``insert``,
``delete``, ``rename`` on paths under ``/memories``). Each file is a record of
the handle's user and agent; every change writes a version (``history(path)``).
Paths are confined to ``/memories`` (``..``, encoded or Unicode look-alike
separators, backslashes and control characters refused), and files and the
whole ``/memories`` have size limits. Answers and errors are worded as the SDK's
local file-system tool words them.

The tool holds no scope logic: ``memory.scoped(user_id=..., agent_id=...)``
decides whose ``/memories`` it is.
"""

from __future__ import annotations

from memorybank.integrations.anthropic._async.tool import AsyncMemorybankMemoryTool
from memorybank.integrations.anthropic._sync.tool import MemorybankMemoryTool
from memorybank.integrations.anthropic.files import FILE, VERSION, Limits, Version, check_path

__all__ = [
    "FILE",
    "VERSION",
    "AsyncMemorybankMemoryTool",
    "Limits",
    "MemorybankMemoryTool",
    "Version",
    "check_path",
]
