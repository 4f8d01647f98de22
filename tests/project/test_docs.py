"""The documentation site: it builds offline with warnings as errors, its examples run,
its API reference covers every public name, and its HTTP API page renders from the
committed OpenAPI document without the network.

The strict build is what ``make docs-build`` runs (``mkdocs build --strict``); the examples
run with the README's runner (``tests/project/test_readme.py``).
"""

from __future__ import annotations

import functools
import http.server
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import memorybank
from tests.project.test_readme import python_blocks, run_example

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
EXAMPLES = [(page, i) for page in PAGES for i in range(len(python_blocks(page)))]
CHROMIUM = "/usr/bin/chromium"


def mkdocs_build(config_dir: Path, site_dir: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the project at ``config_dir`` into ``site_dir``."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=config_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built strictly from the repository as it is."""
    site_dir = tmp_path_factory.mktemp("docs") / "site"
    result = mkdocs_build(ROOT, site_dir)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert "WARNING" not in log, log
    return site_dir


def test_strict_build_writes_every_page(site: Path) -> None:
    for page in PAGES:
        relative = page.relative_to(DOCS).with_suffix("")
        built = (
            site / relative.parent / "index.html"
            if relative.name == "index"
            else site / relative / "index.html"
        )
        assert built.is_file(), built
    assert (site / "openapi.json").is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """Strict really is strict: a link to a page that does not exist stops the build."""
    for name in ("mkdocs.yml", "CHANGELOG.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(DOCS, tmp_path / "docs")
    (tmp_path / "src").symlink_to(ROOT / "src")
    page = tmp_path / "docs" / "cli.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    result = mkdocs_build(tmp_path, tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-page.md" in result.stdout + result.stderr


def test_every_public_name_is_in_the_api_reference(site: Path) -> None:
    html = "".join(p.read_text() for p in (site / "reference").rglob("index.html"))
    names = [n for n in memorybank.__all__ if not n.startswith("_")]
    missing = [n for n in names if f'id="memorybank.{n}"' not in html]
    assert missing == []


@pytest.mark.parametrize(
    ("page", "index"), EXAMPLES, ids=[f"{p.relative_to(DOCS)}-{i}" for p, i in EXAMPLES]
)
def test_site_example_runs(page: Path, index: int, tmp_path: Path) -> None:
    run_example(python_blocks(page)[index], tmp_path)


def test_the_site_has_examples() -> None:
    assert len(EXAMPLES) >= 14


def test_openapi_document_is_current() -> None:
    """docs/openapi.json is what ``scripts/gen_openapi.py`` writes from ``create_app``."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_openapi
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    committed = json.loads((DOCS / "openapi.json").read_text(encoding="utf-8"))
    assert committed == gen_openapi.openapi_document(), "run python scripts/gen_openapi.py"
    assert "/v1/threads" in committed["paths"]
    assert committed["info"]["version"] == memorybank.__version__


def test_version_is_written_once() -> None:
    """pyproject.toml takes the version from ``__init__.py``; the installed metadata agrees."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    assert importlib.metadata.version("memorybank") == memorybank.__version__


def test_dev_extra_pulls_the_docs_tools() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "memorybank[docs]" in extras["dev"]
    tools = {re.split(r"[<>=\[]", req)[0] for req in extras["docs"]}
    assert {"mkdocs", "mkdocs-material", "mkdocstrings-python"} <= tools


@pytest.fixture
def served_site(site: Path) -> Iterator[str]:
    """The built site over HTTP on a free loopback port."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))

    class Quiet(http.server.ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass  # a browser closing a connection early is not a failure

    server = Quiet(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_api_page_renders_the_openapi_reference_offline(served_site: str) -> None:
    """The HTTP API page draws every route from the committed document in a real browser,
    and nothing it loads comes from anywhere but the site itself (no CDN)."""
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} missing (apt-get install chromium)"
        if os.environ.get("MEMORYBANK_REQUIRE_SERVERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    from tests.inspector._browser import LAUNCH_ARGS

    requested: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            context = browser.new_context()
            context.on("request", lambda request: requested.append(request.url))
            tab = context.new_page()
            tab.goto(f"{served_site}/api/")
            frame = tab.frame_locator("iframe.swagger-ui-iframe")
            frame.locator(".opblock-tag").first.wait_for(timeout=20_000)
            frame.locator(".opblock-summary-path").first.wait_for(timeout=20_000)
            shown = frame.locator(".opblock-summary-path").all_inner_texts()
        finally:
            browser.close()
    document = json.loads((DOCS / "openapi.json").read_text(encoding="utf-8"))
    methods = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
    operations = [
        path for path, item in document["paths"].items() for method in item if method in methods
    ]
    # Every operation of the document is listed, the threads routes among them.
    assert len(shown) == len(operations)
    assert {p.replace("\u200b", "") for p in shown} == set(operations)
    assert "/v1/threads" in operations
    outside = [u for u in requested if not u.startswith((served_site, "data:", "blob:"))]
    assert outside == []
