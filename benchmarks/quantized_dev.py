"""DEV code retrieval with the fp32 model and with an int8 copy: is the quantization kept?

Usage:
  python benchmarks/quantized_dev.py --dataset DEV.jsonl --corpora DIR
      [--variant dyn-matmul-pc-no-ffn-out [...]] [--cache DIR] [--work DIR] [--json]

Set FASTEMBED_CACHE_PATH to the fp32 model's cache (only read) and HF_HUB_OFFLINE=1.
Runs `memserver eval code --dataset ... --corpora ... --no-ablations --json`
once with fp32 and once per --variant, in fresh processes, each on fresh indexes:

- fp32: the stock CLI, MEMSERVER_EMBEDDING_MODEL=sentence-transformers/all-MiniLM-L6-v2;
- int8: the same CLI with MEMSERVER_EMBEDDING_MODEL=memserver/all-MiniLM-L6-v2-int8-<variant>
  and MEMSERVER_MODEL_CACHE = where the copies are made (--cache, default
  `quantize.user_cache()`): the fastembed adapter makes the copy from the fp32 model
  on first use, and the index records the int8 model's own name.

Reports MRR@10 and R@10 per package and macro-averaged for both, the change in
points, and the verdict: the lever is kept only if neither macro MRR@10 nor
macro R@10 drops by more than 1 point. Also each run's index seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FP32 = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_VARIANT = "dyn-matmul-pc-no-ffn-out"
CLI = "from memserver.cli import main; main()"
KEYS = ("mrr@10", "recall@10", "recall@1", "abstain", "false_abstain", "p50_ms", "index_seconds")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_eval(bootstrap: str, env: dict[str, str], args: argparse.Namespace, work: Path
             ) -> dict[str, Any]:  # fmt: skip
    cmd = [
        sys.executable,
        "-c",
        bootstrap,
        "eval",
        "code",
        "--dataset",
        str(args.dataset),
        "--corpora",
        str(args.corpora),
        "--work",
        str(work),
        "--no-ablations",
        "--json",
    ]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(f"memserver eval code failed:\n{proc.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(proc.stdout)
    report["wall_s"] = round(time.perf_counter() - started, 1)
    return report


def pick(scores: dict[str, Any]) -> dict[str, Any]:
    return {k: round(scores[k], 4) for k in KEYS if k in scores}


def main() -> None:
    from memserver.embed import quantize

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True, type=Path)
    ap.add_argument("--corpora", required=True, type=Path)
    ap.add_argument("--variant", nargs="+", default=[DEFAULT_VARIANT],
                    choices=sorted(quantize.VARIANTS), help="one eval run each")  # fmt: skip
    ap.add_argument("--cache", type=Path, default=None, help="the int8 copies' cache")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    source = os.environ.get("FASTEMBED_CACHE_PATH")
    if not source:
        sys.exit("set FASTEMBED_CACHE_PATH to the fastembed cache holding the fp32 model")
    source = str(Path(source).resolve())
    cache = (args.cache or quantize.user_cache()).resolve()
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMSERVER_")}
    base["HF_HUB_OFFLINE"] = "1"
    runs = {"fp32": (CLI, {**base, "FASTEMBED_CACHE_PATH": source,
                           "MEMSERVER_EMBEDDING_MODEL": FP32})}  # fmt: skip
    for v in args.variant:
        name = quantize.VARIANTS[v].model_name
        runs[v] = (CLI, {**base, "FASTEMBED_CACHE_PATH": source,
                         "MEMSERVER_MODEL_CACHE": str(cache),
                         "MEMSERVER_EMBEDDING_MODEL": name})  # fmt: skip
    reports = {}
    with tempfile.TemporaryDirectory(prefix="quantized-dev-") as tmp:
        work = (args.work or Path(tmp)).resolve()
        for label, (bootstrap, env) in runs.items():
            log(f"{label}: memserver eval code ({env['MEMSERVER_EMBEDDING_MODEL']})")
            reports[label] = run_eval(bootstrap, env, args, work / label)
    out = summarize(reports)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(markdown(out))


def summarize(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    fp = reports["fp32"]
    out: dict[str, Any] = {"packages": {}, "macro": {}, "delta_points": {}, "kept": {},
                           "wall_s": {k: r["wall_s"] for k, r in reports.items()}}  # fmt: skip
    for pkg in sorted(fp["packages"]):
        out["packages"][pkg] = {k: pick(r["packages"][pkg]) for k, r in reports.items()}
    out["macro"] = {k: pick(r["macro"]) for k, r in reports.items()}
    a = out["macro"]["fp32"]
    for label in reports:
        if label == "fp32":
            continue
        b = out["macro"][label]
        delta = {k: round(100 * (b[k] - a[k]), 2) for k in ("mrr@10", "recall@10")}
        out["delta_points"][label] = delta
        out["kept"][label] = all(d >= -1.0 for d in delta.values())
    return out


def markdown(out: dict[str, Any]) -> str:
    lines = []
    for label, delta in out["delta_points"].items():
        lines.append(f"- int8 {label}: kept = **{out['kept'][label]}** (macro Δ MRR@10 "
                     f"{delta['mrr@10']:+} pt, Δ R@10 {delta['recall@10']:+} pt)")  # fmt: skip
    lines += ["", "| package | model | MRR@10 | R@10 | R@1 | abstain | false abstain | index s |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    rows = [*out["packages"].items(), ("macro", out["macro"])]
    for pkg, by_label in rows:
        for label, s in by_label.items():
            lines.append(f"| {pkg} | {label} | {s['mrr@10']} | {s['recall@10']} | "
                         f"{s['recall@1']} | {s['abstain']} | {s['false_abstain']} | "
                         f"{s.get('index_seconds', '')} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    main()
