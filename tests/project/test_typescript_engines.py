"""The TypeScript client's locked dependencies run on the Node it declares: what ``npm ci``
checks before it warns ``EBADENGINE`` (issue 42: ``openai@7.59.0 requires node >=22``
while package.json said ``>=20``).

The ranges are read by npm's own ``semver`` (bundled with npm), so the check is npm's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"

_CHECK = """
const semver = require(process.argv[1]);
const [pkg, lock, node] = process.argv.slice(2).map((a, i) => (i < 2 ? require(a) : a));
const floor = semver.minVersion(pkg.engines.node).version;
const bad = [];
for (const [path, entry] of Object.entries(lock.packages)) {
  const range = entry.engines && entry.engines.node;
  if (!path || !range) continue;
  const name = path.replace(/.*node_modules\\//, "") + "@" + entry.version;
  if (!semver.satisfies(node, range)) bad.push(`${name} needs node ${range}, not ${node}`);
  if (!entry.dev && !semver.satisfies(floor, range)) {
    bad.push(`${name} (runtime) needs node ${range}; package.json: ${pkg.engines.node}`);
  }
}
console.log(JSON.stringify({ floor, bad }));
"""


def _npm_semver() -> Path:
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        pytest.skip("node and npm are not installed")
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, check=True)
    semver = Path(root.stdout.strip()) / "npm" / "node_modules" / "semver"
    if not semver.is_dir():
        pytest.skip(f"npm's semver is not at {semver}")
    return semver


def _check(node_version: str) -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [
            node,
            "-e",
            _CHECK,
            str(_npm_semver()),
            str(CLIENT / "package.json"),
            str(CLIENT / "package-lock.json"),
            node_version,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_locked_package_accepts_the_node_that_installs_it() -> None:
    """No ``EBADENGINE`` from ``npm ci`` on this machine's Node (20 in CI), and every
    runtime dependency accepts the lowest Node that package.json declares."""
    _npm_semver()
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    result = _check(node.stdout.strip().lstrip("v"))
    assert result["floor"].startswith("20."), result  # package.json: node >=20
    assert result["bad"] == [], "\n".join(result["bad"])


def test_the_check_sees_a_package_that_needs_a_newer_node() -> None:
    """The check itself: Node 18 is refused by the locked dev tools (esbuild-era packages
    ask for 18+, rolldown for 20.19+), as ``npm ci`` on Node 18 would warn."""
    result = _check("18.0.0")
    assert any("needs node" in line for line in result["bad"]), result


def test_the_package_declares_node_20_and_allows_esbuilds_install_script() -> None:
    """``allowScripts`` names esbuild, whose install script npm would otherwise flag."""
    package = json.loads((CLIENT / "package.json").read_text())
    assert package["engines"] == {"node": ">=20"}
    assert package["allowScripts"] == {"esbuild": True}
