"""Cold, no-op and one-file-edit timings of `memserver index`, with peak RSS.

Usage: python benchmarks/index_speed.py TREE [TREE ...] [--work DIR] [--embedder NAME]

Each tree is copied to DIR/<name> first (the edit must not touch the original),
then indexed three times in fresh processes under /usr/bin/time: cold, again
with nothing changed, and after appending one line to one source file.
Reported: wall seconds of each process, the run's own seconds (without Python
start-up and imports), chunks, chunks/s, share of time spent embedding, and
peak RSS. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

COMMENT = {".py": "#", ".go": "//", ".js": "//", ".ts": "//", ".rs": "//", ".java": "//"}


def run_index(root: Path, index_dir: Path, embedder: str | None) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "memserver",
        "index",
        str(root),
        "--index-dir",
        str(index_dir),
        "--json",
    ]
    if embedder:
        cmd += ["--embedder", embedder]
    with tempfile.NamedTemporaryFile("r") as tf:
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%e %M", "-o", tf.name, *cmd],
            capture_output=True,
            text=True,
            check=True,
        )
        wall, rss_kb = tf.read().split()
    report = json.loads(proc.stdout)
    return {
        "wall_s": float(wall),
        "peak_rss_mb": int(rss_kb) / 1024,
        "run_s": report["seconds"],
        "embed_s": report["seconds_embedding"],
        "to_search_s": report["seconds_to_search"],
        "files_indexed": report["files_indexed"],
        "chunks_total": report["chunks_total"],
        "chunks_added": report["chunks_added"],
        "chunks_embedded": report["chunks_embedded"],
    }


def pick_file(root: Path) -> Path:
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix in COMMENT]
    files.sort(key=lambda p: (p.stat().st_size, str(p)))
    return files[len(files) // 2]


def bench(tree: Path, work: Path, embedder: str | None) -> dict[str, Any]:
    root = work / tree.name
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(tree, root, ignore=shutil.ignore_patterns(".memserver", ".venv", ".git"))
    index_dir = work / f"{tree.name}.index"
    shutil.rmtree(index_dir, ignore_errors=True)
    cold = run_index(root, index_dir, embedder)
    noop = run_index(root, index_dir, embedder)
    target = pick_file(root)
    with target.open("a") as fh:
        fh.write(f"\n{COMMENT[target.suffix]} edited by the benchmark\n")
    edit = run_index(root, index_dir, embedder)
    return {
        "cold": {
            **cold,
            "chunks_per_s": cold["chunks_total"] / cold["wall_s"],
            "embed_share": cold["embed_s"] / cold["run_s"],
        },
        "noop": {**noop, "wall_fraction_of_cold": noop["wall_s"] / cold["wall_s"]},
        "edit": {**edit, "file": str(target.relative_to(root))},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "memserver-bench")
    ap.add_argument("--embedder", default=None)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    print(json.dumps({t.name: bench(t, args.work, args.embedder) for t in args.trees}, indent=1))


if __name__ == "__main__":
    main()
