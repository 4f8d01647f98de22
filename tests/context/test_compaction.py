"""Compaction: thresholds, strategies, the tool-call cut, crash safety, one at a time."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memorybank import AsyncMemory, CompactionService, ConfigurationError
from memorybank.context._async.compaction import AsyncCompactionService
from memorybank.context.values import SummarizeOptions
from memorybank.stores import AsyncSQLiteStore

from .conftest import StepClock, Words, fill, new_id, words


class Summarizer:
    def __init__(self, text: str = "they talked", delay: float = 0.0) -> None:
        self.calls: list[tuple[list[dict[str, Any]], SummarizeOptions]] = []
        self.text = text
        self.delay = delay

    async def __call__(self, messages: list[dict[str, Any]], options: SummarizeOptions) -> str:
        self.calls.append((messages, options))
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.text


async def thread_of(memory: AsyncMemory, n: int) -> tuple[str, list[Any]]:
    tid = (await memory.threads.create(thread_id=new_id(), user_id="alice")).id
    return tid, await fill(memory, tid, [words(6, f"m{i}") for i in range(n)])


async def test_nothing_happens_below_the_threshold(memory: AsyncMemory) -> None:
    tid, _ = await thread_of(memory, 20)  # 200 tokens
    summarize = Summarizer()
    service = CompactionService(memory=memory, summarize=summarize)
    result = await service.compact(tid, threshold=201, keep_recent=5)
    assert (result.original_messages, result.compacted_messages, result.action) == (20, 20, "none")
    assert summarize.calls == [] and await memory.entries.count(tid) == 20


async def test_nothing_happens_with_keep_recent_entries_or_fewer(memory: AsyncMemory) -> None:
    tid, _ = await thread_of(memory, 5)
    service = CompactionService(memory=memory, summarize=Summarizer())
    result = await service.compact(tid, threshold=0, keep_recent=5)
    assert result.action == "none" and await memory.entries.count(tid) == 5


async def test_message_threshold_triggers_on_entry_count(memory: AsyncMemory) -> None:
    tid, _ = await thread_of(memory, 12)
    service = CompactionService(memory=memory, summarize=Summarizer())
    assert (
        await service.compact(tid, threshold=10_000, keep_recent=4, message_threshold=13)
    ).action == "none"
    result = await service.compact(tid, threshold=10_000, keep_recent=4, message_threshold=12)
    assert (result.compacted_messages, result.action) == (5, "summary")


async def test_summary_replaces_older_entries_with_one_dated_system_entry(
    memory: AsyncMemory,
) -> None:
    tid, entries = await thread_of(memory, 20)
    summarize = Summarizer("Alice asked about orders.")
    service = CompactionService(memory=memory, summarize=summarize)
    result = await service.compact(
        tid, threshold=200, keep_recent=10, summary_model="m1", summary_prompt="p1"
    )
    assert (result.thread_id, result.original_messages, result.compacted_messages) == (tid, 20, 11)
    after = await memory.entries.list(tid)
    summary = after[0]
    assert summary.role == "system"
    assert summary.content == "[Conversation summary]\nAlice asked about orders."
    assert summary.metadata["compaction_summary"] is True
    assert summary.created_at == entries[10].created_at - timedelta(milliseconds=1)
    assert result.summary_tokens == summary.token_count == 4 + 6
    assert [(e.id, e.position, e.content) for e in after[1:]] == [
        (e.id, e.position, e.content) for e in entries[10:]
    ]
    messages, options = summarize.calls[0]
    assert messages == [e.to_message() for e in entries[:10]]
    assert options == SummarizeOptions(model="m1", prompt="p1")


async def test_sliding_window_deletes_older_entries(memory: AsyncMemory) -> None:
    tid, entries = await thread_of(memory, 20)
    service = CompactionService(memory=memory)  # no summarize needed
    result = await service.compact(tid, strategy="sliding-window", threshold=0, keep_recent=10)
    assert (result.compacted_messages, result.summary_tokens) == (10, 0)
    assert await memory.entries.list(tid) == entries[10:]


@pytest.mark.parametrize(("count", "action"), [(15, "sliding-window"), (16, "summary")])
async def test_hybrid_slides_when_five_or_fewer_would_go(
    memory: AsyncMemory, count: int, action: str
) -> None:
    tid, _ = await thread_of(memory, count)
    service = CompactionService(memory=memory, summarize=Summarizer())
    result = await service.compact(tid, strategy="hybrid", threshold=0, keep_recent=10)
    assert result.action == action
    assert result.compacted_messages == (10 if action == "sliding-window" else 11)


async def test_the_cut_never_separates_a_tool_result_from_its_call(memory: AsyncMemory) -> None:
    tid = (await memory.threads.create(thread_id=new_id(), user_id="alice")).id
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    entries = await fill(
        memory,
        tid,
        [
            words(6),
            words(6),
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "content": "result", "tool_call_id": "c1"},
            words(6),
            words(6),
        ],
    )
    service = CompactionService(memory=memory, summarize=Summarizer())
    result = await service.compact(tid, threshold=0, keep_recent=3)  # cut would fall at the tool
    assert result.compacted_messages == 5
    after = await memory.entries.list(tid)
    assert [e.id for e in after[1:]] == [e.id for e in entries[2:]]


async def test_a_failing_summarize_leaves_the_thread_unchanged(memory: AsyncMemory) -> None:
    tid, entries = await thread_of(memory, 20)

    def broken(messages: list[dict[str, Any]], options: SummarizeOptions) -> str:
        raise RuntimeError("LLM down")

    service = CompactionService(memory=memory, summarize=broken)
    with pytest.raises(RuntimeError, match="LLM down"):
        await service.compact(tid, threshold=0, keep_recent=5)
    assert await memory.entries.list(tid) == entries


async def test_a_sync_summarize_works_too(memory: AsyncMemory) -> None:
    tid, _ = await thread_of(memory, 20)
    service = CompactionService(memory=memory, summarize=lambda messages, options: "sync")
    result = await service.compact(tid, threshold=0, keep_recent=5)
    assert result.action == "summary"


async def test_summary_needs_summarize(memory: AsyncMemory) -> None:
    tid, _ = await thread_of(memory, 20)
    with pytest.raises(ConfigurationError):
        await CompactionService(memory=memory).compact(tid, threshold=0, keep_recent=5)


async def test_two_concurrent_compactions_in_one_process_apply_once(memory: AsyncMemory) -> None:
    tid, _ = await thread_of(memory, 20)
    summarize = Summarizer(delay=0.05)
    one = CompactionService(memory=memory, summarize=summarize)
    two = CompactionService(memory=memory, summarize=summarize)
    results = await asyncio.gather(
        one.compact(tid, threshold=0, keep_recent=5), two.compact(tid, threshold=0, keep_recent=5)
    )
    assert sorted(r.action for r in results) == ["none", "summary"]
    after = await memory.entries.list(tid)
    assert sum(e.metadata.get("compaction_summary", False) for e in after) == 1
    assert len(after) == 6 and len(summarize.calls) == 1


async def test_two_processes_compacting_one_file_apply_once(tmp_path: Path) -> None:
    # Two stores on one file stand for two processes: no shared lock, only the CAS.
    path = tmp_path / "shared.db"
    first = AsyncMemory(AsyncSQLiteStore(path), clock=StepClock(), tokenizer=Words())
    second = AsyncMemory(AsyncSQLiteStore(path), clock=StepClock(), tokenizer=Words())
    tid, _ = await thread_of(first, 20)
    summarize = Summarizer(delay=0.1)
    results = await asyncio.gather(
        CompactionService(memory=first, summarize=summarize).compact(
            tid, threshold=0, keep_recent=5
        ),
        CompactionService(memory=second, summarize=summarize).compact(
            tid, threshold=0, keep_recent=5
        ),
    )
    assert len(summarize.calls) == 2  # both summarised ...
    assert sorted(r.action for r in results) == ["none", "summary"]  # ... one applied
    after = await first.entries.list(tid)
    assert len(after) == 6
    assert sum(e.metadata.get("compaction_summary", False) for e in after) == 1
    await first.store.close()
    await second.store.close()


async def test_a_second_compaction_does_not_summarise_the_summary(memory: AsyncMemory) -> None:
    tid, _ = await thread_of(memory, 20)
    summarize = Summarizer()
    service = CompactionService(memory=memory, summarize=summarize)
    await service.compact(tid, threshold=0, keep_recent=5)
    again = await service.compact(tid, threshold=0, keep_recent=5)
    assert again.action == "none" and len(summarize.calls) == 1


async def test_pre_rot_thresholds(memory: AsyncMemory) -> None:
    tid, entries = await thread_of(memory, 20)  # 200 tokens
    summarize = Summarizer()
    below = AsyncCompactionService(
        memory=memory, summarize=summarize, pre_rot_threshold=251, recent_to_keep=5
    )
    assert (await below.auto_compact(tid)).action == "none"  # 200 < 0.8 * 251
    service = AsyncCompactionService(
        memory=memory, summarize=summarize, pre_rot_threshold=250, recent_to_keep=5
    )
    result = await service.auto_compact(tid)  # 200 >= 0.8 * 250
    assert result.action == "reversible"
    after = await memory.entries.list(tid)
    assert [e.content for e in after[15:]] == [e.content for e in entries[15:]]
    assert all(e.content and e.content.startswith("[compacted") for e in after[:15])
    assert all(e.state["memorybank_compacted"]["content"] for e in after[:15])
    assert sum(e.token_count for e in after) < 200
    assert await service.restore(tid) == 15
    restored = await memory.entries.list(tid)
    assert [(e.content, e.token_count, e.state) for e in restored] == [
        (e.content, e.token_count, e.state) for e in entries
    ]
    await service.auto_compact(tid)
    summarizing = AsyncCompactionService(
        memory=memory, summarize=summarize, pre_rot_threshold=200, recent_to_keep=5
    )
    result = await summarizing.auto_compact(tid)  # compacted thread is small: below 80%
    assert result.action == "none"
    await summarizing.restore(tid)
    result = await summarizing.auto_compact(tid)  # 200 >= 0.95 * 200
    assert result.action == "summary"
    messages = summarize.calls[-1][0]
    assert [m["content"] for m in messages] == [e.content for e in entries[:15]]  # originals
    assert await memory.entries.count(tid) == 6


async def test_auto_compact_needs_a_threshold(memory: AsyncMemory) -> None:
    tid, _ = await thread_of(memory, 3)
    with pytest.raises(ConfigurationError):
        await AsyncCompactionService(memory=memory).auto_compact(tid)
