"""Latency of the code graph's tools on indexed trees: symbol, references, neighbors and
outline, as the MCP tools answer them (budgeted, rendered, counted), in one process that
holds the graph like a running server.

Usage: python benchmarks/graph_latency.py TREE [TREE ...] [--index-dir DIR] [--names 200]
                                          [--seed 17] [--json]

Each TREE is indexed (`--embedder none`) into a temporary folder, or into DIR/<name> when
given (kept, and reused: an unchanged tree indexes in no time). Then the graph is read
once (`read` seconds: what a server does on its first call) and, for N function,
method and class definitions drawn at random (seeded), each tool is asked once per name
by its qualified name with the default budget (4096 tokens): the first answer for a name
includes resolving the references that use it. Reported: p50 / p95 / max in ms per tool
(wall-clock), and beside them the calling thread's CPU ms (what a busy machine's queueing
leaves out); `outline` of the whole tree (the repository map; its first call on a reading
ranks the files, later ones reuse that) and of its largest folder; the tables' rows and
sizes. The map's first call is timed twice, each ranking afresh: on the reading just built
(a server's first call) and after the other tools' calls filled the reading's memos; the
cyclic GC's pauses within each are reported beside them (a full collection walks the whole
process, whichever call's allocations set it off).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _spread(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 1), "p95": round(_pct(values, 0.95), 1)}


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


CPU: dict[str, list[float]] = {}  # per tool, the calling thread's CPU ms of each call
_GC = {"started": 0.0, "ms": 0.0}  # cyclic GC pauses: when the current one began, their sum


def _gc_pause(phase: str, _info: dict[str, Any]) -> None:
    if phase == "start":
        _GC["started"] = time.perf_counter()
    else:
        _GC["ms"] += (time.perf_counter() - _GC["started"]) * 1000


gc.callbacks.append(_gc_pause)


def _timed(fn: Any, *args: Any, tool: str = "") -> float:
    cpu, started = time.thread_time(), time.perf_counter()
    fn(*args)
    wall = (time.perf_counter() - started) * 1000
    if tool:
        CPU.setdefault(tool, []).append((time.thread_time() - cpu) * 1000)
    return wall


def _first_map(nav: Any, graph: Any) -> tuple[float, float]:
    """(ms, of which GC ms) of a repository map that ranks the reading afresh."""
    for key in ("rank", "map"):
        graph.cache.pop(key, None)
    paused = _GC["ms"]
    return _timed(nav.outline, None), _GC["ms"] - paused


def measure(tree: Path, index_dir: Path, names: int, seed: int) -> dict[str, Any]:
    from memserver.engine import Engine

    engine = Engine(tree, index_dir, embedder_flag="none", env={})
    report = engine.index()
    store = engine.open_store()
    view = engine.graph_view(store)
    started = time.perf_counter()
    graph = view.get()  # as a server reads it: load, index, collect
    read = time.perf_counter() - started
    nav = engine.navigator(store)
    fresh_map = _first_map(nav, graph)  # a server's first call, as an agent starts with a map
    pool = sorted(
        (d for e in graph.files.values() for d in e.tags.definitions
         if d.kind in ("function", "method", "class")),
        key=lambda d: (d.path, d.start_line),
    )  # fmt: skip
    chosen = random.Random(seed).sample(pool, min(names, len(pool)))
    times: dict[str, list[float]] = {"symbol": [], "references": [], "neighbors": []}
    CPU.clear()
    for d in chosen:
        times["symbol"].append(_timed(nav.symbol, d.qualified, tool="symbol"))
        times["references"].append(_timed(nav.references, d.qualified, tool="references"))
        times["neighbors"].append(_timed(nav.neighbors, graph.def_id(d), tool="neighbors"))
    first_map = _first_map(nav, graph)  # after the calls above filled the reading's memos
    maps = [_timed(nav.outline, None, tool="map") for _ in range(20)]
    folders: dict[str, int] = {}
    for path in graph.files:
        if "/" in path:
            top = path.split("/", 1)[0]
            folders[top] = folders.get(top, 0) + 1
    biggest = max(folders, key=lambda f: folders[f]) if folders else ""
    folder = (
        [_timed(nav.outline, biggest + "/", tool="folder") for _ in range(20)] if biggest else [0.0]
    )
    symbols, refs = store.graph.count_rows()
    lance = index_dir / "lance"
    out: dict[str, Any] = {
        "tree": tree.name,
        "files": len(graph.files),
        "definitions": sum(len(e.tags.definitions) for e in graph.files.values()),
        "symbols_rows": symbols,
        "refs_rows": refs,
        "symbols_mb": round(_size(lance / "symbols.lance") / 1e6, 2),
        "refs_mb": round(_size(lance / "refs.lance") / 1e6, 2),
        "index_mb": round(_size(index_dir) / 1e6, 2),
        "index_s": round(report.seconds, 2),
        "read_s": round(read, 3),
        "names": len(chosen),
        "outline_map_first_ms": round(fresh_map[0], 1),
        "outline_map_first_gc_ms": round(fresh_map[1], 1),
        "outline_map_after_ms": round(first_map[0], 1),
        "outline_map_after_gc_ms": round(first_map[1], 1),
        "outline_map_ms": _spread(maps),
        "outline_folder": biggest + "/",
        "outline_folder_ms": _spread(folder),
    }
    out["cpu_ms"] = {tool: _spread(values) for tool, values in CPU.items()}  # no queueing
    for tool, values in times.items():
        out[f"{tool}_ms"] = {"p50": round(statistics.median(values), 2),
                             "p95": round(_pct(values, 0.95), 2),
                             "max": round(max(values), 1)}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--names", type=int, default=200)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = []
    for tree in args.trees:
        if args.index_dir is not None:
            results.append(measure(tree, args.index_dir / tree.name, args.names, args.seed))
            continue
        with tempfile.TemporaryDirectory(prefix="graph-latency-") as tmp:
            results.append(measure(tree, Path(tmp), args.names, args.seed))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    head = (f"{'tree':<14}{'files':>6}{'defs':>7}{'refs':>8}{'read s':>8}"
            f"{'symbol p95':>11}{'refs p95':>9}{'nbrs p95':>9}{'map 1st':>8}{'(gc)':>6}"
            f"{'after':>7}{'(gc)':>6}{'map p95':>8}"
            f"{'folder p95':>11}")  # fmt: skip
    print(head)
    for r in results:
        print(f"{r['tree']:<14}{r['files']:>6}{r['definitions']:>7}{r['refs_rows']:>8}"
              f"{r['read_s']:>8.2f}{r['symbol_ms']['p95']:>11.1f}"
              f"{r['references_ms']['p95']:>9.1f}{r['neighbors_ms']['p95']:>9.1f}"
              f"{r['outline_map_first_ms']:>8.0f}{r['outline_map_first_gc_ms']:>6.0f}"
              f"{r['outline_map_after_ms']:>7.0f}{r['outline_map_after_gc_ms']:>6.0f}"
              f"{r['outline_map_ms']['p95']:>8.1f}"
              f"{r['outline_folder_ms']['p95']:>11.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
