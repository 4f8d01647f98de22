"""``memory.threads``: create, get, list, update and delete conversations."""

from __future__ import annotations

from typing import Any

from memorybank.core._async.core import Namespace, _check_title, _require_thread
from memorybank.errors import InvalidInput
from memorybank.records import Thread
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.rules.scope import check_owner
from memorybank.stores.contract._async.store import UNSET, Unset


class AsyncThreads(Namespace):
    """``memory.threads``: create, get, list, update, delete conversations."""

    async def create(
        self,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        thread_id: str | None = None,
    ) -> Thread:
        """Create a thread (id generated unless given). ``Conflict`` if the id is taken.

        Owner and agent default to the handle's scope (none on the root handle).
        """
        now = self._core.now()
        thread = Thread(
            id=new_id() if thread_id is None else v.check_id(thread_id, "thread_id"),
            tenant_id=self._tenant,
            user_id=self._scope.owner(user_id),
            agent_id=self._scope.owner(agent_id, "agent_id"),
            title=_check_title(title),
            metadata=v.check_json_object(metadata, "metadata"),
            status="active",
            created_at=now,
            updated_at=now,
        )
        return await self._core.store.thread_create(thread)

    async def get(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> Thread | None:
        """The thread or ``None``; ``ThreadForbidden`` if ``user_id`` is given and not its owner."""
        user_id = self._scope.user(user_id)
        thread = await self._core.store.thread_get(self._tenant, v.check_id(thread_id, "thread_id"))
        if thread is not None:
            check_owner(thread, user_id)
        return thread

    async def require(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> Thread:
        """The thread under the thread rule: ``NotFound`` if absent, ``ThreadForbidden``
        if ``user_id`` (default: the handle's user) is not its owner."""
        return await _require_thread(
            self._core, self._tenant, v.check_id(thread_id, "thread_id"), self._scope.user(user_id)
        )

    async def list(
        self,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        """Threads, most recently updated first.

        ``user_id``/``agent_id`` keep the threads of exactly that owner/agent
        (``None``: threads without one); left out, the handle's scope applies
        (no filter on the root handle). ``status`` filters when given.
        """
        if status is not None and status not in ("active", "archived"):
            raise InvalidInput("status must be 'active' or 'archived'", field="status")
        return await self._core.store.thread_list(
            self._tenant,
            user_id=self._scope.user(user_id),
            agent_id=self._scope.agent(agent_id),
            status=status,
            limit=v.check_limit(limit, "limit"),
        )

    async def update(
        self,
        thread_id: str,
        *,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        status: str | Unset = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Thread:
        """Change title, metadata (replaced whole) or status. ``NotFound`` if absent."""
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        if not isinstance(title, Unset):
            title = _check_title(title)
        if not isinstance(metadata, Unset):
            metadata = v.check_json_object(metadata, "metadata")
        if not isinstance(status, Unset) and status not in ("active", "archived"):
            raise InvalidInput("status must be 'active' or 'archived'", field="status")
        if not isinstance(user_id, Unset):
            await _require_thread(self._core, self._tenant, thread_id, user_id)
        return await self._core.store.thread_update(
            self._tenant,
            thread_id,
            updated_at=self._core.now(),
            title=title,
            metadata=metadata,
            status=status,
        )

    async def delete(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> bool:
        """Delete the thread, its entries and branches. ``False`` if it did not exist."""
        user_id = self._scope.user(user_id)
        thread_id = v.check_id(thread_id, "thread_id")
        if not isinstance(user_id, Unset):
            thread = await self._core.store.thread_get(self._tenant, thread_id)
            if thread is None:
                return False
            check_owner(thread, user_id)
        return await self._core.store.thread_delete(self._tenant, thread_id)
