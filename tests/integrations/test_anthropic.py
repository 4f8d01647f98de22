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


def test_sdk_create_error_if_file_already_exists(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Original",
            path="/memories/existing.txt",
        )
    )

    with pytest.raises(ToolError, match=r"File /memories/existing.txt already exists"):
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
        == "Here's the content of /memories/view_test.txt with line numbers:\n     1\tLine 1\n     2\tLine 2\n     3\tLine 3"  # noqa: E501
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

    result = tool.view(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/dir"))

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
        BetaMemoryTool20250818ViewCommand(
            command="view", path="/memories/range_test.txt", view_range=[2, 4]
        )
    )

    assert (
        result
        == "Here's the content of /memories/range_test.txt with line numbers:\n     2\tLine 2\n     3\tLine 3\n     4\tLine 4"  # noqa: E501
    )


def test_sdk_view_error_for_non_existent_file(tool: MemorybankMemoryTool) -> None:
    with pytest.raises(
        ToolError,
        match=r"The path /memories/nonexistent.txt does not exist. Please provide a valid path.",
    ):
        tool.view(
            BetaMemoryTool20250818ViewCommand(command="view", path="/memories/nonexistent.txt")
        )


def test_sdk_view_error_for_files_with_too_many_lines(tool: MemorybankMemoryTool) -> None:
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
        tool.view(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/huge.txt"))


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
        == "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tLine 1\n     2\tNew Text\n     3\tLine 3"  # noqa: E501
    )

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/replace_test.txt": "Line 1\nNew Text\nLine 3"}


def test_sdk_str_replace_error_when_string_not_found(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create",
            file_text="Hello, World!",
            path="/memories/replace_test.txt",
        )
    )

    with pytest.raises(
        ToolError,
        match=r"No replacement was performed, old_str `NotFound` did not appear verbatim in /memories/replace_test.txt.",  # noqa: E501
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
    tool: MemorybankMemoryTool,
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
        match=r"No replacement was performed\. Multiple occurrences of old_str `Hello` in lines: 1, 3\. Please ensure it is unique",  # noqa: E501
    ):
        tool.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace",
                path="/memories/replace_test.txt",
                old_str="Hello",
                new_str="Hi",
            )
        )


def test_sdk_str_replace_error_for_non_existent_file(tool: MemorybankMemoryTool) -> None:
    with pytest.raises(
        ToolError,
        match=r"The path /memories/nonexistent.txt does not exist. Please provide a valid path.",
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
            command="insert",
            path="/memories/insert_test.txt",
            insert_line=1,
            insert_text="Inserted Line",
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
            command="insert",
            path="/memories/insert_test.txt",
            insert_line=0,
            insert_text="First Line",
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
            command="insert",
            path="/memories/insert_test.txt",
            insert_line=2,
            insert_text="Last Line",
        )
    )

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/insert_test.txt": "Line 1\nLine 2\nLast Line\n"}


def test_sdk_insert_error_for_non_existent_file(tool: MemorybankMemoryTool) -> None:
    with pytest.raises(
        ToolError,
        match=r"The path /memories/nonexistent.txt does not exist. Please provide a valid path.",
    ):
        tool.insert(
            BetaMemoryTool20250818InsertCommand(
                command="insert",
                path="/memories/nonexistent.txt",
                insert_line=0,
                insert_text="text",
            )
        )


def test_sdk_insert_error_for_invalid_insert_line(tool: MemorybankMemoryTool) -> None:
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
                command="insert",
                path="/memories/insert_test.txt",
                insert_line=10,
                insert_text="text",
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
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="Content", path="/memories/subdir/file.txt"
        )
    )

    result = tool.delete(
        BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/subdir")
    )
    assert result == "Successfully deleted /memories/subdir"

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {}


def test_sdk_delete_error_when_file_not_found(tool: MemorybankMemoryTool) -> None:
    with pytest.raises(ToolError, match=r"The path /memories/nonexistent.txt does not exist"):
        tool.delete(
            BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/nonexistent.txt")
        )


def test_sdk_delete_not_allow_deleting_memories_directory(tool: MemorybankMemoryTool) -> None:
    with pytest.raises(ToolError, match=r"Cannot delete the /memories directory itself"):
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
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="Content", path="/memories/file.txt"
        )
    )

    result = tool.rename(
        BetaMemoryTool20250818RenameCommand(
            command="rename",
            old_path="/memories/file.txt",
            new_path="/memories/nested/dir/file.txt",
        )
    )
    assert result == "Successfully renamed /memories/file.txt to /memories/nested/dir/file.txt"

    dir_snapshot = snapshot(tool)
    assert dir_snapshot == {"memories/nested/dir/file.txt": "Content"}


def test_sdk_rename_error_when_source_not_found(tool: MemorybankMemoryTool) -> None:
    with pytest.raises(ToolError, match=r"The path /memories/nonexistent.txt does not exist"):
        tool.rename(
            BetaMemoryTool20250818RenameCommand(
                command="rename", old_path="/memories/nonexistent.txt", new_path="/memories/new.txt"
            )
        )


def test_sdk_rename_error_when_destination_exists(tool: MemorybankMemoryTool) -> None:
    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="File 1", path="/memories/file1.txt"
        )
    )

    tool.create(
        BetaMemoryTool20250818CreateCommand(
            command="create", file_text="File 2", path="/memories/file2.txt"
        )
    )

    with pytest.raises(ToolError, match=r"The destination /memories/file2.txt already exists"):
        tool.rename(
            BetaMemoryTool20250818RenameCommand(
                command="rename", old_path="/memories/file1.txt", new_path="/memories/file2.txt"
            )
        )


def test_sdk_path_validation_reject_paths_not_starting_with_memories(
    tool: MemorybankMemoryTool,
) -> None:
    with pytest.raises(ToolError, match=r"Path must start with /memories"):
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Invalid", path="/invalid/path.txt"
            )
        )


def test_sdk_path_validation_reject_paths_trying_to_escape_memories(
    tool: MemorybankMemoryTool,
) -> None:
    with pytest.raises(
        ToolError, match=r"Path /memories/../../../etc/passwd would escape /memories directory"
    ):
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Escape attempt", path="/memories/../../../etc/passwd"
            )
        )


# -- the SDK's tool runner, against a scripted Messages API --------------------


def _results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of a request's last (user) message."""
    last = request["messages"][-1]
    assert last["role"] == "user"
    return [b for b in last["content"] if b["type"] == "tool_result"]


def _text_of(result: dict[str, Any]) -> str:
    content = result["content"]
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in content if part["type"] == "text")


RUN = [
    tool_use({"command": "view", "path": "/memories"}, turn=1),
    tool_use(
        {"command": "create", "path": "/memories/prefs.md", "file_text": "# Prefs\n- coffee\n"},
        turn=2,
    ),
    tool_use(
        {"command": "create", "path": "/memories/../../etc/passwd", "file_text": "x"},
        {"command": "view", "path": "/etc/passwd"},
        {"command": "create", "path": "/memories/big.txt", "file_text": "x" * 2_000},
        turn=3,
    ),
    tool_use(
        {
            "command": "str_replace",
            "path": "/memories/prefs.md",
            "old_str": "- coffee",
            "new_str": "- coffee, black",
        },
        {"command": "view", "path": "/memories/prefs.md"},
        turn=4,
    ),
    text("Noted: you take your coffee black.", turn=5),
]


def _check_run(requests: list[dict[str, Any]], final: Any) -> None:
    assert len(requests) == 5
    # the tool is declared as the SDK declares it: Claude's built-in memory tool
    assert requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    (listing,) = _results(requests[1])
    assert listing["tool_use_id"] == "toolu_1_0" and not listing.get("is_error")
    assert _text_of(listing).startswith("Here're the files and directories up to 2 levels deep")
    (created,) = _results(requests[2])
    assert _text_of(created) == "File created successfully at: /memories/prefs.md"
    escape, outside, big = _results(requests[3])
    assert escape["is_error"] and outside["is_error"] and big["is_error"]
    assert "would escape /memories directory" in _text_of(escape)
    assert _text_of(outside) == "Path must start with /memories, got: /etc/passwd"
    assert "over the limit of 1000 bytes per file" in _text_of(big)
    replaced, viewed = _results(requests[4])
    assert "- coffee, black" in _text_of(replaced)
    assert _text_of(viewed) == (
        "Here's the content of /memories/prefs.md with line numbers:\n"
        "     1\t# Prefs\n     2\t- coffee, black\n     3\t"
    )
    assert final.content[0].text == "Noted: you take your coffee black."


def test_the_sdk_tool_runner_drives_the_tool_over_http(memory: Memory) -> None:
    scoped = memory.scoped(user_id="alice", agent_id="claude")
    tool = MemorybankMemoryTool(scoped, max_file_bytes=1_000)
    assert isinstance(tool, BetaAbstractMemoryTool)
    with scripted_api(RUN) as api:
        client = Anthropic(base_url=api.url, api_key="test-key", max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-scripted",
            max_tokens=512,
            tools=[tool],
            messages=[{"role": "user", "content": "I like my coffee black; remember it."}],
        )
        final = runner.until_done()
        client.close()
    _check_run(api.requests, final)
    assert tool.contents() == {"/memories/prefs.md": "# Prefs\n- coffee, black\n"}
    # the refused calls wrote nothing: two versions, the create and the edit
    assert [v.op for v in tool.history("/memories/prefs.md")] == ["create", "edit"]
    assert memory.store.record_list(memory.tenant_id, VERSION, user_id="alice") != []
    assert len(memory.store.record_list(memory.tenant_id, FILE)) == 1


async def test_the_sdk_async_tool_runner_drives_the_async_tool(amemory: AsyncMemory) -> None:
    scoped = amemory.scoped(user_id="alice", agent_id="claude")
    tool = AsyncMemorybankMemoryTool(scoped, max_file_bytes=1_000)
    assert isinstance(tool, BetaAsyncAbstractMemoryTool)
    with scripted_api(RUN) as api:
        client = AsyncAnthropic(base_url=api.url, api_key="test-key", max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-scripted",
            max_tokens=512,
            tools=[tool],
            messages=[{"role": "user", "content": "I like my coffee black; remember it."}],
        )
        final = await runner.until_done()
        await client.close()
    _check_run(api.requests, final)
    assert await tool.contents() == {"/memories/prefs.md": "# Prefs\n- coffee, black\n"}
    assert [v.op for v in await tool.history("/memories/prefs.md")] == ["create", "edit"]


# -- the SDK's async commands on the async tool ---------------------------------


async def test_every_async_command_answers_as_the_sync_one(amemory: AsyncMemory) -> None:
    tool = AsyncMemorybankMemoryTool(amemory.scoped(user_id="alice"))
    assert await tool.call(
        {"command": "create", "path": "/memories/a/notes.txt", "file_text": "one\ntwo"}
    ) == ("File created successfully at: /memories/a/notes.txt")
    assert await tool.insert(
        BetaMemoryTool20250818InsertCommand(
            command="insert", path="/memories/a/notes.txt", insert_line=1, insert_text="1.5"
        )
    ) == ("The file /memories/a/notes.txt has been edited.")
    assert "     2\t1.5" in await tool.str_replace(
        BetaMemoryTool20250818StrReplaceCommand(
            command="str_replace", path="/memories/a/notes.txt", old_str="two", new_str="2"
        )
    )
    assert await tool.rename(
        BetaMemoryTool20250818RenameCommand(
            command="rename", old_path="/memories/a", new_path="/memories/b"
        )
    ) == ("Successfully renamed /memories/a to /memories/b")
    assert await tool.view(
        BetaMemoryTool20250818ViewCommand(command="view", path="/memories/b/notes.txt")
    ) == (
        "Here's the content of /memories/b/notes.txt with line numbers:\n"
        "     1\tone\n     2\t1.5\n     3\t2\n     4\t"
    )
    with pytest.raises(ToolError, match=r"The path /memories/a does not exist"):
        await tool.delete(BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/a"))
    assert await tool.clear_all_memory() == "All memory cleared"
    assert await tool.contents() == {}


# -- a directory listing with sizes --------------------------------------------


def test_view_lists_two_levels_with_sizes_and_hides_hidden_items(
    tool: MemorybankMemoryTool,
) -> None:
    for path, body in {
        "/memories/top.md": "x" * 2048,
        "/memories/p/q.md": "é",  # two bytes
        "/memories/p/r/s/deep.md": "deep",
        "/memories/.hidden/h.md": "h",
    }.items():
        tool.call({"command": "create", "path": path, "file_text": body})
    assert tool.call({"command": "view", "path": "/memories"}) == (
        "Here're the files and directories up to 2 levels deep in /memories,"
        " excluding hidden items:\n"
        "2.0K\t/memories\n"
        "6B\t/memories/p/\n"
        "2B\t/memories/p/q.md\n"
        "4B\t/memories/p/r/\n"
        "2K\t/memories/top.md"
    )
    listing = tool.call({"command": "view", "path": "/memories/p/"})
    assert isinstance(listing, str)
    assert listing.endswith(
        "6B\t/memories/p\n2B\t/memories/p/q.md\n4B\t/memories/p/r/\n4B\t/memories/p/r/s/"
    )


# -- traversal corpus -----------------------------------------------------------

OUTSIDE = [
    "/etc/passwd",
    "memories/a.txt",
    "/memoriesX/a.txt",
    "/tmp/../memories/a.txt",
    "",
    "/",
    "//memories/a.txt",
    "/memories\\..\\etc\\passwd",
]
ESCAPES = [
    "/memories/..",
    "/memories/../etc/passwd",
    "/memories/a/../../etc/passwd",
    "/memories/./a.txt",
    "/memories/a/./b.txt",
]
REFUSED = [
    "/memories//a.txt",
    "/memories/%2e%2e/etc/passwd",
    "/memories/..%2fetc%2fpasswd",
    "/memories/a%2Fb.txt",
    "/memories/%5c..%5cetc",
    "/memories/a\\b.txt",
    "/memories/a\x00.txt",
    "/memories/a\nb.txt",
    "/memories/\u202etxt.exe",
    "/memories/\uff0e\uff0e/etc/passwd",  # fullwidth dots
    "/memories/a\uff0fb.txt",  # fullwidth solidus
    "/memories/\u2024\u2024/x",  # one-dot leaders
    "/memories/" + "a" * 256,
    "/memories" + "/a" * 17,
]


@pytest.mark.parametrize("path", OUTSIDE + ESCAPES + REFUSED)
def test_a_path_outside_memories_is_refused_by_every_command_and_writes_nothing(
    tool: MemorybankMemoryTool, path: str
) -> None:
    tool.call({"command": "create", "path": "/memories/keep.txt", "file_text": "kept"})
    before = tool.memory.store.record_list(tool.memory.tenant_id, VERSION)
    calls: list[dict[str, Any]] = [
        {"command": "view", "path": path},
        {"command": "create", "path": path, "file_text": "pwned"},
        {"command": "str_replace", "path": path, "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/moved.txt"},
        {"command": "rename", "old_path": "/memories/keep.txt", "new_path": path},
    ]
    for call in calls:
        with pytest.raises(ToolError) as refused:
            tool.call(call)
        message = str(refused.value)
        if path in OUTSIDE:
            assert message == f"Path must start with /memories, got: {path}"
        elif path in ESCAPES:
            assert message == f"Path {path} would escape /memories directory"
        else:
            assert message.startswith(f"Path {path} is not allowed: ")
    assert tool.contents() == {"/memories/keep.txt": "kept"}
    assert tool.memory.store.record_list(tool.memory.tenant_id, VERSION) == before


@pytest.mark.parametrize("path", [None, 7, ["/memories/a"], {"p": 1}])
def test_a_path_that_is_not_a_string_is_refused(tool: MemorybankMemoryTool, path: object) -> None:
    with pytest.raises(ToolError, match=r"Path must be a string"):
        tool.call({"command": "create", "path": path, "file_text": "x"})
    assert tool.contents() == {}


def test_other_bad_parameters_are_refused_and_write_nothing(tool: MemorybankMemoryTool) -> None:
    tool.call({"command": "create", "path": "/memories/a.txt", "file_text": "one\ntwo"})
    bad: list[tuple[dict[str, Any], str]] = [
        ({"command": "create", "path": "/memories/b.txt", "file_text": None}, "`file_text`"),
        ({"command": "create", "path": "/memories/b.txt", "file_text": 5}, "`file_text`"),
        ({"command": "insert", "path": "/memories/a.txt", "insert_line": "1"}, "`insert_line`"),
        ({"command": "insert", "path": "/memories/a.txt", "insert_line": True}, "`insert_line`"),
        (
            {"command": "insert", "path": "/memories/a.txt", "insert_line": 0, "insert_text": 1},
            "`insert_text`",
        ),
        ({"command": "str_replace", "path": "/memories/a.txt", "old_str": 1}, "`old_str`"),
        (
            {"command": "str_replace", "path": "/memories/a.txt", "old_str": "", "new_str": "x"},
            "did not appear verbatim",
        ),
        ({"command": "view", "path": "/memories/a.txt", "view_range": [0, 1]}, "`view_range`"),
        ({"command": "view", "path": "/memories/a.txt", "view_range": [3, 2]}, "`view_range`"),
        ({"command": "view", "path": "/memories/a.txt", "view_range": [1]}, "`view_range`"),
        ({"command": "create", "path": "/memories", "file_text": "x"}, "is a directory"),
        ({"command": "create", "path": "/memories/a.txt/b", "file_text": "x"}, "is a file"),
        ({"command": "str_replace", "path": "/memories", "old_str": "a", "new_str": "b"}, "not a"),
        ({"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}, "itself"),
        ({"command": "rename", "old_path": "/memories/a.txt", "new_path": "/memories"}, "exists"),
    ]
    for call, wording in bad:
        with pytest.raises(ToolError, match=wording):
            tool.call(call)
    tool.call({"command": "create", "path": "/memories/d/x.txt", "file_text": "x"})
    with pytest.raises(ToolError, match=r"Cannot move /memories/d into itself"):
        tool.call({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/d/e"})
    assert tool.contents() == {"/memories/a.txt": "one\ntwo", "/memories/d/x.txt": "x"}


# -- oversize corpus ------------------------------------------------------------


def test_sizes_over_the_limits_are_refused_and_write_nothing(memory: Memory) -> None:
    tool = MemorybankMemoryTool(
        memory.scoped(user_id="alice"), max_file_bytes=100, max_total_bytes=250, max_files=3
    )
    tool.call({"command": "create", "path": "/memories/a.txt", "file_text": "a" * 100})
    over: list[tuple[dict[str, Any], str]] = [
        (
            {"command": "create", "path": "/memories/b.txt", "file_text": "b" * 101},
            "File /memories/b.txt would be 101 bytes, over the limit of 100 bytes per file",
        ),
        (  # 51 two-byte characters: 102 bytes, though 51 characters
            {"command": "create", "path": "/memories/b.txt", "file_text": "é" * 51},
            "would be 102 bytes",
        ),
        (
            {
                "command": "str_replace",
                "path": "/memories/a.txt",
                "old_str": "a" * 100,
                "new_str": "a" * 101,
            },
            "would be 101 bytes",
        ),
        (
            {"command": "insert", "path": "/memories/a.txt", "insert_line": 0, "insert_text": ""},
            "would be 102 bytes",  # a line and the trailing newline
        ),
    ]
    for call, wording in over:
        with pytest.raises(ToolError, match=wording):
            tool.call(call)
    tool.call({"command": "create", "path": "/memories/b.txt", "file_text": "b" * 100})
    with pytest.raises(ToolError, match=r"Memory would hold 251 bytes, over the limit of 250"):
        tool.call({"command": "create", "path": "/memories/c.txt", "file_text": "c" * 51})
    tool.call({"command": "create", "path": "/memories/c.txt", "file_text": "c"})
    with pytest.raises(ToolError, match=r"Memory holds 3 files, the limit in /memories"):
        tool.call({"command": "create", "path": "/memories/d.txt", "file_text": ""})
    assert tool.contents() == {
        "/memories/a.txt": "a" * 100,
        "/memories/b.txt": "b" * 100,
        "/memories/c.txt": "c",
    }
    assert len(memory.store.record_list(memory.tenant_id, VERSION)) == 3


@pytest.mark.parametrize("limit", ["max_file_bytes", "max_total_bytes", "max_files"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_a_bad_limit_is_a_configuration_error(memory: Memory, limit: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=limit):
        options: dict[str, Any] = {limit: value}
        MemorybankMemoryTool(memory, **options)


def test_the_wrong_handle_is_a_configuration_error(memory: Memory) -> None:
    with pytest.raises(ConfigurationError, match=r"memory must be a Memory handle"):
        MemorybankMemoryTool(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"memory must be an? AsyncMemory handle"):
        AsyncMemorybankMemoryTool(memory)  # type: ignore[arg-type]


# -- versions -------------------------------------------------------------------


def test_every_change_is_a_version_and_a_rename_or_delete_keeps_them(
    tool: MemorybankMemoryTool,
) -> None:
    tool.call({"command": "create", "path": "/memories/n.md", "file_text": "v1"})
    tool.call(
        {"command": "str_replace", "path": "/memories/n.md", "old_str": "v1", "new_str": "v2"}
    )
    tool.call(
        {"command": "insert", "path": "/memories/n.md", "insert_line": 1, "insert_text": "v3"}
    )
    tool.call({"command": "rename", "old_path": "/memories/n.md", "new_path": "/memories/m.md"})
    old = tool.history("/memories/n.md")
    assert [(v.op, v.content) for v in old] == [
        ("create", "v1"),
        ("edit", "v2"),
        ("edit", "v2\nv3\n"),
        ("move", ""),
    ]
    assert old[-1].renamed_to == "/memories/m.md"
    assert [v.at for v in old] == sorted(v.at for v in old)
    (moved,) = tool.history("/memories/m.md")
    assert (moved.op, moved.content, moved.renamed_from) == ("rename", "v2\nv3\n", "/memories/n.md")
    tool.call({"command": "delete", "path": "/memories/m.md"})
    assert [v.op for v in tool.history("/memories/m.md")] == ["rename", "delete"]
    assert tool.contents() == {}
    assert tool.history("/memories/never.md") == []


def test_each_agent_of_a_user_has_its_own_memories(memory: Memory) -> None:
    one = MemorybankMemoryTool(memory.scoped(user_id="alice", agent_id="one"))
    two = MemorybankMemoryTool(memory.scoped(user_id="alice", agent_id="two"))
    one.call({"command": "create", "path": "/memories/x.md", "file_text": "one's"})
    two.call({"command": "create", "path": "/memories/x.md", "file_text": "two's"})
    assert one.contents() == {"/memories/x.md": "one's"}
    assert two.contents() == {"/memories/x.md": "two's"}
    records = memory.store.record_list(memory.tenant_id, FILE)
    assert sorted((r.user_id, r.agent_id) for r in records) == [("alice", "one"), ("alice", "two")]
