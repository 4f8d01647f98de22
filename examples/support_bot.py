"""A support bot with per-user memory, on any store: the logic the two programs share.

Each user gets one conversation thread, owned by them, and the bot keeps what it learns
(an order number, a preference) as long-term facts of that user. Every turn builds the
model's context from the user's own history and facts only: two users talking to the same
bot never see each other's memory. The "model" here is a small scripted function, so the
example runs offline; put your model call where ``answer`` is called.
"""

from __future__ import annotations

import re
from typing import Any

from memorybank import ContextOptions, Memory

SYSTEM_PROMPT = "You are a concise support agent for an online shop."
CONTEXT = ContextOptions(max_tokens=1500, include_facts=True)


def answer(messages: list[dict[str, Any]]) -> str:
    """A scripted stand-in for a model: reads the context as a model would."""
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    question = messages[-1]["content"]
    known = re.findall(r"order #(\d+)", system)
    if "order" in question.lower() and known and "#" not in question:
        return f"Your order #{known[-1]} is on its way."
    if match := re.search(r"#(\d+)", question):
        return f"Thanks, I noted order #{match.group(1)}. I will check it."
    if "order" in question.lower():
        return "Which order number is it?"
    return "How can I help?"


def handle(memory: Memory, user_id: str, text: str) -> str:
    """One turn of the bot for ``user_id``: the context in, the answer saved with the input."""
    user = memory.scoped(user_id=user_id, agent_id="support")
    thread_id = f"support-{user_id}"
    with user.turn(thread_id, input=text, context=CONTEXT, system_prompt=SYSTEM_PROMPT) as turn:
        reply = answer(turn.messages)
        turn.add({"role": "assistant", "content": reply})
    if match := re.search(r"#(\d+)", text):
        note = f"{user_id}'s order #{match.group(1)}"
        if note not in [fact.content for fact in user.facts.list()]:
            user.facts.add(content=note, category="order")
    return reply


def conversation(memory: Memory) -> list[str]:
    """Two customers, two sessions each: what the bot answered, in order."""
    said = []
    for user_id, text in [
        ("alice", "Hi! My order #1234 has not arrived."),
        ("bob", "Hello, where is my order?"),
        ("alice", "Any news about my order?"),
        ("bob", "It is #98 by the way."),
    ]:
        said.append(f"{user_id}: {text}\nbot: {handle(memory, user_id, text)}")
    return said


def report(memory: Memory) -> None:
    """Print the conversation, then what the bot remembers of each user."""
    for line in conversation(memory):
        print(line)
    for user_id in ("alice", "bob"):
        user = memory.scoped(user_id=user_id, agent_id="support")
        facts = [fact.content for fact in user.facts.list()]
        turns = len(user.history(f"support-{user_id}"))
        print(f"{user_id}: {turns} messages remembered, facts: {facts}")
