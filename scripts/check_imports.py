"""Fail when memorybank's modules import each other in a cycle, when its packages break
their layers or import each other in a cycle, or when first-party imports inside
functions are not on the allowlist or grow past the cap.

Counted edges: every first-party import at module level, inside ``if TYPE_CHECKING:``
and ``try:`` blocks and class bodies (a type-only import is a dependency of the design
too), in ``_async`` and in the generated ``_sync`` alike. Imports inside functions are
not module edges (they run after both modules exist), but they are package edges: a
deferred import is still a dependency, so the package check counts them. They are
counted too (in the source, not again in the generated ``_sync`` twins), against
``FUNCTION_LOCAL_CAP``, and each (module, imported module) pair must be in
``LOCAL_ALLOWED`` with its reason: an optional extra or start-up cost, never a cycle to
hide. ``LAYERS`` declares the package layers (``docs/architecture.md`` draws them);
``LAYER_DEBT`` lists the package edges that still break them, and only shrinks.

Written here rather than configured in import-linter: its ``acyclic_siblings`` contract
checks the siblings of one package at a time, so the cycle this check was written
against (the facade, its namespaces and the context builder, across ``memory/``,
``context/``, ``recall/``, ``graph/`` and ``vector_index/``) would need a contract per
package level; a strongly connected components pass over the whole module graph is
exact and 100 lines.

Run: ``python scripts/check_imports.py`` (``make lint`` does), ``--list`` to print the
function-local imports, ``--packages`` the layers and the package graph.
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
#: 86 -> 87: `memorybank webhooks` loads the webhook registry with the command; 87 -> 85:
#: the vector-cache helpers written once (`stores.vectors.source`); 85 -> 40 (issue 38: at
#: most 40): NumPy loads through ``memorybank.runtime.np``, so the vector cache and BM25
#: are imported at module level by the stores, the CLI and the contract; ``CoreFacts`` is a
#: plain class; the imports whose reason was gone (``dataclasses``, loaded with the
#: records; a cycle that is broken; modules every caller loads anyway) moved up.
FUNCTION_LOCAL_CAP = 40

#: Module cycles that close only through a function-local import. Issue 38 found five
#: (``context.values`` with the builders and the facade; ``memory.{facts,documents,embedding}``
#: with ``recall.search``; extraction's ingest with the graph's; ``server.deps/errors/keys``;
#: ``cli.app`` with ``cli.demo``); the last two ran through ``CoreFacts``, once a factory in
#: ``context.values``, now a plain class beside the facade. None is left: keep it so.
LOCAL_CYCLE_CAP = 0

#: The packages in layers, lowest first: a package imports only its own layer and those
#: below it (counting imports inside functions and under ``TYPE_CHECKING``), and the
#: packages of one layer do not import each other in a cycle. ``docs/architecture.md``
#: draws these layers; change both together.
LAYERS: list[tuple[str, set[str]]] = [
    (
        "kernel",
        {
            "memorybank.errors",
            "memorybank.records",
            "memorybank.tokens",
            "memorybank.runtime",
            "memorybank.importance",
            "memorybank.rules",
            "memorybank.retention",
            "memorybank.events",
        },
    ),
    ("stores", {"memorybank.stores"}),
    ("providers", {"memorybank.embeddings", "memorybank.rerank", "memorybank.vector_index"}),
    (
        "domain",
        {
            "memorybank.core",
            "memorybank.facts",
            "memorybank.recall",
            "memorybank.graph",
            "memorybank.extract",
            "memorybank.consolidation",
            "memorybank.context",
            "memorybank.dump",
        },
    ),
    ("facade", {"memorybank.memory"}),
    (
        "surfaces",
        {
            "memorybank",
            "memorybank.__main__",
            "memorybank.surface",
            "memorybank.mcp",
            "memorybank.server",
            "memorybank.cli",
            "memorybank.integrations",
            "memorybank.importers",
            "memorybank.webhooks",
            "memorybank.testing",
        },
    ),
]

#: Imports inside functions that stay there, each (module, imported module) with its
#: reason: an optional extra (the import fails without it), or start-up cost (a module
#: most runs never need). Anything else is imported at module level.
LOCAL_ALLOWED: dict[tuple[str, str], str] = {
    ("memorybank.cli.app", "memorybank.cli.demo"): (
        "start-up: the demo (sessions, core facts), for `demo` only"
    ),
    ("memorybank.cli.app", "memorybank.cli.demo_state"): (
        "optional extra: needs the server extra (FastAPI, uvicorn), loaded by `serve` only"
    ),
    ("memorybank.cli.app", "memorybank.webhooks.registry"): (
        "start-up cost: `memorybank webhooks` loads the registry with the command"
    ),
    ("memorybank.cli.app", "memorybank.server.keys"): (
        "optional extra: needs the server extra (FastAPI), for `memorybank keys` only"
    ),
    ("memorybank.cli.app", "memorybank.server.limits"): (
        "optional extra: needs the server extra (FastAPI, uvicorn), loaded by `serve` only"
    ),
    ("memorybank.cli.app", "memorybank.server.ops"): (
        "optional extra: needs the server extra (FastAPI, uvicorn), loaded by `serve` only"
    ),
    ("memorybank.cli.app", "memorybank.server.supervise"): (
        "optional extra: needs the server extra (FastAPI, uvicorn), loaded by `serve` only"
    ),
    ("memorybank.cli.common", "memorybank.cli.demo_state"): (
        "optional extra: needs the server extra (FastAPI, uvicorn), loaded by `serve` only"
    ),
    ("memorybank.cli.mcp", "memorybank.mcp.server"): (
        "optional extra: the MCP SDK (`memorybank[mcp]`)"
    ),
    ("memorybank.context._async.builder", "memorybank.recall._async.fact_recall"): (
        "start-up: fact recall (NumPy), when a context ranks facts by the input"
    ),
    ("memorybank.embeddings.local", "memorybank.embeddings._numpy_bert"): (
        "start-up: NumPy, with the first LocalEmbedder (every backend computes with it)"
    ),
    ("memorybank.embeddings.local", "memorybank.embeddings._onnx_bert"): (
        "optional extra: onnxruntime"
    ),
    ("memorybank.embeddings.named", "memorybank.embeddings.local"): (
        "start-up: the local model's code, for its name only"
    ),
    ("memorybank.embeddings.named", "memorybank.embeddings.openai"): (
        "start-up: the HTTP client, for its name only"
    ),
    ("memorybank.extract", "memorybank.extract.llm"): (
        "start-up: the LLM extractor (HTTP client), on first use of its name"
    ),
    ("memorybank.memory._async.documents", "memorybank.recall._async.search"): (
        "start-up: search (NumPy), on the first `memory.documents.search`"
    ),
    ("memorybank.memory._async.entries", "memorybank.graph._async.formation"): (
        "start-up: the graph and extraction, with the first `extract_on_write` write"
    ),
    ("memorybank.memory._async.entries", "memorybank.graph._async"): (
        "start-up: the graph namespace, for an entry delete that cascades"
    ),
    ("memorybank.memory._async.memory", "memorybank.context._async.compaction"): (
        "start-up: the compaction service, on the first `CompactionService(memory=...)`"
    ),
    ("memorybank.memory._async.memory", "memorybank.context.values"): (
        "start-up: the context values (dataclasses), with the first `memory.context`"
    ),
    ("memorybank.memory._async.memory", "memorybank.core._async.embedding"): (
        "start-up: background embedding, with the first background memory"
    ),
    ("memorybank.memory._async.memory", "memorybank.graph._context"): (
        "start-up: the graph block's options (dataclasses), with the first `memory.context`"
    ),
    ("memorybank.memory._async.memory", "memorybank.context._async.sessions"): (
        "start-up: the session manager, on the first `SessionManager(memory)`"
    ),
    ("memorybank.memory._async.memory", "memorybank.consolidation._async.consolidation"): (
        "start-up: loads with the first `memory.consolidate`"
    ),
    ("memorybank.memory._async.memory", "memorybank.consolidation._async.feedback"): (
        "start-up: loads with the first `memory.feedback`"
    ),
    ("memorybank.memory._async.memory", "memorybank.core.judge"): (
        "start-up: the LLM judge (HTTP client), when one is named"
    ),
    ("memorybank.memory._async.memory", "memorybank.consolidation.profile"): (
        "start-up: loads with the first `memory.profile`"
    ),
    ("memorybank.memory._async.memory", "memorybank.context._async.builder"): (
        "start-up: the context builder, with the first `memory.context`"
    ),
    ("memorybank.memory._async.memory", "memorybank.context._async.turn"): (
        "start-up: the agent turn and its context builder, with the first `memory.turn`"
    ),
    ("memorybank.memory._async.memory", "memorybank.graph._async"): (
        "start-up: the graph namespace, on first `memory.graph`"
    ),
    ("memorybank.memory._async.memory", "memorybank.memory._async.retention"): (
        "start-up: the retention pass (and `random`), on the first `memory.prune`"
    ),
    ("memorybank.memory._async.memory", "memorybank.recall._async.search"): (
        "start-up: search and its ranking (NumPy), on the first search"
    ),
    ("memorybank.memory._async.memory", "memorybank.vector_index._async.index"): (
        "start-up: the vector index, when one is given"
    ),
    ("memorybank.runtime.concurrency", "memorybank.runtime.backlog"): (
        "start-up: `Backlog` is a dataclass (its generated methods), read by status calls only"
    ),
    ("memorybank.server.app", "memorybank.server.mcp"): (
        "optional extra: the MCP SDK, for the mounted MCP endpoint"
    ),
    ("memorybank.server.ui._views", "memorybank.context.values"): (
        "start-up: the context values (dataclasses), on the inspector's context page"
    ),
    ("memorybank.stores.sqlite._async._base", "memorybank.stores.vectors.files"): (
        "start-up: the persisted ANN index (pathlib, hashlib, json, mmap), for its files only"
    ),
}

#: Package edges that break the layers or close a cycle, to remove; the list only shrinks (an
#: edge that is gone must leave it, a new one fails). Empty since issue 38: ``rules`` types
#: against protocols (and holds ``Unset``/``Visibility``), ``context`` opens no ``Memory``.
LAYER_DEBT: set[tuple[str, str]] = set()


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


def package(module: str) -> str:
    """The package a module belongs to: ``memorybank.<first part>`` (the root's own
    ``__init__`` is ``memorybank``)."""
    return ".".join(module.split(".")[:2])


def layer_of(pkg: str, layers: list[tuple[str, set[str]]] = LAYERS) -> int | None:
    for number, (_, members) in enumerate(layers):
        if pkg in members:
            return number
    return None


def local_targets(
    root: Path, local: list[tuple[str, int, str]]
) -> list[tuple[str, int, str, list[str]]]:
    """Each function-local import with the first-party modules it names."""
    mods = modules(root)
    out = []
    for name, line, text in local:
        node = ast.parse(text).body[0]
        assert isinstance(node, ast.Import | ast.ImportFrom)
        names = _imported(node, name, mods[name].name == "__init__.py")
        hits = [n for n in names if n in mods]
        if isinstance(node, ast.ImportFrom) and any(n in mods for n in names[:-1]):
            hits = [n for n in names[:-1] if n in mods]
        out.append((name, line, text, hits))
    return out


def package_edges(
    edges: dict[str, set[str]], local: list[tuple[str, int, str, list[str]]]
) -> dict[tuple[str, str], list[str]]:
    """(package, package) -> the module imports behind it, function-local ones included
    (marked ``in a function``): a deferred import is still a dependency."""
    found: dict[tuple[str, str], list[str]] = {}
    for source, targets in edges.items():
        for target in targets:
            pair = (package(source), package(target))
            if pair[0] != pair[1]:
                found.setdefault(pair, []).append(f"{source} -> {target}")
    for source, lineno, _text, hits in local:
        for target in hits:
            pair = (package(source), package(target))
            if pair[0] != pair[1]:
                found.setdefault(pair, []).append(f"{source}:{lineno} -> {target} (in a function)")
    return found


def check(
    root: Path = ROOT,
    *,
    layers: list[tuple[str, set[str]]] = LAYERS,
    allowed: dict[tuple[str, str], str] = LOCAL_ALLOWED,
    debt: set[tuple[str, str]] = LAYER_DEBT,
    cap: int = FUNCTION_LOCAL_CAP,
    local_cycle_cap: int = LOCAL_CYCLE_CAP,
) -> tuple[list[str], str]:
    """The problems found (empty: all is well), and a one-line summary."""
    edges, raw_local = scan(root)
    local = local_targets(root, raw_local)
    problems: list[str] = []

    # 1. module cycles (function-local imports excluded: they run after both modules exist)
    for component in cycles(edges):
        problems.append(f"import cycle of {len(component)} modules:")
        for member in component:
            inside = sorted(m for m in edges[member] if m in component)
            problems.append(f"  {member} -> {', '.join(inside)}")

    # 2. every function-local import is allowed, with its reason, and they stay few
    seen_pairs: set[tuple[str, str]] = set()
    for source, line, text, hits in local:
        for target in hits:
            pair = (source, target)
            seen_pairs.add(pair)
            if pair not in allowed:
                problems.append(
                    f"{source}:{line}: `{text}` inside a function, not in LOCAL_ALLOWED:"
                    " import it at module level, or list it there with its reason"
                    " (an optional extra, or start-up cost)"
                )
    for pair in sorted(set(allowed) - seen_pairs):
        problems.append(f"LOCAL_ALLOWED lists {pair[0]} -> {pair[1]}, which is gone: drop it")
    if len(local) > cap:
        problems.append(
            f"{len(local)} first-party imports inside functions, over the cap of"
            f" {cap} (scripts/check_imports.py --list shows them)"
        )

    # 3. module cycles counting function-local imports: a deferred import must not be what
    # breaks a cycle (at most LOCAL_CYCLE_CAP of them, to remove)
    with_local = {name: set(targets) for name, targets in edges.items()}
    for source, _line, _text, hits in local:
        with_local[source].update(t for t in hits if t != source)
    hidden = cycles(with_local)
    if len(hidden) > local_cycle_cap:
        for component in hidden:
            problems.append(
                f"import cycle of {len(component)} modules counting function-local imports:"
                f" {', '.join(component)}"
            )
        problems.append(
            f"{len(hidden)} cycles counting function-local imports, over the cap of"
            f" {local_cycle_cap} (LOCAL_CYCLE_CAP)"
        )

    # 4. packages: each in a declared layer, none imports a higher layer, no cycle
    pkg_edges = package_edges(edges, local)
    packages = {package(m) for m in edges}
    for pkg in sorted(packages):
        if layer_of(pkg, layers) is None:
            problems.append(f"package {pkg} is in no layer: add it to LAYERS")
    debt_seen: set[tuple[str, str]] = set()
    graph: dict[str, set[str]] = {pkg: set() for pkg in packages}
    for (source, target), why in sorted(pkg_edges.items()):
        if (source, target) in debt:
            debt_seen.add((source, target))
            continue
        graph[source].add(target)
        low, high = layer_of(source, layers), layer_of(target, layers)
        if low is not None and high is not None and high > low:
            problems.append(
                f"layer violation: {source} ({layers[low][0]}) imports {target}"
                f" ({layers[high][0]}):"
            )
            problems.extend(f"  {edge}" for edge in why)
    for pair in sorted(set(debt) - debt_seen):
        problems.append(f"LAYER_DEBT lists {pair[0]} -> {pair[1]}, which is gone: drop it")
    for component in cycles(graph):
        problems.append(f"package cycle (function-local imports counted): {component}")
        for member in component:
            for target in sorted(graph[member] & set(component)):
                problems.extend(f"  {edge}" for edge in pkg_edges[(member, target)])
    summary = (
        f"{len(edges)} modules in {len(packages)} packages, {len(layers)} layers:"
        f" no import cycle, no layer violation, {len(local)} function-local imports"
        f" ({len(allowed)} allowed pairs), {len(hidden)} module cycles through them,"
        f" {len(debt)} package edges of layer debt"
    )
    return problems, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the function-local imports")
    parser.add_argument(
        "--packages", action="store_true", help="print the layers and the package graph"
    )
    args = parser.parse_args(argv)
    if args.list or args.packages:
        edges, raw_local = scan(ROOT)
        local = local_targets(ROOT, raw_local)
    if args.list:
        for name, line, text, hits in local:
            reason = next(
                (LOCAL_ALLOWED[(name, t)] for t in hits if (name, t) in LOCAL_ALLOWED), ""
            )
            print(f"{name}:{line}: {text}  # {reason}")
    if args.packages:
        for number, (title, members) in reversed(list(enumerate(LAYERS))):
            print(f"layer {number} {title}: {', '.join(sorted(members))}")
        for (source, target), why in sorted(package_edges(edges, local).items()):
            mark = "  (debt)" if (source, target) in LAYER_DEBT else ""
            print(f"{source} -> {target}: {len(why)}{mark}")
    problems, summary = check()
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(summary)
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
