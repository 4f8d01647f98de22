"""The Claude memory tool (``memory_20250818``) on an ``AsyncMemory`` handle.

Each command reads the principal's files (one ``record_list`` confined to the
handle's user and agent), plans its change with ``Files`` (pure, in
``memorybank.integrations.anthropic.files``) and applies it: the file records
and their versions in one atomic ``record_put``, compare-and-set on the file's
revision (a concurrent change makes the command start over), then the records
it removes. The handle decides tenant and scope; the tool adds none.
"""

from __future__ import annotations

from collections.abc import Callable

from anthropic.lib.tools._beta_builtin_memory_tool import BetaAsyncAbstractMemoryTool
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from memorybank.core._async.cas import retry_conflicts
from memorybank.errors import ConfigurationError
from memorybank.integrations.anthropic.files import (
    FILE,
    VERSION,
    Files,
    Limits,
    Plan,
    Version,
    check_path,
    versions,
)
from memorybank.memory._async.memory import AsyncMemory
from memorybank.stores.contract import UNSET, RecordGuard

__all__ = ["AsyncMemorybankMemoryTool"]

_HANDLE = AsyncMemory  # named outside the message, so the sync twin names Memory


class AsyncMemorybankMemoryTool(BetaAsyncAbstractMemoryTool):
    """The SDK's async memory tool storing files as records of ``memory``'s principal.

    Args:
        memory: the ``AsyncMemory`` handle to act through (``memory.scoped(user_id=...,
            agent_id=...)`` gives each user, and each agent, its own ``/memories``).
        max_file_bytes, max_total_bytes, max_files: what one principal may keep
            (UTF-8 bytes of one file, of all files, and how many files).
        cache_control: passed to the SDK's tool definition.

    Give it to the SDK's tool runner, ``client.beta.messages.tool_runner(tools=[tool],
    ...)``. ``history(path)`` lists every version of a file.
    """

    def __init__(
        self,
        memory: AsyncMemory,
        *,
        max_file_bytes: int = Limits.max_file_bytes,
        max_total_bytes: int = Limits.max_total_bytes,
        max_files: int = Limits.max_files,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        if not isinstance(memory, AsyncMemory):
            raise ConfigurationError(
                f"memory must be a {_HANDLE.__name__} handle, got {type(memory).__name__}"
            )
        for name, value in (
            ("max_file_bytes", max_file_bytes),
            ("max_total_bytes", max_total_bytes),
            ("max_files", max_files),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError(f"{name} must be a positive integer, got {value!r}")
        super().__init__(cache_control=cache_control)
        self.memory = memory
        self.limits = Limits(max_file_bytes, max_total_bytes, max_files)
        scope = memory.scope
        self._owner = (scope.owner(UNSET), scope.owner(UNSET, "agent_id"))

    async def files(self) -> Files:
        """The principal's files as they are now."""
        user, agent = self._owner
        records = await self.memory.store.record_list(
            self.memory.tenant_id, FILE, user_id=user, agent_id=agent
        )
        return Files(records, self._owner, self.memory.now(), self.limits)

    async def contents(self) -> dict[str, str]:
        """Every file's path and text, sorted by path."""
        files = (await self.files()).files
        return {path: files[path].content for path in sorted(files)}

    async def history(self, path: str) -> list[Version]:
        """Every version of the file at ``path``, oldest first (deletions included)."""
        record_id = (await self.files()).record_id(check_path(path))
        user, agent = self._owner
        records = await self.memory.store.record_list(
            self.memory.tenant_id, VERSION, key=record_id, user_id=user, agent_id=agent
        )
        return versions(records)

    async def _run(self, plan: Callable[[Files], Plan], what: str) -> str:
        async def step() -> str:
            change = plan(await self.files())
            store, tenant = self.memory.store, self.memory.tenant_id
            if change.puts:
                await store.record_put(tenant, change.puts, guard=change.guard)
            if change.deletes:
                only = change.deletes[0] if len(change.deletes) == 1 else None
                guard = None if only is None else RecordGuard(FILE, only.id, only.revision)
                await store.record_delete(tenant, FILE, [r.id for r in change.deletes], guard=guard)
            return change.result

        return await retry_conflicts(step, what)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._run(lambda f: f.view(command.path, command.view_range), "view")

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._run(lambda f: f.create(command.path, command.file_text), "create")

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._run(
            lambda f: f.str_replace(command.path, command.old_str, command.new_str),
            f"memory file {command.path!r}",
        )

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._run(
            lambda f: f.insert(command.path, command.insert_line, command.insert_text),
            f"memory file {command.path!r}",
        )

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._run(lambda f: f.delete(command.path), f"memory path {command.path!r}")

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._run(
            lambda f: f.rename(command.old_path, command.new_path),
            f"memory path {command.old_path!r}",
        )

    async def clear_all_memory(self) -> str:
        """Delete every file of the principal (their versions stay)."""
        return await self._run(lambda f: f.clear(), "memory")
