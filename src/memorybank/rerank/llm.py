"""``LLMReranker``: an OpenAI-compatible chat model as a listwise reranker.

One request per search to ``{base_url}/chat/completions`` at temperature 0:
the query and the candidates, numbered ``[1]``..``[n]`` (each on one line, cut
to ``max_chars``), and the instruction to answer ``{"ranking": [numbers, best
first]}`` (sent as a JSON-schema ``response_format`` unless
``structured_output=False``). The answer is parsed strictly: a JSON object with
a ``"ranking"`` list, or a bare JSON list, of integers; anything else is an
error (and the search keeps its hybrid order). Numbers outside ``1..n`` and
repeats are ignored; candidates the model leaves out follow the listed ones in
hybrid order. Scores: the candidate listed ``i``-th (from 0) of ``m`` gets
``(m - i) / m`` (1.0 for the first), an unlisted one 0.0.

No retries: a search waits for this call. ``timeout`` bounds the request
(connect, write, each read; an async call also as a whole). Errors:
``StoreUnavailable`` (unreachable, timed out, a non-2xx answer other than
401/403/404), ``ConfigurationError`` (401/403/404: key, model or base_url),
``ExtractionError`` (the model's answer is unusable). A search turns each into
a warning and the hybrid order.

Uses httpx (``pip install memorybank[openai]``): one ``httpx.Client`` for
``rerank`` (``close()``) and one ``httpx.AsyncClient`` per event loop for
``arerank``, kept until ``await reranker.aclose()`` on that loop (or
``async with reranker:``), so a search reuses its connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memorybank.errors import ConfigurationError, ExtractionError, StoreUnavailable
from memorybank.rerank.base import RerankCandidate
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

__all__ = ["SCHEMA", "SYSTEM_PROMPT", "LLMReranker", "parse_ranking", "ranking_scores"]

SYSTEM_PROMPT = """\
You rank search results. You get a query and numbered passages from a memory.
Order the passages by how well each answers the query or helps to answer it, most
useful first. Leave out passages that do not help at all. Answer with JSON only:
{"ranking": [passage numbers, best first]}.
"""

#: The JSON schema of an answer.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["ranking"],
    "properties": {"ranking": {"type": "array", "items": {"type": "integer"}}},
}


def parse_ranking(content: object, count: int) -> list[int]:
    """The candidates' indexes (from 0) the model's answer lists, best first.

    ``ExtractionError`` unless ``content`` is JSON: ``{"ranking": [...]}`` or a
    list, of integers. Numbers outside ``1..count`` and repeats are skipped.
    """
    answer = model_json(content)
    if isinstance(answer, dict):
        answer = answer.get("ranking")
    if not isinstance(answer, list):
        raise ExtractionError('the model\'s answer is not {"ranking": [...]} or a list')
    order: list[int] = []
    for item in answer:
        if isinstance(item, bool) or not isinstance(item, int):
            raise ExtractionError(f"the model's ranking holds a non-integer: {item!r}")
        if 1 <= item <= count and item - 1 not in order:
            order.append(item - 1)
    return order


def ranking_scores(order: Sequence[int], count: int) -> list[float]:
    """One score per candidate: ``(m - i) / m`` for the ``i``-th listed of ``m``, else 0."""
    scores = [0.0] * count
    for i, index in enumerate(order):
        scores[index] = (len(order) - i) / len(order)
    return scores


class LLMReranker(OwnsClients):
    """A chat model behind an OpenAI-compatible endpoint as a ``Reranker`` (see the module).

    Args:
        base_url: the API root, e.g. ``http://localhost:11434/v1``.
        model: the model name the endpoint knows.
        api_key: sent as a bearer token; ``None`` reads ``$OPENAI_API_KEY``
            (required for api.openai.com, optional elsewhere).
        timeout: seconds a search waits for the answer.
        max_chars: characters of each candidate sent (longer ones are cut).
        max_tokens: the answer's token limit (``None``: not sent).
        structured_output: send the JSON schema as ``response_format``.
        headers: extra request headers.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        max_chars: int = 1000,
        max_tokens: int | None = 512,
        structured_output: bool = True,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._httpx = import_httpx("LLMReranker")
        self._url, self._headers = chat_endpoint("LLMReranker", base_url, model, api_key, headers)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ConfigurationError(f"timeout must be > 0, got {timeout!r}")
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ConfigurationError(f"max_chars must be a positive int, got {max_chars!r}")
        self.model = model
        self._timeout = float(timeout)
        self._max_chars = max_chars
        self._max_tokens = max_tokens
        self._structured = bool(structured_output)
        self._clients = HttpClients(
            self._httpx, owner="LLMReranker", timeout=self._timeout, headers=self._headers
        )

    def __repr__(self) -> str:
        return f"LLMReranker(url={self._url!r}, model={self.model!r})"

    # -- the request and the answer (no I/O) -----------------------------------------

    def request_body(self, query: str, candidates: Sequence[RerankCandidate]) -> dict[str, Any]:
        """The chat-completions request for ``query`` and ``candidates`` (tests read it)."""
        lines = []
        for number, candidate in enumerate(candidates, 1):
            text = " ".join(candidate.text.split())
            if len(text) > self._max_chars:
                text = text[: self._max_chars - 1] + "…"
            lines.append(f"[{number}] {text}")
        prompt = (
            f"Query: {' '.join(query.split())}\n\nPassages:\n"
            + "\n".join(lines)
            + f"\n\nRank the {len(candidates)} passages for the query, best first."
        )
        return chat_request(
            self.model,
            SYSTEM_PROMPT,
            prompt,
            max_tokens=self._max_tokens,
            schema=("memorybank_ranking", SCHEMA) if self._structured else None,
        )

    def _scores(self, response: httpx.Response, count: int) -> list[float]:
        status = response.status_code
        if status in (401, 403, 404):
            raise ConfigurationError(f"rerank endpoint refused {self._url} (HTTP {status})")
        if not 200 <= status < 300:
            raise StoreUnavailable(f"rerank endpoint {self._url} answered HTTP {status}")
        try:
            message = response.json()["choices"][0]["message"]
            content = message["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ExtractionError("the endpoint's response has no choices[0].message") from exc
        return ranking_scores(parse_ranking(content, count), count)

    def _unavailable(self, error: Exception) -> StoreUnavailable:
        if isinstance(error, self._httpx.TimeoutException | TimeoutError):
            return StoreUnavailable(
                f"rerank endpoint {self._url} timed out after {self._timeout} s"
            )
        return StoreUnavailable(f"rerank endpoint {self._url}: {type(error).__name__}: {error}")

    # -- the two shells ----------------------------------------------------------------

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        """One request; one score per candidate (see the module docstring)."""
        if not candidates:
            return []
        body = self.request_body(query, candidates)
        try:
            response = self._clients.sync().post(self._url, json=body)
        except self._httpx.TransportError as exc:
            raise self._unavailable(exc) from exc
        return self._scores(response, len(candidates))

    async def arerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        """Async twin of ``rerank``, on this event loop's client."""
        if not candidates:
            return []
        body = self.request_body(query, candidates)
        client = self._clients.for_loop()
        try:
            response = await asyncio.wait_for(client.post(self._url, json=body), self._timeout)
        except (self._httpx.TransportError, TimeoutError) as exc:
            raise self._unavailable(exc) from exc
        return self._scores(response, len(candidates))
