"""Versions of one project moved through one working tree (issue 15, target 4).

Usage:
  python benchmarks/branch_switch.py TREE [TREE ...] --work DIR [--json]

Each TREE is one version of a project (an unpacked release, a checkout). In the order
given, each is copied over the same working tree as `rsync -a --delete` would (files of
the last version that this one lacks go; a file of the same size and mtime is left as it
is; the others are copied with their mtimes) and
`memserver index` runs on it in this process with the configured model (set
`FASTEMBED_CACHE_PATH` and `HF_HUB_OFFLINE=1` for an offline model). Name a version
twice (A B A C) to see what returning to a tree seen before costs.

Per switch: chunk ids never stored before (rows the chunks table gained), chunks that
came back (closed, then current again), the texts the model embedded, vectors copied
from rows with the same text, wall seconds of the run, and seconds per 1,000 new chunk
ids. Timings depend on the machine's load: say whether it was idle.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any


def sync(src: Path, dst: Path) -> None:
    """`rsync -a --delete src/ dst/` for regular files."""
    wanted = {p.relative_to(src) for p in src.rglob("*") if p.is_file()}
    for p in sorted(dst.rglob("*"), reverse=True):
        rel = p.relative_to(dst)
        if p.is_file() and rel not in wanted:
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()
    for rel in sorted(wanted):
        a, b = src / rel, dst / rel
        sa = a.stat()
        if b.exists() and (b.stat().st_size, b.stat().st_mtime_ns) == (sa.st_size, sa.st_mtime_ns):
            continue
        b.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(a, b)


def switch(engine_root: Path, index_dir: Path, tree: Path) -> dict[str, Any]:
    from memserver.engine import Engine

    sync(tree, engine_root)
    engine = Engine(engine_root, index_dir)
    rows_before = 0
    if (index_dir / "meta.json").exists():
        store = engine.open_store()
        rows_before = store.chunks.count_rows()
    started, cpu = time.monotonic(), time.process_time()
    report = engine.index()
    seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    new_ids = engine.open_store().chunks.count_rows() - rows_before
    return {
        "tree": tree.name,
        "new_chunk_ids": new_ids,
        "chunks_current_again": report.chunks_added - new_ids,
        "chunks_removed": report.chunks_removed,
        "chunks_total": report.chunks_total,
        "memories_added": report.memories_added,
        "chunks_embedded": report.chunks_embedded,
        "memories_embedded": report.memories_embedded,
        "vectors_copied": report.chunks_reused + report.memories_reused,
        "texts_embedded": report.texts_embedded,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),  # all threads of this process: less load-dependent
        "seconds_to_search": round(report.seconds_to_search, 2),
        "seconds_per_1000_new_chunks": round(1000 * seconds / new_ids, 1) if new_ids else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--work", type=Path, required=True, help="an empty folder")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    root, index_dir = args.work / "tree", args.work / "index"
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for tree in args.trees:
        print(f"switch to {tree.name}", file=sys.stderr)
        rows.append(switch(root, index_dir, tree.resolve()))
        print(f"  {rows[-1]}", file=sys.stderr)
    if args.json:
        print(json.dumps({"switches": rows}, indent=1))
        return 0
    cols = ["tree", "new_chunk_ids", "chunks_current_again", "texts_embedded",
            "vectors_copied", "seconds", "cpu_seconds", "seconds_per_1000_new_chunks"]  # fmt: skip
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
