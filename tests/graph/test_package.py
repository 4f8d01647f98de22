"""The graph package composes its verbs from one module per concern; ``AsyncGraph``
(and the generated ``Graph``) must still name every public verb in its own body,
which is where the isolation suite and the sync/async surface check read them."""

from __future__ import annotations

import inspect

import pytest

from memorybank.graph._async import AsyncGraph
from memorybank.graph._sync import Graph


def _inherited_verbs(cls: type) -> set[str]:
    return {
        name
        for base in cls.__mro__[1:]
        for name, value in vars(base).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }


@pytest.mark.parametrize("cls", [AsyncGraph, Graph])
def test_every_public_verb_is_named_on_the_class(cls: type) -> None:
    own = {name for name, value in vars(cls).items() if inspect.isfunction(value)}
    assert _inherited_verbs(cls) - own == set()


@pytest.mark.parametrize("cls", [AsyncGraph, Graph])
def test_each_named_verb_is_the_concern_module_s_own(cls: type) -> None:
    for name in _inherited_verbs(cls):
        owner = next(b for b in cls.__mro__[1:] if name in vars(b))
        assert vars(cls)[name] is vars(owner)[name], name
