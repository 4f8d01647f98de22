"""``scripts/check_imports.py`` (run by ``make lint``): it finds a cycle through a
type-only import, ignores imports inside functions, and passes on the package today."""

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
