"""A pytest plugin for stores that run the conformance suite outside this repository.

It registers the ``requires(capability, ...)`` marker the suite's cases carry (so
``--strict-markers`` accepts them). Load it with ``-p memorybank.testing.plugin`` or
``pytest_plugins = ["memorybank.testing.plugin"]`` in your root ``conftest.py``. The
skipping itself is done by the suite's own fixture (``ContractBase``), plugin or not.
"""

from __future__ import annotations

import pytest

MARKER = (
    "requires(*capabilities): the case needs these memorybank.stores.contract.Capability"
    " members; skipped, naming them, on a store that does not claim them"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
