"""Fail when memorybank's modules import each other in a cycle, or when first-party
imports inside functions grow past the cap.

Counted edges: every first-party import at module level, inside ``if TYPE_CHECKING:``
and ``try:`` blocks and class bodies (a type-only import is a dependency of the design
too), in ``_async`` and in the generated ``_sync`` alike. Imports inside functions are
not edges (they run after both modules exist); they are counted instead (in the
source, not again in the generated ``_sync`` twins), against
``FUNCTION_LOCAL_CAP``, so that deferring an import never becomes the way to hide a
cycle. Most of them are cold-start deferrals (optional extras, the server, heavy
drivers), listed by ``--list``.

Written here rather than configured in import-linter: its ``acyclic_siblings`` contract
checks the siblings of one package at a time, so the cycle this check was written
against (the facade, its namespaces and the context builder, across ``memory/``,
``context/``, ``recall/``, ``graph/`` and ``vector_index/``) would need a contract per
package level; a strongly connected components pass over the whole module graph is
exact and 100 lines.

Run: ``python scripts/check_imports.py`` (``make lint`` does), ``--list`` to print the
function-local imports.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "memorybank"
#: First-party imports inside functions on main when the check was written; lower it as
#: they go, never raise it without saying why (101 -> 100: the CLI's read commands; 100 ->
#: 102: the local embedder's ONNX backend, whose module needs the optional onnxruntime; 102
#: -> 103: ``memorybank search`` scores keyword hits with BM25, whose module loads NumPy,
#: which no other CLI command needs at start; 103 -> 105: background embedding,
#: ``memory.embedding`` and its worker, which load with the first background memory: the
#: read path imports neither recall nor ``dataclasses``; 105 -> 106: the SQLite store's
#: vector slot read on a thread of its own, ``_vector_slot_read``, which makes a
#: ``VectorSlot`` (NumPy) where ``_vector_slot`` did in the same statement as its cache);
#: 106 -> 107: a CLI listing that finds nothing reads the record of ``serve --demo``
#: (``cli.demo_state``, which needs the server extra) to point to the demo's tenant;
#: 107 -> 109: ``memory.consolidation`` and ``memory.feedback``, which load with their
#: first use; 109 -> 107: ``memorybank.runtime.log`` loads ``logging`` on the first
#: record, so the two modules that imported it at the point of failure import it at the top.
#: 107 -> 108: ``memorybank webhooks`` loads the webhook registry with the command
#: (the store-opening helper is shared with ``memorybank keys``).
FUNCTION_LOCAL_CAP = 108


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    found: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _target(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imported(node: ast.Import | ast.ImportFrom, current: str, is_package: bool) -> list[str]:
    """The first-party modules an import statement names (a name that is a module
    counts as that module, else the module it comes from)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    target = _target(node, current, is_package)
    return [f"{target}.{alias.name}" for alias in node.names] + [target]


def scan(root: Path) -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """The module graph's edges, and the first-party imports inside functions."""
    mods = modules(root)
    edges: dict[str, set[str]] = {name: set() for name in mods}
    local: list[tuple[str, int, str]] = []
    for name, path in mods.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))

        def known(
            node: ast.Import | ast.ImportFrom, name: str = name, is_package: bool = is_package
        ) -> list[str]:
            names = _imported(node, name, is_package)
            hits = [n for n in names if n in mods]
            if isinstance(node, ast.ImportFrom) and any(n in mods for n in names[:-1]):
                hits = [n for n in names[:-1] if n in mods]  # modules named: not the package
            return hits

        def walk(body: Iterable[ast.stmt], name: str = name) -> None:
            for node in body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    if "._sync" in name:
                        continue  # generated from the _async twin, counted there
                    for inner in ast.walk(node):
                        if isinstance(inner, ast.Import | ast.ImportFrom) and known(inner):
                            local.append((name, inner.lineno, ast.unparse(inner)))
                elif isinstance(node, ast.Import | ast.ImportFrom):
                    edges[name].update(m for m in known(node) if m != name)
                elif isinstance(node, ast.ClassDef):
                    walk(node.body)
                elif isinstance(node, ast.If):
                    walk(node.body)
                    walk(node.orelse)
                elif isinstance(node, ast.Try):
                    walk(node.body)
                    walk(node.orelse)
                    walk(node.finalbody)
                    for handler in node.handlers:
                        walk(handler.body)

        walk(tree.body)
    return edges, local


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the function-local imports")
    args = parser.parse_args(argv)
    edges, local = scan(ROOT)
    if args.list:
        for name, line, text in local:
            print(f"{name}:{line}: {text}")
    found = cycles(edges)
    for component in found:
        print(f"import cycle of {len(component)} modules:", file=sys.stderr)
        for member in component:
            inside = sorted(m for m in edges[member] if m in component)
            print(f"  {member} -> {', '.join(inside)}", file=sys.stderr)
    if len(local) > FUNCTION_LOCAL_CAP:
        print(
            f"{len(local)} first-party imports inside functions, over the cap of"
            f" {FUNCTION_LOCAL_CAP} (scripts/check_imports.py --list shows them)",
            file=sys.stderr,
        )
    ok = not found and len(local) <= FUNCTION_LOCAL_CAP
    if ok:
        print(f"{len(edges)} modules, no import cycle, {len(local)} function-local imports")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
