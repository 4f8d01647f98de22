"""``make dist``: the wheel and the sdist install into fresh environments and pass the
README's quickstart.

memorybank is not on PyPI yet, so these files are how it gets to another machine. The
test builds them as ``make dist`` does, installs each into a new virtual environment
without network (``--no-index --no-deps``: the environment reads its dependencies from
the test environment's site-packages through a ``.pth`` line, so nothing is downloaded,
while memorybank itself comes from the artifact and nowhere else), then runs the
README's ``python`` blocks there from an empty directory.
"""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import memorybank
from tests.project.test_readme import BLOCKS

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEMORYBANK_URL")}
    result = subprocess.run(
        command, cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=280
    )
    assert result.returncode == 0, (command, result.stdout[-2000:], result.stderr[-4000:])
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and the sdist, built as ``make dist`` builds them."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)], ROOT)
    return out


def test_make_dist_builds_with_the_command_tested_here() -> None:
    recipe = re.search(r"^dist: .*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None
    assert "$(BIN)/python -m build --no-isolation --outdir $(DIST) ." in recipe.group(1)


def test_the_artifacts_hold_the_package(dist: Path) -> None:
    version = memorybank.__version__
    wheel = dist / f"memorybank-{version}-py3-none-any.whl"
    sdist = dist / f"memorybank-{version}.tar.gz"
    assert sorted(p.name for p in dist.iterdir()) == sorted([wheel.name, sdist.name])
    names = zipfile.ZipFile(wheel).namelist()
    assert "memorybank/py.typed" in names and "memorybank/__init__.py" in names
    assert any(n.startswith("memorybank/server/ui/") for n in names)  # the inspector's files
    assert not any("__pycache__" in n or n.endswith(".db") for n in names)
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    top = f"memorybank-{version}"
    assert {f"{top}/pyproject.toml", f"{top}/README.md", f"{top}/LICENSE"} <= set(members)
    assert not any("/.venv" in n or "node_modules" in n for n in members)


def _fresh_env(where: Path) -> Path:
    """A new virtual environment whose only memorybank is what gets installed into it."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(where)], where.parent)
    python = where / "bin" / "python"
    found = _run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], where)
    # the test environment's packages (pip, hatchling, NumPy, ...) after the new one's own
    Path(found.stdout.strip(), "_dependencies.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n"
    )
    return python


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_an_artifact_installs_into_a_fresh_env_and_runs_the_quickstart(
    dist: Path, tmp_path: Path, kind: str
) -> None:
    version = memorybank.__version__
    artifact = dist / (
        f"memorybank-{version}-py3-none-any.whl"
        if kind == "wheel"
        else f"memorybank-{version}.tar.gz"
    )
    python = _fresh_env(tmp_path / "env")
    install = [str(python), "-m", "pip", "install", "--no-index", "--no-deps"]
    # --ignore-installed: the test environment's (editable) memorybank is neither reused
    # nor touched; --no-build-isolation: the sdist builds offline with hatchling
    install += ["--ignore-installed", "--no-build-isolation", str(artifact)]
    _run(install, tmp_path)
    home = tmp_path / "empty"
    home.mkdir()
    where = _run(
        [
            str(python),
            "-c",
            "import memorybank, importlib.metadata as m;"
            " print(memorybank.__file__); print(m.version('memorybank'))",
        ],
        home,
    ).stdout.split()
    assert Path(where[0]).is_relative_to(tmp_path / "env"), where
    assert where[1] == version
    assert _run(
        [str(tmp_path / "env" / "bin" / "memorybank"), "--version"], home
    ).stdout.strip() == (f"memorybank {version}")
    assert len(BLOCKS) >= 2
    for block in BLOCKS:
        printed = _run([str(python), "-c", block], home).stdout
        assert printed.strip()
