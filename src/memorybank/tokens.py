"""Exact, offline token counting for budgets and context building.

Exactness, laziness, custom tokenizers and the message overheads: docs/concepts.md
("Token counting").

Example:
    >>> from memorybank.tokens import count_message_tokens, get_tokenizer
    >>> tok = get_tokenizer("gpt-4o")
    >>> tok.count("hello world")
    2
    >>> count_message_tokens(tok, {"role": "user", "content": "hello world"})
    6
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, Protocol, cast, runtime_checkable

from memorybank.errors import ConfigurationError, InvalidInput

__all__ = [
    "DEFAULT_ENCODING",
    "MESSAGE_OVERHEAD_TOKENS",
    "NAME_OVERHEAD_TOKENS",
    "NON_TEXT_PART_TOKENS",
    "REPLY_PRIMING_TOKENS",
    "SUPPORTED_ENCODINGS",
    "TOOL_CALL_OVERHEAD_TOKENS",
    "OpenAITokenizer",
    "Tokenizer",
    "count_message_tokens",
    "encoding_for_model",
    "get_tokenizer",
]

DEFAULT_ENCODING: Final = "o200k_base"
"""The encoding used when none is named: that of every OpenAI model since gpt-4o."""

SUPPORTED_ENCODINGS: Final = ("o200k_base", "cl100k_base")
"""Encoding names :class:`OpenAITokenizer` counts exactly."""

MESSAGE_OVERHEAD_TOKENS: Final = 3
"""Tokens every chat message costs besides its fields: the cookbook's
``tokens_per_message`` (``<|start|>``, the separator after the role, ``<|end|>``)."""

NAME_OVERHEAD_TOKENS: Final = 1
"""Extra token a message with a ``name`` field costs: the cookbook's ``tokens_per_name``."""

NON_TEXT_PART_TOKENS: Final = 85
"""Tokens charged per non-text content part (image, audio, file): an image's least."""

TOOL_CALL_OVERHEAD_TOKENS: Final = 3
"""Tokens charged per tool call besides its name, arguments and id (errs high)."""

REPLY_PRIMING_TOKENS: Final = 3
"""Tokens added once per request: every reply is primed with
``<|start|>assistant<|message|>``. Not included in :func:`count_message_tokens`."""

# The Python wrapper of bpe-openai refuses texts of 1,000,000 characters or more
# and raises TokenLimitError (after encoding, carrying the exact count) above
# 200,000 tokens. A character is at most 4 UTF-8 bytes, hence at most 4 tokens, so
# a piece of 50,000 characters can never exceed the token limit.
_WRAPPER_MAX_CHARS: Final = 999_999
_SAFE_PIECE_CHARS: Final = 50_000

# Model name prefixes and the encoding they use, checked in order (so "gpt-4o"
# and "gpt-4.1" are matched before "gpt-4"). Mirrors tiktoken's model table.
_MODEL_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),  # Azure's spelling
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
    ("davinci-002", "cl100k_base"),
    ("babbage-002", "cl100k_base"),
)


@runtime_checkable
class Tokenizer(Protocol):
    """What memorybank needs from a tokenizer: a name and an exact ``count``.

    Any object with these two members works (a plain attribute ``name`` is fine).
    ``encode`` is deliberately not part of this protocol: user tokenizers need
    not provide it.
    """

    @property
    def name(self) -> str:
        """Identifies the tokenizer (e.g. the encoding name) in logs and caches."""
        ...

    def count(self, text: str) -> int:
        """Return the exact number of tokens of ``text`` (plain text, no special tokens)."""
        ...


class _Encoding(Protocol):
    """The part of ``bpe_openai.Encoding`` (tiktoken-compatible) used here."""

    def encode_ordinary(self, text: str) -> list[int]: ...


_encodings: dict[str, _Encoding] = {}
_token_limit_error: type[Exception] | None = None
_encodings_lock = threading.Lock()


def _load_encoding(name: str) -> _Encoding:
    """Import bpe_openai (first time only) and build the encoding ``name`` once."""
    global _token_limit_error
    with _encodings_lock:
        encoding = _encodings.get(name)
        if encoding is None:
            try:
                import bpe_openai
            except ImportError as exc:  # pragma: no cover - it is a hard dependency
                raise ConfigurationError(
                    "exact token counting needs the 'bpe-openai' package: pip install bpe-openai"
                ) from exc
            _token_limit_error = cast("type[Exception]", bpe_openai.TokenLimitError)
            encoding = cast(_Encoding, bpe_openai.get_encoding(name))
            _encodings[name] = encoding
        return encoding


#: Strings this short (every role, most names) are counted once per tokenizer and
#: remembered, up to ``_SHORT_MAX`` of them: the same text always has the same count.
_SHORT_CHARS = 16
_SHORT_MAX = 4096
#: Longer texts up to ``_KNOWN_TEXT_CHARS`` are remembered too, the latest
#: ``_KNOWN_MAX`` of them and at most ``_KNOWN_CHARS`` characters in all: a context
#: build counts the same facts, blocks and system message on every turn. Looking
#: one up costs a hash of the text (about 1% of counting it).
_KNOWN_TEXT_CHARS = 65_536
_KNOWN_MAX = 1024
_KNOWN_CHARS = 2_000_000


class OpenAITokenizer:
    """Exact token counts for OpenAI's ``o200k_base`` and ``cl100k_base`` encodings.

    Construction is cheap and validates the encoding name; ``bpe_openai`` is
    imported and the encoding built on the first :meth:`count` or :meth:`encode`
    call (thread-safe; shared by every instance of the same encoding).

    Args:
        encoding: ``"o200k_base"`` (default) or ``"cl100k_base"``. Use
            :func:`get_tokenizer` to pick one from a model name.

    Raises:
        ConfigurationError: ``encoding`` is not one of :data:`SUPPORTED_ENCODINGS`.
    """

    __slots__ = (
        "_count_piece",
        "_encoding",
        "_known",
        "_known_chars",
        "_known_lock",
        "_short",
        "name",
    )

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        if encoding not in SUPPORTED_ENCODINGS:
            raise ConfigurationError(
                f"unknown token encoding {encoding!r}; "
                f"supported: {', '.join(repr(e) for e in SUPPORTED_ENCODINGS)}"
            )
        self.name: str = encoding
        self._encoding: _Encoding | None = None
        self._count_piece: Callable[[str], int] | None = None
        #: Counts of short strings seen (roles, names): each is counted once, exactly.
        self._short: dict[str, int] = {}
        #: Exact counts of longer texts counted lately (oldest first), and their length.
        self._known: dict[str, int] = {}
        self._known_chars = 0
        self._known_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAITokenizer({self.name!r})"

    def _get(self) -> _Encoding:
        encoding = self._encoding
        if encoding is None:
            # _load_encoding builds each encoding once under a lock; threads racing
            # here all receive that same object.
            encoding = self._encoding = _load_encoding(self.name)
        return encoding

    def warm_up(self) -> None:
        """Load the encoding now (e.g. at server start) instead of on the first count."""
        self._get()

    def count(self, text: str) -> int:
        """Return the exact number of tokens of ``text``, encoded as ordinary text."""
        size = len(text)
        if size <= _SHORT_CHARS:
            known = self._short.get(text)
            if known is not None:
                return known
        elif size <= _KNOWN_TEXT_CHARS:
            known = self._known.get(text)
            if known is not None:
                return known
        count_piece = self._count_piece
        if count_piece is None:
            count_piece = self._count_piece = _piece_counter(self._get())
        if size > _WRAPPER_MAX_CHARS:
            return sum(count_piece(piece) for piece in _split(text))
        counted = count_piece(text)
        if size <= _SHORT_CHARS:
            if len(self._short) < _SHORT_MAX:
                self._short[text] = counted
        elif size <= _KNOWN_TEXT_CHARS:
            self._remember(text, counted)
        return counted

    def _remember(self, text: str, counted: int) -> None:
        """Keep the exact count of ``text``, dropping the oldest counts beyond the limits."""
        with self._known_lock:
            if text in self._known:
                return
            known = self._known
            self._known_chars += len(text)
            known[text] = counted
            while len(known) > _KNOWN_MAX or self._known_chars > _KNOWN_CHARS:
                oldest = next(iter(known))
                del known[oldest]
                self._known_chars -= len(oldest)

    def encode(self, text: str) -> list[int]:
        """Return the token ids of ``text``, encoded as ordinary text.

        Raises:
            InvalidInput: ``text`` contains a run of more than 50,000 characters
                without a word or line boundary that also encodes to more than
                200,000 tokens (the encoder's limit for one piece).
        """
        encoding = self._get()
        if len(text) <= _SAFE_PIECE_CHARS:
            return encoding.encode_ordinary(text)
        ids: list[int] = []
        for piece in _split(text):
            if len(piece) > _WRAPPER_MAX_CHARS:
                raise _too_long(len(piece))
            try:
                ids.extend(encoding.encode_ordinary(piece))
            except ValueError as exc:  # TokenLimitError is a ValueError
                raise InvalidInput(
                    "text has a run of characters without any word or line boundary "
                    "that encodes to more than 200,000 tokens",
                    field="text",
                ) from exc
        return ids


def _piece_counter(encoding: _Encoding) -> Callable[[str], int]:
    """The exact count of one piece of at most ``_WRAPPER_MAX_CHARS`` characters.

    The Rust tokenizer behind the wrapper counts without building the token list
    (the same pre-tokenizer and byte-pair merges as ``encode_ordinary``, so the
    same number): a third of the time of ``len(encode_ordinary(text))`` for a chat
    message. Text the backend cannot take as UTF-8 (a lone surrogate), and a
    wrapper without that backend, go through ``encode_ordinary``, which replaces
    lone surrogates first.
    """
    backend_count = getattr(getattr(encoding, "_backend", None), "count", None)
    if not callable(backend_count):
        return lambda piece: _count_piece(encoding, piece)

    def count(piece: str) -> int:
        if len(piece) > _WRAPPER_MAX_CHARS:
            raise _too_long(len(piece))
        try:
            return int(backend_count(piece))
        except UnicodeEncodeError:
            return _count_piece(encoding, piece)

    return count


def _count_piece(encoding: _Encoding, piece: str) -> int:
    if len(piece) > _WRAPPER_MAX_CHARS:
        raise _too_long(len(piece))
    try:
        return len(encoding.encode_ordinary(piece))
    except Exception as exc:
        # Above 200,000 tokens the wrapper raises TokenLimitError after encoding the
        # whole piece; the exception carries the exact count.
        if _token_limit_error is not None and isinstance(exc, _token_limit_error):
            return int(cast(Any, exc).token_count)
        raise


def _too_long(length: int) -> InvalidInput:
    return InvalidInput(
        f"text has a run of {length:,} characters without any word or line boundary; "
        f"at most {_WRAPPER_MAX_CHARS:,} can be counted exactly",
        field="text",
    )


# Positions where both encoders' pre-tokenizers (the regexes that cut text into
# words before byte-pair encoding) always cut, whatever surrounds them:
#
# * after a letter or digit, before a space or an ASCII/CJK punctuation mark other
#   than the apostrophe: word and number pre-tokens end at such a character (only
#   an apostrophe can extend a word, as in "it's"), and no pre-token starts with a
#   letter or digit and continues with punctuation or a space;
# * after a newline, before a letter or digit: newlines end whitespace and
#   punctuation pre-tokens, and word pre-tokens cannot start with one.
#
# No pre-token looks across such a position, so encoding the text on both sides
# separately gives exactly the tokens of the whole. ``[^\W_]`` is str.isalnum().
_CUT_PATTERN: Final = (
    r"(?<=[^\W_])(?=[ !-&(-/:-@\[-`{-~\u3001\u3002\uff01\uff0c\uff1a\uff1b\uff1f])"
    r"|(?<=\n)(?=[^\W_])"
)


@functools.cache
def _cut() -> re.Pattern[str]:
    """``_CUT_PATTERN`` compiled on first use: compiling it costs a cold start about
    as much as opening the store, and only texts longer than a safe piece need it."""
    return re.compile(_CUT_PATTERN)


def _last_cut(text: str, lo: int, hi: int) -> int | None:
    """The largest cut position in ``[lo, hi]`` (``hi < len(text)``), or None."""
    span = 1024
    while True:
        start = max(lo, hi - span)
        last = None
        for match in _cut().finditer(text, start, hi + 1):
            last = match.start()
        if last is not None:
            return last
        if start == lo:
            return None
        span *= 8


def _next_cut(text: str, lo: int) -> int | None:
    """The smallest cut position at or after ``lo``, or None."""
    match = _cut().search(text, lo)
    return None if match is None else match.start()


def _split(text: str, limit: int = _SAFE_PIECE_CHARS) -> Iterator[str]:
    """Split ``text`` at cut positions into pieces of at most ``limit`` characters.

    A piece is longer than ``limit`` only when the text has no cut position within
    ``limit`` characters; it then extends to the next cut position.
    """
    start = 0
    n = len(text)
    while n - start > limit:
        cut = _last_cut(text, start + 1, start + limit)
        if cut is None:
            cut = _next_cut(text, start + limit + 1)
            if cut is None:
                break
        yield text[start:cut]
        start = cut
    yield text[start:]


def encoding_for_model(model_or_encoding: str | None = None) -> str:
    """Return the encoding name for a model name or encoding name.

    Accepts encoding names (``"o200k_base"``, ``"cl100k_base"``), OpenAI model names
    and snapshots (``"gpt-4o-2024-08-06"``), fine-tuned models (``"ft:gpt-4o-mini:..."``)
    and ``"openai/"``-prefixed names. Case and surrounding whitespace are ignored.
    ``None`` means :data:`DEFAULT_ENCODING`.

    Raises:
        ConfigurationError: the name is not a known model or encoding.
    """
    if model_or_encoding is None:
        return DEFAULT_ENCODING
    key = model_or_encoding.strip().lower()
    if key in SUPPORTED_ENCODINGS:
        return key
    key = key.removeprefix("openai/")
    if key.startswith("ft:"):
        key = key[3:].split(":", 1)[0]
    for prefix, encoding in _MODEL_PREFIXES:
        if key.startswith(prefix):
            return encoding
    raise ConfigurationError(
        f"unknown model or encoding {model_or_encoding!r}: cannot pick a tokenizer for it; "
        f"pass an encoding name ({', '.join(repr(e) for e in SUPPORTED_ENCODINGS)}) "
        "or your own tokenizer"
    )


_tokenizers: dict[str, OpenAITokenizer] = {}
_tokenizers_lock = threading.Lock()


def get_tokenizer(model_or_encoding: str | None = None) -> Tokenizer:
    """Return the (shared, cached) exact tokenizer for a model or encoding name.

    ``None`` gives ``o200k_base``. Model names map as in ``tiktoken``: gpt-4o*,
    gpt-4.1*, gpt-4.5*, gpt-5*, o1*, o3*, o4*, chatgpt-4o* use ``o200k_base``;
    gpt-4*, gpt-3.5*, text-embedding-3-*, text-embedding-ada-002 use
    ``cl100k_base``. One instance exists per encoding, so
    ``get_tokenizer("gpt-4o") is get_tokenizer("o200k_base")``. Cheap: nothing is
    loaded until the first count.

    Raises:
        ConfigurationError: unknown model or encoding (the message names it).
    """
    encoding = encoding_for_model(model_or_encoding)
    with _tokenizers_lock:
        tokenizer = _tokenizers.get(encoding)
        if tokenizer is None:
            tokenizer = _tokenizers[encoding] = OpenAITokenizer(encoding)
        return tokenizer


def _text_field(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput(
            f"message field {key!r} must be a string, got {type(value).__name__}", field=key
        )
    return value


def _content_tokens(tokenizer: Tokenizer, content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return tokenizer.count(content)
    if isinstance(content, list | tuple):
        total = 0
        for part in content:
            if isinstance(part, str):
                total += tokenizer.count(part)
            elif isinstance(part, Mapping):
                # Text parts ({"type": "text", "text": ...}) and refusals count as
                # text; image, audio, file and unknown parts cost a fixed amount.
                counted = False
                for key in ("text", "refusal"):
                    value = part.get(key)
                    if isinstance(value, str):
                        total += tokenizer.count(value)
                        counted = True
                if not counted:
                    total += NON_TEXT_PART_TOKENS
            else:
                raise InvalidInput(
                    f"message content part must be a mapping, got {type(part).__name__}",
                    field="content",
                )
        return total
    raise InvalidInput(
        f"message content must be a string, a list of parts or None, got {type(content).__name__}",
        field="content",
    )


def _tool_call_tokens(tokenizer: Tokenizer, call: Any) -> int:
    if not isinstance(call, Mapping):
        raise InvalidInput(
            f"tool call must be a mapping, got {type(call).__name__}", field="tool_calls"
        )
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise InvalidInput("tool call has no 'function' mapping", field="tool_calls")
    total = TOOL_CALL_OVERHEAD_TOKENS
    total += tokenizer.count(_text_field("tool_calls.function.name", function.get("name")))
    arguments = function.get("arguments")
    if arguments is not None:
        total += tokenizer.count(_text_field("tool_calls.function.arguments", arguments))
    call_id = call.get("id")
    if call_id is not None:
        total += tokenizer.count(_text_field("tool_calls.id", call_id))
    return total


def count_message_tokens(tokenizer: Tokenizer, message: Mapping[str, Any]) -> int:
    """Return the tokens one OpenAI chat message costs inside a request.

    Follows OpenAI's published recipe (openai-cookbook, "How to count tokens with
    tiktoken"): :data:`MESSAGE_OVERHEAD_TOKENS` (3) per message, plus the tokens
    of ``role`` and ``content``, plus :data:`NAME_OVERHEAD_TOKENS` (1) and the
    name's tokens when ``name`` is set. On top of the recipe:

    * ``content`` may be ``None`` (0 tokens) or a list of content parts, whose
      ``text`` (and ``refusal``) strings are counted; a part without text
      (image, audio, file, an unknown type) costs :data:`NON_TEXT_PART_TOKENS`.
    * each entry of an assistant's ``tool_calls``
      (``{"id", "type": "function", "function": {"name", "arguments"}}``) costs
      :data:`TOOL_CALL_OVERHEAD_TOKENS` plus the tokens of the function name, the
      arguments string and the call id; a legacy ``function_call``
      (``{"name", "arguments"}``) is counted the same way, without an id.
    * other fields (``tool_call_id`` of tool results, ``type``, provider
      extensions) are bookkeeping the model is not shown and cost nothing.

    The reply-priming tokens are *not* included: a request costs
    ``sum(count_message_tokens(t, m) for m in messages) + REPLY_PRIMING_TOKENS``.

    Args:
        tokenizer: any :class:`Tokenizer` (only its ``count`` is used).
        message: one provider-shaped chat message.

    Raises:
        InvalidInput: the message has no string ``role`` or a field has the wrong type.
    """
    role = message.get("role")
    if not isinstance(role, str):
        raise InvalidInput("message has no string 'role'", field="role")
    total = MESSAGE_OVERHEAD_TOKENS + tokenizer.count(role)
    total += _content_tokens(tokenizer, message.get("content"))
    name = message.get("name")
    if name is not None:
        total += NAME_OVERHEAD_TOKENS + tokenizer.count(_text_field("name", name))
    tool_calls = message.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list | tuple):
            raise InvalidInput("message field 'tool_calls' must be a list", field="tool_calls")
        for call in tool_calls:
            total += _tool_call_tokens(tokenizer, call)
    function_call = message.get("function_call")
    if function_call is not None:
        total += _tool_call_tokens(tokenizer, {"function": function_call})
    return total
