"""`memserver eval scale`: index and recall at scale, on corpora of N tokens built by
replicating real source trees.

Each corpus is WORK/corpus-<tokens>: copies `copy0001/<tree name>/...` of the sources (every
text file of a source tree; only the .py files of a py-source tree, e.g. a venv's
site-packages) until the token count is reached. Every copied file gets one comment line
naming its copy at the top (JSON files, which have no comments, differ only by their path),
so chunk ids and embedded texts differ slightly from copy to copy; the code itself is not
rewritten. Tokens are counted with the indexing tokenizer.

For each corpus: `memserver index` in a subprocess (wall seconds, the child's peak RSS), the
index's size on disk, then a fresh process that opens the index like the server does
(Engine.recaller, reranker off), warms up, and answers the queries (the `query` field of a
JSONL file): its RSS after warm-up and after the queries, and recall p50/p95. With
`ann_check`, the ANN's recall@10 against exact search (brute force over every vector) for a
grid of nprobes/refine settings. `benchmarks/scale.py` is the same, as a script.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memserver.core.errors import MemserverError

__all__ = ["Options", "run", "table"]


class EvalError(MemserverError):
    """A step of the scale run failed (its stderr is in the message)."""

    exit_code = 6


@dataclass
class Options:
    tokens: list[int]
    work: Path
    queries: Path
    sources: list[Path] = field(default_factory=list)
    py_sources: list[Path] = field(default_factory=list)
    n_queries: int = 100
    embedder: str | None = None
    setting: list[str] = field(default_factory=list)  # MEMSERVER_<SECTION>_<KEY>=value
    ann_check: bool = False
    ann_grid: str = "10:1,20:5,40:5,40:10"
    skip_index: bool = False


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


def build_corpus(pool: list[tuple[str, str, int]], tokens: int, root: Path) -> dict[str, Any]:
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


def run_index(
    root: Path, index_dir: Path, embedder: str | None, settings: list[str]
) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "memserver", "index", str(root), "--index-dir", str(index_dir),
           "--json", "--rebuild"]  # fmt: skip
    if embedder:
        cmd += ["--embedder", embedder]
    env = dict(os.environ)
    for item in settings:  # MEMSERVER_<SECTION>_<KEY>=value
        key, value = item.split("=", 1)
        env[key] = value
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise EvalError(f"index failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    rss = _children_peak_mb()
    report = json.loads(proc.stdout)
    return {
        "wall_s": wall, "peak_rss_mb": rss, "run_s": report["seconds"],
        "embed_s": report["seconds_embedding"], "files_indexed": report["files_indexed"],
        "chunks": report["chunks_total"], "chunks_embedded": report["chunks_embedded"],
        "embedder": report.get("embedder"),
    }  # fmt: skip


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def _children_peak_mb() -> float:
    """The peak RSS of the largest child process waited for so far (the index run)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 1024)  # bytes on macOS, KiB on Linux


def _rss_mb() -> tuple[float, float]:
    """(current, peak) RSS of this process in MB (Linux /proc; the peak only elsewhere)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak_mb = peak / (2**20 if sys.platform == "darwin" else 1024)
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return peak_mb, peak_mb
    found = re.search(r"VmRSS:\s+(\d+)", status)
    return (int(found.group(1)) / 1024 if found else peak_mb), peak_mb


def probe(root: Path, index_dir: Path, queries: list[str]) -> dict[str, Any]:
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


def ann_check(
    root: Path, index_dir: Path, queries: list[str], grid: list[tuple[int, int]]
) -> dict[str, Any]:
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
    embedder = engine.query_embedder
    if embedder is None:
        raise EvalError("the ANN check needs an index with vectors", hint="drop --embedder none")
    qvs = np.asarray(embedder.embed_documents(queries), dtype=np.float32)
    exact_scores = qvs @ vectors.T
    out: dict[str, Any] = {
        "rows": len(ids),
        "indexed": store.vector_index("chunks")[0],
        "settings": [],
    }
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


def _subprocess_json(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "memserver.eval.scale", *args],
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode != 0:
        raise EvalError(f"{args[0]} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def bench(tokens: int, args: Options, pool: list[tuple[str, str, int]]) -> dict[str, Any]:
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
    common = [str(root), str(index_dir), str(args.queries), str(args.n_queries)]
    row["server"] = _subprocess_json(["probe", *common])
    if args.ann_check:
        row["ann"] = _subprocess_json(["ann", *common, args.ann_grid])
    return row


def table(rows: list[dict[str, Any]]) -> str:
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


def run(options: Options, log: Any = None) -> list[dict[str, Any]]:
    """One row per corpus size; `log(text)` hears the pool and the table as it grows."""
    say = log or (lambda _text: None)
    if not options.sources and not options.py_sources:
        raise EvalError("no source tree given", hint="pass --source TREE (or --py-source TREE)")
    options.work.mkdir(parents=True, exist_ok=True)
    pool = build_pool(options.sources, options.py_sources)
    if not pool:
        raise EvalError("the source trees hold no text file to copy",
                        hint="point --source at a folder of source code")  # fmt: skip
    say(f"pool: {len(pool)} files, {sum(c for *_, c in pool):,} tokens")
    rows: list[dict[str, Any]] = []
    for tokens in options.tokens:
        rows.append(bench(tokens, options, pool))
        say(table(rows))
    return rows


def _child(argv: list[str]) -> None:
    """`python -m memserver.eval.scale probe|ann ROOT INDEX QUERIES N [GRID]`: one JSON line."""
    what, root, index_dir, queries, n = argv[:5]
    qs = read_queries(Path(queries), int(n))
    if what == "probe":
        result = probe(Path(root), Path(index_dir), qs)
    else:
        grid = [(int(a), int(b)) for a, b in (p.split(":") for p in argv[5].split(","))]
        result = ann_check(Path(root), Path(index_dir), qs, grid)
    print(json.dumps(result))


if __name__ == "__main__":
    _child(sys.argv[1:])
