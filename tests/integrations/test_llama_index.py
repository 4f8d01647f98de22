"""``MemorybankChatStore`` with the real LlamaIndex, on SQLite and PostgreSQL.

Two groups of LlamaIndex's own tests are ported, run against this store instead of
``SimpleChatStore``: ``llama-index-core/tests/storage/chat_store/test_simple_chat_store.py``
(the ``BaseChatStore`` behaviour) and ``tests/memory/test_chat_memory_buffer.py``
(``ChatMemoryBuffer`` with a token limit over the store). Cases that test
``SimpleChatStore`` itself (inserting at an index, which ``BaseChatStore`` does not
have, and persisting to a JSON file) are left out; see the report for counts.
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.llms.types import ImageBlock, TextBlock, ThinkingBlock
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory.chat_memory_buffer import ChatMemoryBuffer
from llama_index.core.utils import get_tokenizer

from memorybank import AsyncMemory, ConfigurationError, InvalidInput, Memory, ThreadForbidden
from memorybank.integrations.llama_index import MemorybankChatStore
from tests.integrations import _stores

memory = _stores.memory
amemory = _stores.amemory


@pytest.fixture
def chat_store(memory: Memory) -> MemorybankChatStore:
    return MemorybankChatStore(memory.scoped(user_id="alice"))


def _user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


# -- ported: test_simple_chat_store.py ------------------------------------------------


def test_add_messages(chat_store: MemorybankChatStore) -> None:
    chat_store.add_message("user1", _user("hello"))
    chat_store.add_message("user1", _user("world"))
    chat_store.add_message("user2", _user("hello"))
    chat_store.add_message("user2", _user("world"))
    assert chat_store.get_messages("user1") == [_user("hello"), _user("world")]
    assert chat_store.get_messages("user2") == [_user("hello"), _user("world")]
    assert chat_store.get_keys() == ["user1", "user2"]


def test_delete_chat_messages(chat_store: MemorybankChatStore) -> None:
    for key in ("user1", "user2"):
        chat_store.add_message(key, _user("hello"))
        chat_store.add_message(key, _user("world"))
    chat_store.delete_messages("user1")
    assert chat_store.get_messages("user1") == []
    assert chat_store.get_messages("user2") == [_user("hello"), _user("world")]


def test_delete_chat_message(chat_store: MemorybankChatStore) -> None:
    chat_store.add_message("user1", _user("hello"))
    chat_store.add_message("user1", _user("world"))
    chat_store.delete_last_message("user1")
    assert chat_store.get_messages("user1") == [_user("hello")]


def test_delete_chat_message_idx(chat_store: MemorybankChatStore) -> None:
    chat_store.add_message("user1", _user("hello"))
    chat_store.add_message("user1", _user("world"))
    chat_store.delete_message("user1", 0)
    assert chat_store.get_messages("user1") == [_user("world")]


def test_delete_chat_message_out_of_bounds(chat_store: MemorybankChatStore) -> None:
    chat_store.add_message("user1", _user("hello"))
    assert chat_store.delete_message("user1", -2) is None
    assert chat_store.get_messages("user1") == [_user("hello")]


def test_delete_last_chat_message_from_empty_history(chat_store: MemorybankChatStore) -> None:
    message = _user("hello")
    chat_store.add_message("user1", message)
    assert chat_store.delete_last_message("user1") == message
    assert chat_store.delete_last_message("user1") is None


def test_non_ascii_round_trips(chat_store: MemorybankChatStore) -> None:
    chat_store.add_message("user1", _user("ハロー héllo"))
    assert chat_store.get_messages("user1") == [_user("ハロー héllo")]


# -- ported: test_chat_memory_buffer.py, the buffer over this store --------------------

tokenizer = get_tokenizer()

USER_CHAT_MESSAGE = ChatMessage(role=MessageRole.USER, content="first message")
USER_CHAT_MESSAGE_TOKENS = len(tokenizer(str(USER_CHAT_MESSAGE.content)))
SECOND_USER_CHAT_MESSAGE = ChatMessage(role=MessageRole.USER, content="second message")
ASSISTANT_CHAT_MESSAGE = ChatMessage(role=MessageRole.ASSISTANT, content="first answer")
ASSISTANT_CHAT_MESSAGE_TOKENS = len(tokenizer(str(ASSISTANT_CHAT_MESSAGE.content)))
SECOND_ASSISTANT_CHAT_MESSAGE = ChatMessage(role=MessageRole.USER, content="second answer")
SECOND_ASSISTANT_CHAT_MESSAGE_TOKENS = len(tokenizer(str(SECOND_ASSISTANT_CHAT_MESSAGE.content)))

FOUR = [
    USER_CHAT_MESSAGE,
    ASSISTANT_CHAT_MESSAGE,
    SECOND_USER_CHAT_MESSAGE,
    SECOND_ASSISTANT_CHAT_MESSAGE,
]


def _buffer(
    store: MemorybankChatStore,
    history: list[ChatMessage] | None = None,
    token_limit: int | None = None,
) -> ChatMemoryBuffer:
    return ChatMemoryBuffer.from_defaults(
        chat_history=history, chat_store=store, chat_store_key="buffer", token_limit=token_limit
    )


def test_put_get(chat_store: MemorybankChatStore) -> None:
    history = _buffer(chat_store, [USER_CHAT_MESSAGE]).get()
    assert len(history) == 1
    assert history[0].content == USER_CHAT_MESSAGE.content


def _same_as_simple(
    store: MemorybankChatStore, history: list[ChatMessage], limit: int, initial: int
) -> list[ChatMessage]:
    """The window over this store, checked equal to the one over ``SimpleChatStore``."""
    ours = _buffer(store, history, token_limit=limit).get(initial_token_count=initial)
    simple = ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=limit).get(
        initial_token_count=initial
    )
    assert ours == simple
    return ours


# Each case asserts that SimpleChatStore gives the same window, and the upstream
# expectation except in two cases where the installed release differs from it.


def test_get_when_initial_tokens_less_than_limit_returns_history(
    chat_store: MemorybankChatStore,
) -> None:
    assert _same_as_simple(chat_store, [USER_CHAT_MESSAGE], 1000, 5) == [USER_CHAT_MESSAGE]


def test_get_when_initial_tokens_exceed_limit_raises_value_error(
    chat_store: MemorybankChatStore,
) -> None:
    with pytest.raises(ValueError, match="Initial token count exceeds token limit"):
        _buffer(chat_store, token_limit=49).get(initial_token_count=50)


def test_get_when_initial_tokens_same_as_limit(chat_store: MemorybankChatStore) -> None:
    # upstream expects []; llama-index-core 0.14.25 keeps the message (SimpleChatStore too)
    _same_as_simple(chat_store, [USER_CHAT_MESSAGE], 5, 5)


def test_get_when_space_for_assistant_message_at_start_of_history(
    chat_store: MemorybankChatStore,
) -> None:
    history = [USER_CHAT_MESSAGE, ASSISTANT_CHAT_MESSAGE]
    # upstream expects []; llama-index-core 0.14.25 keeps the answer (SimpleChatStore too)
    _same_as_simple(chat_store, history, 5, 5 - USER_CHAT_MESSAGE_TOKENS)


def test_get_when_space_for_second_message_and_answer(chat_store: MemorybankChatStore) -> None:
    initial = 5 - USER_CHAT_MESSAGE_TOKENS - ASSISTANT_CHAT_MESSAGE_TOKENS
    assert _same_as_simple(chat_store, FOUR, 5, initial) == FOUR[2:]


def test_get_when_space_for_all_but_first_message(chat_store: MemorybankChatStore) -> None:
    used = (
        ASSISTANT_CHAT_MESSAGE_TOKENS
        + USER_CHAT_MESSAGE_TOKENS
        + SECOND_ASSISTANT_CHAT_MESSAGE_TOKENS
    )
    assert _same_as_simple(chat_store, FOUR, 10, 10 - used) == FOUR[2:]


def test_set(chat_store: MemorybankChatStore) -> None:
    buffer = _buffer(chat_store, [USER_CHAT_MESSAGE])
    buffer.put(USER_CHAT_MESSAGE)
    assert len(buffer.get()) == 2
    buffer.set([USER_CHAT_MESSAGE])
    assert len(buffer.get()) == 1


def test_max_tokens(chat_store: MemorybankChatStore) -> None:
    buffer = _buffer(chat_store, [USER_CHAT_MESSAGE], token_limit=5)
    buffer.put(USER_CHAT_MESSAGE)
    assert len(buffer.get()) == 2
    buffer.put(USER_CHAT_MESSAGE)
    buffer.put(USER_CHAT_MESSAGE)
    assert len(buffer.get()) == 2
    assert len(buffer.get_all()) == 4
    buffer.put(ChatMessage(role=MessageRole.USER, content="test message2"))
    assert buffer.get()[-1].content == "test message2"
    assert len(buffer.get()) == 2


# -- memorybank's own cases ------------------------------------------------------------


def _rich() -> list[ChatMessage]:
    return [
        ChatMessage(role=MessageRole.SYSTEM, content="be terse"),
        ChatMessage(role=MessageRole.DEVELOPER, content="no emojis", additional_kwargs={"v": 2}),
        ChatMessage(
            role=MessageRole.USER,
            blocks=[
                TextBlock(text="look é 😀"),
                ImageBlock(image=b"\x89PNG\x00\x01\xff", image_mimetype="image/png"),
                ImageBlock(url="https://example.com/cat.png"),
            ],
        ),
        ChatMessage(
            role=MessageRole.ASSISTANT,
            content=None,
            additional_kwargs={
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ]
            },
        ),
        ChatMessage(role=MessageRole.TOOL, content="42", additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(role=MessageRole.FUNCTION, content="legacy", additional_kwargs={"name": "f"}),
        ChatMessage(
            role=MessageRole.ASSISTANT, blocks=[ThinkingBlock(content="hmm"), TextBlock(text="")]
        ),
        ChatMessage(role=MessageRole.CHATBOT, content="cohere says hi"),
        ChatMessage(role=MessageRole.MODEL, content="gemini says hi"),
    ]


def test_every_role_block_and_kwarg_round_trips_exactly(memory: Memory) -> None:
    store = MemorybankChatStore(memory)
    store.set_messages("rich", _rich())
    assert store.get_messages("rich") == _rich()
    assert [m.model_dump(mode="json") for m in store.get_messages("rich")] == [
        m.model_dump(mode="json") for m in _rich()
    ]
    shown = memory.history("rich")
    assert [m["role"] for m in shown] == [
        "system",
        "system",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
        "assistant",
        "assistant",
    ]
    assert shown[2]["content"] == "look é 😀"
    # set replaces; a second set of the same messages keeps one copy
    store.set_messages("rich", _rich())
    assert memory.entries.count("rich") == len(_rich())
    store.set_messages("rich", _rich()[:2])
    assert store.get_messages("rich") == _rich()[:2]


def test_bad_input_is_refused_and_writes_nothing(chat_store: MemorybankChatStore) -> None:
    chat_store.set_messages("k", [_user("kept")])
    bad: list[object] = [
        "hello",
        [_user("ok"), {"role": "user", "content": "a dict"}],
        [_user("x" * 1_000_001)],
        [ChatMessage(role="user", content="unserialisable", additional_kwargs={"o": object()})],
    ]
    for messages in bad:
        with pytest.raises(InvalidInput):
            chat_store.set_messages("k", messages)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="message"):
        chat_store.add_message("k", "hello")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="idx"):
        chat_store.delete_message("k", "0")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="thread_id"):
        chat_store.add_message("", _user("no key"))
    assert chat_store.get_messages("k") == [_user("kept")]
    assert chat_store.get_keys() == ["k"]


def test_unknown_keys_read_as_empty_and_are_not_created(chat_store: MemorybankChatStore) -> None:
    assert chat_store.get_messages("nope") == []
    assert chat_store.delete_messages("nope") is None
    assert chat_store.delete_message("nope", 0) is None
    assert chat_store.delete_last_message("nope") is None
    assert chat_store.get_keys() == []


def test_another_users_key_is_forbidden_and_left_intact(memory: Memory) -> None:
    alice = MemorybankChatStore(memory.scoped(user_id="alice"))
    alice.set_messages("private", [_user("my pin is 1234")])
    bob = MemorybankChatStore(memory.scoped(user_id="bob"))
    for verb in (
        lambda: bob.get_messages("private"),
        lambda: bob.add_message("private", _user("mine now")),
        lambda: bob.set_messages("private", []),
        lambda: bob.delete_messages("private"),
        lambda: bob.delete_message("private", 0),
        lambda: bob.delete_last_message("private"),
    ):
        with pytest.raises(ThreadForbidden):
            verb()
    assert bob.get_keys() == []
    assert alice.get_messages("private") == [_user("my pin is 1234")]
    assert MemorybankChatStore(memory.tenant("other")).get_messages("private") == []


def test_sync_verbs_on_an_async_memory_name_their_twin(amemory: AsyncMemory) -> None:
    store = MemorybankChatStore(amemory)
    with pytest.raises(ConfigurationError, match="aget_messages"):
        store.get_messages("k")
    with pytest.raises(ConfigurationError, match="async_add_message"):
        store.add_message("k", _user("x"))
    with pytest.raises(ConfigurationError, match="Memory or AsyncMemory"):
        MemorybankChatStore("sqlite:///x.db")  # type: ignore[arg-type]


async def test_the_async_twins_on_an_async_memory(amemory: AsyncMemory) -> None:
    store = MemorybankChatStore(amemory.scoped(user_id="alice"))
    await store.aset_messages("a", _rich())
    assert await store.aget_messages("a") == _rich()
    await store.async_add_message("a", _user("one more"))
    assert await store.adelete_last_message("a") == _user("one more")
    assert await store.adelete_message("a", 0) == _rich()[0]
    assert await store.adelete_message("a", 99) is None
    await store.async_add_message("b", _user("b"))
    assert await store.aget_keys() == ["a", "b"]
    assert await store.adelete_messages("a") == _rich()[1:]
    assert await store.aget_keys() == ["b"]
    assert await store.aget_messages("a") == []


async def test_the_async_buffer_with_a_token_limit(memory: Memory) -> None:
    """``ChatMemoryBuffer.aget`` runs its sync ``get`` in a thread: the buffer takes a
    store on a ``Memory`` (its ``aput``/``aget``/``areset`` work, as here)."""
    store = MemorybankChatStore(memory.scoped(user_id="alice"))
    buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="s", token_limit=5)
    for text in ("first message", "second message", "third message"):
        await buffer.aput(_user(text))
    assert [m.content for m in await buffer.aget()] == ["second message", "third message"]
    assert len(await buffer.aget_all()) == 3
    await buffer.areset()
    assert await buffer.aget_all() == []


async def test_the_async_twins_on_a_sync_memory_run_in_a_thread(memory: Memory) -> None:
    store = MemorybankChatStore(memory)
    await store.async_add_message("t", _user("threaded"))
    assert await store.aget_messages("t") == [_user("threaded")]
    assert store.get_messages("t") == [_user("threaded")]
