"""Write the service's OpenAPI document to docs/openapi.json, from the app itself.

    python scripts/gen_openapi.py          # rewrite docs/openapi.json
    python scripts/gen_openapi.py --check  # exit 1 if it is out of date

The documentation site renders the committed file (docs/api.md), so the site builds
offline and never asks a running server. The app is built with ``create_app`` over an
in-memory store that is never opened: no server starts and nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "openapi.json"


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of ``create_app`` (MCP left out: it is not a REST route)."""
    from memorybank.server import create_app

    app = create_app("memory://", mcp=False)
    return app.openapi()


def render() -> str:
    """The document as the committed file holds it: sorted keys, two-space indents."""
    return json.dumps(openapi_document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) docs/openapi.json; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run python scripts/gen_openapi.py")
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
