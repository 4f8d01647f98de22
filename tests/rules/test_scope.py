"""The scope rule through the async API: left out, None or an id; scoped handles; sessions."""

from __future__ import annotations

import pytest

from memorybank import AsyncMemory, InvalidInput, SessionManager, ThreadForbidden
from memorybank.context._async.sessions import session_id
from memorybank.rules.validate import MAX_ID_LENGTH
from memorybank.stores import AsyncInMemoryStore


@pytest.fixture
async def memory() -> AsyncMemory:
    return AsyncMemory(AsyncInMemoryStore())


async def _facts(memory: AsyncMemory) -> dict[str, str]:
    made = {}
    for name, user, agent in [
        ("alice", "alice", "bot"),
        ("bob", "bob", "bot"),
        ("shared", None, "bot"),
        ("open", None, None),
        ("other", "alice", "other"),
    ]:
        made[name] = (await memory.facts.add(content=name, user_id=user, agent_id=agent)).id
    return made


async def _contents(memory: AsyncMemory, **scope: object) -> set[str]:
    return {f.content for f in await memory.facts.list(**scope)}  # type: ignore[arg-type]


async def test_left_out_none_and_an_id_mean_three_things(memory: AsyncMemory) -> None:
    await _facts(memory)
    assert await _contents(memory) == {"alice", "bob", "shared", "open", "other"}
    assert await _contents(memory, user_id=None) == {"shared", "open"}
    assert await _contents(memory, user_id="alice") == {"alice", "shared", "open", "other"}
    assert await _contents(memory, user_id="alice", agent_id="bot") == {"alice", "shared", "open"}
    assert await _contents(memory, user_id=None, agent_id=None) == {"open"}


async def test_a_scoped_handle_fills_in_and_refuses_to_widen(memory: AsyncMemory) -> None:
    ids = await _facts(memory)
    alice = memory.scoped(user_id="alice", agent_id="bot")
    assert await _contents(alice) == {"alice", "shared", "open"}
    assert await alice.facts.get(ids["bob"]) is None
    assert await alice.facts.get(ids["other"]) is None  # another agent's
    for widen in (
        alice.facts.list(user_id="bob"),
        alice.facts.list(user_id=None),
        alice.facts.get(ids["bob"], user_id="bob"),
        alice.search("x", agent_id="other"),
    ):
        with pytest.raises(InvalidInput) as caught:
            await widen
        assert caught.value.field in ("user_id", "agent_id")
    with pytest.raises(InvalidInput):
        alice.scoped(user_id="bob")
    assert await _contents(alice, user_id="alice", agent_id="bot") == {"alice", "shared", "open"}
    made = await alice.facts.add(content="mine")
    assert (made.user_id, made.agent_id) == ("alice", "bot")


async def test_scope_survives_tenant_and_narrowing(memory: AsyncMemory) -> None:
    alice = memory.scoped(user_id="alice").tenant("acme")
    assert alice.tenant_id == "acme" and alice.scope.user_id == "alice"
    thread = await alice.ensure_thread("t1")
    assert thread.user_id == "alice"
    with pytest.raises(ThreadForbidden):
        await memory.tenant("acme").scoped(user_id="bob").entries.list("t1")
    assert await memory.tenant("acme").scoped(user_id="alice").entries.list("t1") == []
    narrowed = alice.scoped(agent_id="bot")
    assert (narrowed.scope.user_id, narrowed.scope.agent_id) == ("alice", "bot")


async def test_branch_names_do_not_leak_to_another_user(memory: AsyncMemory) -> None:
    thread = await memory.threads.create(user_id="alice")
    await memory.branches.create(thread.id, "secret-plan", user_id="alice")
    for branch in ("secret-plan", "no-such-branch"):
        with pytest.raises(ThreadForbidden):
            await memory.entries.list(thread.id, branch=branch, user_id="bob")


def test_session_ids_are_unambiguous() -> None:
    one = session_id(channel_type="a", channel_id="c", agent_id="x", user_id="b_c")
    two = session_id(channel_type="a_b", channel_id="c", agent_id="x", user_id="c")
    assert one != two
    assert one == "session_a_c_x_b%5Fc"
    assert session_id(channel_type="a", channel_id="1", agent_id="x", user_id="u") != session_id(
        channel_type="a", channel_id="2", agent_id="x", user_id="u"
    )
    long = session_id(channel_type="t" * 200, channel_id="c" * 200, agent_id="a", user_id="u")
    assert long.startswith("session~") and len(long) <= MAX_ID_LENGTH
    assert session_id(channel_type="%", channel_id="_", agent_id="x", user_id="u") == (
        "session_%25_%5F_x_u"
    )


async def test_sessions_differ_by_channel_and_agent(memory: AsyncMemory) -> None:
    sessions = SessionManager(memory)
    base = {"user_id": "u", "channel_type": "web"}
    one = await sessions.get_or_create(**base, channel_id="c1", agent_id="a")
    assert (await sessions.get_or_create(**base, channel_id="c1", agent_id="a")).id == one.id
    assert (await sessions.get_or_create(**base, channel_id="c2", agent_id="a")).id != one.id
    other_agent = await sessions.get_or_create(**base, channel_id="c1", agent_id="b")
    assert other_agent.id != one.id and other_agent.agent_id == "b"
    collide = await sessions.get_or_create(
        user_id="b_c", channel_type="a", channel_id="c", agent_id="x"
    )
    apart = await sessions.get_or_create(
        user_id="c", channel_type="a_b", channel_id="c", agent_id="x"
    )
    assert collide.id != apart.id and collide.user_id == "b_c" and apart.user_id == "c"
    with pytest.raises(ThreadForbidden):
        await sessions.get(one.id, user_id="someone-else")


def test_names_user_is_a_search_narrowed_to_one_user() -> None:
    from memorybank.stores.contract import UNSET, Visibility, names_user

    assert names_user(Visibility("agent", "ann"))
    assert names_user(Visibility(UNSET, None))  # shared records only: still narrowed
    assert not names_user(Visibility("agent", UNSET))
    assert not names_user(Visibility(UNSET, UNSET))
    assert not names_user(None)
