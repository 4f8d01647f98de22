"""Tests of memorybank.tokens against the real bpe-openai encodings (no mocks).

Expected token counts below were computed once with bpe-openai 0.1.4
(``len(bpe_openai.get_encoding(name).encode_ordinary(text))``) and hard-coded.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from memorybank.errors import ConfigurationError, InvalidInput
from memorybank.tokens import (
    DEFAULT_ENCODING,
    MESSAGE_OVERHEAD_TOKENS,
    NAME_OVERHEAD_TOKENS,
    NON_TEXT_PART_TOKENS,
    REPLY_PRIMING_TOKENS,
    TOOL_CALL_OVERHEAD_TOKENS,
    OpenAITokenizer,
    Tokenizer,
    _split,
    count_message_tokens,
    encoding_for_model,
    get_tokenizer,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")

O200K = OpenAITokenizer("o200k_base")
CL100K = OpenAITokenizer("cl100k_base")
BOTH = pytest.mark.parametrize("tok", [O200K, CL100K], ids=["o200k", "cl100k"])


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


# --- exact counts -------------------------------------------------------------------


@BOTH
def test_hello_world_is_two_tokens(tok: Tokenizer) -> None:
    assert tok.count("hello world") == 2


def test_encode_returns_the_token_ids() -> None:
    # computed with bpe-openai (identical to tiktoken's o200k_base ids)
    assert O200K.encode("hello world") == [24912, 2375]
    assert O200K.encode("") == []


@BOTH
def test_empty_text_is_zero_tokens(tok: Tokenizer) -> None:
    assert tok.count("") == 0


@pytest.mark.parametrize(
    ("text", "o200k", "cl100k"),
    [
        # computed with bpe-openai
        ("日本語のテキストを正確に数える", 12, 16),
        ("🎉👍🏽🚀✨", 8, 14),
        ("Ünïcödé façade — naïve café", 10, 13),
        ("The quick brown fox jumps over the lazy dog.", 10, 10),
    ],
)
def test_exact_counts_per_encoding(text: str, o200k: int, cl100k: int) -> None:
    assert O200K.count(text) == o200k
    assert CL100K.count(text) == cl100k


@pytest.mark.parametrize("text", ["日本語のテキストを正確に数える", "🎉👍🏽🚀✨"])
@BOTH
def test_cjk_and_emoji_are_not_chars_over_four(tok: Tokenizer, text: str) -> None:
    n = tok.count(text)
    assert n not in {len(text) // 4, -(-len(text) // 4)}
    assert n >= 2 * (len(text) // 4 + 1)  # far more than the chars/4 estimate


def test_encodings_differ_where_vocabularies_differ() -> None:
    text = "Ünïcödé façade — naïve café 日本語のテキストを正確に数える 🎉👍🏽🚀✨"
    assert O200K.count(text) != CL100K.count(text)
    assert O200K.count(text) < CL100K.count(text)


@BOTH
def test_special_token_text_is_ordinary_text(tok: OpenAITokenizer) -> None:
    # User content is never interpreted as a control token: "<|endoftext|>" is 7
    # ordinary tokens (computed with bpe-openai), and it must not raise.
    assert tok.count("<|endoftext|>") == 7
    assert tok.count("a <|endoftext|> b <|endofprompt|>") == len(
        tok.encode("a <|endoftext|> b <|endofprompt|>")
    )


@BOTH
def test_count_equals_len_encode(tok: OpenAITokenizer) -> None:
    text = "def f(x):\n    return {'a': x ** 2}  # 二乗\n\n\tDone! 👍🏽 https://example.com/a/b?c=d"
    assert tok.count(text) == len(tok.encode(text))


def test_remembered_counts_are_the_exact_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Longer texts are counted once and remembered within bounded memory: a repeated
    count, and a count after its text was dropped, equal a fresh tokenizer's."""
    import memorybank.tokens as tokens

    monkeypatch.setattr(tokens, "_KNOWN_MAX", 8)
    monkeypatch.setattr(tokens, "_KNOWN_CHARS", 2_000)
    tok = OpenAITokenizer("o200k_base")
    rng = random.Random(5)
    words = ["budget", "Berlin", "二乗", "👍🏽", "façade", "x", "\n", "  ", "{'a': 1}"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 120))) for _ in range(40)]
    expected = [len(tok.encode(text)) for text in texts]
    for _ in range(3):
        for index in rng.sample(range(len(texts)), len(texts)):
            assert tok.count(texts[index]) == expected[index]
            assert len(tok._known) <= 8
            assert tok._known_chars == sum(len(t) for t in tok._known) <= 2_000
    # what is remembered is the text's own count
    assert tok._known
    for text, counted in tok._known.items():
        assert counted == len(tok.encode(text))
    # a text is looked up, not counted again, once remembered
    calls: list[str] = []
    counter = tok._count_piece
    assert counter is not None

    def counting(piece: str) -> int:
        calls.append(piece)
        return counter(piece)

    monkeypatch.setattr(tok, "_count_piece", counting)
    remembered = next(iter(tok._known))
    assert tok.count(remembered) == len(tok.encode(remembered))
    assert calls == []
    assert tok.count(remembered + " more") == len(tok.encode(remembered + " more"))
    assert calls == [remembered + " more"]


# --- very long texts ----------------------------------------------------------------

PROSE_LINE = "The quick brown fox jumps over the lazy dog. Ünïcödé façade — naïve café.\n"
MIN_JSON = '{"id":123,"name":"value","nested":{"k":[1,2,3]}}'


@pytest.mark.parametrize(
    ("text", "o200k", "cl100k"),
    [
        # over the 1,000,000-character limit of one bpe-openai call; computed with bpe-openai
        (PROSE_LINE * 20_000, 400_000, 480_000),
        (MIN_JSON * 30_000, 600_000, 600_000),  # minified JSON: no spaces, no newlines
    ],
    ids=["prose-1.48M-chars", "minified-json-1.44M-chars"],
)
def test_texts_over_a_million_chars_are_counted_exactly(text: str, o200k: int, cl100k: int) -> None:
    assert len(text) > 1_000_000
    assert O200K.count(text) == o200k
    assert CL100K.count(text) == cl100k


def test_more_than_200k_tokens_in_one_call_is_counted_exactly() -> None:
    text = "日本語のテキストです。中文文本\uff0c标点\uff01" * 40_000  # 760,000 chars
    assert O200K.count(text) == 560_000  # computed with bpe-openai


def test_encode_long_text_matches_count() -> None:
    text = PROSE_LINE * 2_000  # 148,000 chars: encoded in pieces
    ids = O200K.encode(text)
    assert len(ids) == O200K.count(text) == 40_000
    assert ids[:20] == O200K.encode(PROSE_LINE)


def test_a_run_without_boundaries_over_a_million_chars_is_refused() -> None:
    with pytest.raises(InvalidInput):
        O200K.count("x" * 1_000_001)


@BOTH
def test_splitting_never_changes_the_count(tok: OpenAITokenizer) -> None:
    # Pieces are cut only where the pre-tokenizers always cut, so counting the pieces
    # separately must give the count of the whole, for any text.
    alphabet = [
        *"aZ09 _-/\\{}[]\":,.'!?;#\n\r\t",
        *["  ", "\n\n", " \n", "'s", "'ll", "word", "Word", "WORD", "12345"],
        *[
            "日本語",
            "。",
            "\uff0c",
            "\uff01",
            "🎉",
            "👍🏽",
            "é",
            "e\u0301",
            "²",
            "½",
            "Ⅻ",
            "\u00a0",
            "\u3000",
        ],
    ]
    rng = random.Random(20240607)
    for _ in range(1_500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        pieces = list(_split(text, limit=rng.randint(1, 8)))
        assert "".join(pieces) == text
        assert sum(tok.count(p) for p in pieces) == tok.count(text), repr(text)


# --- lookup -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "encoding"),
    [
        (None, "o200k_base"),
        ("o200k_base", "o200k_base"),
        ("cl100k_base", "cl100k_base"),
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-5-mini", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("GPT-4o", "o200k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("text-embedding-3-large", "cl100k_base"),
        ("text-embedding-ada-002", "cl100k_base"),
        ("ft:gpt-3.5-turbo:acme::xyz", "cl100k_base"),
    ],
)
def test_model_lookup(name: str | None, encoding: str) -> None:
    assert encoding_for_model(name) == encoding
    assert get_tokenizer(name).name == encoding


def test_default_is_o200k() -> None:
    assert DEFAULT_ENCODING == "o200k_base"
    assert get_tokenizer().name == "o200k_base"
    assert OpenAITokenizer().name == "o200k_base"


def test_instances_are_cached_per_encoding() -> None:
    assert get_tokenizer() is get_tokenizer("gpt-4o") is get_tokenizer("o200k_base")
    assert get_tokenizer("gpt-4") is get_tokenizer("cl100k_base")
    assert get_tokenizer("gpt-4") is not get_tokenizer("gpt-4o")


@pytest.mark.parametrize("name", ["claude-3-5-sonnet", "llama-3", "davinci", "", "o200k"])
def test_unknown_model_is_a_configuration_error_naming_it(name: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        get_tokenizer(name)
    assert repr(name) in str(info.value)


@pytest.mark.parametrize("encoding", ["p50k_base", "gpt2", "voyage3_base", "O200K"])
def test_unknown_encoding_is_a_configuration_error_at_construction(encoding: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        OpenAITokenizer(encoding)
    assert repr(encoding) in str(info.value)


def test_openai_tokenizer_satisfies_the_protocol() -> None:
    tok = get_tokenizer()
    assert isinstance(tok, Tokenizer)
    assert isinstance(tok, OpenAITokenizer)
    assert repr(tok) == "OpenAITokenizer('o200k_base')"


# --- message counting ---------------------------------------------------------------


def test_recipe_constants() -> None:
    assert MESSAGE_OVERHEAD_TOKENS == 3
    assert NAME_OVERHEAD_TOKENS == 1
    assert REPLY_PRIMING_TOKENS == 3
    assert TOOL_CALL_OVERHEAD_TOKENS == 3


@BOTH
def test_plain_message(tok: Tokenizer) -> None:
    # 3 overhead + "user" (1) + "hello world" (2)
    assert count_message_tokens(tok, {"role": "user", "content": "hello world"}) == 6


@BOTH
def test_message_with_name(tok: Tokenizer) -> None:
    # 3 overhead + "user" (1) + "Hi" (1) + 1 name overhead + "alice" (1)
    msg = {"role": "user", "name": "alice", "content": "Hi"}
    assert count_message_tokens(tok, msg) == 7
    assert count_message_tokens(tok, {**msg, "name": None}) == 5


@BOTH
def test_none_and_missing_content(tok: Tokenizer) -> None:
    assert count_message_tokens(tok, {"role": "assistant", "content": None}) == 4
    assert count_message_tokens(tok, {"role": "assistant"}) == 4


@BOTH
def test_assistant_tool_calls(tok: Tokenizer) -> None:
    call = {
        "id": "call_abc123",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    msg: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
    # 3 + "assistant" (1) + per call: 3 + "get_weather" (2) + args (6) + "call_abc123" (4)
    assert count_message_tokens(tok, msg) == 3 + 1 + (3 + 2 + 6 + 4)

    second = {
        "id": "call_2",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
    }
    msg = {"role": "assistant", "content": "Looking it up.", "tool_calls": [call, second]}
    # + content (4) + second call: 3 + "lookup" (1) + args (6) + "call_2" (3)
    assert count_message_tokens(tok, msg) == 3 + 1 + 4 + (3 + 2 + 6 + 4) + (3 + 1 + 6 + 3)


@BOTH
def test_legacy_function_call_counts_like_a_tool_call_without_id(tok: Tokenizer) -> None:
    msg = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    assert count_message_tokens(tok, msg) == 3 + 1 + (3 + 2 + 6)


@BOTH
def test_tool_result_message(tok: Tokenizer) -> None:
    # tool_call_id is bookkeeping for the API, not prompt text
    msg = {"role": "tool", "tool_call_id": "call_abc123", "content": "Looking it up."}
    assert count_message_tokens(tok, msg) == 3 + 1 + 4


@BOTH
def test_content_parts_count_their_text(tok: Tokenizer) -> None:
    msg = {
        "role": "user",
        "content": [
            {"type": "text", "text": "describe this"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            {"type": "text", "text": "hello world"},
        ],
    }
    assert count_message_tokens(tok, msg) == 3 + 1 + 2 + NON_TEXT_PART_TOKENS + 2


EXAMPLE_MESSAGES = [
    # The example conversation of the openai-cookbook notebook "How to count tokens
    # with tiktoken", for which it publishes the prompt_tokens the OpenAI API reported.
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates "
        "corporate jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on "
        "opportunities for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the "
        "client deliverable.",
    },
]


@pytest.mark.parametrize(("model", "api_prompt_tokens"), [("gpt-4o", 124), ("gpt-4", 129)])
def test_matches_prompt_tokens_reported_by_the_api(model: str, api_prompt_tokens: int) -> None:
    tok = get_tokenizer(model)
    total = sum(count_message_tokens(tok, m) for m in EXAMPLE_MESSAGES)
    assert total + REPLY_PRIMING_TOKENS == api_prompt_tokens


class WordTokenizer:
    """A user tokenizer: a name and count(), no encode()."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_custom_tokenizer_works_with_count_message_tokens() -> None:
    words = WordTokenizer()
    assert isinstance(words, Tokenizer)
    assert not hasattr(words, "encode")
    msg = {
        "role": "user",
        "name": "alice",
        "content": "three little words",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "a b"}}
        ],
    }
    # 3 + role 1 + content 3 + (1 + name 1) + (3 + name 1 + args 2 + id 1)
    assert count_message_tokens(words, msg) == 3 + 1 + 3 + 2 + 7


def test_object_without_count_is_not_a_tokenizer() -> None:
    class NameOnly:
        name = "x"

    assert not isinstance(NameOnly(), Tokenizer)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"content": "no role"}, "role"),
        ({"role": 1, "content": "x"}, "role"),
        ({"role": "user", "content": 42}, "content"),
        ({"role": "user", "content": [42]}, "content"),
        ({"role": "user", "name": 7, "content": "x"}, "name"),
        ({"role": "assistant", "tool_calls": {"id": "x"}}, "tool_calls"),
        ({"role": "assistant", "tool_calls": ["x"]}, "tool_calls"),
        ({"role": "assistant", "tool_calls": [{"id": "c"}]}, "tool_calls"),
        (
            {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]},
            "tool_calls.function.name",
        ),
        (
            {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
            "tool_calls.function.arguments",
        ),
    ],
)
def test_malformed_messages_are_invalid_input(message: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as info:
        count_message_tokens(O200K, message)
    assert info.value.field == field


# --- laziness and threads -----------------------------------------------------------


def test_bpe_openai_is_imported_only_on_first_count() -> None:
    result = _run_python(
        """
        import sys
        import memorybank.tokens as t
        assert "bpe_openai" not in sys.modules, "imported at module import"
        tok = t.get_tokenizer()
        t.get_tokenizer("gpt-4")
        t.OpenAITokenizer("cl100k_base")
        assert "bpe_openai" not in sys.modules, "imported at lookup/construction"
        assert tok.count("hello world") == 2
        assert "bpe_openai" in sys.modules
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_concurrent_first_counts_load_the_encoding_once() -> None:
    result = _run_python(
        """
        import threading
        import bpe_openai
        import memorybank.tokens as t

        calls = []
        real = bpe_openai.get_encoding
        def counting_get_encoding(name):
            calls.append(name)
            return real(name)
        bpe_openai.get_encoding = counting_get_encoding

        tok = t.OpenAITokenizer()
        barrier = threading.Barrier(16)
        results = []
        def worker():
            barrier.wait()
            results.append(tok.count("日本語のテキストを正確に数える"))
        threads = [threading.Thread(target=worker) for _ in range(16)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert results == [12] * 16, results
        assert calls == ["o200k_base"], calls
        t.get_tokenizer().count("x")  # another instance reuses the loaded encoding
        assert calls == ["o200k_base"], calls
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_warm_up_loads_eagerly() -> None:
    result = _run_python(
        """
        import sys
        import memorybank.tokens as t
        t.get_tokenizer("gpt-4").warm_up()
        assert "bpe_openai" in sys.modules
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
