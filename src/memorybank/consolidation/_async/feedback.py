"""``memory.feedback``: an agent (or its app) says whether a recalled fact was useful.

The rule, written once here: feedback moves the fact's ``confidence``, which ranks facts
in prompts (``fact_rank``) and in the context builder:

* ``useful=True``: halfway up to 1 (``c + (1 - c) / 2``; a fact without a confidence
  counts as 0.5);
* ``useful=False`` (wrong or unhelpful): halved (``c / 2``), so a fact marked wrong twice
  ranks below every fact nobody complained about at 0.3 or more.

The fact is corrected in place (no new version: its value did not change), and each call
keeps a ``fact_feedback`` record (``useful``, ``reason``, when), owned like the fact (so
``forget_user`` erases it; its ``key`` is the fact's id). Feedback is scoped like the fact
it names: one the caller may not see is ``NotFound``, and nothing is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.errors import InvalidInput, NotFound
from memorybank.memory._async.facts import AsyncFacts
from memorybank.records import Fact, Hit
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.stores.contract._async.store import Record, Unset

if TYPE_CHECKING:
    from memorybank.memory._async.core import _Core

__all__ = ["FEEDBACK", "give_feedback"]

FEEDBACK = "fact_feedback"
#: A fact's confidence when it has none, for the feedback rule.
UNRATED = 0.5


def _fact_id(hit_or_id: object) -> str:
    if isinstance(hit_or_id, Hit):
        if hit_or_id.fact is None:
            raise InvalidInput("feedback names a fact: a hit of kind 'fact'", field="hit_or_id")
        return hit_or_id.fact.id
    return v.check_id(hit_or_id, "hit_or_id")


def rated(confidence: float | None, useful: bool) -> float:
    """The confidence after one feedback (the module's rule)."""
    now = UNRATED if confidence is None else confidence
    return now + (1.0 - now) / 2 if useful else now / 2


async def give_feedback(
    core: _Core,
    tenant: str,
    facts: AsyncFacts,
    hit_or_id: Hit | str,
    *,
    useful: bool,
    reason: str | None,
    user_id: str | Unset | None,
    agent_id: str | Unset | None,
) -> Fact:
    """Apply the rule to the fact and keep the feedback record; the fact as it is now."""
    fact_id = _fact_id(hit_or_id)
    if not isinstance(useful, bool):
        raise InvalidInput("useful must be true or false", field="useful")
    if reason is not None:
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInput("reason must be a non-empty string or null", field="reason")
        v.check_text(reason, "reason", max_chars=v.MAX_LABEL_CHARS)
    fact = await facts.get(fact_id, user_id=user_id, agent_id=agent_id)
    if fact is None:
        raise NotFound(f"fact {fact_id!r} not found")
    changed = await facts.update(
        fact_id, confidence=rated(fact.confidence, useful), user_id=user_id, agent_id=agent_id
    )
    now = core.now()
    await core.store.record_put(
        tenant,
        [
            Record(
                kind=FEEDBACK,
                id=new_id(),
                agent_id=fact.agent_id,
                user_id=fact.user_id,
                content=reason or "",
                data={"useful": useful, "reason": reason, "confidence": changed.confidence},
                created_at=now,
                updated_at=now,
                key=fact_id,
            )
        ],
    )
    return changed
