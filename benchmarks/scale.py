"""Index and recall at scale: corpora of N tokens built by replicating real source trees.

Usage:
  python benchmarks/scale.py --tokens 1000000 [--tokens 10000000 ...] --work DIR
      --source TREE [--source TREE ...] [--py-source TREE ...] --queries DEV.jsonl
      [--embedder hashing] [--ann-check]

Each corpus is DIR/corpus-<tokens>: copies `copy0001/<tree name>/...` of the
sources (every text file of a --source tree; only the .py files of a
--py-source tree, e.g. a venv's site-packages) until the token count is
reached. Every copied file gets one comment line naming its copy at the top
(JSON files, which have no comments, differ only by their path), so chunk ids
and embedded texts differ slightly from copy to copy; the code itself is not
rewritten. Tokens are counted with the indexing tokenizer.

For each corpus: `memserver index` in a subprocess under /usr/bin/time -v (wall
seconds, peak RSS), the index's size on disk, then a fresh process that opens
the index like the server does (Engine.recaller, reranker off), warms up, and
answers ~100 queries (the `query` field of the queries file): its RSS after
warm-up and after the queries, and recall p50/p95. With --ann-check, the ANN's
recall@10 against exact search (brute force over every vector) for a grid of
nprobes/refine settings. Prints a table on stderr and one JSON object on stdout.

With --report DIR it also writes DIR/index.html and the growth figures (latency, RSS, disk
and index time against tokens, log-scaled; needs matplotlib); --rows FILE draws them from
the JSON a previous run printed, without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEXT_SUFFIXES = {
    ".py", ".pyi", ".go", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".rs", ".java", ".c",
    ".h", ".md", ".rst", ".txt", ".toml", ".yaml", ".yml", ".json", ".scm", ".sh", ".cfg",
    ".ini", ".html", ".css",
}  # fmt: skip
HASH_COMMENT = {".py", ".pyi", ".toml", ".yaml", ".yml", ".sh", ".cfg", ".ini", ".txt", ".rst"}
MARKUP_COMMENT = {".md", ".html"}
SKIP_DIRS = {"__pycache__", "node_modules", ".git", ".venv", ".memserver", ".mypy_cache",
             ".ruff_cache", ".pytest_cache"}  # fmt: skip
MAX_FILE_BYTES = 1_000_000


def comment_line(suffix: str, copy: int) -> str | None:
    text = f"memserver scale benchmark copy {copy:04d}"
    if suffix in HASH_COMMENT:
        return f"# {text}\n"
    if suffix in MARKUP_COMMENT:
        return f"<!-- {text} -->\n"
    if suffix in {".json"}:
        return None
    if suffix == ".css" or suffix in {".c", ".h"}:
        return f"/* {text} */\n"
    if suffix == ".scm":
        return f"; {text}\n"
    return f"// {text}\n"


def source_files(tree: Path, py_only: bool) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            suffix = path.suffix.lower()
            if suffix != ".py" if py_only else suffix not in TEXT_SUFFIXES:
                continue
            if name.startswith(".") or path.is_symlink():
                continue
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            out.append(path)
    return out


def build_pool(sources: list[Path], py_sources: list[Path]) -> list[tuple[str, str, int]]:
    """(relative destination, text, tokens) of every source file, in a fixed order."""
    from memserver.tokens import default_counter

    counter = default_counter()
    pool = []
    for tree, py_only in [*((t, False) for t in sources), *((t, True) for t in py_sources)]:
        label = tree.resolve().name
        for path in source_files(tree, py_only):
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if not text.strip():
                continue
            rel = f"{label}/{path.relative_to(tree).as_posix()}"
            pool.append((rel, text, counter.count(text)))
    return pool


def build_corpus(pool: list[tuple[str, str, int]], tokens: int, root: Path) -> dict:
    """Copies of the pool under copyNNNN/ until `tokens` tokens are written."""
    stamp = root / "corpus.json"
    if stamp.exists():
        info = json.loads(stamp.read_text())
        if info.get("target_tokens") == tokens:
            return dict(info)
    shutil.rmtree(root, ignore_errors=True)
    written = files = 0
    copy = 0
    while written < tokens:
        copy += 1
        for rel, text, count in pool:
            if written >= tokens:
                break
            dest = root / f"copy{copy:04d}" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            line = comment_line(dest.suffix.lower(), copy)
            dest.write_text((line or "") + text, encoding="utf-8")
            written += count + (9 if line else 0)  # the comment line is ~9 tokens
            files += 1
    info = {"target_tokens": tokens, "tokens": written, "files": files, "copies": copy}
    stamp.write_text(json.dumps(info))
    return info


def _time_v(text: str) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) from /usr/bin/time -v output."""
    rss = float(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))  # type: ignore[union-attr]
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text)
    parts = [float(p) for p in wall.group(1).split(":")]  # type: ignore[union-attr]
    seconds = sum(p * 60**i for i, p in enumerate(reversed(parts)))
    return seconds, rss / 1024


def run_index(root: Path, index_dir: Path, embedder: str | None, settings: list[str]) -> dict:
    cmd = [sys.executable, "-m", "memserver", "index", str(root), "--index-dir", str(index_dir),
           "--json", "--rebuild"]  # fmt: skip
    if embedder:
        cmd += ["--embedder", embedder]
    env = dict(os.environ)
    for item in settings:  # MEMSERVER_<SECTION>_<KEY>=value
        key, value = item.split("=", 1)
        env[key] = value
    with tempfile.NamedTemporaryFile("r") as tf:
        proc = subprocess.run(["/usr/bin/time", "-v", "-o", tf.name, *cmd], capture_output=True,
                              text=True, env=env)  # fmt: skip
        timing = tf.read()
    if proc.returncode != 0:
        raise SystemExit(f"index failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    wall, rss = _time_v(timing)
    report = json.loads(proc.stdout)
    return {
        "wall_s": wall, "peak_rss_mb": rss, "run_s": report["seconds"],
        "embed_s": report["seconds_embedding"], "files_indexed": report["files_indexed"],
        "chunks": report["chunks_total"], "chunks_embedded": report["chunks_embedded"],
        "embedder": report.get("embedder"),
    }  # fmt: skip


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def _rss_mb() -> tuple[float, float]:
    status = Path("/proc/self/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    return rss / 1024, hwm / 1024


def probe(root: Path, index_dir: Path, queries: list[str]) -> dict:
    """Runs inside a fresh process: open the index as the server does, warm up, time recall."""
    from memserver.engine import Engine

    started = time.perf_counter()
    recaller = Engine(root, index_dir).recaller(rerank=False)
    recaller.snapshots()  # read the snapshot now, as the server does at start
    for q in queries[:5]:
        recaller.recall(q, rerank=False)
    open_s = time.perf_counter() - started
    rss_warm, _ = _rss_mb()
    times = []
    found = 0
    for q in queries:
        t0 = time.perf_counter()
        result = recaller.recall(q, rerank=False)
        times.append((time.perf_counter() - t0) * 1000)
        found += bool(result.evidence)
    rss_after, hwm = _rss_mb()
    times.sort()
    return {
        "open_and_warm_s": open_s, "server_rss_mb": rss_warm, "server_rss_after_mb": rss_after,
        "server_peak_rss_mb": hwm, "queries": len(times), "with_evidence": found,
        "recall_p50_ms": statistics.median(times),
        "recall_p95_ms": times[min(len(times) - 1, round(0.95 * len(times)) - 1)],
        "large_path": recaller.snapshots().large,
    }  # fmt: skip


def ann_check(root: Path, index_dir: Path, queries: list[str], grid: list[tuple[int, int]]) -> dict:
    """ANN recall@10 against brute force over every current vector, same query vectors."""
    import numpy as np

    from memserver.engine import Engine
    from memserver.store.lancedb import vector_matrix

    engine = Engine(root, index_dir)
    store = engine.open_store()
    table = store.chunks.current_table(with_vectors=True)
    ids = table.column("id").to_pylist()
    vectors = vector_matrix(table, store.meta.dim)
    assert vectors is not None
    del table
    qvs = np.asarray(engine.query_embedder.embed_documents(queries), dtype=np.float32)
    exact_scores = qvs @ vectors.T
    out: dict = {"rows": len(ids), "indexed": store.vector_index("chunks")[0], "settings": []}
    for nprobes, refine in grid:
        hits = tolerant = 0
        times = []
        for i, qv in enumerate(qvs):
            row = exact_scores[i]
            top = np.argpartition(-row, 10)[:10]
            tenth = float(np.min(row[top]))
            exact = {ids[j] for j in top}
            t0 = time.perf_counter()
            got = store.ann_search(
                "chunks",
                qv,
                10,
                where="valid_to IS NULL AND embedded = true",
                nprobes=nprobes,
                refine=refine,
            )
            times.append((time.perf_counter() - t0) * 1000)
            hits += len({cid for cid, _ in got} & exact)
            # a near-tie with the 10th exact score counts too: copies of one chunk differ
            # only by a comment line, so their scores tie up to float noise
            tolerant += sum(1 for _, s in got if s >= tenth - 1e-5)
        times.sort()
        n = len(qvs) * 10
        out["settings"].append({
            "nprobes": nprobes, "refine": refine, "recall_at_10": hits / n,
            "recall_at_10_ties": min(tolerant, n) / n, "p50_ms": statistics.median(times),
            "p95_ms": times[int(0.95 * len(times)) - 1],
        })  # fmt: skip
    return out


def read_queries(path: Path, limit: int) -> list[str]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r["query"] for r in rows][:limit]


def _subprocess_json(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{args[0]} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def bench(tokens: int, args: argparse.Namespace, pool: list[tuple[str, str, int]]) -> dict:
    root = args.work / f"corpus-{tokens}"
    index_dir = args.work / f"index-{tokens}-{args.embedder or 'default'}"
    t0 = time.monotonic()
    corpus = build_corpus(pool, tokens, root)
    corpus["build_s"] = time.monotonic() - t0
    if args.skip_index and (index_dir / "meta.json").exists():
        index = json.loads((index_dir / "scale-index.json").read_text())
    else:
        shutil.rmtree(index_dir, ignore_errors=True)
        index = run_index(root, index_dir, args.embedder, args.setting)
        (index_dir / "scale-index.json").write_text(json.dumps(index))
    index["tokens_per_s"] = corpus["tokens"] / index["wall_s"]
    row = {"tokens": corpus["tokens"], "corpus": corpus, "index": index,
           "disk_mb": disk_mb(index_dir)}  # fmt: skip
    common = [str(root), str(index_dir), str(args.queries), "--n-queries", str(args.n_queries)]
    row["server"] = _subprocess_json(["--probe", *common])
    if args.ann_check:
        row["ann"] = _subprocess_json(["--ann", *common, "--ann-grid", args.ann_grid])
    return row


def table(rows: list[dict]) -> str:
    head = (f"{'tokens':>11} {'files':>7} {'chunks':>8} {'embedder':<22} {'wall s':>8} "
            f"{'tok/s':>8} {'disk MB':>8} {'idx RSS':>8} {'srv RSS':>8} {'p50 ms':>7} "
            f"{'p95 ms':>7} {'ann':>4}")  # fmt: skip
    lines = [head]
    for r in rows:
        i, s = r["index"], r["server"]
        lines.append(
            f"{r['tokens']:>11,} {r['corpus']['files']:>7,} {i['chunks']:>8,} "
            f"{str(i['embedder'])[:22]:<22} {i['wall_s']:>8.0f} {i['tokens_per_s']:>8.0f} "
            f"{r['disk_mb']:>8.0f} {i['peak_rss_mb']:>8.0f} {s['server_rss_mb']:>8.0f} "
            f"{s['recall_p50_ms']:>7.1f} {s['recall_p95_ms']:>7.1f} {s['large_path']!s:>4}"
        )
    return "\n".join(lines)


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
    ap.add_argument("--probe", nargs=3, metavar=("ROOT", "INDEX", "QUERIES"))
    ap.add_argument("--ann", nargs=3, metavar=("ROOT", "INDEX", "QUERIES"))
    ap.add_argument("--report", type=Path, help="also write a report folder with figures here")
    ap.add_argument("--rows", type=Path, help="with --report: the JSON a previous run printed")
    args = ap.parse_args()
    if args.rows:
        if not args.report:
            ap.error("--rows needs --report DIR")
        write_report(json.loads(args.rows.read_text()), args.report)
        return
    if args.probe or args.ann:
        root, index_dir, queries = args.probe or args.ann
        qs = read_queries(Path(queries), args.n_queries)
        if args.probe:
            result = probe(Path(root), Path(index_dir), qs)
        else:
            grid = [tuple(int(x) for x in p.split(":")) for p in args.ann_grid.split(",")]
            result = ann_check(Path(root), Path(index_dir), qs, grid)  # type: ignore[arg-type]
        print(json.dumps(result))
        return
    if not args.tokens or not (args.source or args.py_source) or not args.queries:
        ap.error("--tokens, a --source or --py-source, and --queries are required")
    args.work.mkdir(parents=True, exist_ok=True)
    pool = build_pool(args.source, args.py_source)
    print(f"pool: {len(pool)} files, {sum(c for *_, c in pool):,} tokens", file=sys.stderr)
    rows = []
    for tokens in args.tokens:
        rows.append(bench(tokens, args, pool))
        print(table(rows), file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1))
    if args.report:
        write_report(rows, args.report)


def write_report(rows: list[dict], out: Path) -> None:
    from memserver.eval.figures import scale_report

    command = " ".join(["python", *(a if " " not in a else repr(a) for a in sys.argv)])
    written = scale_report(rows, out, command)
    print(f"report: {written.index} ({len(written.figures)} figures)", file=sys.stderr)


if __name__ == "__main__":
    main()
