"""``LLMJudge``: an OpenAI-compatible chat model deciding what the rules cannot.

After the rules planned a run, each fact they left undecided is shown to the judge with
its candidates, one request per fact; the answer is validated (``parse_decisions``) and
budgeted per run. What it is asked, what is applied, what a failure does and the budget:
docs/consolidation.md ("An LLM judge for what the rules cannot decide"). Uses httpx
(``pip install memorybank[openai]``) through ``HttpClients``, like ``LLMReranker``:
``close()`` / ``await aclose()`` release the connections.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from memorybank.errors import ConfigurationError
from memorybank.runtime.httpclients import (
    HttpClients,
    OwnsClients,
    chat_endpoint,
    chat_request,
    import_httpx,
)

if TYPE_CHECKING:
    import httpx

    from memorybank.records import Fact

__all__ = [
    "RELATIONS",
    "SYSTEM_PROMPT",
    "JudgeUsage",
    "LLMJudge",
    "Verdict",
    "parse_decisions",
    "schema",
]

#: What the judge may say of a candidate.
RELATIONS = ("duplicate", "contradiction", "neither")

SYSTEM_PROMPT = """\
You tidy a memory of facts about one user. You get one fact and a few older
candidate facts, each with its id. For each candidate say how it relates to the fact:
"duplicate" if both say the same thing in other words,
"contradiction" if both cannot be true at the same time (one replaced the other),
"neither" otherwise (different things, or both can hold). When unsure, say "neither".
Answer with JSON only: {"decisions": [{"id": "<candidate id>", "relation": "..."}]}.
"""


@dataclass(slots=True)
class JudgeUsage:
    """What a run asked its LLM judge, and what that cost.

    Attributes:
        model: the judge's model.
        cases: the cases (a fact and its candidates) the rules left undecided.
        asked: the cases sent to the judge (the budget may stop it before ``cases``).
        calls: HTTP requests made (retries included), at most the judge's ``max_calls``.
        failed: cases the judge could not answer (no valid answer after the retries,
            an error, a timeout): each decided nothing.
        tokens: tokens the endpoint reported used (prompt and answer).
        exhausted: whether the budget (calls or tokens) stopped the run asking.
    """

    model: str
    cases: int = 0
    asked: int = 0
    calls: int = 0
    failed: int = 0
    tokens: int = 0
    exhausted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The usage as JSON-ready values (every field, all plain)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Verdict:
    """One decision of the judge: candidate ``id`` is a ``relation`` of the fact shown."""

    id: str
    relation: Literal["duplicate", "contradiction"]


class _Invalid(Exception):
    """An answer that is not the JSON asked for (retried)."""


class _Refused(Exception):
    """An answer no retry will change (401/403/404: key, model or URL)."""


def schema(ids: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of an answer about the candidates ``ids`` (only those)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["decisions"],
        "properties": {
            "decisions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["id", "relation"],
                    "properties": {
                        "id": {"type": "string", "enum": list(ids)},
                        "relation": {"type": "string", "enum": list(RELATIONS)},
                    },
                },
            }
        },
    }


def parse_decisions(content: object, shown: Sequence[str]) -> list[Verdict]:
    """The judge's decisions about the candidates ``shown``, validated.

    Raises ``ValueError`` unless ``content`` is JSON ``{"decisions": [objects]}``.
    Decisions naming an id not in ``shown``, a relation not in ``RELATIONS``, or an id
    also named by another decision, are dropped; ``"neither"`` decides nothing.
    """
    if not isinstance(content, str):
        raise ValueError("the answer has no text content")
    try:
        answer = json.loads(content)
    except ValueError as exc:
        raise ValueError(f"the answer is not JSON: {content[:120]!r}") from exc
    items = answer.get("decisions") if isinstance(answer, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError('the answer is not {"decisions": [objects]}')
    allowed = set(shown)
    named: dict[str, int] = {}
    for item in items:
        if isinstance(item.get("id"), str):
            named[item["id"]] = named.get(item["id"], 0) + 1
    verdicts: list[Verdict] = []
    for item in items:
        fact_id, relation = item.get("id"), item.get("relation")
        if not isinstance(fact_id, str) or fact_id not in allowed or named[fact_id] > 1:
            continue
        if relation == "duplicate" or relation == "contradiction":
            verdicts.append(Verdict(fact_id, relation))
    return verdicts


def _line(fact: Fact) -> str:
    said = fact.metadata.get("valid_at") or fact.metadata.get("said_at")
    when = said if isinstance(said, str) else fact.created_at.isoformat()
    return f"{json.dumps(' '.join(fact.content.split()), ensure_ascii=False)} (said {when})"


class LLMJudge(OwnsClients):
    """A chat model behind an OpenAI-compatible endpoint deciding, for consolidation, the
    cases the rules cannot (see the module).

    Args:
        base_url: the API root, e.g. ``http://localhost:11434/v1``.
        model: the model name the endpoint knows.
        api_key: sent as a bearer token; ``None`` reads ``$OPENAI_API_KEY``
            (required for api.openai.com, optional elsewhere).
        max_calls: requests per consolidation run (retries count).
        max_tokens: each answer's token limit.
        max_run_tokens: tokens per run (prompts and answers); ``None``: no limit but
            ``max_calls``.
        max_candidates: candidates shown with each fact.
        max_retries: further attempts after an invalid answer or a failed request.
        timeout: seconds one request may take.
        structured_output: send the JSON schema as ``response_format`` (turn off for
            an endpoint that refuses it; the answer is validated either way).
        headers: extra request headers.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        max_calls: int = 50,
        max_tokens: int = 256,
        max_run_tokens: int | None = None,
        max_candidates: int = 5,
        max_retries: int = 1,
        timeout: float = 30.0,
        structured_output: bool = True,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._httpx = import_httpx("LLMJudge")
        self._url, self._headers = chat_endpoint("LLMJudge", base_url, model, api_key, headers)
        for name, value, low in (
            ("max_calls", max_calls, 0),
            ("max_tokens", max_tokens, 1),
            ("max_candidates", max_candidates, 1),
            ("max_retries", max_retries, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigurationError(f"{name} must be an int >= {low}, got {value!r}")
        if max_run_tokens is not None and (
            isinstance(max_run_tokens, bool)
            or not isinstance(max_run_tokens, int)
            or max_run_tokens < 1
        ):
            raise ConfigurationError(
                f"max_run_tokens must be a positive int or None, got {max_run_tokens!r}"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ConfigurationError(f"timeout must be > 0, got {timeout!r}")
        self.model = model
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.max_run_tokens = max_run_tokens
        self.max_candidates = max_candidates
        self.max_retries = max_retries
        self._timeout = float(timeout)
        self._structured = bool(structured_output)
        self._clients = HttpClients(
            self._httpx, owner="LLMJudge", timeout=self._timeout, headers=self._headers
        )

    def __repr__(self) -> str:
        return f"LLMJudge(url={self._url!r}, model={self.model!r})"

    # -- the budget, the request and the answer (no I/O) -------------------------------

    def usage(self) -> JudgeUsage:
        """A run's fresh account of what it asked (``report.judge``)."""
        return JudgeUsage(model=self.model)

    def can_call(self, usage: JudgeUsage) -> bool:
        """Whether the run's budget allows one more request (marks ``exhausted`` if not)."""
        within = usage.calls < self.max_calls and (
            self.max_run_tokens is None or usage.tokens < self.max_run_tokens
        )
        if not within:
            usage.exhausted = True
        return within

    def request_body(self, fact: Fact, candidates: Sequence[Fact]) -> dict[str, Any]:
        """The chat-completions request about ``fact`` and ``candidates`` (tests read it)."""
        lines = [f"- id {c.id}: {_line(c)}" for c in candidates]
        prompt = (
            f"Fact: {_line(fact)}\n\nCandidates:\n"
            + "\n".join(lines)
            + "\n\nFor each candidate id, is it a duplicate of the fact, a contradiction"
            " of it, or neither?"
        )
        return chat_request(
            self.model,
            SYSTEM_PROMPT,
            prompt,
            max_tokens=self.max_tokens,
            schema=(
                ("memorybank_consolidation", schema([c.id for c in candidates]))
                if self._structured
                else None
            ),
        )

    def _answer(
        self,
        response: httpx.Response,
        body: dict[str, Any],
        shown: Sequence[str],
        usage: JudgeUsage,
    ) -> list[Verdict]:
        status = response.status_code
        if status in (401, 403, 404):
            raise _Refused(f"judge endpoint refused {self._url} (HTTP {status})")
        if not 200 <= status < 300:
            raise _Invalid(f"judge endpoint answered HTTP {status}")
        try:
            data = response.json()
        except ValueError as exc:
            raise _Invalid("the endpoint's response is not JSON") from exc
        spent = data.get("usage", {}).get("total_tokens") if isinstance(data, dict) else None
        if isinstance(spent, int) and not isinstance(spent, bool) and spent >= 0:
            usage.tokens += spent
        else:
            usage.tokens += (len(json.dumps(body)) + len(response.text)) // 4
        try:
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise _Invalid("the endpoint's response has no choices[0].message") from exc
        if isinstance(choice, dict) and choice.get("finish_reason") == "length":
            raise _Invalid("the answer was cut off at max_tokens")
        try:
            return parse_decisions(content, shown)
        except ValueError as exc:
            raise _Invalid(str(exc)) from exc

    # -- the two shells ----------------------------------------------------------------

    def decide(
        self, fact: Fact, candidates: Sequence[Fact], usage: JudgeUsage
    ) -> list[Verdict] | None:
        """The judge's verdicts on ``candidates`` against ``fact``; ``None`` when no
        attempt gave a valid answer (or the budget ran out first): nothing decided."""
        body = self.request_body(fact, candidates)
        shown = [c.id for c in candidates]
        usage.asked += 1
        for _ in range(self.max_retries + 1):
            if not self.can_call(usage):
                break
            usage.calls += 1
            try:
                response = self._clients.sync().post(self._url, json=body)
                return self._answer(response, body, shown, usage)
            except (self._httpx.TransportError, _Invalid):
                continue
            except _Refused:
                break
        usage.failed += 1
        return None

    async def adecide(
        self, fact: Fact, candidates: Sequence[Fact], usage: JudgeUsage
    ) -> list[Verdict] | None:
        """Async twin of ``decide``, on this event loop's client."""
        body = self.request_body(fact, candidates)
        shown = [c.id for c in candidates]
        usage.asked += 1
        for _ in range(self.max_retries + 1):
            if not self.can_call(usage):
                break
            usage.calls += 1
            try:
                client = self._clients.for_loop()
                response = await asyncio.wait_for(client.post(self._url, json=body), self._timeout)
                return self._answer(response, body, shown, usage)
            except (self._httpx.TransportError, TimeoutError, _Invalid):
                continue
            except _Refused:
                break
        usage.failed += 1
        return None
