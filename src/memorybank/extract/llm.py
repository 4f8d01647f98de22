"""``LLMExtractor``: extraction by any OpenAI-compatible chat-completions endpoint.

One request per text to ``{base_url}/chat/completions`` with a JSON-schema
``response_format`` (OpenAI structured outputs; vLLM, llama.cpp's server,
Ollama and LiteLLM accept the same), at temperature 0. The answer is parsed and
checked, then bounded by ``finish``: at least ``min_confidence`` (0.7), at most
20 entities and 30 relations, relations only between named entities. Known
entities go to the model by name only (at most ``MAX_KNOWN``), never the graph.

Uses httpx (``pip install memorybank[openai]``): one ``httpx.Client`` for
``extract`` (``close()``) and one ``httpx.AsyncClient`` per event loop for
``aextract``, kept until ``await extractor.aclose()`` on that loop (or
``async with extractor:``), so a memory extracting every write reuses its
connections instead of opening one per message. A client whose loop has
closed is never reused. The extractor belongs to whoever built it: a
``Memory``/``AsyncMemory`` given it never closes it (it may serve other
memories), so close it yourself after closing the memories that use it.

Errors (nothing is written when one is raised):

* ``ExtractionError``: the model answered unusably (not JSON, not the schema's
  shape, a refusal, cut off at the token limit). Not retried.
* ``StoreUnavailable``: the endpoint is unreachable, timed out, or answered
  429/5xx, after ``max_retries`` retries (default 1). A retry waits
  ``backoff * 2**attempt`` seconds with jitter, or what ``Retry-After`` says
  when that is at most ``max_retry_after``; a longer ``Retry-After`` is not
  waited for. Background extraction never multiplies this: it runs a bounded
  number of calls at a time.
* ``ConfigurationError``: 401/403/404 (bad key, unknown model, wrong base_url).
* ``InvalidInput`` (``field="text"``): 400/413/422 (the request was refused).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memorybank.core.extraction import (
    MAX_ENTITIES,
    MAX_FACTS,
    MAX_KNOWN,
    MAX_OBSERVATIONS,
    MAX_RELATIONS,
    MIN_CONFIDENCE,
    ExtractedEntity,
    ExtractedFact,
    ExtractedObservation,
    ExtractedRelation,
    Extraction,
    finish,
)
from memorybank.errors import ConfigurationError, ExtractionError, InvalidInput, StoreUnavailable
from memorybank.graph.model import ENTITY_TYPES
from memorybank.runtime.httpclients import (
    HttpClients,
    OwnsClients,
    chat_endpoint,
    chat_request,
    import_httpx,
    model_json,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["SCHEMA", "SYSTEM_PROMPT", "LLMExtractor"]

#: Longest text sent in one request (characters); longer texts are refused.
MAX_TEXT_CHARS = 32_000

SYSTEM_PROMPT = f"""\
You extract a knowledge graph and facts from one message of a conversation.
Return JSON matching the schema, and nothing else.
- entities: people, organizations, locations, concepts, events and objects the text names.
  type is one of {", ".join(ENTITY_TYPES)} (or another single lower-case word). If an entity
  is one of the known entities, use the known name exactly. At most {MAX_ENTITIES}.
- relations: source --type--> target between entity names, type in lower snake_case
  (works_at, lives_in, married_to, part_of, knows, manager_of, ...). valid_at / invalid_at:
  ISO 8601 dates when the text says when the relation started / stopped holding (resolve
  relative dates against the reference time), else null. At most {MAX_RELATIONS}.
- observations: short standalone facts about one entity ("likes hiking").
- facts: durable facts worth remembering about the user or the world: subject (an entity
  name), attribute (lower snake_case, e.g. lives_in, works_at, diet, birthday), value, and
  statement (one self-contained sentence). A person's current value of an attribute only.
- confidence: 0 to 1, how sure the text makes you. Leave out what the text does not say;
  never invent.
"""


def _array(items: dict[str, Any], limit: int) -> dict[str, Any]:
    return {"type": "array", "maxItems": limit, "items": items}


def _object(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


_STRING = {"type": "string"}
_NUMBER = {"type": "number"}
_TIME = {"type": ["string", "null"]}

#: The JSON schema of an answer (strict structured-output form: every field required).
SCHEMA: dict[str, Any] = _object(
    entities=_array(
        _object(name=_STRING, type=_STRING, aliases={"type": "array", "items": _STRING},
                confidence=_NUMBER),
        MAX_ENTITIES,
    ),
    relations=_array(
        _object(source=_STRING, type=_STRING, target=_STRING, valid_at=_TIME, invalid_at=_TIME,
                confidence=_NUMBER),
        MAX_RELATIONS,
    ),
    observations=_array(_object(entity=_STRING, text=_STRING, confidence=_NUMBER),
                        MAX_OBSERVATIONS),
    facts=_array(
        _object(subject=_STRING, attribute=_STRING, value=_STRING, statement=_STRING,
                confidence=_NUMBER),
        MAX_FACTS,
    ),
)  # fmt: skip

_RETRY_STATUS = frozenset({408, 409, 429})


def _retry_after(response: httpx.Response) -> float | None:
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = response.headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) / scale)
            except ValueError:
                return None
    return None


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
    return json.dumps(body)[:300]


class _Retry(Exception):
    def __init__(self, message: str, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


def _items(answer: dict[str, Any], field: str) -> list[dict[str, Any]]:
    value = answer.get(field, [])
    if not isinstance(value, list):
        raise ExtractionError(f"the model's answer has a non-list {field!r}")
    return value


def _text(item: dict[str, Any], field: str) -> str:
    value = item.get(field)
    return value if isinstance(value, str) else ""


def _number(item: dict[str, Any]) -> float:
    value = item.get("confidence")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return -1.0  # refused by finish
    return float(value)


def parse_answer(content: object) -> Extraction:
    """The model's message content as an unfinished ``Extraction``.

    ``ExtractionError`` unless it is a JSON object whose four fields (when
    present) are lists; a malformed item becomes one ``finish`` drops.
    """
    answer = model_json(content)
    if not isinstance(answer, dict):
        raise ExtractionError("the model's answer is not a JSON object")
    lists = {f: _items(answer, f) for f in ("entities", "relations", "observations", "facts")}
    bad = 0
    entities, relations, observations, facts = [], [], [], []
    for item in lists["entities"]:
        if not isinstance(item, dict):
            bad += 1
            continue
        aliases = item.get("aliases")
        names = aliases if isinstance(aliases, list) else []
        entities.append(
            ExtractedEntity(
                _text(item, "name"),
                _text(item, "type") or "concept",
                tuple(a for a in names if isinstance(a, str)),
                _number(item),
            )
        )
    for item in lists["relations"]:
        if not isinstance(item, dict):
            bad += 1
            continue
        relations.append(
            ExtractedRelation(
                _text(item, "source"),
                _text(item, "type"),
                _text(item, "target"),
                item.get("valid_at"),  # finish parses or drops
                item.get("invalid_at"),
                _number(item),
            )
        )
    for item in lists["observations"]:
        if not isinstance(item, dict):
            bad += 1
            continue
        observations.append(
            ExtractedObservation(_text(item, "entity"), _text(item, "text"), _number(item))
        )
    for item in lists["facts"]:
        if not isinstance(item, dict):
            bad += 1
            continue
        facts.append(
            ExtractedFact(
                _text(item, "subject"),
                _text(item, "attribute"),
                _text(item, "value"),
                _text(item, "statement"),
                _number(item),
            )
        )
    return Extraction(tuple(entities), tuple(relations), tuple(observations), tuple(facts), bad)


class LLMExtractor(OwnsClients):
    """Extraction by a chat model behind an OpenAI-compatible endpoint (see the module).

    Args:
        base_url: the API root, e.g. ``https://api.openai.com/v1`` or
            ``http://localhost:11434/v1``.
        model: the model name the endpoint knows.
        api_key: sent as a bearer token; ``None`` reads ``$OPENAI_API_KEY``
            (required for api.openai.com, optional elsewhere).
        min_confidence: proposals below it are dropped (default 0.7).
        timeout: seconds per request (connect, read and write each).
        max_retries: retries after a failed attempt (429, 5xx, timeout, network).
        backoff: the base of the exponential retry delay, in seconds (see the module
            docstring).
        max_retry_after: the longest ``Retry-After`` honoured, in seconds (see the
            module docstring).
        max_tokens: the answer's token limit sent with the request (``None``: not
            sent, for endpoints that refuse the field).
        headers: extra request headers.

    Call ``close()`` when done (or use ``with``), and ``await aclose()`` on each
    event loop that called ``aextract`` before that loop ends (or ``async with``).
    A memory given the extractor never closes it: you own it.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        min_confidence: float = MIN_CONFIDENCE,
        timeout: float = 60.0,
        max_retries: int = 1,
        backoff: float = 0.5,
        max_retry_after: float = 10.0,
        max_tokens: int | None = 4096,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._httpx = import_httpx("LLMExtractor")
        self._url, self._headers = chat_endpoint("LLMExtractor", base_url, model, api_key, headers)
        if isinstance(min_confidence, bool) or not 0.0 <= min_confidence <= 1.0:
            raise ConfigurationError("min_confidence must be between 0 and 1")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigurationError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if not timeout > 0 or backoff < 0 or max_retry_after < 0:
            raise ConfigurationError("timeout must be > 0, backoff and max_retry_after >= 0")
        self.model = model
        self.min_confidence = float(min_confidence)
        self._timeout = float(timeout)
        self._max_retries = max_retries
        self._backoff = float(backoff)
        self._max_retry_after = float(max_retry_after)
        self._max_tokens = max_tokens
        self._clients = HttpClients(
            self._httpx, owner="LLMExtractor", timeout=self._timeout, headers=self._headers
        )

    def __repr__(self) -> str:
        return f"LLMExtractor(url={self._url!r}, model={self.model!r})"

    # -- the request and the answer (no I/O) -----------------------------------

    def request_body(
        self, text: str, known_entities: Sequence[str], reference_time: datetime | None
    ) -> dict[str, Any]:
        """The chat-completions request for ``text`` (also what the tests inspect)."""
        if not isinstance(text, str):
            raise InvalidInput("text must be a string", field="text")
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidInput(f"text is longer than {MAX_TEXT_CHARS} characters", field="text")
        known = list(dict.fromkeys(k for k in known_entities if isinstance(k, str)))[:MAX_KNOWN]
        when = (reference_time or datetime.now(UTC)).isoformat()
        prompt = (
            f"Reference time: {when}\n"
            f"Known entities: {json.dumps(known, ensure_ascii=False)}\n"
            f"Text:\n{text}"
        )
        return chat_request(
            self.model,
            SYSTEM_PROMPT,
            prompt,
            max_tokens=self._max_tokens,
            schema=("memorybank_extraction", SCHEMA),
        )

    def _answer(self, response: httpx.Response, known: Sequence[str]) -> Extraction:
        """The finished extraction of a 2xx response, or a typed error for any other."""
        status = response.status_code
        if status in _RETRY_STATUS or status >= 500:
            raise _Retry(f"HTTP {status}: {_error_message(response)}", _retry_after(response))
        if status in (401, 403, 404):
            raise ConfigurationError(
                f"extraction endpoint refused {self._url} (HTTP {status}): "
                f"{_error_message(response)}"
            )
        if status >= 400:
            raise InvalidInput(
                f"extraction request refused (HTTP {status}): {_error_message(response)}",
                field="text",
            )
        try:
            body = response.json()
        except ValueError as exc:
            raise ExtractionError("the endpoint's response is not JSON") from exc
        try:
            choice = body["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ExtractionError("the endpoint's response has no choices[0].message") from exc
        if not isinstance(message, dict):
            raise ExtractionError("the endpoint's response has no choices[0].message")
        if message.get("refusal"):
            raise ExtractionError(f"the model refused: {str(message['refusal'])[:200]}")
        if isinstance(choice, dict) and choice.get("finish_reason") == "length":
            raise ExtractionError("the model's answer was cut off at the token limit")
        return finish(
            parse_answer(message.get("content")),
            known_entities=known,
            min_confidence=self.min_confidence,
        )

    def _failed(self, exc: Exception) -> _Retry:
        """The retried error of a request that got no answer (timeout, network)."""
        if isinstance(exc, self._httpx.TimeoutException):
            return _Retry(f"timed out after {self._timeout} s")
        return _Retry(f"{type(exc).__name__}: {exc}")

    def _delay(self, attempt: int, error: _Retry) -> float:
        """Seconds to wait before retrying failed attempt ``attempt`` (from 0); when no
        retry is left (or ``Retry-After`` asks too long), ``StoreUnavailable``."""
        if attempt >= self._max_retries:
            delay = None
        elif error.delay is not None:
            delay = error.delay if error.delay <= self._max_retry_after else None
        else:  # random() is fine: the jitter only spreads clients apart
            delay = float(self._backoff * 2.0**attempt * (0.5 + random.random()))
        if delay is None:
            raise StoreUnavailable(
                f"extraction endpoint {self._url} failed after {attempt + 1} attempt(s): {error}"
            ) from error.__cause__
        return delay

    # -- the two shells ----------------------------------------------------------

    def extract(
        self,
        text: str,
        *,
        known_entities: Sequence[str] = (),
        reference_time: datetime | None = None,
    ) -> Extraction:
        """One request; the finished extraction (see the module docstring for errors)."""
        body = self.request_body(text, known_entities, reference_time)
        attempt = 0
        while True:
            try:
                try:
                    response = self._clients.sync().post(self._url, json=body)
                except self._httpx.TransportError as exc:
                    raise self._failed(exc) from exc
                return self._answer(response, known_entities)
            except _Retry as error:
                time.sleep(self._delay(attempt, error))
                attempt += 1

    async def aextract(
        self,
        text: str,
        *,
        known_entities: Sequence[str] = (),
        reference_time: datetime | None = None,
    ) -> Extraction:
        """Async twin of ``extract``, on this event loop's client."""
        body = self.request_body(text, known_entities, reference_time)
        attempt = 0
        while True:
            try:
                try:
                    # fetched per attempt: an aclose() during the backoff is no error
                    response = await self._clients.for_loop().post(self._url, json=body)
                except self._httpx.TransportError as exc:
                    raise self._failed(exc) from exc
                return self._answer(response, known_entities)
            except _Retry as error:
                await asyncio.sleep(self._delay(attempt, error))
                attempt += 1
