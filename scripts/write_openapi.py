"""Write the HTTP API's OpenAPI schema where the TypeScript client generates its types.

    python scripts/write_openapi.py          # rewrite clients/typescript/openapi.json
    python scripts/write_openapi.py --check  # exit 1 if it differs from the app's (CI)

The schema comes from ``create_app`` itself (no server is started, no store is
opened), so it is exactly what ``GET /openapi.json`` serves.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "clients/typescript/openapi.json"


def schema_text() -> str:
    """The app's OpenAPI document as stable, indented JSON (one trailing newline)."""
    from memorybank.server.app import create_app

    # The URL is only opened at startup, which never runs here.
    document = create_app("sqlite:///:memory:", admin_key=None).openapi()
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    """Write (or, with ``--check``, compare) ``clients/typescript/openapi.json``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if openapi.json is stale")
    args = parser.parse_args()
    text = schema_text()
    current = TARGET.read_text() if TARGET.exists() else None
    if current == text:
        return 0
    if not args.check:
        TARGET.parent.mkdir(parents=True, exist_ok=True)
        TARGET.write_text(text)
        return 0
    diff = difflib.unified_diff(
        (current or "").splitlines(), text.splitlines(), str(TARGET), "generated", lineterm=""
    )
    print("\n".join(list(diff)[:40]))
    print("stale clients/typescript/openapi.json (run: python scripts/write_openapi.py)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
