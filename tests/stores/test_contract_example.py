"""The conformance suite on ``examples/dict_store.py``: the store docs/writing-a-store.md
walks through, written only against the public contract and implementing only its required
methods, passes the whole suite that every built-in store passes, nothing skipped."""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memorybank.stores.contract import REQUIRED, AsyncStore, Capability
from memorybank.testing import AsyncContract

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dict_store.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dict_store_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


dict_store = _load()


class TestDictStoreExample(AsyncContract):
    @pytest.fixture
    async def store(self) -> AsyncIterator[AsyncStore]:
        store: Any = dict_store.DictStore()
        yield store
        await store.close()


def test_the_example_imports_only_public_names() -> None:
    """Every import of the example names a public module and a public name of it."""
    tree = ast.parse(EXAMPLE.read_text())
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("memorybank")
        ):
            assert not any(part.startswith("_") for part in node.module.split(".")), node.module
            module = importlib.import_module(node.module)
            public = set(getattr(module, "__all__", ()))
            for alias in node.names:
                assert alias.name in public, f"{node.module}.{alias.name} is not public"
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith("memorybank") for a in node.names)


def test_the_example_implements_only_the_required_methods() -> None:
    """The example defines the contract's required methods and nothing else of it: every
    derived path (run state, search, vectors, batch reads) runs in the suite above."""
    contract = {name for klass in AsyncStore.__mro__ for name in vars(klass)}
    own = {name for name in vars(dict_store.DictStore) if not name.startswith("_")} & contract
    assert own == set(REQUIRED) | {"capabilities"}
    assert dict_store.DictStore.capabilities == {Capability.VOLATILE}
    assert len(AsyncStore.__abstractmethods__) == len(REQUIRED) == 20
    assert len(EXAMPLE.read_text().splitlines()) <= 300  # "a store in an afternoon"


def test_the_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    asyncio.run(dict_store.main())
    assert capsys.readouterr().out == "['My dog is called Biscuit', 'A fine name for a dog.']\n"


THIRD_PARTY_TEST = """
from collections.abc import AsyncIterator

import pytest

from dict_store import DictStore
from memorybank.testing import AsyncContract


class TestDictStore(AsyncContract):
    @pytest.fixture
    async def store(self) -> AsyncIterator[DictStore]:
        store = DictStore()
        yield store
        await store.close()
"""


def test_the_guide_setup_runs_the_suite_outside_this_repository(tmp_path: Path) -> None:
    """docs/writing-a-store.md's setup, in a project of its own: the plugin registers the
    ``requires`` marker under ``--strict-markers``, and the derived listing cases run."""
    import os
    import shutil
    import subprocess

    shutil.copy(EXAMPLE, tmp_path / "dict_store.py")
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["memorybank.testing.plugin"]\n')
    (tmp_path / "test_my_store.py").write_text(THIRD_PARTY_TEST)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\naddopts = --strict-markers -ra -p no:cacheprovider\n"
        "filterwarnings = error\nasyncio_mode = auto\n"
        "asyncio_default_fixture_loop_scope = function\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-k", "listed or override"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{tmp_path}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "3 passed" in out and "skipped" not in out, out
