"""The records and value types behave as the standard ``@dataclass`` makes them.

The records and ``Scope`` are plain dataclasses (no hand-written ``__init__``);
the store contract's value types are still made by ``memorybank.runtime.plain``.
Each is compared with ``dataclasses.make_dataclass`` over the same fields:
``__init__`` (signature, defaults, fresh default dicts), ``repr``, ``==``,
``hash``, frozen assignment, ``fields``/``replace``/``asdict``, copies and
pickling.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memorybank import records
from memorybank.rules.scope import Scope
from memorybank.stores.contract import items as _items
from memorybank.stores.contract.types import Visibility

CLASSES: list[Any] = [
    records.ToolCall,
    records.Message,
    records.Thread,
    records.Entry,
    records.Branch,
    records.Summary,
    records.Document,
    records.Hit,
    records.Fact,
    Scope,
    Visibility,
    _items.NewEntry,
    _items.AppendResult,
    _items.Record,
    _items.RecordGuard,
    _items.SearchHit,
    _items.VectorItem,
]


#: Declared with the standard decorator itself, nothing written by hand.
PLAIN: list[Any] = [*CLASSES[:9], records.SavedSnapshot, records.WorkingRun, Scope, Visibility]


@pytest.mark.parametrize("cls", PLAIN, ids=lambda c: c.__name__)
def test_records_are_plain_dataclasses_without_a_written_init(cls: Any) -> None:
    assert "def __init__" not in inspect.getsource(cls)
    assert cls.__init__.__module__ == cls.__module__
    assert cls.__init__.__code__.co_filename != inspect.getsourcefile(cls)
    assert "__dataclass_fields__" in vars(cls)  # set by the decorator, not computed later


def _standard(cls: Any) -> Any:
    specs: list[Any] = []
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            specs.append((f.name, f.type, dataclasses.field(default_factory=f.default_factory)))
        elif f.default is not dataclasses.MISSING:
            specs.append((f.name, f.type, dataclasses.field(default=f.default)))
        else:
            specs.append((f.name, f.type))
    frozen = cls.__dataclass_params__.frozen
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=frozen, slots=True)


def _values(cls: Any, tag: str) -> dict[str, str]:
    return {f.name: f"{f.name}-{tag}" for f in dataclasses.fields(cls)}


def _required(cls: Any) -> dict[str, str]:
    return {
        f.name: f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_init_signature_and_defaults_match_the_standard_decorator(cls: Any) -> None:
    standard = _standard(cls)
    ours, theirs = inspect.signature(cls), inspect.signature(standard)
    assert [(p.name, p.kind, repr(p.default), p.annotation) for p in ours.parameters.values()] == [
        (p.name, p.kind, repr(p.default), p.annotation) for p in theirs.parameters.values()
    ]
    a, b = cls(**_required(cls)), cls(**_required(cls))
    assert repr(a) == repr(standard(**_required(cls)))
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:  # a fresh value per instance
            assert getattr(a, f.name) == f.default_factory()
            assert getattr(a, f.name) is not getattr(b, f.name)
    assert cls.__match_args__ == standard.__match_args__
    assert cls.__slots__ == standard.__slots__
    assert not hasattr(a, "__dict__")


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_repr_eq_and_hash_match_the_standard_decorator(cls: Any) -> None:
    standard = _standard(cls)
    values = _values(cls, "x")
    record, twin = cls(**values), standard(**values)
    assert repr(record) == repr(twin)
    assert record == cls(**values)
    assert record != twin  # another class: never equal, as between two dataclasses
    for name in values:
        assert record != cls(**{**values, name: "other"})
    if cls.__dataclass_params__.frozen:
        assert hash(record) == hash(twin)
        assert hash(record) == hash(cls(**values))
    else:
        assert cls.__hash__ is None
        assert standard.__hash__ is None


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_frozen_records_refuse_changes_as_the_standard_decorator_does(cls: Any) -> None:
    record = cls(**_values(cls, "x"))
    name = dataclasses.fields(cls)[0].name
    if not cls.__dataclass_params__.frozen:
        setattr(record, name, "changed")
        assert getattr(record, name) == "changed"
        return
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"):
        setattr(record, name, "changed")
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot delete field '{name}'"):
        delattr(record, name)
    # A name that is no field: the standard decorator's frozen, slotted class raises
    # TypeError (its __setattr__ calls super() on the class before slots were added).
    with pytest.raises((dataclasses.FrozenInstanceError, TypeError)):
        record.unknown = 1


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_dataclass_functions_copies_and_pickles_work(cls: Any) -> None:
    standard = _standard(cls)
    assert dataclasses.is_dataclass(cls) is True  # (no narrowing: cls stays Any)
    assert repr(cls.__dataclass_params__) == repr(standard.__dataclass_params__)
    assert [(f.name, f.type, f.default, f.default_factory) for f in dataclasses.fields(cls)] == [
        (f.name, f.type, f.default, f.default_factory) for f in dataclasses.fields(standard)
    ]
    values = _values(cls, "x")
    record = cls(**values)
    assert dataclasses.asdict(record) == values
    name = dataclasses.fields(cls)[-1].name
    replaced = dataclasses.replace(record, **{name: "new"})
    assert replaced == cls(**{**values, name: "new"})
    assert getattr(record, name) == values[name]
    assert copy.copy(record) == record
    assert copy.deepcopy(record) == record
    assert pickle.loads(pickle.dumps(record)) == record


def test_a_subclass_made_by_the_standard_decorator_inherits_the_fields() -> None:
    @dataclasses.dataclass(slots=True)
    class Tagged(records.Branch):
        tag: str = "t"

    tagged = Tagged("main", "th", "now", tag="x")  # type: ignore[arg-type]
    assert [f.name for f in dataclasses.fields(tagged)][-1] == "tag"
    assert repr(tagged).startswith("test_a_subclass_made_by_the_standard_decorator")


_FRESH = """
import dataclasses
from memorybank import records
print([f.name for f in dataclasses.fields(records.ToolCall)])
print(dataclasses.replace(records.ToolCall("a", "b"), name="c"))
"""


def test_fields_and_replace_work_in_a_new_process() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _FRESH],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    ).stdout.split("\n")
    assert out[0] == "['id', 'name', 'arguments']"
    assert out[1] == "ToolCall(id='a', name='c', arguments='{}')"
