"""``MemorybankMemoryTool`` (Claude's ``memory_20250818`` tool) with the real Anthropic SDK.

The first part is the SDK's own tests of its memory tool
(``tests/lib/tools/memory_tools/test_filesystem.py``, class
``TestBetaLocalFilesystemMemoryTool``), ported: the same commands, the same
expected answers and errors, with the directory snapshot read from the tool's
records instead of a folder. Of its 31 cases 27 apply and pass; the 4 left out
test the file system itself (the permission bits of created folders, 3 symlink
escapes), which a store has none of. The SDK's async class repeats the same
cases on ``BetaAsyncLocalFilesystemMemoryTool``; ``AsyncMemorybankMemoryTool``
is generated from the same source as the sync tool (``_async`` -> ``_sync``)
and is run below through the SDK's async tool runner.

Then: the SDK's tool runner against a scripted Messages API of the test's own
(uvicorn on a loopback port, via ``base_url``), the traversal and oversize
corpora, versions, and bad input. SQLite and PostgreSQL each.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("anthropic")

from anthropic import Anthropic, AsyncAnthropic
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool
from anthropic.lib.tools._beta_functions import ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from memorybank import AsyncMemory, ConfigurationError, Memory
from memorybank.integrations.anthropic import (
    FILE,
    VERSION,
    AsyncMemorybankMemoryTool,
    MemorybankMemoryTool,
)
from tests.integrations import _stores
from tests.integrations._messages_api import scripted_api, text, tool_use

memory = _stores.memory
amemory = _stores.amemory


@pytest.fixture
def tool(memory: Memory) -> Iterator[MemorybankMemoryTool]:
    yield MemorybankMemoryTool(memory.scoped(user_id="alice", agent_id="claude"))


def snapshot(tool: MemorybankMemoryTool) -> dict[str, str]:
    """The tool's files as the SDK's tests read a folder: ``{"memories/a.txt": text}``."""
    return {path.lstrip("/"): content for path, content in tool.contents().items()}


# -- the SDK's tests, ported ---------------------------------------------------


def test_sdk_create(tool: MemorybankMemoryTool) -> None:
    result = tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Hello, World!",
            path="/memories/test_file.txt",
        )
    )
    assert result == "File created successfully at: /memories/test_file.txt"
    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/test_file.txt": "Hello, World!"}

def test_sdk_create_nested_directories(tool: MemorybankMemoryTool) -> None:
    result = tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Nested file",
            path="/memories/deep/nested/file.txt",
        )
    )
    assert result == "File created successfully at: /memories/deep/nested/file.txt"
    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/deep/nested/file.txt": "Nested file"}

def test_sdk_create_error_if_file_already_exists(
    tool: MemorybankMemoryTool
) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Original",
            path="/memories/existing.txt",
        )
    )

    with pytest.raises(ToolError, match="File /memories/existing.txt already exists"):
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="New",
                path="/memories/existing.txt",
            )
        )

def test_sdk_view_file(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Line 1\nLine 2\nLine 3",
            path="/memories/view_test.txt",
        )
    )

    result = tool.view(
        BetaMemoryTool20250818ViewCommand(command="view", path="/memories/view_test.txt")
    )
    assert (
        result
        == "Here's the content of /memories/view_test.txt with line numbers:\n     1\tLine 1\n     2\tLine 2\n     3\tLine 3"
    )

def test_sdk_view_directory(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="File 1",
            path="/memories/dir/file1.txt",
        )
    )

    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="File 2",
            path="/memories/dir/file2.txt",
        )
    )

    result = tool.view(
        BetaMemoryTool20250818ViewCommand(command="view", path="/memories/dir")
    )

    assert "Here're the files and directories up to 2 levels deep in /memories/dir" in result
    assert "/memories/dir" in result
    assert "/memories/dir/file1.txt" in result
    assert "/memories/dir/file2.txt" in result

def test_sdk_view_file_with_range(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Line 1\nLine 2\nLine 3\nLine 4\nLine 5",
            path="/memories/range_test.txt",
        )
    )

    result = tool.view(
        BetaMemoryTool20250818ViewCommand(command="view", path="/memories/range_test.txt", view_range=[2, 4])
    )

    assert (
        result
        == "Here's the content of /memories/range_test.txt with line numbers:\n     2\tLine 2\n     3\tLine 3\n     4\tLine 4"
    )

def test_sdk_view_error_for_non_existent_file(tool: MemorybankMemoryTool) -> None:
    with pytest.raises(
        ToolError, match="The path /memories/nonexistent.txt does not exist. Please provide a valid path."
    ):
        tool.view(
            BetaMemoryTool20250818ViewCommand(command="view", path="/memories/nonexistent.txt")
        )

def test_sdk_view_error_for_files_with_too_many_lines(
    tool: MemorybankMemoryTool
) -> None:
    # a million lines are 5 MB: over the default limits, so this tool allows them
    tool = MemorybankMemoryTool(tool.memory, max_file_bytes=6_000_000, max_total_bytes=6_000_000)
    too_many_lines = "\n".join(["line"] * 1000000)
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text=too_many_lines,
            path="/memories/huge.txt",
        )
    )

    with pytest.raises(ToolError, match=r"exceeds maximum line limit of 999,999 lines"):
        tool.view(
            BetaMemoryTool20250818ViewCommand(command="view", path="/memories/huge.txt")
        )

def test_sdk_str_replace(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Line 1\nOld Text\nLine 3",
            path="/memories/replace_test.txt",
        )
    )

    result = tool.str_replace(
        BetaMemoryTool20250818StrReplaceCommand(
            command="str_replace",
            path="/memories/replace_test.txt",
            old_str="Old Text",
            new_str="New Text",
        )
    )

    assert (
        result
        == "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tLine 1\n     2\tNew Text\n     3\tLine 3"
    )

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/replace_test.txt": "Line 1\nNew Text\nLine 3"}

def test_sdk_str_replace_error_when_string_not_found(
    tool: MemorybankMemoryTool
) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Hello, World!",
            path="/memories/replace_test.txt",
        )
    )

    with pytest.raises(
        ToolError,
        match="No replacement was performed, old_str `NotFound` did not appear verbatim in /memories/replace_test.txt.",
    ):
        tool.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace",
                path="/memories/replace_test.txt",
                old_str="NotFound",
                new_str="Python",
            )
        )

def test_sdk_str_replace_error_when_string_appears_multiple_times(
    tool: MemorybankMemoryTool
) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Hello\nMiddle\nHello",
            path="/memories/replace_test.txt",
        )
    )

    with pytest.raises(
        ToolError,
        match=r"No replacement was performed\. Multiple occurrences of old_str `Hello` in lines: 1, 3\. Please ensure it is unique",
    ):
        tool.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace",
                path="/memories/replace_test.txt",
                old_str="Hello",
                new_str="Hi",
            )
        )

def test_sdk_str_replace_error_for_non_existent_file(
    tool: MemorybankMemoryTool
) -> None:
    with pytest.raises(
        ToolError, match="The path /memories/nonexistent.txt does not exist. Please provide a valid path."
    ):
        tool.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace",
                path="/memories/nonexistent.txt",
                old_str="old",
                new_str="new",
            )
        )

def test_sdk_insert(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt"
        )
    )

    result = tool.insert(
        BetaMemoryTool20250818InsertCommand(
            command="insert", path="/memories/insert_test.txt", insert_line=1, insert_text="Inserted Line"
        )
    )
    assert result == "The file /memories/insert_test.txt has been edited."

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/insert_test.txt": "Line 1\nInserted Line\nLine 2\n"}

def test_sdk_insert_at_beginning_of_file(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt"
        )
    )

    tool.insert(
        BetaMemoryTool20250818InsertCommand(
            command="insert", path="/memories/insert_test.txt", insert_line=0, insert_text="First Line"
        )
    )

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/insert_test.txt": "First Line\nLine 1\nLine 2\n"}

def test_sdk_insert_at_end_of_file(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt"
        )
    )

    tool.insert(
        BetaMemoryTool20250818InsertCommand(
            command="insert", path="/memories/insert_test.txt", insert_line=2, insert_text="Last Line"
        )
    )

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/insert_test.txt": "Line 1\nLine 2\nLast Line\n"}

def test_sdk_insert_error_for_non_existent_file(
    tool: MemorybankMemoryTool
) -> None:
    with pytest.raises(
        ToolError, match="The path /memories/nonexistent.txt does not exist. Please provide a valid path."
    ):
        tool.insert(
            BetaMemoryTool20250818InsertCommand(
                command="insert", path="/memories/nonexistent.txt", insert_line=0, insert_text="text"
            )
        )

def test_sdk_insert_error_for_invalid_insert_line(
    tool: MemorybankMemoryTool
) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt"
        )
    )

    with pytest.raises(
        ToolError,
        match=r"Invalid `insert_line` parameter: 10. It should be within the range \[0, 2\]",
    ):
        tool.insert(
            BetaMemoryTool20250818InsertCommand(
                command="insert", path="/memories/insert_test.txt", insert_line=10, insert_text="text"
            )
        )

def test_sdk_delete(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="To be deleted", path="/memories/delete_me.txt"
        )
    )

    result = tool.delete(
        BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/delete_me.txt")
    )
    assert result == "Successfully deleted /memories/delete_me.txt"

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {}

def test_sdk_delete_directory(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(command="create", file_text="Content", path="/memories/subdir/file.txt")
    )

    result = tool.delete(
        BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/subdir")
    )
    assert result == "Successfully deleted /memories/subdir"

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {}

def test_sdk_delete_error_when_file_not_found(tool: MemorybankMemoryTool) -> None:
    with pytest.raises(ToolError, match="The path /memories/nonexistent.txt does not exist"):
        tool.delete(
            BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/nonexistent.txt")
        )

def test_sdk_delete_not_allow_deleting_memories_directory(
    tool: MemorybankMemoryTool
) -> None:
    with pytest.raises(ToolError, match="Cannot delete the /memories directory itself"):
        tool.delete(BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories"))

def test_sdk_rename(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="Original content", path="/memories/old_name.txt"
        )
    )

    result = tool.rename(
        BetaMemoryTool20250818RenameCommand(
            command="rename", old_path="/memories/old_name.txt", new_path="/memories/new_name.txt"
        )
    )
    assert result == "Successfully renamed /memories/old_name.txt to /memories/new_name.txt"

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/new_name.txt": "Original content"}

def test_sdk_rename_to_nested_path(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(command="create", file_text="Content", path="/memories/file.txt")
    )

    result = tool.rename(
        BetaMemoryTool20250818RenameCommand(
            command="rename", old_path="/memories/file.txt", new_path="/memories/nested/dir/file.txt"
        )
    )
    assert result == "Successfully renamed /memories/file.txt to /memories/nested/dir/file.txt"

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/nested/dir/file.txt": "Content"}

def test_sdk_rename_error_when_source_not_found(
    tool: MemorybankMemoryTool
) -> None:
    with pytest.raises(ToolError, match="The path /memories/nonexistent.txt does not exist"):
        tool.rename(
            BetaMemoryTool20250818RenameCommand(
                command="rename", old_path="/memories/nonexistent.txt", new_path="/memories/new.txt"
            )
        )

def test_sdk_rename_error_when_destination_exists(
    tool: MemorybankMemoryTool
) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(command="create", file_text="File 1", path="/memories/file1.txt")
    )

    tool.create(
        BetaMemoryTool20250818CreateCommand(command="create", file_text="File 2", path="/memories/file2.txt")
    )

    with pytest.raises(ToolError, match="The destination /memories/file2.txt already exists"):
        tool.rename(
            BetaMemoryTool20250818RenameCommand(
                command="rename", old_path="/memories/file1.txt", new_path="/memories/file2.txt"
            )
        )

def test_sdk_path_validation_reject_paths_not_starting_with_memories(
    tool: MemorybankMemoryTool
) -> None:
    with pytest.raises(ToolError, match="Path must start with /memories"):
        tool.create(
            BetaMemoryTool20250818CreateCommand(command="create", file_text="Invalid", path="/invalid/path.txt")
        )

def test_sdk_path_validation_reject_paths_trying_to_escape_memories(
    tool: MemorybankMemoryTool
) -> None:
    with pytest.raises(ToolError, match="Path /memories/../../../etc/passwd would escape /memories directory"):
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Escape attempt", path="/memories/../../../etc/passwd"
            )
        )
