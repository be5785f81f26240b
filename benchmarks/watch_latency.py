"""Save-to-searchable latency of the watcher, and a write storm compared with a clean index.

Usage: python benchmarks/watch_latency.py TREE [--work DIR] [--embedder NAME]
           [--edits 40] [--storm-writes 1000] [--storm-seconds 10] [--reuse]

TREE is copied to DIR/tree and indexed; then a watcher runs in this process as
`memserver serve --watch` runs it, with a recaller beside it as the server has.

1. Edits: each appends a function with a unique name to a random source file and
   polls recall (reranker off) every 10 ms until the new function comes back. The
   latency is from just before the write to that recall (and, beside it, to the
   first `symbol` answer that finds the function). Each batch's own report
   gives the time until BM25 could answer and the time including embedding.
2. Storm: `--storm-writes` writes spread over `--storm-seconds` (edits of existing
   files, new files, deletes and renames), then the watcher settles and its index
   is compared with a clean `memserver index` of the final tree: current chunk ids,
   keyword-index ids and the files manifest must be identical. `--storm-writes 0`
   skips the storm and the clean index (latency only).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memserver.core.types import IndexReport
from memserver.engine import Engine
from memserver.ingest.live import start_watching

SUFFIXES = (".py", ".go", ".js", ".ts")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def state(root: Path, index_dir: Path) -> dict[str, Any]:
    store = Engine(root, index_dir).open_store()
    states = store.chunks.states(origin="file")
    return {
        "current": sorted(c for c, cur in states.items() if cur),
        "bm25": sorted(store.keyword.all_ids("chunk")),
        "manifest": {p: sorted(r.chunk_ids) for p, r in store.files.read().items()},
    }


def new_function(path: Path, name: str) -> str:
    if path.suffix == ".py":
        return f"\n\ndef {name}(value):\n    return value\n"
    if path.suffix == ".go":
        return f"\n\nfunc {name}(value int) int {{\n\treturn value\n}}\n"
    return f"\n\nfunction {name}(value) {{\n  return value;\n}}\n"


def edits(
    root: Path, watcher: Any, recaller: Any, navigator: Any, n: int, rng: random.Random
) -> tuple[list[float], list[float]]:
    """Seconds from each write until recall finds the new function's text, and until
    `symbol` finds its definition."""
    sources = [p for p in sorted(root.rglob("*")) if p.suffix in SUFFIXES and p.is_file()]
    latencies, symbols = [], []
    for _ in range(n):
        path = rng.choice(sources)
        # letters only: one keyword token that no other probe shares
        name = "probe" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(12))
        started = time.monotonic()
        with path.open("a", encoding="utf-8") as handle:
            handle.write(new_function(path, name))
        text = symbol = None
        while text is None or symbol is None:
            if text is None and any(name in e.text for e in recaller.recall(name, k=10).evidence):
                text = time.monotonic() - started
            if symbol is None and navigator.symbols(name):
                symbol = time.monotonic() - started
            if time.monotonic() - started > 120:
                raise SystemExit(f"{name} never became searchable (text {text}, symbol {symbol})")
            time.sleep(0.01)
        latencies.append(text)
        symbols.append(symbol)
        watcher.wait_idle(300, settle=0.3)
    return latencies, symbols


def storm(root: Path, writes: int, seconds: float, rng: random.Random) -> dict[str, int]:
    sources = [p for p in sorted(root.rglob("*")) if p.suffix in SUFFIXES and p.is_file()]
    counts = {"edit": 0, "create": 0, "delete": 0, "rename": 0}
    start = time.monotonic()
    for i in range(writes):
        time.sleep(max(0.0, start + i * seconds / writes - time.monotonic()))
        roll = rng.random()
        if roll < 0.6 and sources:
            path = rng.choice(sources)
            if path.exists():
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(new_function(path, f"storm{i}"))
            counts["edit"] += 1
        elif roll < 0.8:
            path = root / "storm" / f"s{rng.randrange(200)}.py"
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"def storm_{i}(v):\n    return v + {i}\n", encoding="utf-8")
            sources.append(path)
            counts["create"] += 1
        elif roll < 0.9 and sources:
            rng.choice(sources).unlink(missing_ok=True)
            counts["delete"] += 1
        elif sources:
            path = rng.choice(sources)
            if path.exists():
                target = path.with_name(f"r{i}_{path.name}")
                os.replace(path, target)
                sources.append(target)
            counts["rename"] += 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("tree", type=Path)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--embedder", default=None)
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("--storm-writes", type=int, default=1000)
    ap.add_argument("--storm-seconds", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--reuse", action="store_true", help="keep DIR/tree and its index if there")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    work = args.work or Path(tempfile.mkdtemp(prefix="watchbench-"))
    root = work / "tree"
    if not (args.reuse and (root / ".memserver").is_dir()):
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(args.tree, root, symlinks=True)
    rng = random.Random(args.seed)

    engine = Engine(root, embedder_flag=args.embedder)
    first = engine.index()
    print(f"indexed {first.chunks_total} chunks in {first.seconds:.1f} s", file=sys.stderr)
    reports: list[IndexReport] = []
    watcher, _ = start_watching(Engine(root), on_report=reports.append)
    watcher.wait_idle(300)
    recaller = Engine(root, overrides={"rerank": {"enabled": False}}).recaller(rerank=False)
    recaller.recall("warm up", k=1)
    navigator = Engine(root).navigator()  # a long-lived reader of the graph, as the server's
    navigator.symbols("warm_up")
    reports.clear()

    latencies, symbols = edits(root, watcher, recaller, navigator, args.edits, rng)
    batch_search = [r.seconds_to_search for r in reports if r.files_indexed]
    batch_total = [r.seconds for r in reports if r.files_indexed]
    batch_embed = [r.seconds_embedding for r in reports if r.files_indexed]

    result: dict[str, Any] = {
        "tree": args.tree.name,
        "embedder": engine.settings.embedding.model,
        "chunks": first.chunks_total,
        "edits": len(latencies),
    }
    if latencies:  # --edits 0: the storm only
        result.update({
            "save_to_searchable_p50_s": round(statistics.median(latencies), 3),
            "save_to_searchable_p95_s": round(pct(latencies, 0.95), 3),
            "save_to_searchable_max_s": round(max(latencies), 3),
            "save_to_symbol_p50_s": round(statistics.median(symbols), 3),
            "save_to_symbol_p95_s": round(pct(symbols, 0.95), 3),
            "save_to_symbol_max_s": round(max(symbols), 3),
            "batch_to_bm25_p50_s": round(statistics.median(batch_search), 3),
            "batch_embedding_p50_s": round(statistics.median(batch_embed), 3),
            "batch_total_p50_s": round(statistics.median(batch_total), 3),
            "batch_total_p95_s": round(pct(batch_total, 0.95), 3),
        })  # fmt: skip
    if args.storm_writes > 0:
        reports.clear()
        result["storm"] = run_storm(args, root, engine, watcher, reports, rng, work)
    else:
        watcher.stop()
    print(json.dumps(result, indent=1))


def run_storm(
    args: argparse.Namespace, root: Path, engine: Engine, watcher: Any,
    reports: list[IndexReport], rng: random.Random, work: Path,
) -> dict[str, Any]:  # fmt: skip
    started = time.monotonic()
    counts = storm(root, args.storm_writes, args.storm_seconds, rng)
    wrote = time.monotonic() - started
    watcher.wait_idle(600, settle=1.0)
    settled = time.monotonic() - started
    watcher.stop()
    watched = state(root, engine.index_dir)
    clean_dir = work / "clean-index"
    shutil.rmtree(clean_dir, ignore_errors=True)
    Engine(root, clean_dir, embedder_flag=engine.settings.embedding.model).index()
    clean = state(root, clean_dir)
    return {
        "writes": args.storm_writes,
        "kinds": counts,
        "write_seconds": round(wrote, 2),
        "settled_after_s": round(settled, 2),
        "batches": len(reports),
        "watched_chunks": len(watched["current"]),
        "clean_chunks": len(clean["current"]),
        "missing": len(set(clean["current"]) - set(watched["current"])),
        "extra": len(set(watched["current"]) - set(clean["current"])),
        "bm25_equal": watched["bm25"] == clean["bm25"],
        "manifest_equal": watched["manifest"] == clean["manifest"],
        "identical": watched == clean,
    }


if __name__ == "__main__":
    main()
