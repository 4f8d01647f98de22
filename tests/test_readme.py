"""The README is the front door: its Python examples must run as written.

``python_blocks`` and ``run_example`` are the runner; ``tests/test_docs.py`` runs the
documentation site's examples with them too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks(path: Path) -> list[str]:
    """The ```` ```python ```` blocks of a Markdown file, in order (```` ```py ```` ones,
    fragments, are not run)."""
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def run_example(code: str, cwd: Path) -> None:
    """Run one example in a fresh interpreter in ``cwd``: it must exit 0 and print."""
    env = {k: v for k, v in os.environ.items() if k != "MEMORYBANK_URL"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


BLOCKS = python_blocks(README)


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index: int, tmp_path: Path) -> None:
    run_example(BLOCKS[index], tmp_path)


def test_readme_links_into_the_site() -> None:
    """Every ``docs/...`` page the README links to exists (the site's pages)."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", text)
    assert targets
    missing = [t for t in targets if not (README.parent / t).is_file()]
    assert missing == []


def test_public_names_resolve() -> None:
    import memorybank

    for name in memorybank.__all__:
        assert getattr(memorybank, name) is not None
