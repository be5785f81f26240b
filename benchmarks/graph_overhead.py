"""What the code graph costs `memserver index`: keyword-phase time and disk, with the graph
against without it.

Usage: python benchmarks/graph_overhead.py TREE [TREE ...] [--repeat 3] [--embedder none]
                                           [--json]

For each tree, cold index runs into fresh temporary index folders (the tree is only read),
in-process, alternating: with the code graph as `memserver index` builds it, and without
it (the chunker's plain `chunk`, and no graph rows written: what indexing cost before the
graph). Each run's report gives `seconds_to_search` (walk, chunk and tag, LanceDB rows,
tantivy, manifest: the keyword phase, wall-clock); the best of --repeat runs of each is
kept, and the process's CPU seconds of the same runs beside it (the machine's other work
moves wall-clock times more than CPU times). The graph's share is (with - without) /
without. Disk: the `symbols` and `refs` tables against the rest of the index folder, after
the run compacted it (with --embedder, vectors included, as a real index holds them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class _PlainChunker:
    """The chunker without `chunk_and_tag`: the pipeline then makes no tags."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def chunk(self, path: str, text: str, language: str) -> Any:
        return self.inner.chunk(path, text, language)


@contextmanager
def _without_graph() -> Iterator[None]:
    from memserver.engine import Engine
    from memserver.store.index import IndexStore

    chunker, open_graphs = Engine.chunker, IndexStore._open_graphs
    Engine.chunker = lambda self: _PlainChunker(chunker(self))  # type: ignore[method-assign]
    IndexStore._open_graphs = lambda self, c: []  # type: ignore[method-assign]
    try:
        yield
    finally:
        Engine.chunker, IndexStore._open_graphs = chunker, open_graphs  # type: ignore[method-assign]


def _run(tree: Path, embedder: str, graph: bool) -> tuple[float, float, dict[str, int]]:
    from memserver.engine import Engine

    with tempfile.TemporaryDirectory(prefix="graph-overhead-") as index_dir:
        cpu = time.process_time()
        if graph:
            report = Engine(tree, index_dir, embedder_flag=embedder, env={}).index(ci=True)
        else:
            with _without_graph():
                report = Engine(tree, index_dir, embedder_flag=embedder, env={}).index(ci=True)
        cpu = time.process_time() - cpu
        lance = Path(index_dir) / "lance"
        disk = {
            "graph": _size(lance / "symbols.lance") + _size(lance / "refs.lance"),
            "index": _size(Path(index_dir)),
        }
    return report.seconds_to_search, cpu, disk


def measure(tree: Path, repeat: int, embedder: str) -> dict[str, Any]:
    _run(tree, "none", True)  # imports, grammars and queries outside the timings
    runs: dict[bool, list[tuple[float, float, dict[str, int]]]] = {True: [], False: []}
    for _ in range(repeat):
        for graph in (False, True):
            runs[graph].append(_run(tree, "none", graph))
    wall = {g: min(r[0] for r in runs[g]) for g in runs}
    cpu = {g: min(r[1] for r in runs[g]) for g in runs}
    sized = _run(tree, embedder, True)[2] if embedder != "none" else runs[True][0][2]
    rest = sized["index"] - sized["graph"]
    return {
        "tree": tree.name,
        "keyword_phase_s": round(wall[False], 3),
        "with_graph_s": round(wall[True], 3),
        "share": round((wall[True] - wall[False]) / wall[False], 4),
        "cpu_without_s": round(cpu[False], 3),
        "cpu_with_s": round(cpu[True], 3),
        "cpu_share": round((cpu[True] - cpu[False]) / cpu[False], 4),
        "graph_bytes": sized["graph"],
        "rest_bytes": rest,
        "disk_share": round(sized["graph"] / rest, 4),
        "embedder": embedder,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--embedder", default="none",
                        help="the embedder of the index whose disk is measured")  # fmt: skip
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    results = [measure(t, max(1, args.repeat), args.embedder) for t in args.trees]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'tree':<12}{'keyword s':>10}{'+graph s':>10}{'share':>8}{'cpu':>8}{'cpu+g':>8}"
          f"{'share':>8}{'graph MB':>10}{'rest MB':>9}{'disk':>7}")  # fmt: skip
    for r in results:
        print(f"{r['tree']:<12}{r['keyword_phase_s']:>10.3f}{r['with_graph_s']:>10.3f}"
              f"{r['share']:>8.1%}{r['cpu_without_s']:>8.2f}{r['cpu_with_s']:>8.2f}"
              f"{r['cpu_share']:>8.1%}{r['graph_bytes'] / 1e6:>10.2f}"
              f"{r['rest_bytes'] / 1e6:>9.2f}{r['disk_share']:>7.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
