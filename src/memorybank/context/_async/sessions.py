"""Sessions: one long-lived thread per user and channel (the reference's ``SessionManager``).

A session is identified by (tenant, user, agent, channel type, channel id): one
thread per user talking to one agent on one channel, owned by the user. Its id
is ``session_<channel_type>_<channel_id>_<agent_id>_<user_id>`` where each part
has ``%`` and ``_`` percent-encoded (``%25``, ``%5F``), so the four parts can
always be read back and two different sessions never share an id; when that
id would be longer than an id may be, it is ``session~<sha256 of the parts>``.
(The reference's ``session_<channel_type>_<user_id>`` made ``user "b_c", channel
"a"`` and ``user "c", channel "a_b"`` one session, and ignored the channel id
and the agent.) Its metadata holds the session's fields under internal keys that
``update`` never lets a caller overwrite. ``message_count`` is read from the
store's entry count, so concurrent writers can never make it wrong (the
reference keeps a racy read-modify-write counter); the last activity is the
thread's ``updated_at``, which every append and update moves.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Literal

from memorybank.context import values
from memorybank.context.values import CompactionResult, Session, SessionStatus
from memorybank.errors import ConfigurationError, Conflict, InvalidInput, NotFound
from memorybank.records import Thread
from memorybank.rules import validate as v
from memorybank.stores.contract._async.store import UNSET, Unset

if TYPE_CHECKING:
    from memorybank.context._async.compaction import AsyncCompactionService
    from memorybank.core._async.handle import AsyncMemoryHandle

__all__ = ["INTERNAL_KEYS", "AsyncSessionManager", "session_id"]

INTERNAL_KEYS = frozenset(
    {
        "_session",
        "user_id",
        "channel_type",
        "channel_id",
        "created_at",
        "status",
        "message_count",
        "last_active_at",
        "config",
    }
)
STATUSES = ("active", "paused", "archived")


def _status(value: object) -> SessionStatus:
    if value not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}", field="status")
    return value  # type: ignore[return-value]


def _is_session(thread: Thread) -> bool:
    return thread.metadata.get("_session") is True


def _part(text: str) -> str:
    return text.replace("%", "%25").replace("_", "%5F")


def session_id(*, channel_type: str, channel_id: str, agent_id: str, user_id: str) -> str:
    """The id of the session of ``user_id`` with ``agent_id`` on one channel (see above)."""
    parts = (channel_type, channel_id, agent_id, user_id)
    readable = "session_" + "_".join(map(_part, parts))
    if len(readable) <= v.MAX_ID_LENGTH:
        return readable
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()
    return f"session~{digest}"


class AsyncSessionManager(values.SessionManager):
    """Maps a user on a channel to a long-lived thread and tracks its status and config.

    ``compaction`` (a ``CompactionService`` on the same memory) enables ``compact``.
    """

    def __init__(
        self, memory: AsyncMemoryHandle, compaction: AsyncCompactionService | None = None
    ) -> None:
        self._memory = memory
        self._compaction = compaction

    async def _session(self, thread: Thread) -> Session:
        meta = thread.metadata
        count = await self._memory.entries.count(thread.id, user_id=thread.user_id)
        return Session(
            id=thread.id,
            user_id=str(meta.get("user_id", thread.user_id)),
            agent_id=thread.agent_id,
            channel_type=str(meta.get("channel_type", "")),
            channel_id=str(meta.get("channel_id", "")),
            status=meta.get("status", "active"),
            message_count=count,
            config=dict(meta.get("config") or {}),
            metadata={k: x for k, x in meta.items() if k not in INTERNAL_KEYS},
            created_at=thread.created_at,
            last_active_at=thread.updated_at,
        )

    async def get_or_create(
        self,
        *,
        channel_type: str,
        channel_id: str,
        user_id: str | Unset = UNSET,
        agent_id: str | Unset = UNSET,
    ) -> Session:
        """The session of ``user_id`` with ``agent_id`` on this channel: created, or
        reactivated when archived. ``user_id`` and ``agent_id`` are required (a
        ``scoped`` memory's by default)."""
        scope = self._memory.scope
        user_id = v.check_id(scope.owner(user_id), "user_id")
        agent_id = v.check_id(scope.owner(agent_id, "agent_id"), "agent_id")
        channel_type = v.check_id(channel_type, "channel_type")
        channel_id = v.check_id(channel_id, "channel_id")
        sid = session_id(
            channel_type=channel_type, channel_id=channel_id, agent_id=agent_id, user_id=user_id
        )
        meta = {
            "_session": True,
            "user_id": user_id,
            "channel_type": channel_type,
            "channel_id": channel_id,
            "status": "active",
        }
        thread = await self._memory.ensure_thread(
            sid, user_id=user_id, agent_id=agent_id, metadata=meta
        )
        if not _is_session(thread):
            raise Conflict(f"thread {sid!r} exists and is not a session")
        if thread.metadata.get("status") == "archived":
            return await self.update(sid, status="active", user_id=user_id)
        return await self._session(thread)

    async def get(self, session_id: str, *, user_id: str | Unset | None = UNSET) -> Session | None:
        """The session, or ``None`` (also for a thread that is not a session).

        Sessions are threads: a named ``user_id`` other than the owner raises
        ``ThreadForbidden`` (default: the memory's scope).
        """
        thread = await self._memory.threads.get(
            v.check_id(session_id, "session_id"), user_id=user_id
        )
        if thread is None or not _is_session(thread):
            return None
        return await self._session(thread)

    async def update(
        self,
        session_id: str,
        *,
        status: SessionStatus | None = None,
        config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> Session:
        """Change status, config overrides (replaced whole) or metadata (merged).

        Internal keys in ``metadata`` (status, message count, channel, ...) are
        ignored: they change only through this manager. ``NotFound`` if absent.
        """
        session_id = v.check_id(session_id, "session_id")
        new_status = None if status is None else _status(status)
        new_config = None if config is None else v.check_json_object(config, "config")
        extra = v.check_json_object(metadata, "metadata")
        thread = await self._memory.threads.get(session_id, user_id=user_id)
        if thread is None or not _is_session(thread):
            raise NotFound(f"session {session_id!r} not found")
        meta = dict(thread.metadata)
        meta.update({k: x for k, x in extra.items() if k not in INTERNAL_KEYS})
        if new_status is not None:
            meta["status"] = new_status
        if new_config is not None:
            meta["config"] = new_config
        updated = await self._memory.threads.update(
            session_id,
            user_id=user_id,
            metadata=meta,
            status=UNSET
            if new_status is None
            else ("archived" if new_status == "archived" else "active"),
        )
        return await self._session(updated)

    async def archive(self, session_id: str, *, user_id: str | Unset | None = UNSET) -> Session:
        """Mark the session archived (``get_or_create`` reactivates it)."""
        return await self.update(session_id, status="archived", user_id=user_id)

    async def delete(self, session_id: str, *, user_id: str | Unset | None = UNSET) -> bool:
        """Delete the session's thread and entries; whether it existed."""
        session = await self.get(session_id, user_id=user_id)
        if session is None:
            return False
        return await self._memory.threads.delete(session.id, user_id=user_id)

    async def list(
        self,
        *,
        status: SessionStatus | None = None,
        limit: int | None = None,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        channel_type: str | None = None,
    ) -> list[Session]:
        """Sessions, most recently active first, filtered by the given fields."""
        wanted = None if status is None else _status(status)
        limit = v.check_limit(limit, "limit")
        threads = await self._memory.threads.list(
            user_id=user_id,
            agent_id=agent_id,
            status=None if wanted is None else ("archived" if wanted == "archived" else "active"),
        )
        found: list[Session] = []
        for thread in threads:  # most recently updated first
            meta = thread.metadata
            if not _is_session(thread):
                continue
            if wanted is not None and meta.get("status", "active") != wanted:
                continue
            if channel_type is not None and meta.get("channel_type") != channel_type:
                continue
            found.append(await self._session(thread))
            if limit is not None and len(found) >= limit:
                break
        return found

    async def compact(
        self,
        session_id: str,
        *,
        strategy: Literal["summary", "sliding-window", "hybrid"] = "summary",
        threshold: int,
        keep_recent: int,
        message_threshold: int | None = None,
        summary_model: str | None = None,
        summary_prompt: str | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> CompactionResult:
        """Compact the session's thread with the manager's ``CompactionService``."""
        if self._compaction is None:
            raise ConfigurationError(
                "SessionManager.compact needs SessionManager(memory, compaction=...)"
            )
        return await self._compaction.compact(
            v.check_id(session_id, "session_id"),
            strategy=strategy,
            threshold=threshold,
            keep_recent=keep_recent,
            message_threshold=message_threshold,
            summary_model=summary_model,
            summary_prompt=summary_prompt,
            user_id=user_id,
        )
