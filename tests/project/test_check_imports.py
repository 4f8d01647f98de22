"""``scripts/check_imports.py`` (run by ``make lint``): it finds a cycle through a
type-only import, ignores imports inside functions for module cycles but counts them for
the package layers, wants a reason for each, and passes on the package today."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parent.parent.parent / "scripts" / "check_imports.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_imports", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_imports"] = module
    spec.loader.exec_module(module)
    return module


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "memorybank" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_type_only_import_closes_a_cycle(tmp_path: Path) -> None:
    check = _script()
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "facade.py": "from memorybank.service import run\n",
            "service.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from memorybank.facade import Facade\n"
                "def run() -> None:\n    from memorybank import other\n"
            ),
            "other.py": "from . import facade\n",
        },
    )
    edges, local = check.scan(root)
    assert edges["memorybank.service"] == {"memorybank.facade"}
    assert edges["memorybank.other"] == {"memorybank.facade"}  # relative import resolved
    assert check.cycles(edges) == [["memorybank.facade", "memorybank.service"]]
    assert [(name, line) for name, line, _ in local] == [("memorybank.service", 5)]


def test_no_cycle_in_memorybank() -> None:
    check = _script()
    edges, local = check.scan(check.ROOT)
    assert "memorybank.memory._async.memory" in edges
    assert check.cycles(edges) == []
    assert len(local) <= check.FUNCTION_LOCAL_CAP
    problems, _summary = check.check()
    assert problems == []


_LAYERS = [("low", {"memorybank.low"}), ("high", {"memorybank.high", "memorybank"})]


def test_a_function_local_import_breaks_the_layers(tmp_path: Path) -> None:
    """A lower package that imports a higher one inside a function is a layer violation,
    and a function-local import needs its reason in the allowlist."""
    check = _script()
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "def use() -> None:\n    from memorybank.high import thing\n",
            "high/__init__.py": "from memorybank.low import use\nthing = use\n",
        },
    )
    problems, _ = check.check(
        root, layers=_LAYERS, allowed={}, debt=set(), cap=5, local_cycle_cap=0
    )
    text = "\n".join(problems)
    assert "layer violation: memorybank.low (low) imports memorybank.high (high)" in text
    assert "memorybank.low:2" in text and "not in LOCAL_ALLOWED" in text
    assert "1 cycles counting function-local imports, over the cap of 0" in text

    allowed = {("memorybank.low", "memorybank.high"): "start-up"}
    debt = {("memorybank.low", "memorybank.high")}
    problems, _ = check.check(
        root, layers=_LAYERS, allowed=allowed, debt=debt, cap=5, local_cycle_cap=1
    )
    assert problems == []
    problems, _ = check.check(
        root, layers=_LAYERS, allowed=allowed, debt=debt, cap=0, local_cycle_cap=1
    )
    assert problems == [
        "1 first-party imports inside functions, over the cap of 0"
        " (scripts/check_imports.py --list shows them)"
    ]


def test_a_package_cycle_within_a_layer(tmp_path: Path) -> None:
    """Two packages of one layer importing each other (one of them inside a function)
    are a package cycle; an allowlist or debt entry that no longer applies must go."""
    check = _script()
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": "def f() -> None:\n    from memorybank.b import g\n",
            "b/__init__.py": "from memorybank.a import f\ng = f\n",
        },
    )
    layers = [("one", {"memorybank", "memorybank.a", "memorybank.b"})]
    allowed = {("memorybank.a", "memorybank.b"): "start-up", ("memorybank.a", "x"): "gone"}
    problems, _ = check.check(
        root, layers=layers, allowed=allowed, debt={("memorybank.b", "memorybank.c")}
    )
    text = "\n".join(problems)
    assert (
        "package cycle (function-local imports counted): ['memorybank.a', 'memorybank.b']" in text
    )
    assert "LOCAL_ALLOWED lists memorybank.a -> x, which is gone" in text
    assert "LAYER_DEBT lists memorybank.b -> memorybank.c, which is gone" in text
    assert "package memorybank is in no layer" not in text
