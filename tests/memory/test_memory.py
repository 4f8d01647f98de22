"""Memory-level options and behaviours that do not depend on the store."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from memorybank import (
    AsyncMemory,
    ConfigurationError,
    InvalidInput,
    Memory,
    StoreClosed,
    ThreadForbidden,
)
from memorybank.stores import InMemoryStore


def test_async_generate_title_works_with_the_sync_memory() -> None:
    async def title(first: str) -> str:
        await asyncio.sleep(0)
        return first.upper()

    memory = Memory("memory://", generate_title=title)
    tid = memory.threads.create().id
    memory.remember(tid, "user", "hello there")
    thread = memory.threads.get(tid)
    assert thread is not None and thread.title == "HELLO THERE"


def test_tokenizer_option_changes_the_counts() -> None:
    text = "こんにちは、世界。今日はいい天気ですね。"
    store = InMemoryStore()
    a, b = Memory(store), Memory(store, tokenizer="cl100k_base")
    tid = a.threads.create().id
    assert a.remember(tid, "user", text).token_count != b.remember(tid, "user", text).token_count


class WordTokenizer:
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_a_custom_tokenizer_is_used() -> None:
    memory = Memory("memory://", tokenizer=WordTokenizer())
    tid = memory.threads.create().id
    plain = memory.remember(tid, "user", "one two three")
    longer = memory.remember(tid, "user", "one two three four five")
    assert longer.token_count - plain.token_count == 2


def test_bad_options_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError):
        Memory("memory://", tokenizer="no-such-encoding")
    with pytest.raises(ConfigurationError):
        Memory("memory://", tokenizer=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Memory("memory://", max_content_chars=0)
    with pytest.raises(ConfigurationError):
        Memory(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        Memory("memory://").tenant("")


def test_a_naive_clock_is_rejected_before_writing() -> None:
    memory = Memory("memory://", clock=lambda: datetime(2024, 1, 1))  # noqa: DTZ001
    with pytest.raises(InvalidInput) as info:
        memory.threads.create()
    assert info.value.field == "clock()"


def test_tenant_handles_share_the_store_not_the_data() -> None:
    memory = Memory("memory://")
    acme = memory.tenant("acme")
    assert acme.store is memory.store and acme.tenant_id == "acme"
    tid = acme.threads.create().id
    assert memory.threads.get(tid) is None
    assert memory.tenant("acme").threads.get(tid) is not None


def test_closing_a_memory_closes_the_store_it_opened_only() -> None:
    owned = Memory("memory://")
    owned.close()
    with pytest.raises(StoreClosed):
        owned.threads.list()
    store = InMemoryStore()
    with Memory(store):
        pass
    assert Memory(store).threads.list() == []


def test_async_memory_is_an_async_context_manager() -> None:
    async def main() -> list[dict[str, object]]:
        async with AsyncMemory("memory://") as memory:
            thread = await memory.ensure_thread(None, user_id="u")
            await memory.remember(thread.id, "user", "hi")
            return await memory.history(thread.id)

    assert asyncio.run(main()) == [{"role": "user", "content": "hi"}]


def test_ensure_thread_sets_metadata_on_create_and_keeps_an_existing_threads() -> None:
    with Memory("memory://") as memory:
        made = memory.ensure_thread("t-meta", user_id="u", metadata={"channel": "web"})
        assert made.metadata == {"channel": "web"}
        again = memory.ensure_thread("t-meta", user_id="u", metadata={"channel": "sms"})
        assert again.metadata == {"channel": "web"}
        stored = memory.threads.get("t-meta")
        assert stored is not None
        assert stored.metadata == {"channel": "web"}
        with pytest.raises(ThreadForbidden):
            memory.ensure_thread("t-meta", user_id="other", metadata={"channel": "sms"})
