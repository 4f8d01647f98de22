"""The Google ADK services with the real ``google-adk``, on SQLite and PostgreSQL.

ADK's own session-service tests (``tests/unittests/sessions/test_session_service.py``
of google/adk-python) are ported: every case that runs against any
``BaseSessionService`` (the ones taking its ``session_service`` fixture, plus two
that need no particular backend) runs here against ``MemorybankSessionService``.
Cases that test ``DatabaseSessionService``'s own machinery (SQLAlchemy engines,
rollbacks, schema preparation, row locks, optimistic-lock revisions) or Vertex AI
are left out; the stale-session policy, which differs, has its own case below.

Then ADK's ``Runner`` drives an agent over several turns with a scripted model
(``ScriptedLlm``, a ``BaseLlm`` of this file), once with state written by the
agent and once with ADK's ``load_memory`` tool reading what an earlier session
added to ``MemorybankMemoryService``.
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.agents.llm_agent import LlmAgent
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.session import Session
from google.adk.tools.load_memory_tool import load_memory_tool
from google.genai import types
from pydantic import Field

from memorybank import AsyncMemory, InvalidInput, Memory, ThreadForbidden
from memorybank.integrations.adk import MemorybankMemoryService, MemorybankSessionService
from tests.integrations import _stores

memory = _stores.memory
amemory = _stores.amemory


@pytest.fixture
def session_service(amemory: AsyncMemory) -> MemorybankSessionService:
    return MemorybankSessionService(amemory)


def _now() -> float:
    return datetime.now().astimezone(UTC).timestamp()


# -- ported: test_session_service.py ----------------------------------------------------


async def test_get_empty_session(session_service: MemorybankSessionService) -> None:
    assert not await session_service.get_session(
        app_name="my_app", user_id="test_user", session_id="123"
    )


async def test_create_get_session(session_service: MemorybankSessionService) -> None:
    app_name, user_id, state = "my_app", "test_user", {"key": "value"}
    session = await session_service.create_session(app_name=app_name, user_id=user_id, state=state)
    assert session.app_name == app_name
    assert session.user_id == user_id
    assert session.id
    assert session.state == state
    assert session.last_update_time <= _now()

    got = await session_service.get_session(
        app_name=app_name, user_id=user_id, session_id=session.id
    )
    assert got == session
    assert got is not None and got.last_update_time <= _now()

    await session_service.delete_session(app_name=app_name, user_id=user_id, session_id=session.id)
    assert (
        await session_service.get_session(app_name=app_name, user_id=user_id, session_id=session.id)
        is None
    )


async def test_create_and_list_sessions(session_service: MemorybankSessionService) -> None:
    app_name, user_id = "my_app", "test_user"
    session_ids = [f"session{i}" for i in range(5)]
    for session_id in session_ids:
        await session_service.create_session(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            state={"key": "value" + session_id},
        )
    sessions = (await session_service.list_sessions(app_name=app_name, user_id=user_id)).sessions
    assert len(sessions) == len(session_ids)
    assert {s.id for s in sessions} == set(session_ids)
    for session in sessions:
        assert session.state == {"key": "value" + session.id}


async def test_list_sessions_all_users(session_service: MemorybankSessionService) -> None:
    app_name = "my_app"
    for user, session_id in (
        ("user1", "session1a"),
        ("user1", "session1b"),
        ("user2", "session2a"),
    ):
        await session_service.create_session(
            app_name=app_name,
            user_id=user,
            session_id=session_id,
            state={"key": "value" + session_id.removeprefix("session")},
        )
    first = {
        s.id: s
        for s in (await session_service.list_sessions(app_name=app_name, user_id="user1")).sessions
    }
    assert len(first) == 2
    assert first["session1a"].state == {"key": "value1a"}
    assert first["session1b"].state == {"key": "value1b"}
    second = (await session_service.list_sessions(app_name=app_name, user_id="user2")).sessions
    assert [(s.id, s.state) for s in second] == [("session2a", {"key": "value2a"})]
    every = {
        s.id: s
        for s in (await session_service.list_sessions(app_name=app_name, user_id=None)).sessions
    }
    assert len(every) == 3
    assert every["session1a"].state == {"key": "value1a"}
    assert every["session1b"].state == {"key": "value1b"}
    assert every["session2a"].state == {"key": "value2a"}


async def _s1_of_u1(
    service: MemorybankSessionService, state: dict[str, Any], delta: dict[str, Any]
) -> Session:
    """Session ``s1`` of ``u1`` in ``my_app``, made with ``state``, then an event of ``delta``."""
    session = await service.create_session(
        app_name="my_app", user_id="u1", session_id="s1", state=state
    )
    event = Event(invocation_id="inv1", author="user", actions=EventActions(state_delta=delta))
    await service.append_event(session=session, event=event)
    return session


async def test_app_state_is_shared_by_all_users_of_app(
    session_service: MemorybankSessionService,
) -> None:
    app_name = "my_app"
    await _s1_of_u1(session_service, {"app:k1": "v1"}, {"app:k2": "v2"})
    session2 = await session_service.create_session(
        app_name=app_name, user_id="u2", session_id="s2"
    )
    assert session2.state == {"app:k1": "v1", "app:k2": "v2"}
    got = await session_service.get_session(app_name=app_name, user_id="u1", session_id="s1")
    assert got is not None
    assert got.state.get("app:k1") == "v1"
    assert got.state.get("app:k2") == "v2"


async def test_user_state_is_shared_only_by_user_sessions(
    session_service: MemorybankSessionService,
) -> None:
    app_name = "my_app"
    await _s1_of_u1(session_service, {"user:k1": "v1"}, {"user:k2": "v2"})
    session1b = await session_service.create_session(
        app_name=app_name, user_id="u1", session_id="s1b"
    )
    assert session1b.state == {"user:k1": "v1", "user:k2": "v2"}
    session2 = await session_service.create_session(
        app_name=app_name, user_id="u2", session_id="s2"
    )
    assert session2.state == {}


async def test_session_state_is_not_shared(session_service: MemorybankSessionService) -> None:
    app_name = "my_app"
    await _s1_of_u1(session_service, {"sk1": "v1"}, {"sk2": "v2"})
    got = await session_service.get_session(app_name=app_name, user_id="u1", session_id="s1")
    assert got is not None
    assert got.state.get("sk1") == "v1"
    assert got.state.get("sk2") == "v2"
    session1b = await session_service.create_session(
        app_name=app_name, user_id="u1", session_id="s1b"
    )
    assert session1b.state == {}


async def test_temp_state_is_not_persisted_in_state_or_events(
    session_service: MemorybankSessionService,
) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u1", session_id="s1")
    event = Event(
        invocation_id="inv1",
        author="user",
        actions=EventActions(state_delta={"temp:k1": "v1", "sk": "v2"}),
    )
    await session_service.append_event(session=session, event=event)
    assert session.state.get("temp:k1") == "v1"
    assert session.state.get("sk") == "v2"
    assert "temp:k1" not in event.actions.state_delta
    assert event.actions.state_delta.get("sk") == "v2"
    # and not in what is stored (checked beyond the ported case)
    got = await session_service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert got is not None
    assert "temp:k1" not in got.state
    assert got.events[0].actions.state_delta == {"sk": "v2"}


async def test_temp_state_visible_across_sequential_events(
    session_service: MemorybankSessionService,
) -> None:
    session = await session_service.create_session(
        app_name="my_app", user_id="u1", session_id="s_seq"
    )
    event1 = Event(
        invocation_id="inv1",
        author="agent1",
        actions=EventActions(state_delta={"temp:output": "result_from_a1"}),
    )
    await session_service.append_event(session=session, event=event1)
    assert session.state.get("temp:output") == "result_from_a1"
    assert "temp:output" not in event1.actions.state_delta


async def test_get_session_respects_user_id(session_service: MemorybankSessionService) -> None:
    app_name = "my_app"
    session1 = await session_service.create_session(
        app_name=app_name, user_id="u1", session_id="s1"
    )
    await session_service.append_event(session1, Event(invocation_id="inv1", author="user"))
    await session_service.create_session(app_name=app_name, user_id="u2", session_id="s1")
    got = await session_service.get_session(app_name=app_name, user_id="u2", session_id="s1")
    assert got is not None
    assert got.user_id == "u2"
    assert len(got.events) == 0


async def test_create_session_with_existing_id_raises_error(
    session_service: MemorybankSessionService,
) -> None:
    kwargs: dict[str, Any] = {
        "app_name": "my_app",
        "user_id": "test_user",
        "session_id": "existing_session",
    }
    await session_service.create_session(**kwargs)
    with pytest.raises(AlreadyExistsError):
        await session_service.create_session(**kwargs)


async def test_append_event_bytes(session_service: MemorybankSessionService) -> None:
    app_name, user_id = "my_app", "user"
    session = await session_service.create_session(app_name=app_name, user_id=user_id)
    content = types.Content(
        role="user",
        parts=[types.Part.from_bytes(data=b"test_image_data", mime_type="image/png")],
    )
    grounding = types.GroundingMetadata(
        search_entry_point=types.SearchEntryPoint(sdk_blob=b"test_sdk_blob")
    )
    event = Event(
        invocation_id="invocation", author="user", content=content, grounding_metadata=grounding
    )
    await session_service.append_event(session=session, event=event)
    assert session.events[0].content == content
    got = await session_service.get_session(
        app_name=app_name, user_id=user_id, session_id=session.id
    )
    assert got is not None
    assert len(got.events) == 1
    assert got.events[0].content == content
    assert got.events[0].grounding_metadata == grounding


def _complete_event() -> Event:
    return Event(
        invocation_id="invocation",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="test_text")]),
        turn_complete=True,
        partial=False,
        actions=EventActions(artifact_delta={"file": 0}, transfer_to_agent="agent", escalate=True),
        long_running_tool_ids={"tool1"},
        error_code="error_code",
        error_message="error_message",
        interrupted=True,
        grounding_metadata=types.GroundingMetadata(web_search_queries=["query1"]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2
        ),
        citation_metadata=types.CitationMetadata(),
        custom_metadata={"custom_key": "custom_value"},
        timestamp=1700000000.123,
        input_transcription=types.Transcription(text="input transcription", finished=True),
        output_transcription=types.Transcription(text="output transcription", finished=True),
    )


async def test_append_event_complete(session_service: MemorybankSessionService) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    await session_service.append_event(session=session, event=_complete_event())
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got == session


async def test_session_last_update_time_updates_on_event(
    session_service: MemorybankSessionService,
) -> None:
    app_name, user_id = "my_app", "user"
    session = await session_service.create_session(app_name=app_name, user_id=user_id)
    original = session.last_update_time
    event = Event(invocation_id="invocation", author="user", timestamp=original + 10)
    await session_service.append_event(session=session, event=event)
    assert session.last_update_time == pytest.approx(original + 10, abs=1e-6)
    refreshed = await session_service.get_session(
        app_name=app_name, user_id=user_id, session_id=session.id
    )
    assert refreshed is not None
    assert refreshed.last_update_time == pytest.approx(original + 10, abs=1e-6)
    assert refreshed.last_update_time > original


async def test_get_session_with_config(session_service: MemorybankSessionService) -> None:
    app_name, user_id, count = "my_app", "user", 5
    session = await session_service.create_session(app_name=app_name, user_id=user_id)
    for i in range(1, count + 1):
        await session_service.append_event(session, Event(author="user", timestamp=i))

    async def events(config: GetSessionConfig | None = None) -> list[Event]:
        got = await session_service.get_session(
            app_name=app_name, user_id=user_id, session_id=session.id, config=config
        )
        assert got is not None
        found: list[Event] = got.events
        return found

    assert len(await events()) == count
    assert not await events(GetSessionConfig(num_recent_events=0))
    recent = await events(GetSessionConfig(num_recent_events=3))
    assert len(recent) == 3
    assert recent[0].timestamp == count - 3 + 1
    after = await events(GetSessionConfig(after_timestamp=4.0))
    assert len(after) == count - 4 + 1
    assert after[0].timestamp == 4.0
    assert not await events(GetSessionConfig(after_timestamp=count * 10))
    both = await events(GetSessionConfig(after_timestamp=4.0, num_recent_events=3))
    assert len(both) == count - 4 + 1


async def test_partial_events_are_not_persisted(session_service: MemorybankSessionService) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    await session_service.append_event(session, Event(author="user", partial=True))
    assert len(session.events) == 0
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None and len(got.events) == 0


async def test_concurrent_create_session(session_service: MemorybankSessionService) -> None:
    # ported: test_concurrent_prepare_tables_no_race_condition (five creates at once)
    results = await asyncio.gather(
        *[
            session_service.create_session(app_name=f"app_{i}", user_id="user", session_id=f"s{i}")
            for i in range(5)
        ],
        return_exceptions=True,
    )
    assert not [r for r in results if isinstance(r, BaseException)]
    for i in range(5):
        assert await session_service.get_session(
            app_name=f"app_{i}", user_id="user", session_id=f"s{i}"
        )


async def test_create_session_sequential_same_app_name(
    session_service: MemorybankSessionService,
) -> None:
    s1 = await session_service.create_session(app_name="shared", user_id="u1", session_id="s1")
    s2 = await session_service.create_session(app_name="shared", user_id="u2", session_id="s2")
    assert s1.app_name == s2.app_name == "shared"
    assert await session_service.get_session(app_name="shared", user_id="u1", session_id="s1")
    assert await session_service.get_session(app_name="shared", user_id="u2", session_id="s2")


async def test_get_user_state_returns_empty_dict_when_no_state_exists(
    session_service: MemorybankSessionService,
) -> None:
    assert not await session_service.get_user_state(app_name="my_app", user_id="u1")


async def _set_user_state(
    service: MemorybankSessionService, delta: dict[str, Any], app_name: str = "my_app"
) -> Session:
    session = await service.create_session(app_name=app_name, user_id="u1")
    await service.append_event(
        session, Event(author="system", actions=EventActions(state_delta=delta))
    )
    return session


async def test_get_user_state_returns_state_written_via_append_event(
    session_service: MemorybankSessionService,
) -> None:
    await _set_user_state(session_service, {"user:profile": {"name": "Alice"}, "session_key": 1})
    state = await session_service.get_user_state(app_name="my_app", user_id="u1")
    assert state == {"profile": {"name": "Alice"}}
    assert "session_key" not in state


async def test_get_user_state_is_not_visible_across_users(
    session_service: MemorybankSessionService,
) -> None:
    await _set_user_state(session_service, {"user:secret": "only-for-u1"})
    assert not await session_service.get_user_state(app_name="my_app", user_id="u2")


async def test_get_user_state_is_not_visible_across_apps(
    session_service: MemorybankSessionService,
) -> None:
    await _set_user_state(session_service, {"user:data": "only-app-a"})
    assert not await session_service.get_user_state(app_name="other_app", user_id="u1")


async def test_get_user_state_available_before_session_is_created(
    session_service: MemorybankSessionService,
) -> None:
    await _set_user_state(session_service, {"user:ctx": {"v": 1}})
    assert await session_service.get_user_state(app_name="my_app", user_id="u1") == {
        "ctx": {"v": 1}
    }


async def test_get_user_state_reflects_latest_write(
    session_service: MemorybankSessionService,
) -> None:
    session = await _set_user_state(session_service, {"user:counter": 1})
    await session_service.append_event(
        session, Event(author="system", actions=EventActions(state_delta={"user:counter": 2}))
    )
    state = await session_service.get_user_state(app_name="my_app", user_id="u1")
    assert state["counter"] == 2


# -- beyond the port: memorybank's own guarantees ----------------------------------------


async def test_stale_session_appends_are_kept_not_rejected(
    session_service: MemorybankSessionService,
) -> None:
    """ADK's ``DatabaseSessionService`` rejects a stale copy's append ("modified in
    storage"); ``InMemorySessionService`` accepts it. Here it is accepted and no
    writer's key is lost: the session state is the events' deltas applied in order."""
    session = await session_service.create_session(app_name="my_app", user_id="user")
    stale_1, stale_2 = session.model_copy(deep=True), session.model_copy(deep=True)
    await asyncio.gather(
        session_service.append_event(
            stale_1, Event(author="user", actions=EventActions(state_delta={"a": 1}))
        ),
        session_service.append_event(
            stale_2, Event(author="user", actions=EventActions(state_delta={"b": 2}))
        ),
    )
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None
    assert got.state == {"a": 1, "b": 2}
    assert len(got.events) == 2


async def test_append_event_retry_stores_one_event(
    session_service: MemorybankSessionService,
) -> None:
    """A retried ``append_event`` (same event) stores it once and applies its state once."""
    session = await session_service.create_session(app_name="my_app", user_id="user")
    event = Event(author="user", actions=EventActions(state_delta={"user:n": 1, "k": "v"}))
    await session_service.append_event(session.model_copy(deep=True), event)
    await session_service.append_event(session.model_copy(deep=True), event)
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None
    assert [e.id for e in got.events] == [event.id]
    assert got.state == {"k": "v", "user:n": 1}


async def test_append_to_unknown_session(session_service: MemorybankSessionService) -> None:
    ghost = Session(id="ghost", app_name="my_app", user_id="user")
    with pytest.raises(SessionNotFoundError):
        await session_service.append_event(ghost, Event(author="user"))


async def test_bad_state_writes_nothing(session_service: MemorybankSessionService) -> None:
    with pytest.raises(InvalidInput):
        await session_service.create_session(
            app_name="my_app", user_id="user", session_id="s", state={"k": object()}
        )
    assert (
        await session_service.get_session(app_name="my_app", user_id="user", session_id="s") is None
    )
    session = await session_service.create_session(app_name="my_app", user_id="user")
    bad = Event(author="user", actions=EventActions(state_delta={"user:k": 1, "x": {1, 2}}))
    with pytest.raises(InvalidInput):
        await session_service.append_event(session, bad)
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None and got.events == [] and got.state == {}
    assert session.events == []


async def test_events_round_trip_exactly(session_service: MemorybankSessionService) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="user")
    call = types.FunctionCall(id="c1", name="lookup", args={"q": "weather", "n": 2})
    events = [
        _complete_event(),
        Event(
            author="agent",
            invocation_id="inv",
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        ),
        Event(
            author="agent",
            invocation_id="inv",
            content=types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id="c1", name="lookup", response={"result": "sunny"}
                        )
                    )
                ],
            ),
            actions=EventActions(state_delta={"last": "sunny"}, skip_summarization=True),
        ),
    ]
    for event in events:
        await session_service.append_event(session, event)
    got = await session_service.get_session(
        app_name="my_app", user_id="user", session_id=session.id
    )
    assert got is not None
    assert got.events == events
    assert got == session


async def test_scoped_handle_serves_its_user_only(amemory: AsyncMemory) -> None:
    root = MemorybankSessionService(amemory)
    await root.create_session(app_name="app", user_id="u1", state={"app:banner": "hi"})
    alice = MemorybankSessionService(amemory.scoped(user_id="alice"))
    session = await alice.create_session(
        app_name="app", user_id="alice", state={"user:name": "Alice", "s": 1}
    )
    # app state is tenant-wide: a handle confined to one user neither sees nor writes it
    assert session.state == {"user:name": "Alice", "s": 1}
    bad = Event(author="user", actions=EventActions(state_delta={"app:banner": "mine"}))
    with pytest.raises(InvalidInput):
        await alice.append_event(session, bad)
    for call in (
        alice.create_session(app_name="app", user_id="bob"),
        alice.get_session(app_name="app", user_id="bob", session_id=session.id),
        alice.list_sessions(app_name="app", user_id="bob"),
        alice.get_user_state(app_name="app", user_id="bob"),
    ):
        with pytest.raises(InvalidInput):
            await call
    listed = (await alice.list_sessions(app_name="app")).sessions
    assert [s.user_id for s in listed] == ["alice"]
    got = await root.get_session(app_name="app", user_id="alice", session_id=session.id)
    assert got is not None and got.state == {"app:banner": "hi", "user:name": "Alice", "s": 1}


async def test_session_thread_is_owned(amemory: AsyncMemory) -> None:
    """The session's thread belongs to its user: history and search see its events."""
    service = MemorybankSessionService(amemory)
    session = await service.create_session(app_name="app", user_id="alice")
    text = types.Content(role="user", parts=[types.Part(text="my locker code is 4711")])
    await service.append_event(session, Event(author="user", content=text))
    threads = await amemory.threads.list(user_id="alice")
    assert len(threads) == 1
    assert await amemory.history(threads[0].id, user_id="alice") == [
        {"role": "user", "content": "my locker code is 4711"}
    ]
    with pytest.raises(ThreadForbidden):
        await amemory.history(threads[0].id, user_id="bob")
    hits = await amemory.search("locker code", user_id="alice")
    assert hits and hits[0].entry is not None and "4711" in (hits[0].entry.content or "")


def test_sync_memory_handle(memory: Memory) -> None:
    """A ``Memory`` works too (its calls run in a worker thread)."""
    service = MemorybankSessionService(memory.scoped(user_id="alice"))

    async def scenario() -> Session | None:
        session = await service.create_session(app_name="app", user_id="alice", state={"a": 1})
        await service.append_event(
            session, Event(author="user", actions=EventActions(state_delta={"user:b": 2}))
        )
        return await service.get_session(app_name="app", user_id="alice", session_id=session.id)

    got = asyncio.run(scenario())
    assert got is not None and got.state == {"a": 1, "user:b": 2} and len(got.events) == 1


# -- ADK's Runner with a scripted model ------------------------------------------------------


class ScriptedLlm(BaseLlm):
    """A model that answers with the next of its scripted responses and records each request."""

    script: list[types.Content]
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        yield LlmResponse(content=self.script[len(self.requests) - 1], turn_complete=True)


def _model_text(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def _user_text(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def _texts(request: LlmRequest) -> list[str]:
    return [p.text for c in request.contents for p in c.parts or [] if p.text]


async def _run_turn(runner: Runner, user_id: str, session_id: str, text: str) -> list[Event]:
    return [
        e
        async for e in runner.run_async(
            user_id=user_id, session_id=session_id, new_message=_user_text(text)
        )
    ]


async def test_runner_over_several_turns(amemory: AsyncMemory) -> None:
    model = ScriptedLlm(
        model="scripted",
        script=[_model_text("Hello Ada."), _model_text("Blue, you said."), _model_text("Bye.")],
    )
    agent = LlmAgent(name="helper", model=model, instruction="Be brief.", output_key="last_reply")
    service = MemorybankSessionService(amemory.scoped(user_id="ada"))
    runner = Runner(agent=agent, app_name="chat", session_service=service)
    session = await service.create_session(app_name="chat", user_id="ada", state={"user:tz": "UTC"})
    for text in ("Hi, I am Ada.", "My colour is blue. What is it?", "Bye"):
        await _run_turn(runner, "ada", session.id, text)

    # the model saw the whole conversation so far on every turn, read back from the store
    assert _texts(model.requests[2]) == [
        "Hi, I am Ada.",
        "Hello Ada.",
        "My colour is blue. What is it?",
        "Blue, you said.",
        "Bye",
    ]
    got = await service.get_session(app_name="chat", user_id="ada", session_id=session.id)
    assert got is not None
    assert [e.author for e in got.events] == ["user", "helper"] * 3
    assert got.state == {"user:tz": "UTC", "last_reply": "Bye."}
    # a fresh service on the same store sees the same session, events equal
    again = MemorybankSessionService(amemory.scoped(user_id="ada"))
    assert await again.get_session(app_name="chat", user_id="ada", session_id=session.id) == got


async def test_runner_with_load_memory(amemory: AsyncMemory) -> None:
    handle = amemory.scoped(user_id="ada")
    sessions = MemorybankSessionService(handle)
    memories = MemorybankMemoryService(handle)

    first_model = ScriptedLlm(model="scripted", script=[_model_text("Noted.")])
    first = Runner(
        agent=LlmAgent(name="helper", model=first_model),
        app_name="chat",
        session_service=sessions,
        memory_service=memories,
    )
    old = await sessions.create_session(app_name="chat", user_id="ada")
    await _run_turn(first, "ada", old.id, "My cat is called Pixel and she is grey.")
    stored = await sessions.get_session(app_name="chat", user_id="ada", session_id=old.id)
    assert stored is not None
    await memories.add_session_to_memory(stored)
    await memories.add_session_to_memory(stored)  # again: nothing added twice

    call = types.FunctionCall(name="load_memory", args={"query": "cat name Pixel"})
    model = ScriptedLlm(
        model="scripted",
        script=[
            types.Content(role="model", parts=[types.Part(function_call=call)]),
            _model_text("Your cat is Pixel."),
        ],
    )
    runner = Runner(
        agent=LlmAgent(name="helper", model=model, tools=[load_memory_tool]),
        app_name="chat",
        session_service=sessions,
        memory_service=memories,
    )
    new = await sessions.create_session(app_name="chat", user_id="ada")
    events = await _run_turn(runner, "ada", new.id, "What is my cat called?")
    assert events[-1].content is not None
    assert events[-1].content.parts is not None
    assert events[-1].content.parts[0].text == "Your cat is Pixel."
    # the tool's response, as the model got it: the earlier session's event
    response = next(
        p.function_response
        for c in model.requests[1].contents
        for p in c.parts or []
        if p.function_response is not None
    )
    assert response is not None and response.response is not None
    found = response.response["result"].memories  # load_memory's LoadMemoryResponse
    texts = [m.content.parts[0].text for m in found if m.content.parts]
    assert texts.count("My cat is called Pixel and she is grey.") == 1
    got = await sessions.get_session(app_name="chat", user_id="ada", session_id=new.id)
    assert got is not None and len(got.events) == 4  # user, call, tool response, answer


# -- the memory service ------------------------------------------------------------------


def _said(author: str, text: str) -> Event:
    return Event(author=author, invocation_id="inv", content=_user_text(text))


async def test_memory_search_is_per_user_and_app(amemory: AsyncMemory) -> None:
    service = MemorybankMemoryService(amemory)
    for user, app, text in (
        ("alice", "chat", "alice keeps her bike in the blue shed"),
        ("bob", "chat", "bob keeps his bike in the red shed"),
        ("alice", "other", "alice's other app mentions the bike shed too"),
    ):
        session = Session(id="s", app_name=app, user_id=user, events=[_said("user", text)])
        await service.add_session_to_memory(session)
    response = await service.search_memory(app_name="chat", user_id="alice", query="bike shed")
    assert [m.content.parts[0].text for m in response.memories if m.content.parts] == [
        "alice keeps her bike in the blue shed"
    ]
    memory = response.memories[0]
    assert memory.author == "user" and memory.id and memory.timestamp
    assert memory.custom_metadata["session_id"] == "s"
    assert (
        await service.search_memory(app_name="chat", user_id="carol", query="bike")
    ).memories == []


async def test_memory_events_delta_and_session_events_not_searched(amemory: AsyncMemory) -> None:
    memories = MemorybankMemoryService(amemory.scoped(user_id="alice"))
    sessions = MemorybankSessionService(amemory.scoped(user_id="alice"))
    session = await sessions.create_session(app_name="chat", user_id="alice")
    await sessions.append_event(session, _said("user", "the violin lesson is on friday"))
    # a session's own events are not memories until added
    assert not (
        await memories.search_memory(app_name="chat", user_id="alice", query="violin lesson")
    ).memories
    extra = _said("user", "the violin teacher is called Mira")
    await memories.add_events_to_memory(
        app_name="chat", user_id="alice", events=[extra, extra], session_id=session.id
    )
    found = await memories.search_memory(app_name="chat", user_id="alice", query="violin teacher")
    assert [m.id for m in found.memories] == [extra.id]
    with pytest.raises(InvalidInput):
        await memories.search_memory(app_name="chat", user_id="bob", query="violin")


async def test_memory_service_k(amemory: AsyncMemory) -> None:
    with pytest.raises(InvalidInput):
        MemorybankMemoryService(amemory, k=0)
    service = MemorybankMemoryService(amemory, k=2)
    events = [_said("user", f"note {i} about the garden") for i in range(5)]
    await service.add_session_to_memory(Session(id="s", app_name="app", user_id="u", events=events))
    found = await service.search_memory(app_name="app", user_id="u", query="garden note")
    assert len(found.memories) == 2


# -- ported: tests/unittests/memory/test_in_memory_memory_service.py ----------------------
# Its assertions on InMemoryMemoryService's private dict are made through search here.

APP, USER, OTHER = "test-app", "test-user", "another-user"


def _event(tag: str, text: str | None, author: str = "user", timestamp: float = 1.0) -> Event:
    content = None if text is None else types.Content(parts=[types.Part(text=text)])
    return Event(
        id=f"event-{tag}",
        invocation_id=f"inv-{tag}",
        author=author,
        timestamp=timestamp,
        content=content,
    )


def _session_1() -> Session:
    return Session(
        app_name=APP,
        user_id=USER,
        id="session-1",
        last_update_time=1000,
        events=[
            _event("1a", "The ADK is a great toolkit.", timestamp=12345),
            _event("1b", None, timestamp=12346),  # no content: not a memory
            _event("1c", "I agree. The Agent Development Kit (ADK) rocks!", "model", 12347),
        ],
    )


def _session_2() -> Session:
    return Session(
        app_name=APP,
        user_id=USER,
        id="session-2",
        last_update_time=2000,
        events=[_event("2a", "I like to code in Python.", timestamp=54321)],
    )


@pytest.fixture
def memory_service(amemory: AsyncMemory) -> MemorybankMemoryService:
    return MemorybankMemoryService(amemory)


async def _texts_found(service: MemorybankMemoryService, query: str, user: str = USER) -> list[str]:
    found = await service.search_memory(app_name=APP, user_id=user, query=query)
    return [m.content.parts[0].text or "" for m in found.memories if m.content.parts]


async def _ids_found(service: MemorybankMemoryService, query: str) -> list[str | None]:
    found = await service.search_memory(app_name=APP, user_id=USER, query=query)
    return [m.id for m in found.memories]


async def test_mem_add_session_to_memory(memory_service: MemorybankMemoryService) -> None:
    await memory_service.add_session_to_memory(_session_1())
    assert sorted(await _ids_found(memory_service, "ADK toolkit agent rocks")) == [  # type: ignore[type-var]
        "event-1a",
        "event-1c",
    ]


async def test_mem_add_events_to_memory_with_explicit_events(
    memory_service: MemorybankMemoryService,
) -> None:
    session = _session_1()
    await memory_service.add_events_to_memory(
        app_name=APP, user_id=USER, session_id=session.id, events=[session.events[0]]
    )
    assert await _ids_found(memory_service, "ADK") == ["event-1a"]


async def test_mem_add_events_to_memory_without_session_id_uses_default_bucket(
    memory_service: MemorybankMemoryService,
) -> None:
    await memory_service.add_events_to_memory(
        app_name=APP, user_id=USER, events=[_session_1().events[0]]
    )
    found = await memory_service.search_memory(app_name=APP, user_id=USER, query="ADK")
    assert [m.id for m in found.memories] == ["event-1a"]
    assert found.memories[0].custom_metadata["session_id"] == "__unknown_session_id__"


async def test_mem_add_events_to_memory_appends_without_replacing(
    memory_service: MemorybankMemoryService,
) -> None:
    await memory_service.add_session_to_memory(_session_1())
    await memory_service.add_events_to_memory(
        app_name=APP,
        user_id=USER,
        session_id="session-1",
        events=[_event("1d", "A new fact about the ADK.", timestamp=12348)],
    )
    assert sorted(await _ids_found(memory_service, "ADK")) == [  # type: ignore[type-var]
        "event-1a",
        "event-1c",
        "event-1d",
    ]


async def test_mem_add_events_to_memory_deduplicates_event_ids(
    memory_service: MemorybankMemoryService,
) -> None:
    await memory_service.add_session_to_memory(_session_1())
    await memory_service.add_events_to_memory(
        app_name=APP,
        user_id=USER,
        session_id="session-1",
        events=[_event("1a", "Updated duplicate text about the ADK.", timestamp=12349)],
    )
    assert await _texts_found(memory_service, "duplicate") == []
    assert sorted(await _ids_found(memory_service, "ADK")) == [  # type: ignore[type-var]
        "event-1a",
        "event-1c",
    ]


async def test_mem_add_session_with_no_events_to_memory(
    memory_service: MemorybankMemoryService,
) -> None:
    await memory_service.add_session_to_memory(
        Session(app_name=APP, user_id=USER, id="session-4", last_update_time=4000)
    )
    assert await _texts_found(memory_service, "anything") == []


async def test_mem_search_memory_simple_match(memory_service: MemorybankMemoryService) -> None:
    await memory_service.add_session_to_memory(_session_1())
    await memory_service.add_session_to_memory(_session_2())
    found = await memory_service.search_memory(app_name=APP, user_id=USER, query="Python")
    assert len(found.memories) == 1
    assert found.memories[0].content.parts is not None
    assert found.memories[0].content.parts[0].text == "I like to code in Python."
    assert found.memories[0].author == "user"


async def test_mem_search_memory_case_insensitive_match(
    memory_service: MemorybankMemoryService, amemory: AsyncMemory
) -> None:
    await memory_service.add_session_to_memory(_session_1())
    # hybrid search brings the hit's neighbouring turn too, ranked below it
    assert await _texts_found(memory_service, "development") == [
        "I agree. The Agent Development Kit (ADK) rocks!",
        "The ADK is a great toolkit.",
    ]
    keyword = MemorybankMemoryService(amemory, mode="keyword")
    assert await _texts_found(keyword, "development") == [
        "I agree. The Agent Development Kit (ADK) rocks!"
    ]


async def test_mem_search_memory_multiple_matches(memory_service: MemorybankMemoryService) -> None:
    await memory_service.add_session_to_memory(_session_1())
    assert set(await _texts_found(memory_service, "How about ADK?")) == {
        "The ADK is a great toolkit.",
        "I agree. The Agent Development Kit (ADK) rocks!",
    }


async def test_mem_search_memory_no_match(memory_service: MemorybankMemoryService) -> None:
    await memory_service.add_session_to_memory(_session_1())
    assert await _texts_found(memory_service, "nonexistent") == []


async def test_mem_search_memory_is_scoped_by_user(memory_service: MemorybankMemoryService) -> None:
    await memory_service.add_session_to_memory(_session_1())
    secret = Session(
        app_name=APP,
        user_id=OTHER,
        id="session-3",
        events=[_event("3a", "This is a secret.", timestamp=60000)],
    )
    await memory_service.add_session_to_memory(secret)
    assert await _texts_found(memory_service, "secret") == []
    assert await _texts_found(memory_service, "secret", user=OTHER) == ["This is a secret."]


async def test_mem_search_memory_does_not_collide_on_slash_in_identifiers(
    memory_service: MemorybankMemoryService,
) -> None:
    await memory_service.add_session_to_memory(
        Session(
            app_name="app/other-user",
            user_id="user",
            id="session-slashed-app",
            events=[_event("slashed-app", "This is a secret.", timestamp=12345)],
        )
    )
    found = await memory_service.search_memory(
        app_name="app", user_id="other-user/user", query="secret"
    )
    assert not found.memories


# ADK's non-Latin cases that a store's full-text search meets. Left out (9 of 22, on
# SQLite and PostgreSQL alike): a word inside text written without spaces (Japanese,
# Chinese), Latin or not: "太郎" in "私の名前は太郎です", "机器学习" in "我喜欢机器学习",
# "Python" / "adk" / "使って" / "Café" / "café" in "私はPythonでADKを使っています" (or its
# Café form), "python" in "我用Python写代码", "プログラミング" in "プログラミングを学ぶ".
# The stores tokenise on spaces and punctuation; ADK's in-memory service matches
# substrings of such words instead. An embedder's semantic search can find them.
@pytest.mark.parametrize(
    ("event_text", "query", "expected_count"),
    [
        ("私の名前は太郎です", "天気", 0),
        ("我喜欢机器学习", "天气预报", 0),
        ("제 이름은 민수입니다", "민수입니다", 1),
        ("Меня зовут Алексей", "Алексей", 1),
        ("太郎 works at ABC Corp", "太郎", 1),
        ("太郎 works at ABC Corp", "ABC", 1),
        ("私はPythonでADKを使っています", "Java", 0),
        ("I like to code in Python.", "thon", 0),
        ("私はPythonでADKを使っています", "thon", 0),
        (unicodedata.normalize("NFD", "私はCaféでADKを使っています"), "Ruby", 0),
        (unicodedata.normalize("NFD", "Meet at the Café"), "Café", 1),
        ("Meet at the Café", unicodedata.normalize("NFD", "Café"), 1),
        (unicodedata.normalize("NFD", "제 이름은 민수입니다"), "민수입니다", 1),
    ],
)
async def test_mem_search_memory_non_latin(
    memory_service: MemorybankMemoryService, event_text: str, query: str, expected_count: int
) -> None:
    session = Session(
        app_name=APP,
        user_id=USER,
        id="session-i18n",
        events=[_event("i18n", event_text, timestamp=90000)],
    )
    await memory_service.add_session_to_memory(session)
    assert len(await _texts_found(memory_service, query)) == expected_count


async def test_mem_search_memory_ranks_by_number_of_matching_words(
    memory_service: MemorybankMemoryService,
) -> None:
    await memory_service.add_session_to_memory(
        Session(
            app_name=APP,
            user_id=USER,
            id="session-ranked",
            events=[
                _event("ranked-a", "The deploy is ready."),
                _event("ranked-b", "Ready."),
                _event("ranked-c", "The deploy status is ready."),
            ],
        )
    )
    assert await _texts_found(memory_service, "deploy status ready") == [
        "The deploy status is ready.",
        "The deploy is ready.",
        "Ready.",
    ]


async def test_mem_search_memory_returns_at_most_ten_memories(
    memory_service: MemorybankMemoryService,
) -> None:
    events = [_event(f"note-{i}", f"note {i} about work") for i in range(20)]
    events.append(_event("backlog", "the backlog note about work"))
    await memory_service.add_session_to_memory(
        Session(app_name=APP, user_id=USER, id="session-many", events=events)
    )
    texts = await _texts_found(memory_service, "work backlog note")
    assert len(texts) == 10
    assert texts[0] == "the backlog note about work"


@pytest.mark.parametrize("ingest_session", [True, False])
async def test_mem_ingested_memories_do_not_follow_caller_event_mutations(
    memory_service: MemorybankMemoryService, ingest_session: bool
) -> None:
    event = _event("e", "I prefer jasmine tea.", timestamp=12345)
    session = Session(app_name=APP, user_id=USER, id="session", events=[event])
    if ingest_session:
        await memory_service.add_session_to_memory(session)
    else:
        await memory_service.add_events_to_memory(
            app_name=APP, user_id=USER, session_id=session.id, events=session.events
        )
    event.author = "changed"
    assert event.content is not None and event.content.parts is not None
    event.content.parts[0].text = "I prefer coffee."
    found = await memory_service.search_memory(app_name=APP, user_id=USER, query="jasmine")
    assert len(found.memories) == 1
    assert found.memories[0].author == "user"
    assert await _texts_found(memory_service, "jasmine") == ["I prefer jasmine tea."]


@pytest.mark.parametrize("ingest_session", [True, False])
async def test_mem_retrieved_memories_do_not_mutate_storage_or_session_history(
    memory_service: MemorybankMemoryService, ingest_session: bool
) -> None:
    session = Session(
        app_name=APP,
        user_id=USER,
        id="session",
        events=[_event("e", "I prefer jasmine tea.", timestamp=12345)],
    )
    if ingest_session:
        await memory_service.add_session_to_memory(session)
    else:
        await memory_service.add_events_to_memory(
            app_name=APP, user_id=USER, session_id=session.id, events=session.events
        )
    first = await memory_service.search_memory(app_name=APP, user_id=USER, query="jasmine")
    assert first.memories[0].content.parts is not None
    first.memories[0].content.parts.clear()
    assert await _texts_found(memory_service, "jasmine") == ["I prefer jasmine tea."]
    assert session.events[0].content is not None and session.events[0].content.parts
    assert session.events[0].content.parts[0].text == "I prefer jasmine tea."


async def test_mem_search_while_adding_concurrently(
    memory_service: MemorybankMemoryService,
) -> None:
    # ported: test_search_memory_is_thread_safe_against_concurrent_writes (one loop, tasks)
    for i in range(10):
        await memory_service.add_session_to_memory(
            Session(
                app_name=APP, user_id=USER, id=f"seed-{i}", events=[_event(f"s{i}", f"fact {i}")]
            )
        )

    async def writer() -> None:
        for i in range(20):
            session = Session(
                app_name=APP, user_id=USER, id=f"w-{i}", events=[_event(f"w{i}", f"fact w{i}")]
            )
            await memory_service.add_session_to_memory(session)

    async def reader() -> None:
        for _ in range(20):
            assert await _texts_found(memory_service, "fact")

    await asyncio.gather(writer(), reader(), reader())
