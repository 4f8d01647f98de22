"""``memory.branches``: fork, list, switch, rewind and delete a thread's branches."""

from __future__ import annotations

from memorybank.core._async.core import Namespace
from memorybank.records import Branch, Thread
from memorybank.rules import validate as v
from memorybank.stores.contract._async.store import UNSET, Unset


class AsyncBranches(Namespace):
    """``memory.branches``: alternative lines of a conversation, and time travel."""

    async def create(
        self,
        thread_id: str,
        name: str,
        *,
        from_entry: str | None = None,
        user_id: str | Unset | None = UNSET,
    ) -> Branch:
        """Fork the current branch into ``name`` (up to ``from_entry``, else all of it).

        The new branch is not checked out. ``Conflict`` if ``name`` exists.
        """
        thread = await self._thread(thread_id, user_id)
        return await self._core.store.branch_create(
            self._tenant,
            thread.id,
            v.check_id(name, "name"),
            from_branch=thread.current_branch,
            from_entry=v.check_optional_id(from_entry, "from_entry"),
            created_at=self._core.now(),
        )

    async def checkout(
        self, thread_id: str, name: str, *, user_id: str | Unset | None = UNSET
    ) -> Thread:
        """Make ``name`` the thread's current branch. ``NotFound`` if it does not exist."""
        thread_id = (await self._thread(thread_id, user_id)).id
        return await self._core.store.thread_update(
            self._tenant,
            thread_id,
            updated_at=self._core.now(),
            current_branch=v.check_id(name, "name"),
        )

    async def rewind(
        self, thread_id: str, entry_id: str, *, user_id: str | Unset | None = UNSET
    ) -> int:
        """Delete the entries after ``entry_id`` on the current branch; how many went."""
        thread_id = (await self._thread(thread_id, user_id)).id
        return await self._core.store.entry_truncate_after(
            self._tenant, thread_id, v.check_id(entry_id, "entry_id")
        )

    async def list(self, thread_id: str, *, user_id: str | Unset | None = UNSET) -> list[Branch]:
        """The thread's branches, oldest first."""
        thread_id = (await self._thread(thread_id, user_id)).id
        return await self._core.store.branch_list(self._tenant, thread_id)

    async def delete(
        self, thread_id: str, name: str, *, user_id: str | Unset | None = UNSET
    ) -> bool:
        """Delete a branch and its entries (not the current one: ``Conflict``)."""
        thread_id = (await self._thread(thread_id, user_id)).id
        return await self._core.store.branch_delete(
            self._tenant, thread_id, v.check_id(name, "name")
        )
