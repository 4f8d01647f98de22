"""``memory.feedback``: an agent (or its app) says whether a recalled fact was useful.

The rule, written once here: useful raises the fact's ``confidence`` and importance
halfway to 1, not useful halves them; the fact is corrected in place and a
``fact_feedback`` record kept, scoped like the fact. docs/consolidation.md ("Feedback").
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from memorybank.core._async.facts import AsyncFacts
from memorybank.core._async.usage import usage_record
from memorybank.errors import InvalidInput, NotFound
from memorybank.importance import USAGE, ItemUsage, usage_id
from memorybank.importance import rated as importance_rated
from memorybank.records import Fact, Hit
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.stores.contract._async.store import Record, Unset

if TYPE_CHECKING:
    from memorybank.core._async.core import _Core

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
    """The confidence after one feedback (the module's rule: ``importance.rated``)."""
    return importance_rated(UNRATED if confidence is None else confidence, useful)


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
    useful = v.check_bool(useful, "useful")
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
    # the stored importance (uses still buffered are added when they are written)
    old = await core.store.record_get(tenant, USAGE, usage_id("fact", fact_id))
    stored = (
        ItemUsage("fact", fact_id)
        if old is None
        else ItemUsage.from_data("fact", fact_id, old.data)
    )
    importance = usage_record(
        replace(stored, importance=importance_rated(stored.importance, useful)),
        agent_id=fact.agent_id,
        user_id=fact.user_id,
        now=now,
        created_at=None if old is None else old.created_at,
    )
    await core.store.record_put(
        tenant,
        [
            importance,
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
            ),
        ],
    )
    return changed
