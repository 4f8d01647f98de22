"""Google ADK: a ``BaseSessionService`` and a ``BaseMemoryService`` on any memorybank store.

``pip install 'memorybank[adk]'``::

    from google.adk.runners import Runner
    from memorybank import AsyncMemory
    from memorybank.integrations.adk import MemorybankMemoryService, MemorybankSessionService

    memory = AsyncMemory("postgresql://...")
    runner = Runner(
        agent=agent,
        app_name="support",
        session_service=MemorybankSessionService(memory),
        memory_service=MemorybankMemoryService(memory),
    )

Sessions. One ADK session is one memorybank thread, owned by the session's
``user_id`` (fail closed: a thread of another owner raises ``ThreadForbidden``),
whose id is derived from ``(app_name, user_id, session_id)`` (so two users, or
two apps, may each have a session ``"s1"``). Each event is one entry: its
content is the event's text (so sessions are found by search and seen by
``history()`` and the context builder) and its ``state`` holds the event
whole, as ADK serialises it, so ``get_session`` returns every event exactly.

State, by ADK's key prefixes:

* session state (no prefix) lives in the session itself: the thread's
  metadata holds the state ``create_session`` was given, and every later
  change is the ``state_delta`` of the event that made it, stored inside that
  event's entry. The session's state is that initial state with the events'
  deltas applied in order, so a delta is committed in the same atomic write
  as its event (there is no second write to lose or to race with), and two
  writers appending to one session never lose each other's keys.
* ``user:`` state lives in the user's **core facts** (``memorybank.CoreFacts``),
  one fact per key, named ``["adk", app_name, key]`` and holding the value as
  JSON. Core facts are the library's per-user key-value records: owned by the
  user (so ``forget_user`` erases them and no other user reads them), each
  key written with a compare-and-swap (concurrent sessions of one user
  changing different keys keep both), and every value kept in the key's
  history.
* ``app:`` state lives in the tenant-wide core facts (no user), named the
  same way, shared by every user of the app. Only a handle that is not
  confined to one user (``memory`` or ``memory.tenant(T)``) may name that
  set; through ``memory.scoped(user_id=...)`` app state is not visible and
  writing an ``app:`` key raises ``InvalidInput`` (the library's scope
  refuses it, before anything is written).
* ``temp:`` keys are never stored: they reach the live ``Session`` object
  only, for the rest of the invocation, as ADK's own services do.

``append_event`` writes the event (with its session delta) in one atomic
append, then the ``user:`` and ``app:`` keys, each atomically. The
library has no single write spanning a thread and records, so a failure
between the two (the store lost) leaves the event stored and its
``user:``/``app:`` keys not yet applied; the error reaches the caller, and
calling ``append_event`` again with the same event completes it (the
event's id is the entry's idempotency key: the retry stores no second copy).

Memory. ``add_session_to_memory`` copies the session's events that have
content into a memory thread of that user (one per session, separate from
the session's own thread); adding a session again adds only its new events.
``search_memory`` is memorybank's search at user scope (hybrid by default:
keyword, semantic when the memory has an embedder, and conversation context)
over those entries of the app, returning ADK's ``SearchMemoryResponse`` (best
first, at most ``k``).

Cost. A session's state is folded from its stored events, so ``get_session``
reads every entry of the session (building only the events it returns) and
``list_sessions`` every entry of every session it lists; ``append_event`` is
one append plus one compare-and-swap per ``user:``/``app:`` key.

Neither service holds scope logic: each acts through the handle it is
given, passing ADK's ``user_id`` as the user of every call, so a
``memory.scoped(user_id="alice")`` handle serves alice only (naming another
user raises ``InvalidInput``). Both take a ``Memory`` or an ``AsyncMemory``
(a ``Memory``'s calls run in a worker thread).
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from memorybank.errors import Conflict, InvalidInput
from memorybank.integrations import _common as c
from memorybank.memory._async.core_facts import AsyncCoreFacts
from memorybank.memory._async.memory import AsyncMemory
from memorybank.memory._sync.core_facts import CoreFacts
from memorybank.memory._sync.memory import Memory
from memorybank.records import Entry, Thread
from memorybank.rules import validate as v
from memorybank.rules.ids import compound_id

try:
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.adk.sessions.base_session_service import (
        BaseSessionService,
        GetSessionConfig,
        ListSessionsResponse,
    )
    from google.adk.sessions.session import Session
    from google.adk.sessions.state import State
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise c.needs_extra(__name__, "Google ADK", "adk") from error

if TYPE_CHECKING:
    from memorybank.recall._async.search import SearchMode

__all__ = [
    "MEMORY_MARK",
    "SESSION_MARK",
    "STATE_KEY",
    "MemorybankMemoryService",
    "MemorybankSessionService",
]

#: The key of an entry's ``state`` (and a session thread's metadata) holding ADK's data.
STATE_KEY = "adk"
#: ``integration`` of the threads and entries of sessions (thread and entry metadata).
SESSION_MARK = "adk.session"
#: ``integration`` of the threads and entries the memory service writes.
MEMORY_MARK = "adk.memory"

#: One core-fact write: the set, the fact's key, the value as JSON.
_Write = tuple["AsyncCoreFacts | CoreFacts", str, str]


def _core_facts(memory: c.Handle, user_id: str | None) -> AsyncCoreFacts | CoreFacts:
    """The core facts of ``user_id`` (``None``: the tenant-wide set) on ``memory``."""
    if isinstance(memory, AsyncMemory):
        return AsyncCoreFacts(memory=memory, user_id=user_id)
    return CoreFacts(memory=memory, user_id=user_id)


def _thread_id(kind: str, app_name: str, user_id: str, session_id: str) -> str:
    """The thread of ``kind`` (a session's, or its memory's) of one user's session of one app."""
    parts = [kind, _check_name(app_name, "app_name"), v.check_id(user_id, "user_id")]
    parts.append(_check_name(session_id, "session_id"))
    return compound_id(json.dumps(parts, ensure_ascii=False))


def _fact_key(app_name: str, key: str) -> str:
    return v.check_id(json.dumps(["adk", app_name, key], ensure_ascii=False), "state key")


def _fact_app_key(fact_key: str, app_name: str) -> str | None:
    """The state key a core fact named by ``_fact_key`` holds for ``app_name``, else ``None``."""
    if not fact_key.startswith('["adk",'):
        return None
    try:
        parts = json.loads(fact_key)
    except ValueError:
        return None
    if isinstance(parts, list) and len(parts) == 3 and parts[1] == app_name:
        return str(parts[2])
    return None


def _json(value: object, field: str) -> Any:
    """``value`` as the JSON it is stored as (``InvalidInput`` when it has none)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as error:
        raise InvalidInput(f"{field} must be JSON-serialisable: {error}", field=field) from error


def _split(state: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """ADK's scopes of ``state`` by key prefix: (app, user, session); ``temp:`` dropped."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    session: dict[str, Any] = {}
    for key, value in state.items():
        if key.startswith(State.APP_PREFIX):
            app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            session[key] = value
    return app, user, session


def _check_name(value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    return value


def _text(event: Event) -> str:
    """What a person would read of ``event``: the text its entry is searched by."""
    pieces: list[str] = []
    for part in (event.content.parts or []) if event.content else []:
        if part.text:
            pieces.append(part.text)
        elif part.function_call is not None:
            args = json.dumps(part.function_call.args or {}, ensure_ascii=False, default=str)
            pieces.append(f"{part.function_call.name}({args})")
        elif part.function_response is not None:
            response = json.dumps(part.function_response.response or {}, default=str)
            pieces.append(f"{part.function_response.name} -> {response}")
    # composed (NFC), so "Café" typed either way is one word to the keyword search
    return unicodedata.normalize("NFC", "\n".join(pieces))


def _entry(event: Event, mark: str, app_name: str, session_id: str) -> dict[str, Any]:
    return c.stored_entry(
        STATE_KEY,
        c.dump_model(event, "event", exclude_none=True),
        "user" if event.author == "user" else "assistant",
        _text(event),
        metadata={"integration": mark, "app_name": app_name, "session_id": session_id},
    )


def _payload(entry: Entry) -> dict[str, Any]:
    """The event ``entry`` holds, as stored (``InvalidInput`` for an entry of no event)."""
    return c.stored_payload(entry, STATE_KEY, "the ADK integration", "session_id", "session")


def _event(payload: dict[str, Any]) -> Event:
    # JSON validation: bytes (inline data, blobs) come back from their base64 form
    return Event.model_validate_json(json.dumps(payload))


def _delta(payload: dict[str, Any]) -> dict[str, Any]:
    actions = payload.get("actions")
    delta = actions.get("state_delta") if isinstance(actions, dict) else None
    return delta if isinstance(delta, dict) else {}


def _fold(initial: Mapping[str, Any], payloads: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The session state: ``initial`` with every event's session-scoped delta, in order.

    Read from the stored events without building them (ADK's ``Event`` validation is
    the cost of a read), so a window of a long session builds only its events.
    """
    state = dict(initial)
    for payload in payloads:
        state.update(_split(_delta(payload))[2])
    return state


def _window(
    payloads: list[dict[str, Any]], config: GetSessionConfig | None
) -> list[dict[str, Any]]:
    """The events ``config`` keeps: the newest ``num_recent_events``, and of those the
    ones at or after ``after_timestamp``."""
    if config is None:
        return payloads
    if config.num_recent_events is not None:
        count = config.num_recent_events
        payloads = payloads[len(payloads) - count :] if count else []
    if config.after_timestamp is not None:
        after = config.after_timestamp
        payloads = [p for p in payloads if float(p.get("timestamp", 0.0)) >= after]
    return payloads


def _is_session(thread: Thread, app_name: str) -> bool:
    meta = thread.metadata
    return meta.get("integration") == SESSION_MARK and meta.get("app_name") == app_name


class MemorybankSessionService(BaseSessionService):
    """ADK's ``BaseSessionService`` on a ``Memory`` or ``AsyncMemory`` handle.

    Args:
        memory: the handle to act through (a tenant or scoped handle confines
            the service to its tenant and user).

    See the module docstring for where each state scope lives. ``get_session``
    returns ``None`` for an unknown session; ``append_event`` on one raises
    ADK's ``SessionNotFoundError``, ``create_session`` with an existing id its
    ``AlreadyExistsError``. State values must be JSON (as in ADK's database
    service); anything else raises ``InvalidInput`` and writes nothing.
    """

    def __init__(self, memory: Memory | AsyncMemory) -> None:
        self.memory = c.check_handle(memory)

    # -- plumbing ------------------------------------------------------------

    def _shared_facts(self) -> AsyncCoreFacts | CoreFacts | None:
        """The tenant-wide core facts (``app:`` state), ``None`` on a handle confined to a user."""
        try:
            return _core_facts(self.memory, None)
        except InvalidInput:  # the library's scope refuses a user-confined handle the set
            return None

    async def _state_of(
        self, facts: AsyncCoreFacts | CoreFacts, app_name: str, prefix: str
    ) -> dict[str, Any]:
        stored = await c.in_thread(self.memory, lambda _: facts.all())
        state: dict[str, Any] = {}
        for name, text in cast("dict[str, str]", stored).items():
            key = _fact_app_key(name, app_name)
            if key is not None:
                state[prefix + key] = json.loads(text)
        return state

    async def _scoped_state(self, app_name: str, user_id: str) -> dict[str, Any]:
        """The ``app:`` (when this handle may see the tenant-wide set) and ``user:`` state."""
        shared = self._shared_facts()
        merged = {} if shared is None else await self._state_of(shared, app_name, State.APP_PREFIX)
        own = _core_facts(self.memory, user_id)
        merged.update(await self._state_of(own, app_name, State.USER_PREFIX))
        return merged

    def _plan(
        self, app_name: str, user_id: str, app: Mapping[str, Any], user: Mapping[str, Any]
    ) -> list[_Write]:
        """The core-fact writes of ``user:`` then ``app:`` keys, every one checked first
        (``InvalidInput`` before anything is written)."""
        writes: list[_Write] = []
        if user:
            own = _core_facts(self.memory, user_id)
            writes += [(own, _fact_key(app_name, k), json.dumps(x)) for k, x in user.items()]
        if app:
            shared = _core_facts(self.memory, None)  # InvalidInput on a user-confined handle
            writes += [(shared, _fact_key(app_name, k), json.dumps(x)) for k, x in app.items()]
        for _, _, text in writes:
            v.check_text(text, "state value", max_chars=self.memory._core.max_content_chars)
        return writes

    async def _apply(self, writes: list[_Write]) -> None:
        async def apply(_: c.Handle) -> None:
            for facts, key, text in writes:
                await c.settled(facts.set(key, text))

        await c.off_loop(self.memory, apply)

    async def _read(
        self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
    ) -> Session | None:
        thread_id = _thread_id("adk-session", app_name, user_id, session_id)
        thread = await c.in_thread(self.memory, lambda m: m.threads.get(thread_id, user_id=user_id))
        if thread is None:
            return None
        return await self._load(cast("Thread", thread), app_name, config, events=True)

    async def _load(
        self, thread: Thread, app_name: str, config: GetSessionConfig | None, *, events: bool
    ) -> Session:
        """The session ``thread`` holds, with its session state and the events ``config``
        keeps (none without ``events``)."""
        if not _is_session(thread, app_name):
            raise InvalidInput(
                f"thread {thread.id!r} is not a session of the ADK integration", field="session_id"
            )
        owner = thread.user_id
        entries = await c.in_thread(self.memory, lambda m: m.entries.list(thread.id, user_id=owner))
        payloads = [_payload(e) for e in cast("list[Entry]", entries)]
        meta = thread.metadata[STATE_KEY]
        last = payloads[-1].get("timestamp") if payloads else None
        return Session(
            id=meta["session_id"],
            app_name=thread.metadata["app_name"],
            user_id=cast("str", owner),
            state=_fold(meta["state"], payloads),
            events=[_event(p) for p in _window(payloads, config)] if events else [],
            last_update_time=thread.created_at.timestamp() if last is None else float(last),
        )

    # -- BaseSessionService ----------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """A new session; ``state`` may hold keys of every scope (``temp:`` ones are dropped)."""
        if session_id is not None:
            session_id = _check_name(session_id, "session_id").strip()
        session_id = session_id or uuid.uuid4().hex
        thread_id = _thread_id("adk-session", app_name, user_id, session_id)
        app, user, own = _split(_json(state or {}, "state"))
        writes = self._plan(app_name, user_id, app, user)
        metadata = {
            "integration": SESSION_MARK,
            "app_name": app_name,
            STATE_KEY: {"session_id": session_id, "state": own},
        }
        try:
            thread = await c.in_thread(
                self.memory,
                lambda m: m.threads.create(thread_id=thread_id, user_id=user_id, metadata=metadata),
            )
        except Conflict as error:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from error
        await self._apply(writes)
        session = await self._load(cast("Thread", thread), app_name, None, events=False)
        session.state.update(await self._scoped_state(app_name, user_id))
        return session

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with its state (every scope merged) and events, or ``None``.

        ``config.num_recent_events`` keeps the newest N events (0: none),
        ``config.after_timestamp`` those at or after that time. The state is
        always the whole session's: reading it reads every event (one read).
        """
        session_id = _check_name(session_id, "session_id").strip()
        session = await self._read(app_name, user_id, session_id, config)
        if session is None:
            return None
        session.state.update(await self._scoped_state(app_name, user_id))
        return session

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The app's sessions of ``user_id`` (``None``: every user this handle may see),
        oldest update first, each with its state and without events."""
        _check_name(app_name, "app_name")
        if user_id is None:
            threads = await c.in_thread(self.memory, lambda m: m.threads.list())
        else:
            threads = await c.in_thread(self.memory, lambda m: m.threads.list(user_id=user_id))
        sessions: list[Session] = []
        scoped: dict[str, dict[str, Any]] = {}
        for thread in cast("list[Thread]", threads):
            if not _is_session(thread, app_name) or thread.user_id is None:
                continue
            owner = thread.user_id
            found = await self._load(thread, app_name, None, events=False)
            if owner not in scoped:
                scoped[owner] = await self._scoped_state(app_name, owner)
            found.state.update(scoped[owner])
            sessions.append(found)
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session and its events (its ``user:``/``app:`` state stays)."""
        session_id = _check_name(session_id, "session_id").strip()
        thread_id = _thread_id("adk-session", app_name, user_id, session_id)
        await c.in_thread(self.memory, lambda m: m.threads.delete(thread_id, user_id=user_id))

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The ``user:`` state of ``user_id`` in ``app_name``, keys without the prefix."""
        _check_name(app_name, "app_name")
        return await self._state_of(_core_facts(self.memory, user_id), app_name, "")

    async def append_event(self, session: Session, event: Event) -> Event:
        """Store ``event`` with its state delta, then apply it to ``session`` (see the module)."""
        if event.partial:
            return event
        delta = dict(event.actions.state_delta) if event.actions else {}
        kept = {k: x for k, x in delta.items() if not k.startswith(State.TEMP_PREFIX)}
        app, user, _ = _split(_json(kept, "state_delta"))
        stored = event.model_copy(deep=True)
        if stored.actions:
            stored.actions.state_delta = kept
        thread_id = _thread_id("adk-session", session.app_name, session.user_id, session.id)
        message = _entry(stored, SESSION_MARK, session.app_name, session.id)
        memory, owner = self.memory, session.user_id
        writes = self._plan(session.app_name, owner, app, user)
        if await c.in_thread(memory, lambda m: m.threads.get(thread_id, user_id=owner)) is None:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        await c.in_thread(
            memory,
            lambda m: m.entries.add(thread_id, message, idempotency_key=event.id, user_id=owner),
        )
        await self._apply(writes)
        await super().append_event(session=session, event=event)
        session.last_update_time = event.timestamp
        return event


class MemorybankMemoryService(BaseMemoryService):
    """ADK's ``BaseMemoryService`` on a ``Memory`` or ``AsyncMemory`` handle.

    Args:
        memory: the handle to act through (a tenant or scoped handle confines
            the service to its tenant and user).
        k: the most memories one ``search_memory`` returns.
        mode: the search: ``"hybrid"`` (keyword + semantic when the memory has an
            embedder + conversation context: a hit's neighbouring turns of the same
            session may come with it, ranked below it), ``"keyword"`` or ``"semantic"``.

    Each session added is one thread of the session's user, holding the
    session's events that have content, one entry each (the event kept whole,
    as in the session service); ``search_memory`` searches those entries of
    the app (hybrid: keyword + semantic when the memory has an embedder +
    conversation context) at the user's scope.
    """

    def __init__(
        self, memory: Memory | AsyncMemory, *, k: int = 10, mode: SearchMode = "hybrid"
    ) -> None:
        self.memory = c.check_handle(memory)
        if mode not in ("hybrid", "semantic", "keyword"):
            raise InvalidInput("mode must be 'hybrid', 'semantic' or 'keyword'", field="mode")
        self.mode: SearchMode = mode
        checked = v.check_limit(k, "k", allow_none=False)
        if checked < 1:
            raise InvalidInput("k must be at least 1", field="k")
        self.k = checked

    async def _add(
        self, app_name: str, user_id: str, session_id: str, events: Sequence[Event]
    ) -> None:
        thread_id = _thread_id("adk-memory", app_name, user_id, session_id)
        metadata = {"integration": MEMORY_MARK, "app_name": app_name, "session_id": session_id}
        worth = [e for e in events if e.content and e.content.parts]
        messages = [_entry(e, MEMORY_MARK, app_name, session_id) for e in worth]
        memory = self.memory
        await c.in_thread(
            memory, lambda m: m.ensure_thread(thread_id, user_id=user_id, metadata=metadata)
        )
        entries = await c.in_thread(memory, lambda m: m.entries.list(thread_id, user_id=user_id))
        known = {str(_payload(e).get("id")) for e in cast("list[Entry]", entries)}
        new: list[dict[str, Any]] = []
        for event, message in zip(worth, messages, strict=True):
            if event.id not in known:  # an event given twice is added once
                known.add(event.id)
                new.append(message)
        if new:
            await c.in_thread(memory, lambda m: m.entries.add_many(thread_id, new, user_id=user_id))

    async def add_session_to_memory(self, session: Session) -> None:
        """Add the session's events with content (again: only those not added yet)."""
        await self._add(session.app_name, session.user_id, session.id, session.events)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Add ``events`` (a delta) to the memory of ``session_id`` (default: one shared slot)."""
        await self._add(app_name, user_id, session_id or "__unknown_session_id__", events)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The ``k`` memories of ``user_id`` in ``app_name`` best matching ``query``."""
        _check_name(app_name, "app_name")
        if not isinstance(query, str):
            raise InvalidInput(f"query must be a string, got {type(query).__name__}", field="query")
        hits = await c.in_thread(
            self.memory,
            lambda m: m.search(
                unicodedata.normalize("NFC", query),
                k=self.k,
                mode=self.mode,
                user_id=user_id,
                kinds=("entries",),
                filters={"integration": MEMORY_MARK, "app_name": app_name},
            ),
        )
        memories: list[MemoryEntry] = []
        for hit in hits:
            if hit.entry is None:
                continue
            event = _event(_payload(hit.entry))
            if event.content is None:
                continue
            memories.append(
                MemoryEntry(
                    id=event.id,
                    content=event.content,
                    author=event.author,
                    timestamp=datetime.fromtimestamp(event.timestamp, UTC).isoformat(),
                    custom_metadata={
                        "session_id": hit.entry.metadata.get("session_id"),
                        "score": hit.score,
                    },
                )
            )
        return SearchMemoryResponse(memories=memories)
