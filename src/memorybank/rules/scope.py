"""The one scope rule, written once above the stores (DESIGN.md, "Identity and scope").

Every verb that reads or changes user- or agent-owned records takes ``user_id=``
and ``agent_id=``. Per axis, the caller's argument means:

* left out (``UNSET``): the trusted, unscoped call of server code that already
  checked access (allowed on a root handle only: a ``scoped`` handle fills in
  its own principal instead);
* ``None``: no user (agent): only shared records are visible on that axis;
* an id: that principal's own records plus the shared ones.

A record is visible when it passes both axes. A by-id verb on a record the
caller may not see behaves exactly like a missing id. Threads follow the stricter
fail-closed rule (``ThreadForbidden``), see ``check_owner``.

A ``Scope`` is what a handle is confined to (``memory.scoped(...)``); resolving
an argument against it either returns the principal to use or refuses a call
that would widen the handle. A ``Visibility`` is what a resolved call may see, as
the stores receive it (``memorybank.stores.contract`` exports it, with ``UNSET``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from memorybank.errors import OutOfScope, ThreadForbidden
from memorybank.records import Thread
from memorybank.rules import validate as v

__all__ = ["ROOT", "UNSET", "Scope", "Unset", "Visibility", "check_owner"]


class Unset:
    """Marker type for "argument not given" where ``None`` is a real value."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = Unset()

Principal = str | Unset | None


def _check(value: object, field: str) -> Principal:
    if isinstance(value, Unset):
        return value
    return v.check_optional_id(value, field)


@dataclass(frozen=True, slots=True)
class Scope:
    """The principal a handle is confined to; ``UNSET`` on an axis leaves it unconfined."""

    user_id: Principal = UNSET
    agent_id: Principal = UNSET

    @property
    def confined(self) -> bool:
        """Whether any axis is fixed (a ``memory.scoped`` handle)."""
        return not (isinstance(self.user_id, Unset) and isinstance(self.agent_id, Unset))

    def narrow(self, *, user_id: Principal, agent_id: Principal) -> Scope:
        """This scope with more axes fixed; an axis already fixed can only be repeated."""
        return Scope(self.user(user_id), self.agent(agent_id))

    def user(self, given: object) -> Principal:
        """The user a call acts for: ``given``, or the handle's own when left out."""
        return self._resolve(self.user_id, _check(given, "user_id"), "user_id")

    def agent(self, given: object) -> Principal:
        """The agent a call acts for: ``given``, or the handle's own when left out."""
        return self._resolve(self.agent_id, _check(given, "agent_id"), "agent_id")

    def owner(self, given: object, field: str = "user_id") -> str | None:
        """The owner of a record being created: ``given``, else the handle's, else shared."""
        resolved = self._resolve(
            self.user_id if field == "user_id" else self.agent_id, _check(given, field), field
        )
        return None if isinstance(resolved, Unset) else resolved

    def visibility(self, *, user_id: object = UNSET, agent_id: object = UNSET) -> Visibility | None:
        """What a call may see, for the store (``None``: unscoped on both axes)."""
        user, agent = self.user(user_id), self.agent(agent_id)
        if isinstance(user, Unset) and isinstance(agent, Unset):
            return None
        return Visibility(agent, user)

    @staticmethod
    def _resolve(fixed: Principal, given: Principal, field: str) -> Principal:
        if isinstance(fixed, Unset) or isinstance(given, Unset):
            return fixed if isinstance(given, Unset) else given
        if given != fixed:
            raise OutOfScope(
                f"this handle is scoped to {field}={fixed!r}; a call cannot name another",
                field=field,
            )
        return fixed


ROOT: Final = Scope()


@dataclass(frozen=True, slots=True)
class Visibility:
    """Who is asking, per axis: a record (or a thread's entry) is visible when its
    ``agent_id`` is this agent or ``None`` (shared), and its ``user_id`` is this
    user or ``None`` (shared). ``None`` here means "no agent/user": only shared
    records match on that axis. ``UNSET`` on an axis means that axis is not
    checked (the trusted, unscoped call on that axis)."""

    agent_id: str | Unset | None
    user_id: str | Unset | None

    def admits(self, agent_id: str | None, user_id: str | None) -> bool:
        """Whether a record owned by ``agent_id``/``user_id`` is visible (the rule above)."""
        return _axis_admits(self.agent_id, agent_id) and _axis_admits(self.user_id, user_id)


def _axis_admits(asking: str | Unset | None, owner: str | None) -> bool:
    return isinstance(asking, Unset) or owner is None or owner == asking


def check_owner(thread: Thread, user_id: Principal) -> None:
    """Threads fail closed: a named user (``None`` names "no owner") must be the owner."""
    if not isinstance(user_id, Unset) and thread.user_id != user_id:
        raise ThreadForbidden()


def check_owner_id(owner: str | None, user_id: Principal) -> None:
    """``check_owner`` for a thread whose owner alone was read."""
    if not isinstance(user_id, Unset) and owner != user_id:
        raise ThreadForbidden()
