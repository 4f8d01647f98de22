"""``python -m bench [--quick] [names...] [-- options]``: run the benchmarks, one after another.

Each benchmark compares memorybank with the raw driver doing the same work in
the same run. A server benchmark whose server is unreachable is reported and
skipped; the others still run. Names: sqlite, postgres, redis, mysql, context,
search, user_scope, search-scale, qdrant, server, graph, mcp, rerank, vectors, small_scope,
embedders (default: all of these), and longmemeval, run only when named (its first run
embeds about 50,000 chat turns).
Options after ``--`` go to every named benchmark, e.g. ``python -m bench graph
-- --stores sqlite``; ``--entities N`` sizes the graph benchmark (``python -m
bench graph --entities 10000``), ``--vectors N`` the vectors benchmark
(``python -m bench vectors --vectors 1000000``), ``--data PATH`` and ``--per-type N``
the LongMemEval benchmark (``python -m bench longmemeval --per-type 5``).
"""

from __future__ import annotations

import argparse
import importlib
import socket
import sys
import time

BENCHMARKS: dict[str, tuple[str, int | None]] = {
    # name -> (module, TCP port on 127.0.0.1 the benchmark needs, if any)
    "sqlite": ("bench.bench_sqlite", None),
    "postgres": ("bench.bench_postgres", 5432),
    "redis": ("bench.bench_redis", 6379),
    "mysql": ("bench.bench_mysql", 3306),
    "context": ("bench.bench_context", None),
    "search": ("bench.bench_search", None),
    "user_scope": ("bench.bench_user_scope", None),
    "search-scale": ("bench.bench_search_scale", None),
    "qdrant": ("bench.bench_qdrant", None),
    "server": ("bench.bench_server", None),
    "graph": ("bench.bench_graph", None),
    "mcp": ("bench.bench_mcp", None),
    "rerank": ("bench.bench_rerank", None),
    "vectors": ("bench.bench_vectors", None),
    "small_scope": ("bench.bench_small_scope", None),
    "embedders": ("bench.bench_embedders", None),
    "bg_embed": ("bench.bench_bg_embed", None),
    "longmemeval": ("bench.bench_longmemeval", None),
}

#: Benchmarks that run only when named (``python -m bench longmemeval``).
OPT_IN = frozenset({"longmemeval"})


def _reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("names", nargs="*", help=f"which to run: {', '.join(BENCHMARKS)}")
    parser.add_argument("--entities", type=int, help="graph: entities (relations: 5x)")
    parser.add_argument("--vectors", type=int, help="vectors: how many (default 60,000)")
    parser.add_argument("--data", help="longmemeval: the longmemeval_s_dev.json.gz to read")
    parser.add_argument("--per-type", type=int, help="longmemeval: at most N questions a type")
    parser.add_argument(
        "--no-embedder", action="store_true", help="longmemeval: words and structure alone"
    )
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    failed = 0
    for name in args.names or [n for n in BENCHMARKS if n not in OPT_IN]:
        module_name, port = BENCHMARKS[name]
        print(f"\n## {name}\n", flush=True)
        if port is not None and not _reachable(port):
            print(f"skipped: nothing listens on 127.0.0.1:{port}")
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            print(f"skipped: {error}")
            continue
        start = time.perf_counter()
        sys.argv = [module_name, *(["--quick"] if args.quick else []), *extra]
        if name == "graph" and args.entities is not None:
            sys.argv += ["--entities", str(args.entities)]
        if name == "vectors" and (args.vectors is not None or "--vectors" not in extra):
            # 60,000 by default (beyond ANN_THRESHOLD, minutes not hours); a --vectors
            # after "--" is not overridden
            sys.argv += ["--vectors", str(args.vectors or 60_000)]
        if name == "longmemeval":
            sys.argv += ["--data", args.data] if args.data else []
            sys.argv += ["--per-type", str(args.per_type)] if args.per_type else []
            sys.argv += ["--no-embedder"] if args.no_embedder else []
        try:
            module.main()
        except Exception as error:  # report and go on with the other benchmarks
            failed += 1
            print(f"FAILED: {type(error).__name__}: {error}")
        print(f"\n({name}: {time.perf_counter() - start:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
