"""Print the library's verbs with their REST route, MCP tool and CLI command, as markdown.

    python scripts/surface_table.py           # print the table (from memorybank.surface)
    python scripts/surface_table.py --write   # put it in docs/api.md, between the markers
    python scripts/surface_table.py --check   # exit 1 if docs/api.md holds another table

``tests/server/test_surface.py`` fails when docs/api.md is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "api.md"
START, END = "<!-- surface-table:start -->", "<!-- surface-table:end -->"


def with_table(text: str, table: str) -> str:
    """``text`` with the block between the markers replaced by ``table``."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n\n{table}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite docs/api.md's table")
    group.add_argument("--check", action="store_true", help="fail if docs/api.md is stale")
    args = parser.parse_args()
    from memorybank.surface import markdown_table

    table = markdown_table()
    if not (args.write or args.check):
        sys.stdout.write(table)
        return 0
    text = DOC.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{DOC}: no {START} ... {END} markers", file=sys.stderr)
        return 1
    wanted = with_table(text, table)
    if args.check:
        if wanted != text:
            print(f"{DOC} is stale: run python scripts/surface_table.py --write", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
