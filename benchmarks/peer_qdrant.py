"""memserver beside mcp-server-qdrant on the same chunks, model and queries (issue 15, target 1).

Usage:
  python benchmarks/peer_qdrant.py CORPUS [CORPUS ...] --queries DEV.jsonl
      --peer-command /path/to/venv/bin/mcp-server-qdrant [--work DIR] [--json]
      [--max-chunks N] [--max-queries N]

The peer is installed by the user in a virtual environment of its own
(`python3 -m venv V && V/bin/pip install mcp-server-qdrant==0.8.1`). Both
servers read the fastembed model from `$FASTEMBED_CACHE_PATH` (set it, and
`HF_HUB_OFFLINE=1`, before running this). A corpus folder's name is its
package in the queries file (e.g. `.../corpora/click`).

Per corpus, in this order, in one run:

1. `memserver index CORPUS --index-dir <fresh> --embedder <MiniLM> --json` in a
   subprocess (given the `MEMSERVER_INDEX_*` settings of this environment): wall
   and CPU seconds to fully embedded, peak RSS, its own report. The
   current file chunks are then read from the index's LanceDB `chunks` table
   (read-only; a benchmark may look inside the store, memserver has no export).
2. mcp-server-qdrant over MCP stdio, in an environment holding only PATH, HOME,
   the two model variables, EMBEDDING_MODEL, QDRANT_LOCAL_PATH (fresh) and
   COLLECTION_NAME: one `qdrant-store` per memserver chunk (`path`, `symbol` and
   the code as `information`, the span as `metadata`), then one `qdrant-find`
   per query. Path and span of each found entry are parsed back from its
   `<metadata>` JSON.
3. `memserver serve` over MCP stdio, with only PATH, HOME and the two model
   variables in its environment (as an MCP client starts it): one `recall` per
   query.

For each server: spawn → `initialize` answered → `tools/list` answered, one
warm-up call (not counted), then per query the round-trip latency, the tokens
of the text content the client receives (cl100k_base, memserver's counter), and
the hit rank (bench README rule: same path, overlap ≥ half the gold span; an
answerable query memserver abstained on is a miss for the gated numbers); RSS
of the server process after the queries (VmRSS / VmHWM from /proc). MRR@10 and
R@10 are over the answerable queries; latency and tokens over all of them.

Prints one markdown table per corpus on stdout (or one JSON object with
--json); progress goes to stderr. Timings depend on the machine's load: run it
on an otherwise idle machine, or say that it was not.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_VARS = ("FASTEMBED_CACHE_PATH", "HF_HUB_OFFLINE")
TIMEOUT_S = 600.0


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- scoring ---------------------------------------------------------------------------


def is_hit(span: Mapping[str, Any], q: Mapping[str, Any]) -> bool:
    """The bench README's rule: same path, the chunk covers ≥ half of the gold span."""
    if span.get("path") != q["gold_path"]:
        return False
    gs, ge = q["gold_start_line"], q["gold_end_line"]
    overlap = min(int(span["end_line"]), ge) - max(int(span["start_line"]), gs) + 1
    return bool(overlap >= 0.5 * (ge - gs + 1))


def first_hit(spans: Sequence[Mapping[str, Any]], q: Mapping[str, Any]) -> int | None:
    return next((i for i, s in enumerate(spans[:10], 1) if is_hit(s, q)), None)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[int(p * (len(ordered) - 1))] if ordered else 0.0


@dataclass
class Asked:
    """What one server answered to the queries of one package."""

    ms: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)  # of the text content the client gets
    reported: list[int] = field(default_factory=list)  # the server's own `tokens` field
    ranks: list[int | None] = field(default_factory=list)  # answerable only, gate applied
    ungated: list[int | None] = field(default_factory=list)  # answerable only, gate ignored
    abstained: list[bool] = field(default_factory=list)  # unanswerable only
    false_abstained: int = 0

    def summary(self) -> dict[str, Any]:
        n = max(1, len(self.ranks))

        def mrr(ranks: list[int | None]) -> float:
            return sum(1 / r for r in ranks if r) / n

        return {
            "mrr@10": round(mrr(self.ranks), 4),
            "recall@10": round(sum(1 for r in self.ranks if r) / n, 4),
            "ungated_mrr@10": round(mrr(self.ungated), 4),
            "ungated_recall@10": round(sum(1 for r in self.ungated if r) / n, 4),
            "abstain": round(sum(self.abstained) / max(1, len(self.abstained)), 4),
            "false_abstain": round(self.false_abstained / n, 4),
            "p50_ms": round(statistics.median(self.ms), 1) if self.ms else 0.0,
            "p95_ms": round(percentile(self.ms, 0.95), 1),
            "tokens_mean": round(statistics.mean(self.tokens), 1) if self.tokens else 0.0,
            "reported_tokens_mean": (
                round(statistics.mean(self.reported), 1) if self.reported else "—"
            ),
            "queries": len(self.ms),
            "answerable": len(self.ranks),
        }


# -- processes ---------------------------------------------------------------------------


def model_env() -> dict[str, str]:
    missing = [v for v in MODEL_VARS if not os.environ.get(v)]
    if missing:
        sys.exit(f"set {' and '.join(missing)} (the offline fastembed cache) first")
    base = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    cache = str(Path(os.environ["FASTEMBED_CACHE_PATH"]).resolve())
    return {**base, "FASTEMBED_CACHE_PATH": cache, "HF_HUB_OFFLINE": os.environ["HF_HUB_OFFLINE"]}


def ours_env() -> dict[str, str]:
    """Where memserver makes an int8 copy of the model (`--memserver-model`), if set."""
    return {k: os.environ[k] for k in ("MEMSERVER_MODEL_CACHE",) if os.environ.get(k)}


def memserver_command() -> str:
    beside = Path(sys.executable).parent / "memserver"
    found = str(beside) if beside.exists() else shutil.which("memserver")
    if not found:
        sys.exit("no `memserver` command next to this Python or on PATH")
    return found


def children() -> set[int]:
    """Pids of this process's direct children (the stdio servers are spawned directly)."""
    me, out = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me:
            out.add(int(entry.name))
    return out


def rss_mb(pid: int | None) -> dict[str, float]:
    if pid is None:
        return {}
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def cpu_s(pid: int | None) -> float:
    """User + system CPU seconds a live process has used so far (all its threads)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_index(cmd: list[str], root: Path, index_dir: Path, env: dict[str, str],
              model: str = MODEL) -> dict[str, Any]:  # fmt: skip
    """`memserver index` cold, timed from spawn to exit, with its peak RSS."""
    argv = [cmd[0], "index", str(root), "--index-dir", str(index_dir), "--embedder", model]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen([*argv, "--json"], stdout=out, stderr=err, env=env,
                                cwd=index_dir.parent)  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)  # its own rusage: peak RSS of that process
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            sys.exit(f"memserver index failed ({proc.returncode}):\n{err.read().decode()[-2000:]}")
        report = json.loads(out.read())
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "report": report}  # fmt: skip


def read_chunks(index_dir: Path) -> list[dict[str, Any]]:
    """The index's current file chunks, read-only, in path/line order."""
    import lancedb

    where = index_dir / "lance" if (index_dir / "lance").is_dir() else index_dir
    table = lancedb.connect(str(where)).open_table("chunks")
    cols = ["origin", "path", "symbol", "start_line", "end_line", "text", "valid_to"]
    rows = table.to_arrow().select(cols).to_pylist()
    rows = [r for r in rows if r["origin"] == "file" and r["valid_to"] is None]
    rows.sort(key=lambda r: (r["path"], r["start_line"]))
    return rows


def count_vectors(index_dir: Path) -> dict[str, int]:
    import lancedb

    where = index_dir / "lance" if (index_dir / "lance").is_dir() else index_dir
    db, out = lancedb.connect(str(where)), {}
    for name in ("chunks", "memories"):
        t = db.open_table(name).to_arrow().select(["embedded"])
        out[name] = sum(1 for v in t.column("embedded").to_pylist() if v)
    return out


# -- MCP ---------------------------------------------------------------------------------


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def peer_spans(text: str) -> list[dict[str, Any]]:
    """Path and span of each entry of a `qdrant-find` answer, from its metadata JSON."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError:
        items = [text]
    items = items if isinstance(items, list) else [str(items)]
    spans = []
    for item in items:
        head, sep, tail = str(item).rpartition("<metadata>")
        if not sep or not head.startswith("<entry>"):
            continue
        try:
            spans.append(json.loads(tail.removesuffix("</metadata></entry>")))
        except json.JSONDecodeError:
            continue
    return spans


def memserver_spans(result: Any) -> tuple[list[dict[str, Any]], bool]:
    data = result.structured_content or json.loads(text_of(result))
    return list(data.get("evidence", [])), bool(data.get("found", True))


@dataclass
class Session:
    """One stdio server: how fast it came up and its pid."""

    startup: dict[str, float]
    pid: int | None
    session: Any


async def open_session(
    stack: Any, command: str, args: list[str], env: dict[str, str], cwd: Path, errlog: Any
) -> Session:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
    before = children()
    started = time.perf_counter()
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    session = await stack.enter_async_context(
        ClientSession(read, write, read_timeout_seconds=TIMEOUT_S)
    )
    await session.initialize()
    initialized = time.perf_counter()
    await session.list_tools()
    listed = time.perf_counter()
    new = sorted(children() - before)
    return Session(
        startup={  # the process starts as the stdio client opens: spawn ≈ initialize sent
            "spawn_to_initialize_s": round(initialized - started, 3),
            "tools_list_s": round(listed - initialized, 3),
            "spawn_to_tools_list_s": round(listed - started, 3),
        },
        pid=new[0] if new else None,
        session=session,
    )


async def ask_all(
    session: Any,
    tool: str,
    arg: Callable[[str], dict[str, Any]],
    queries: Sequence[dict[str, Any]],
    spans_of: Callable[[Any], tuple[list[dict[str, Any]], bool]],
) -> Asked:
    from memserver.tokens import default_counter

    count = default_counter().count
    await session.call_tool(tool, arg("warm up the model"))  # loads are not round trips
    asked = Asked()
    for q in queries:
        started = time.perf_counter()
        result = await session.call_tool(tool, arg(q["query"]))
        asked.ms.append((time.perf_counter() - started) * 1000)
        if result.is_error:
            raise RuntimeError(f"{tool} failed on {q['qid']}: {text_of(result)[:500]}")
        asked.tokens.append(count(text_of(result)))
        if isinstance(result.structured_content, dict) and "tokens" in result.structured_content:
            asked.reported.append(int(result.structured_content["tokens"]))
        spans, found = spans_of(result)
        if q["answerable"]:
            rank = first_hit(spans, q)
            asked.ungated.append(rank)
            asked.ranks.append(rank if found else None)
            asked.false_abstained += not found
        else:
            asked.abstained.append(not found)
    return asked


async def run_peer(
    peer: str, chunks: Sequence[dict[str, Any]], queries: Sequence[dict[str, Any]], work: Path
) -> dict[str, Any]:
    from contextlib import AsyncExitStack

    env = {**model_env(), "EMBEDDING_MODEL": MODEL, "QDRANT_LOCAL_PATH": str(work / "qdrant"),
           "COLLECTION_NAME": "bench"}  # fmt: skip
    with (work / "peer.stderr.log").open("w") as errlog:
        async with AsyncExitStack() as stack:
            s = await open_session(stack, peer, [], env, work, errlog)
            started, cpu = time.perf_counter(), cpu_s(s.pid)
            for i, c in enumerate(chunks):
                info = "\n".join(p for p in (c["path"], c["symbol"], c["text"]) if p)
                meta = {"path": c["path"], "symbol": c["symbol"],
                        "start_line": c["start_line"], "end_line": c["end_line"]}  # fmt: skip
                result = await s.session.call_tool(
                    "qdrant-store", {"information": info, "metadata": meta}
                )
                if result.is_error:
                    raise RuntimeError(f"qdrant-store failed: {text_of(result)[:500]}")
                if (i + 1) % 500 == 0:
                    log(f"  peer: stored {i + 1}/{len(chunks)}")
            store_s, store_cpu = time.perf_counter() - started, cpu_s(s.pid) - cpu
            asked = await ask_all(s.session, "qdrant-find", lambda q: {"query": q}, queries,
                                  lambda r: (peer_spans(text_of(r)), True))  # fmt: skip
            rss = rss_mb(s.pid)
    return {"store_s": round(store_s, 2), "store_cpu_s": round(store_cpu, 2),
            "stores": len(chunks), "vectors": len(chunks),
            **s.startup, "rss_mb": rss, **asked.summary()}  # fmt: skip


async def run_memserver(
    cmd: str, root: Path, index_dir: Path, queries: Sequence[dict[str, Any]], work: Path
) -> dict[str, Any]:
    """(The server takes the embedder the index was built with.)"""
    from contextlib import AsyncExitStack

    args = ["serve", "--root", str(root), "--index-dir", str(index_dir), "--log-level", "warning"]
    with (work / "memserver.stderr.log").open("w") as errlog:
        async with AsyncExitStack() as stack:
            s = await open_session(stack, cmd, args, {**model_env(), **ours_env()}, work, errlog)
            asked = await ask_all(s.session, "recall", lambda q: {"query": q}, queries,
                                  memserver_spans)  # fmt: skip
            rss = rss_mb(s.pid)
    return {**s.startup, "rss_mb": rss, **asked.summary()}


# -- one corpus, the report --------------------------------------------------------------


def bench_corpus(
    root: Path, queries: list[dict[str, Any]], peer: str, work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    name = root.name
    cwork = work / name
    shutil.rmtree(cwork, ignore_errors=True)
    cwork.mkdir(parents=True)
    index_dir = cwork / "memserver.index"
    log(f"{name}: memserver index (cold)")
    settings = {k: v for k, v in os.environ.items() if k.startswith("MEMSERVER_INDEX_")}
    env = {**model_env(), **ours_env(), **settings}
    indexed = run_index([memserver_command()], root, index_dir, env, args.memserver_model)
    chunks = read_chunks(index_dir)[: args.max_chunks or None]
    vectors = count_vectors(index_dir)
    log(f"{name}: {len(chunks)} chunks; peer stores them one by one")
    peer_out = anyio.run(run_peer, peer, chunks, queries, cwork)
    log(f"{name}: memserver serve")
    ours = anyio.run(run_memserver, memserver_command(), root, index_dir, queries, cwork)
    report = indexed["report"]
    ours = {
        "index_wall_s": indexed["wall_s"],
        "index_cpu_s": indexed["cpu_s"],
        "index_run_s": report.get("seconds"),
        "index_embedding_s": report.get("seconds_embedding"),
        "index_to_search_s": report.get("seconds_to_search"),
        "index_peak_rss_mb": indexed["peak_rss_mb"],
        "chunks": report.get("chunks_total"),
        "memories": report.get("memories_added"),
        "vectors": vectors["chunks"] + vectors["memories"],
        "vectors_by_table": vectors,
        **ours,
    }
    return {
        "package": name,
        "chunks_stored_by_peer": len(chunks),
        "queries": len(queries),
        "index_over_store": round(ours["index_wall_s"] / max(1e-9, peer_out["store_s"]), 3),
        # CPU seconds, server process only on both sides: less at the mercy of other load
        "index_over_store_cpu": round(ours["index_cpu_s"] / max(1e-9, peer_out["store_cpu_s"]), 3),
        "peer": peer_out,
        "memserver": ours,
    }


def _get(*keys: str) -> Callable[[dict[str, Any]], Any]:
    """A cell: one value, or several joined with ' / '; '—' where a server has none."""

    def cell(d: dict[str, Any]) -> Any:
        vals = []
        for k in keys:
            where, _, sub = k.partition(".")
            v = d.get(where, "—")
            vals.append(v.get(sub, "—") if sub and isinstance(v, dict) else v)
        return " / ".join(str(v) for v in vals)

    return cell


ROWS = [
    ("total store (peer) / cold index to fully embedded (memserver), s",
     _get("store_s"), _get("index_wall_s")),
    ("the same in CPU seconds of the server process", _get("store_cpu_s"),
     _get("index_cpu_s")),
    ("chunks", _get("stores"), _get("chunks")),
    ("vectors", _get("vectors"), _get("vectors")),
    ("MRR@10 / R@10", _get("mrr@10", "recall@10"), _get("mrr@10", "recall@10")),
    ("MRR@10 / R@10 ignoring the gate", _get("ungated_mrr@10", "ungated_recall@10"),
     _get("ungated_mrr@10", "ungated_recall@10")),
    ("abstain / false abstain", _get("abstain", "false_abstain"),
     _get("abstain", "false_abstain")),
    ("find / recall p50 / p95 ms", _get("p50_ms", "p95_ms"), _get("p50_ms", "p95_ms")),
    ("mean result tokens (cl100k, text content received)", _get("tokens_mean"),
     _get("tokens_mean")),
    ("mean `tokens` the server reports", _get("reported_tokens_mean"),
     _get("reported_tokens_mean")),
    ("server RSS after the queries / peak, MB", _get("rss_mb.VmRSS", "rss_mb.VmHWM"),
     _get("rss_mb.VmRSS", "rss_mb.VmHWM")),
    ("spawn → tools/list answered / of which tools/list, s",
     _get("spawn_to_tools_list_s", "tools_list_s"),
     _get("spawn_to_tools_list_s", "tools_list_s")),
]  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    p, m = result["peer"], result["memserver"]
    lines = [
        f"### {result['package']} ({result['queries']} queries, {p['answerable']} answerable)",
        "",
        f"memserver cold index / peer store = **{result['index_over_store']}** (target ≤ 0.5; "
        f"in CPU seconds {result['index_over_store_cpu']}). "
        f"memserver index: run {m['index_run_s']} s, embedding {m['index_embedding_s']} s, "
        f"keyword-searchable after {m['index_to_search_s']} s, "
        f"peak RSS {m['index_peak_rss_mb']} MB, {m['memories']} memories.",
        "",
        "| | mcp-server-qdrant | memserver |",
        "|---|---:|---:|",
    ]
    lines += [f"| {label} | {fp(p)} | {fm(m)} |" for label, fp, fm in ROWS]
    return "\n".join(lines)


def load_queries(path: Path) -> dict[str, list[dict[str, Any]]]:
    by_pkg: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            by_pkg.setdefault(q["package"], []).append(q)
    return by_pkg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpora", nargs="+", type=Path, help="prepared source trees")
    ap.add_argument("--queries", required=True, type=Path, help="the bench's dev.jsonl")
    ap.add_argument("--peer-command", required=True, help="the mcp-server-qdrant executable")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: temporary)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead")
    ap.add_argument("--max-chunks", type=int, default=0, help="store only N chunks (smoke runs)")
    ap.add_argument("--max-queries", type=int, default=0, help="ask only N queries (smoke runs)")
    ap.add_argument("--memserver-model", default=MODEL,
                    help="memserver's embedder (e.g. an int8 copy of the model; the peer "
                    "keeps the fp32 model)")  # fmt: skip
    args = ap.parse_args()
    peer = shutil.which(args.peer_command) or args.peer_command
    if not Path(peer).exists():
        sys.exit(f"no peer command {args.peer_command!r}")
    by_pkg = load_queries(args.queries)
    with tempfile.TemporaryDirectory(prefix="peer-qdrant-") as tmp:
        work = (args.work or Path(tmp)).resolve()
        results = []
        for root in args.corpora:
            queries = by_pkg.get(root.name)
            if not queries:
                sys.exit(f"no queries for package {root.name!r} in {args.queries}")
            queries = queries[: args.max_queries or None]
            results.append(bench_corpus(root.resolve(), queries, peer, work, args))
    out = {"cpus": os.cpu_count(), "loadavg_at_end": os.getloadavg(), "model": MODEL,
           "memserver_model": args.memserver_model, "corpora": results}  # fmt: skip
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print("\n\n".join(markdown(r) for r in results))


if __name__ == "__main__":
    main()
