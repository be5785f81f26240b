"""Does `budget_tokens` bound what the agent reads? Tokens of real recall results per budget.

Usage: python benchmarks/budget_bound.py --dataset DEV.jsonl --corpora DIR --work DIR
       [--budgets 512 1500 4096] [--packages click cobra] [--cli-sample 3] [--out FILE]

For each package of the code bench: index its corpus into `<work>/<package>.index` with
the configured (real) embedding model, incrementally like `memserver eval code`, start
`memserver serve` over stdio and ask every query through the MCP SDK's client at each
budget with the default format. Each tool result is measured with the project's
tokenizer (`memserver.tokens.default_counter`): its text content (what an agent reads)
and its structured content as compact JSON (what a client may pass on instead). Each
answer is scored with `memserver eval code`'s rules (`memserver.eval.code.is_hit` over the
first ten evidence items, a miss when the answer says not found), so R@10 per budget is
the bench's R@10 at that budget.

The CLI is measured too, on the first --cli-sample queries of each package: the bytes
`memserver recall --json` and plain `memserver recall` print, counted the same way, per
budget (each call is a fresh process that loads the model, so this is a sample).

Prints one JSON object on stdout (and writes it to --out): per budget and package the
mean and max tokens, how many results were over budget, and R@10; per budget the same over
all queries (mean over queries) and the macro R@10 (mean over packages, as eval code does).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

MEMSERVER = str(Path(sys.executable).with_name("memserver"))
# what the server process needs from this one: the offline model cache, and no MEMSERVER_*
# setting of the caller's shell that would change what is measured
PASS_ENV = ("FASTEMBED_CACHE_PATH", "HF_HUB_OFFLINE", "HF_HOME", "HOME", "PATH", "TMPDIR")


def server_env() -> dict[str, str]:
    return {k: os.environ[k] for k in PASS_ENV if k in os.environ}


def build_index(root: Path, index_dir: Path) -> dict[str, Any]:
    from memserver.engine import Engine

    report = Engine(root, index_dir).index()
    return {"chunks": report.chunks_total, "index_seconds": round(report.seconds, 1)}


def rank_of(evidence: list[dict[str, Any]], found: bool | None, q: dict[str, Any]) -> int | None:
    """1-based rank of the first hit in the top ten, None when missed or abstained (the
    bench's rule, as `memserver eval code` scores it)."""
    from memserver.eval.code import is_hit

    if not q["answerable"] or not found:
        return None
    return next((i for i, e in enumerate(evidence[:10], 1) if is_hit(e, q)), None)


async def ask_over_stdio(
    root: Path, index_dir: Path, queries: list[dict[str, Any]], budgets: list[int]
) -> dict[int, list[dict[str, Any]]]:
    from mcp import Client, StdioServerParameters

    from memserver.core import render
    from memserver.tokens import default_counter

    count = default_counter().count
    params = StdioServerParameters(
        command=MEMSERVER,
        args=[
            "serve",
            "--root",
            str(root),
            "--index-dir",
            str(index_dir),
            "--log-level",
            "warning",
        ],
        env=server_env(),
        cwd=str(root),
    )
    rows: dict[int, list[dict[str, Any]]] = {b: [] for b in budgets}
    async with Client(params) as client:
        await client.call_tool("recall", {"query": "warm up the model"})
        for q in queries:
            for budget in budgets:
                args = {"query": q["query"], "budget_tokens": budget}
                result = await client.call_tool("recall", args)
                if result.is_error:
                    raise RuntimeError(f"{q['qid']} at {budget}: {result.content}")
                text = "".join(c.text for c in result.content if c.type == "text")
                pack = result.structured_content or {}
                rows[budget].append({
                    "qid": q["qid"], "answerable": q["answerable"],
                    "text_tokens": count(text),
                    "structured_tokens": count(render.dumps(pack)),
                    "items": len(pack.get("evidence", [])),
                    "found": pack.get("found"),
                    "rank": rank_of(pack.get("evidence", []), pack.get("found"), q),
                })  # fmt: skip
    return rows


def cli_sample(
    root: Path, index_dir: Path, queries: list[dict[str, Any]], budgets: list[int]
) -> dict[int, list[dict[str, Any]]]:
    from memserver.tokens import default_counter

    count = default_counter().count
    out: dict[int, list[dict[str, Any]]] = {b: [] for b in budgets}
    base = [MEMSERVER, "recall", "--root", str(root), "--index-dir", str(index_dir)]
    for q in queries:
        for budget in budgets:
            row: dict[str, Any] = {"qid": q["qid"]}
            for form, extra in (("json", ["--json"]), ("text", [])):
                cmd = [*base, "--budget-tokens", str(budget), *extra, q["query"]]
                done = subprocess.run(cmd, capture_output=True, text=True, env=server_env(),
                                      check=True)  # fmt: skip
                row[f"{form}_tokens"] = count(done.stdout)
            out[budget].append(row)
    return out


def summary(rows: list[dict[str, Any]], budget: int, keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for key in keys:
        values = [r[key] for r in rows]
        out[key] = {
            "mean": round(statistics.mean(values), 1),
            "max": max(values),
            "over_budget": sum(1 for v in values if v > budget),
        }
    return out


def recall_at_10(rows: list[dict[str, Any]]) -> float:
    answerable = [r for r in rows if r["answerable"]]
    return sum(1 for r in answerable if r["rank"] is not None) / max(1, len(answerable))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--corpora", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--budgets", type=int, nargs="+", default=[512, 1500, 4096])
    parser.add_argument("--packages", nargs="*", default=None)
    parser.add_argument("--cli-sample", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from memserver.eval.code import load_dataset

    data = load_dataset(args.dataset)
    packages = sorted(args.packages or data)
    mcp: dict[int, dict[str, list[dict[str, Any]]]] = {b: {} for b in args.budgets}
    cli: dict[int, list[dict[str, Any]]] = {b: [] for b in args.budgets}
    report: dict[str, Any] = {"budgets": {}, "indexes": {}}
    for pkg in packages:
        root, index_dir = args.corpora / pkg, args.work / f"{pkg}.index"
        print(f"{pkg}: indexing {root}", file=sys.stderr)
        report["indexes"][pkg] = build_index(root, index_dir)
        started = time.perf_counter()
        rows = anyio.run(ask_over_stdio, root, index_dir, data[pkg], args.budgets)
        print(f"{pkg}: {len(data[pkg])} queries x {len(args.budgets)} budgets over stdio in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)  # fmt: skip
        for budget in args.budgets:
            mcp[budget][pkg] = rows[budget]
        if args.cli_sample:
            sampled = cli_sample(root, index_dir, data[pkg][: args.cli_sample], args.budgets)
            for budget in args.budgets:
                cli[budget] += sampled[budget]
    keys = ("text_tokens", "structured_tokens")
    for budget in args.budgets:
        per_pkg = {
            pkg: {**summary(rows, budget, keys), "recall@10": round(recall_at_10(rows), 4)}
            for pkg, rows in mcp[budget].items()
        }
        every = [r for rows in mcp[budget].values() for r in rows]
        report["budgets"][budget] = {
            "mcp_stdio": {
                **summary(every, budget, keys),
                "macro_recall@10": round(
                    statistics.mean(p["recall@10"] for p in per_pkg.values()), 4
                ),
                "mean_items": round(statistics.mean(r["items"] for r in every), 2),
                "packages": per_pkg,
            },
            "cli_sample": summary(cli[budget], budget, ("json_tokens", "text_tokens"))
            if cli[budget]
            else None,
        }
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
        raw = args.out.with_suffix(".rows.json")
        raw.write_text(json.dumps({"mcp": mcp, "cli": cli}) + "\n")
    print(text)


if __name__ == "__main__":
    main()
