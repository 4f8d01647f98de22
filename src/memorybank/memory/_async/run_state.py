"""Per-run state: ``memory.working_memory(...)``, ``memory.snapshots`` and ``memory.summaries``."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from memorybank.core._async.core import Namespace, _Core
from memorybank.errors import ThreadForbidden
from memorybank.records import SavedSnapshot, Summary, WorkingRun
from memorybank.rules import validate as v
from memorybank.rules.ids import new_id
from memorybank.rules.scope import Principal, Scope
from memorybank.stores.contract._async.store import UNSET, Record, Unset


def _run_key(run_id: str, user: Principal, agent: Principal) -> str:
    """Where a run's working memory lives: the run id itself for the unscoped root,
    else a digest of (run, user, agent) so each principal gets its own space and
    no run id a scoped caller can name reaches another's (scoped keys never
    start with ``~`` unhashed; the root is trusted with every key)."""
    if isinstance(user, Unset) and isinstance(agent, Unset):
        return run_id
    parts = [run_id, *(0 if isinstance(x, Unset) else x for x in (user, agent))]
    import hashlib  # on first use (cold start)
    import json

    return "~" + hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _json_loads(text: str) -> Any:
    import json  # on first use: reading history does not need it (cold start)

    return json.loads(text)


#: The record kind naming the user a run's working memory belongs to (its ``id`` is the
#: run's store key, its ``user_id`` the user): how ``forget_user`` finds her working memory,
#: whose rows carry no user (their key is a digest, see ``_run_key``).
WORKING_OWNER = "working_owner"


async def forget_working(core: _Core, tenant: str, user_id: str) -> None:
    """Clear every run of working memory ``user_id`` opened (``forget_user``, before the
    store erases her records, these markers among them)."""
    for marker in await core.store.record_list(tenant, WORKING_OWNER, user_id=user_id):
        await core.store.working_clear(tenant, marker.id)


#: Run ids read from the store per round trip when listing runs.
_RUN_PAGE = 200


async def list_working(
    core: _Core, tenant: str, scope: Scope, *, limit: int | None = None
) -> list[WorkingRun]:
    """The runs holding working memory that a handle scoped ``scope`` could open, in id
    order (see ``AsyncMemory.working_runs``)."""
    store = core.store
    if limit == 0:
        return []
    user, agent = scope.user_id, scope.agent_id
    if isinstance(user, Unset) and isinstance(agent, Unset):
        markers = {m.id: m for m in await store.record_list(tenant, WORKING_OWNER)}
        keys: list[str] = []
        after: str | None = None
        while limit is None or len(keys) < limit:
            chunk = await store.working_runs(tenant, after=after, limit=_RUN_PAGE)
            keys.extend(chunk)
            if len(chunk) < _RUN_PAGE:
                break
            after = chunk[-1]
    else:
        # A scoped handle sees the runs marked as its principal's: a run it opens is
        # keyed by a digest of (run, user, agent), so the marker is how it is found.
        found = await store.record_list(
            tenant,
            WORKING_OWNER,
            user_id=user,  # None (a handle confined to shared records) matches no marker
            agent_id=agent,
        )
        markers = {m.id: m for m in found}
        keys = sorted(markers)
    runs: list[WorkingRun] = []
    for key in keys:
        raw = await store.working_items(tenant, key)
        if not raw:  # cleared since (a marker outlives its run's values)
            continue
        marker = markers.get(key)
        runs.append(
            WorkingRun(
                run_id=str(marker.data.get("run_id", key)) if marker is not None else key,
                user_id=None if marker is None else marker.user_id,
                agent_id=None if marker is None else marker.agent_id,
                items={k: _json_loads(x) for k, x in sorted(raw.items())},
            )
        )
        if limit is not None and len(runs) >= limit:
            break
    return runs


class AsyncWorkingMemory:
    """Key-value scratch space for one run; cleared when its ``with`` block exits."""

    def __init__(
        self,
        core: _Core,
        tenant: str,
        key: str,
        run_id: str,
        owner: tuple[str | None, str | None] | None = None,
    ) -> None:
        self._core = core
        self._tenant = tenant
        self._key = key  # the run's partition in the store (see ``_run_key``)
        self.run_id = run_id
        #: (user, agent) of a run opened by a user, until its ``WORKING_OWNER`` marker is
        #: written (before the first value): then ``None``
        self._owner = owner

    async def _mark(self) -> None:
        if self._owner is None:
            return
        user, agent = self._owner
        now = self._core.now()
        marker = Record(
            kind=WORKING_OWNER,
            id=self._key,
            agent_id=agent,
            user_id=user,
            content="",
            data={"run_id": self.run_id},
            created_at=now,
            updated_at=now,
        )
        await self._core.store.record_put(self._tenant, [marker])
        self._owner = None

    async def set(self, key: str, value: Any) -> None:
        """Store a JSON value under ``key``."""
        key, text = v.check_id(key, "key"), v.dump_json(value, "value")
        await self._mark()
        await self._core.store.working_set(self._tenant, self._key, key, text)

    async def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``."""
        raw = await self._core.store.working_get(self._tenant, self._key, v.check_id(key, "key"))
        return default if raw is None else _json_loads(raw)

    async def delete(self, key: str) -> bool:
        """Delete ``key``; whether it existed."""
        return await self._core.store.working_delete(
            self._tenant, self._key, v.check_id(key, "key")
        )

    async def items(self) -> dict[str, Any]:
        """Every key and value of this run."""
        raw = await self._core.store.working_items(self._tenant, self._key)
        return {key: _json_loads(value) for key, value in sorted(raw.items())}

    async def clear(self) -> None:
        """Forget everything of this run."""
        await self._core.store.working_clear(self._tenant, self._key)

    async def __aenter__(self) -> AsyncWorkingMemory:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.clear()


class AsyncSnapshots(Namespace):
    """``memory.snapshots``: durable per-run state for workflows that survive restarts."""

    async def save(self, run_id: str, value: Any, *, user_id: str | Unset | None = UNSET) -> None:
        """Save (replace) the run's snapshot: any JSON value. ``user_id`` becomes its owner.

        Replacing another user's snapshot raises ``ThreadForbidden``, checked in
        the same atomic step as the write: of two users saving one new run at
        once, exactly one owns it. ``user_id`` defaults to the handle's user
        (none on the root handle, which may then replace unowned snapshots only).
        """
        run_id = v.check_id(run_id, "run_id")
        text = v.dump_json(value, "value")
        owner = self._scope.owner(user_id)
        await self._core.store.snapshot_save(
            self._tenant, run_id, text, user_id=owner, saved_at=self._core.now()
        )

    async def load(self, run_id: str, *, user_id: str | Unset | None = UNSET) -> Any:
        """The saved value, or ``None``. A snapshot with an owner fails closed for others.

        ``user_id`` defaults to the handle's user; the root handle's unscoped
        call reads any snapshot.
        """
        user = self._scope.user(user_id)
        found = await self._core.store.snapshot_load(self._tenant, v.check_id(run_id, "run_id"))
        if found is None:
            return None
        owner, text = found
        _snapshot_access(owner, user)
        return _json_loads(text)

    async def delete(self, run_id: str, *, user_id: str | Unset | None = UNSET) -> bool:
        """Delete the run's snapshot; whether it existed (same access rule as ``load``).

        The owner check is part of the delete (one atomic step); the root
        handle's unscoped call deletes any snapshot.
        """
        user = self._scope.user(user_id)
        return await self._core.store.snapshot_delete(
            self._tenant,
            v.check_id(run_id, "run_id"),
            user_id=None if isinstance(user, Unset) else user,
            owner_check=not isinstance(user, Unset),
        )

    async def list(
        self, *, user_id: str | Unset | None = UNSET, limit: int | None = None
    ) -> list[SavedSnapshot]:
        """The saved snapshots this call may load, in run id order. ``user_id`` defaults
        to the handle's user: a user sees her own and unowned snapshots; the root
        handle's unscoped call sees every one."""
        user = self._scope.user(user_id)
        limit = v.check_limit(limit, "limit")
        store = self._core.store
        found: list[SavedSnapshot] = []
        after: str | None = None
        while limit is None or len(found) < limit:
            chunk = await store.snapshot_runs(self._tenant, after=after, limit=_RUN_PAGE)
            for run_id in chunk:
                saved = await store.snapshot_load(self._tenant, run_id)
                if saved is None:  # deleted since it was listed
                    continue
                owner, text = saved
                if owner is not None and not isinstance(user, Unset) and owner != user:
                    continue
                found.append(SavedSnapshot(run_id, owner, _json_loads(text)))
                if limit is not None and len(found) >= limit:
                    break
            if len(chunk) < _RUN_PAGE:
                break
            after = chunk[-1]
        return found


def _snapshot_access(owner: str | None, user: Principal) -> None:
    """Snapshots fail closed like threads: an owned one is its owner's alone."""
    if owner is not None and not isinstance(user, Unset) and owner != user:
        raise ThreadForbidden("snapshot access forbidden")


class AsyncSummaries(Namespace):
    """``memory.summaries``: compressed summaries of past conversations per agent (and user)."""

    async def add(
        self,
        *,
        content: str,
        agent_id: str | Unset = UNSET,
        user_id: str | Unset | None = UNSET,
    ) -> Summary:
        """Store a summary. ``user_id=None`` shares it with every user of the agent.

        ``agent_id`` (required) and ``user_id`` default to the handle's scope.
        """
        v.check_text(content, "content", max_chars=self._core.max_content_chars, allow_empty=False)
        summary = Summary(
            id=new_id(),
            agent_id=v.check_id(self._scope.owner(agent_id, "agent_id"), "agent_id"),
            user_id=self._scope.owner(user_id),
            content=content,
            created_at=self._core.now(),
        )
        return await self._core.store.summary_add(self._tenant, summary)

    async def list(
        self, *, agent_id: str | Unset = UNSET, user_id: str | Unset | None = UNSET
    ) -> list[Summary]:
        """The agent's summaries for ``user_id`` plus shared ones, oldest first.

        ``user_id=None``: shared ones only; left out: the handle's user (every
        user's on the root handle). ``agent_id`` is required (the handle's by default).
        """
        return await self._core.store.summary_list(
            self._tenant,
            agent_id=v.check_id(self._scope.owner(agent_id, "agent_id"), "agent_id"),
            user_id=self._scope.user(user_id),
        )
