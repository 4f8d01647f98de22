"""The README is the front door: its Python examples must run as written.

``python_blocks`` and ``run_example`` are the runner; ``tests/project/test_docs.py`` runs the
documentation site's examples with them too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent.parent / "README.md"


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


def _sh_blocks() -> str:
    return "\n".join(
        re.findall(r"^```sh\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)
    )


def test_the_install_lines_work_from_a_clone_and_say_the_package_is_not_on_pypi() -> None:
    """``pip install memorybank`` finds nothing on PyPI: the README says so and gives the
    lines that work from a clone (``make dist``'s artifacts are tested in test_dist.py)."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert "memorybank is not on PyPI yet" in text
    commands = _sh_blocks()
    assert "pip install .  " in commands and "pip install '.[postgres]'" in commands
    assert "make dist" in commands
    assert not re.search(r"pip install '?memorybank\b", commands)


def test_the_test_line_says_what_make_test_needs() -> None:
    """The servers on their default ports and a CPU torch, where the command is."""
    line = " ".join(_sh_blocks().split("make test", 1)[1].split("```", 1)[0].split())
    for needed in ("PostgreSQL on 5432", "MariaDB or MySQL on 3306", "Redis on 6379"):
        assert needed in line
    assert "CPU build of torch" in line
    assert "docs/getting-started.md#on-a-fresh-machine" in line


def test_constraints_point_to_the_page_that_explains_the_cpu_torch() -> None:
    comment = (README.parent / "constraints.txt").read_text(encoding="utf-8")
    named = re.search(r"see (docs/[\w.-]+\.md) \"([^\"]+)\"", " ".join(comment.split()))
    assert named is not None
    page = (README.parent / named.group(1)).read_text(encoding="utf-8")
    assert f"## {named.group(2)}" in page
    section = page.split(f"## {named.group(2)}", 1)[1].split("\n## ", 1)[0]
    assert "CPU build" in section and "constraints.txt" in section
