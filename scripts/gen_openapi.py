"""Write the service's OpenAPI document from the app itself, where it is read.

    python scripts/gen_openapi.py          # rewrite docs/openapi.json and the TS client's copy
    python scripts/gen_openapi.py --check  # exit 1 if either is out of date (CI)

The documentation site renders ``docs/openapi.json`` (docs/api.md) and the TypeScript
client generates its types from ``clients/typescript/openapi.json`` at build time, so
neither asks a running server. The app is built with ``create_app`` over an in-memory
store that is never opened: no server starts and nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGETS = (ROOT / "docs" / "openapi.json", ROOT / "clients" / "typescript" / "openapi.json")


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of ``create_app`` (MCP left out: it is not a REST route)."""
    from memorybank.server import create_app

    app = create_app("memory://", mcp=False)
    return app.openapi()


def render() -> str:
    """The document as the committed file holds it: sorted keys, two-space indents."""
    return json.dumps(openapi_document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) every copy of the document; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a copy is stale")
    args = parser.parse_args(argv)
    text = render()
    stale = 0
    for target in TARGETS:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current == text:
            continue
        if args.check:
            print(f"{target.relative_to(ROOT)} is stale: run python scripts/gen_openapi.py")
            stale = 1
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.relative_to(ROOT)}")
    return stale


if __name__ == "__main__":
    sys.exit(main())
