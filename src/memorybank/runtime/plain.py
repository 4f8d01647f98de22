"""``@dataclass`` for the classes every new process imports, without its import cost.

The standard decorator compiles ``__init__``, ``__repr__`` and ``__eq__`` from
source text (about 3.5M instructions a class), and ``import dataclasses``
loads ``inspect``, ``ast``, ``dis`` and ``tokenize`` (about 40M more): together
a third of a new process that opens a store and reads its history.

The records, ``Scope`` and ``Visibility`` are declared as usual (type checkers
see the standard decorator) with a hand-written ``__init__``; at run time this
decorator makes the class the standard one would (slots, ``__match_args__``,
the same ``__repr__``/``__eq__``/``__hash__``, frozen ``__setattr__``), and
builds ``__dataclass_fields__``/``__dataclass_params__`` with the real
decorator the first time anything asks (``dataclasses.fields``, ``replace``,
``asdict``, ``is_dataclass``). ``tests/runtime/test_plain_dataclasses.py`` checks each
class against the standard decorator's.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["FACTORY", "dataclass", "field"]

_T = TypeVar("_T")


class _Factory:
    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory

    def __repr__(self) -> str:
        return "<factory>"


#: The default of a ``field(default_factory=...)`` in a hand-written ``__init__``.
FACTORY: Any = _Factory(dict)


def field(*, default_factory: Callable[[], Any]) -> Any:
    """``dataclasses.field(default_factory=...)``, the only form these classes use."""
    return _Factory(default_factory)


def _values(record: Any) -> tuple[Any, ...]:
    return tuple([getattr(record, name) for name in record.__match_args__])


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    body = ", ".join([f"{name}={getattr(self, name)!r}" for name in self.__match_args__])
    return f"{self.__class__.__qualname__}({body})"


def _eq(self: Any, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented  # type: ignore[no-any-return]
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def _frozen_methods(made: type) -> tuple[Callable[..., None], Callable[..., None]]:
    # The generated ones: a field (or any name on the class itself) cannot change.
    names: tuple[str, ...] = made.__match_args__  # type: ignore[attr-defined]

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is made or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is made or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    return __setattr__, __delattr__


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, name) for name in self.__match_args__]


def _setstate(self: Any, state: list[Any]) -> None:
    for name, value in zip(self.__match_args__, state, strict=True):
        object.__setattr__(self, name, value)


class _Introspected:
    """``__dataclass_fields__``/``__dataclass_params__``, made by the real decorator on
    first use from the class's own declarations (then stored on the class)."""

    def __init__(self, spec: dict[str, Any], frozen: bool) -> None:
        self.spec = spec
        self.frozen = frozen
        self.owner: type | None = None

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        import dataclasses

        cls = self.owner
        assert cls is not None
        if "__dataclass_fields__" not in vars(cls) or vars(cls)["__dataclass_fields__"] is self:
            namespace = {
                name: dataclasses.field(default_factory=value.factory)
                if isinstance(value, _Factory)
                else value
                for name, value in self.spec["defaults"].items()
            }
            namespace.update(
                __annotations__=self.spec["annotations"],
                __module__=cls.__module__,
                __qualname__=cls.__qualname__,
            )
            twin: Any = dataclasses.dataclass(frozen=self.frozen)(type(cls.__name__, (), namespace))
            type.__setattr__(cls, "__dataclass_fields__", twin.__dataclass_fields__)
            type.__setattr__(cls, "__dataclass_params__", twin.__dataclass_params__)
        return vars(cls)[self.name]

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name


def dataclass(*, slots: bool, frozen: bool = False) -> Callable[[type[_T]], type[_T]]:
    """``@dataclass(slots=True[, frozen=True])`` for a class with its own ``__init__``."""
    assert slots

    def wrap(cls: type[_T]) -> type[_T]:
        body = dict(vars(cls))
        assert "__init__" in body, f"{cls.__name__} writes its own __init__"
        annotations: dict[str, Any] = body.get("__annotations__", {})
        names = tuple(annotations)
        defaults = {name: body.pop(name) for name in names if name in body}
        body.pop("__dict__", None)
        body.pop("__weakref__", None)
        body.update(
            __slots__=names,
            __match_args__=names,
            __repr__=_repr,
            __eq__=_eq,
            __hash__=_hash if frozen else None,
        )
        if frozen:
            body.update(__getstate__=_getstate, __setstate__=_setstate)
        spec = {"annotations": annotations, "defaults": defaults}
        fields, params = _Introspected(spec, frozen), _Introspected(spec, frozen)
        body.update(__dataclass_fields__=fields, __dataclass_params__=params)
        metaclass: Any = type(cls)
        made: Any = metaclass(cls.__name__, cls.__bases__, body)
        made.__qualname__ = cls.__qualname__
        if frozen:
            made.__setattr__, made.__delattr__ = _frozen_methods(made)
        fields.owner = params.owner = made
        return cast("type[_T]", made)

    return wrap
