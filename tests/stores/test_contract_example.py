"""The conformance suite on ``examples/dict_store.py``: the store docs/writing-a-store.md
walks through, written only against the public contract, passes the suite that every
built-in store passes (the one case it lacks a capability for is skipped, by name)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memorybank.stores.contract import AsyncStore, Capability
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


def test_the_example_claims_what_the_suite_reads() -> None:
    claimed = dict_store.DictStore.capabilities
    assert Capability.RUN_LISTING in claimed and Capability.VOLATILE in claimed
    assert Capability.SUMMARY_AGENT_LISTING not in claimed  # summary_agents is not implemented


def test_the_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    asyncio.run(dict_store.main())
    assert capsys.readouterr().out == "['My dog is called Biscuit', 'A fine name for a dog.']\n"
