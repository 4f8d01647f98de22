"""On/off options (``--json``, ``--yes``, ``--help``) as flags, in ``--help`` and on the
command line.

A flag takes no value: ``memorybank threads --json``, never ``--json true``. Typer's
help shows every option's type, a flag's as ``<bool>``, which reads as if it took one;
the command and group classes here show a flag with no type, and turn click's
"Got unexpected extra argument(s) (true)" for ``--json true`` into a line naming the
flag and how to write it. ``--json=true`` is click's own "does not take a value".
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import typer
from typer._click.exceptions import UsageError
from typer.core import TyperCommand, TyperGroup

__all__ = ["FlagCommand", "FlagGroup", "use_flag_classes"]

#: Words a caller may write after a flag meaning it as the flag's value.
_VALUE_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})


def _flag_given_a_value(params: Sequence[Any], args: Sequence[str]) -> str | None:
    """The message for a flag written with a value (``--json true``), or ``None``."""
    flags = {name for p in params if getattr(p, "is_flag", False) for name in p.opts}
    for flag, value in itertools.pairwise(args):
        if flag in flags and value.lower() in _VALUE_WORDS:
            return (
                f"{flag} is a flag and takes no value: write {flag} alone to turn it on,"
                f" leave it out to keep it off (got {flag} {value})"
            )
    return None


class _UntypedFlags:
    """``get_params`` with every flag's metavar empty: help shows no ``<bool>``."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        return params


class FlagCommand(_UntypedFlags, TyperCommand):
    """A command whose flags read as flags (see the module)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        given = list(args)
        try:
            rest: list[str] = super().parse_args(ctx, args)
        except UsageError as error:
            hint = _flag_given_a_value(self.get_params(ctx), given)
            if hint is None or "unexpected extra argument" not in error.message:
                raise
            raise UsageError(hint, ctx) from None
        return rest


class FlagGroup(_UntypedFlags, TyperGroup):
    """A group (``memorybank``, ``memorybank keys``) whose own flags read as flags."""


def use_flag_classes(app: typer.Typer) -> None:
    """Make every command of ``app`` (and of its groups) a ``FlagCommand`` and every group
    a ``FlagGroup``, unless it names a class of its own."""
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):  # typer's default
            command.cls = FlagCommand
    for group in app.registered_groups:
        group.cls = FlagGroup
        if group.typer_instance is not None:
            use_flag_classes(group.typer_instance)
