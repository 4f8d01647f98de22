"""The README is the front door: its Python examples must run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import memorybank

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index: int, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MEMORYBANK_URL"}
    result = subprocess.run(
        [sys.executable, "-c", BLOCKS[index]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_every_public_name_is_documented() -> None:
    text = README.read_text()
    missing = [n for n in memorybank.__all__ if not n.startswith("_") and f"`{n}" not in text]
    assert missing == []


def test_public_names_resolve() -> None:
    for name in memorybank.__all__:
        assert getattr(memorybank, name) is not None
