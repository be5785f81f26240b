"""Recall@k / MRR@10 of `memserver recall` on the code bench (answerable queries).

Usage: python benchmarks/code_recall.py --dataset DEV.jsonl --corpora DIR --index-root DIR
       [--packages click cobra] [--embedder NAME]

Indexes each package into <index-root>/<package> (incrementally, so a second
run reuses the index), runs every query in one process and scores hits with
the bench README's rule: same path and overlap >= half of the gold span.
`memserver eval code` (the recall-pipeline issue) supersedes this script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from memserver.engine import Engine


def is_hit(ev: dict[str, Any], q: dict[str, Any]) -> bool:
    if ev["path"] != q["gold_path"]:
        return False
    gs, ge = q["gold_start_line"], q["gold_end_line"]
    overlap = min(ev["end_line"], ge) - max(ev["start_line"], gs) + 1
    return bool(overlap >= 0.5 * (ge - gs + 1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--corpora", required=True)
    ap.add_argument("--index-root", required=True)
    ap.add_argument("--packages", nargs="*")
    ap.add_argument("--embedder", default=None)
    ap.add_argument("--budget-tokens", type=int, default=4096)
    ap.add_argument("--max-files", type=int, default=5)
    args = ap.parse_args()

    queries = [json.loads(line) for line in Path(args.dataset).read_text().splitlines() if line]
    by_pkg: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in queries:
        if q["answerable"] and (not args.packages or q["package"] in args.packages):
            by_pkg[q["package"]].append(q)
    results = {}
    for pkg, qs in sorted(by_pkg.items()):
        engine = Engine(
            Path(args.corpora) / pkg, Path(args.index_root) / pkg, embedder_flag=args.embedder
        )
        report = engine.index()
        recaller = engine.recaller()
        recaller.recall("warm up the model")
        ranks, times, tokens = [], [], []
        for q in qs:
            t = time.perf_counter()
            res = recaller.recall(
                q["query"], k=10, budget_tokens=args.budget_tokens, max_files=args.max_files
            ).to_dict()
            times.append((time.perf_counter() - t) * 1000)
            tokens.append(res["tokens"])
            rank = next((i for i, ev in enumerate(res["evidence"], 1) if is_hit(ev, q)), None)
            ranks.append(rank)
        n = len(qs)
        results[pkg] = {
            "n": n,
            "recall@1": sum(1 for r in ranks if r and r <= 1) / n,
            "recall@5": sum(1 for r in ranks if r and r <= 5) / n,
            "recall@10": sum(1 for r in ranks if r and r <= 10) / n,
            "mrr@10": sum(1 / r for r in ranks if r) / n,
            "p50_ms": statistics.median(times),
            "p95_ms": sorted(times)[int(0.95 * (n - 1))],
            "tokens_mean": statistics.mean(tokens),
            "chunks": report.chunks_total,
        }
    keys = ["recall@1", "recall@5", "recall@10", "mrr@10", "p50_ms", "p95_ms", "tokens_mean"]
    macro = {k: statistics.mean(r[k] for r in results.values()) for k in keys}
    print(json.dumps({"macro": macro, "packages": results}, indent=1))


if __name__ == "__main__":
    main()
