"""Index and recall at scale: corpora of N tokens built by replicating real source trees.

Usage:
  python benchmarks/scale.py --tokens 1000000 [--tokens 10000000 ...] --work DIR
      --source TREE [--source TREE ...] [--py-source TREE ...] --queries DEV.jsonl
      [--embedder hashing] [--ann-check] [--setting MEMSERVER_<SECTION>_<KEY>=value]
      [--skip-index] [--report DIR] [--rows FILE]

The same run as `memserver eval scale` (see `memserver/eval/scale.py` for what is measured),
with two extras for experiments: --setting passes a setting to the index run, and
--skip-index reuses an index already built for that size. Prints a table on stderr and one
JSON array on stdout. With --report DIR it also writes DIR/index.html and the growth figures
(latency, RSS, disk and index time against tokens, log-scaled; needs matplotlib); --rows FILE
draws them from the JSON a previous run printed, without running anything.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from memserver.eval.scale import Options, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tokens", type=int, action="append", default=[])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "memserver-scale")
    ap.add_argument("--source", type=Path, action="append", default=[])
    ap.add_argument("--py-source", type=Path, action="append", default=[])
    ap.add_argument("--queries", type=Path)
    ap.add_argument("--n-queries", type=int, default=100)
    ap.add_argument("--embedder", default=None, help="e.g. hashing (reported per row)")
    ap.add_argument("--setting", action="append", default=[],
                    help="MEMSERVER_<SECTION>_<KEY>=value for the index run")  # fmt: skip
    ap.add_argument("--ann-check", action="store_true")
    ap.add_argument("--ann-grid", default="10:1,20:5,40:5,40:10",
                    help="nprobes:refine pairs for --ann-check")  # fmt: skip
    ap.add_argument("--skip-index", action="store_true", help="reuse an existing index")
    ap.add_argument("--report", type=Path, help="also write a report folder with figures here")
    ap.add_argument("--rows", type=Path, help="with --report: the JSON a previous run printed")
    args = ap.parse_args()
    if args.rows:
        if not args.report:
            ap.error("--rows needs --report DIR")
        write_report(json.loads(args.rows.read_text()), args.report)
        return
    if not args.tokens or not (args.source or args.py_source) or not args.queries:
        ap.error("--tokens, a --source or --py-source, and --queries are required")
    options = Options(
        args.tokens, args.work, args.queries, args.source, args.py_source,
        n_queries=args.n_queries, embedder=args.embedder, setting=args.setting,
        ann_check=args.ann_check, ann_grid=args.ann_grid, skip_index=args.skip_index,
    )  # fmt: skip
    rows = run(options, log=lambda text: print(text, file=sys.stderr, flush=True))
    print(json.dumps(rows, indent=1))
    if args.report:
        write_report(rows, args.report)


def write_report(rows: list[dict[str, Any]], out: Path) -> None:
    from memserver.eval.figures import scale_report

    command = " ".join(["python", *(a if " " not in a else repr(a) for a in sys.argv)])
    written = scale_report(rows, out, command)
    print(f"report: {written.index} ({len(written.figures)} figures)", file=sys.stderr)


if __name__ == "__main__":
    main()
