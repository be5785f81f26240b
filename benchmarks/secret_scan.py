"""What masking secrets costs indexing: the scan alone, and a cold index with and without it.

Usage: python benchmarks/secret_scan.py TREE [--repeat N] [--index] [--embedder NAME]

The scan: `mask_code` over every file the walk would index (read once, outside the
timing), best of N runs; reported as seconds, ms per MB, candidate lines and values masked
by kind. With --index, TREE is also indexed cold twice into temporary index folders (the
tree itself is not written to): once as shipped, once with masking replaced by a no-op,
each in a fresh process, timing the masking calls inside the run (wall and CPU time), which
a loaded machine blurs less than the difference of two runs. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

_INDEX = """
import json, sys, time
import memserver.ingest.pipeline as pipeline
from memserver.engine import Engine
spent = [0.0, 0.0]
def timed(text, language="", path="", mask=pipeline.mask_code):
    wall, cpu = time.perf_counter(), time.thread_time()
    out = mask(text, language, path) if sys.argv[4] == "on" else (text, [])
    spent[0] += time.perf_counter() - wall
    spent[1] += time.thread_time() - cpu
    return out
pipeline.mask_code = timed
report = Engine(sys.argv[1], sys.argv[2], embedder_flag=sys.argv[3], env={}).index().to_dict()
print(json.dumps({**report, "masking_s": spent[0], "masking_cpu_s": spent[1]}))
"""


def scan(root: Path, repeat: int) -> dict[str, object]:
    from indexers.walk import walk
    from memserver.text.secrets import mask_code
    from memserver.text.secretscan import candidate_lines

    files = []
    for f in walk(root).files:
        try:
            files.append((f.path, f.language, Path(f.abs_path).read_bytes().decode("utf-8-sig")))
        except (OSError, UnicodeDecodeError):
            continue
    mb = sum(len(t.encode("utf-8")) for _, _, t in files) / 1e6
    best = prefilter = float("inf")
    kinds: Counter[str] = Counter()
    for _ in range(repeat):
        started = time.perf_counter()
        candidates = sum(len(candidate_lines(text)) for _, _, text in files)
        prefilter = min(prefilter, time.perf_counter() - started)
        started = time.perf_counter()
        kinds = Counter(r.kind for p, lang, t in files for r in mask_code(t, lang, p)[1])
        best = min(best, time.perf_counter() - started)
    return {
        "files": len(files), "mb": round(mb, 2), "scan_s": round(best, 3),
        "scan_ms_per_mb": round(best / mb * 1000, 1), "prefilter_s": round(prefilter, 3),
        "candidate_lines": candidates, "masked": sum(kinds.values()),
        "masked_by_kind": dict(kinds.most_common()),
    }  # fmt: skip


def index(root: Path, embedder: str, masking: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="memserver-scan-") as tmp:
        out = subprocess.run(
            [sys.executable, "-c", _INDEX, str(root), str(Path(tmp) / "index"), embedder, masking],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    report = json.loads(out.splitlines()[-1])
    keys = ("seconds", "seconds_to_search", "files_indexed", "chunks_total", "masked_total")
    return {**{k: report[k] for k in keys}, "masking_s": round(report["masking_s"], 3),
            "masking_cpu_s": round(report["masking_cpu_s"], 3)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--index", action="store_true")
    parser.add_argument("--embedder", default="hashing")
    args = parser.parse_args()
    result: dict[str, object] = {"tree": str(args.tree), "scan": scan(args.tree, args.repeat)}
    if args.index:  # no masking first: it reads the tree cold, to masking's advantage
        result["index_no_masking"] = index(args.tree, args.embedder, "off")
        result["index_masking"] = index(args.tree, args.embedder, "on")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
