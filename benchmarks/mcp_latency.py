"""MCP server latency: start-up to `tools/list` over stdio, and recall round trips.

Usage: python benchmarks/mcp_latency.py [--root REPO] [--runs 5] [--calls 100] [--drop-caches]
                                        [--queries FILE.jsonl [--package NAME]] [--cold-rss]

Without --root, the tests' small sample repository is written to a temporary folder
and indexed with the hashing embedder (no model needed). Measured, each in fresh
`memserver serve` processes (started through `serve_command`, like the tests):

- start-up: process start → `initialize` answered → `tools/list` answered, over raw
  stdio, median of --runs. "warm": a normal start (bytecode and files cached);
  "cold_no_bytecode": an empty bytecode cache, so every module compiles from source
  (a first start after an install that did not precompile); with --drop-caches (root
  only) also "cold_page_cache": the OS page cache dropped before each run.
- first recall: process start → the first recall answered (the engine loads in the
  background after start, so this is the engine's cold load).
- recall round trips over stdio and streamable HTTP through the SDK clients: --calls
  calls after one warm-up call; p50 / p95 / max in milliseconds; over stdio also the
  server's resident memory after them (VmRSS, and its peak VmHWM, from /proc).
  By default the calls cycle through five fixed queries; with --queries they are the
  distinct `query` fields of a JSONL file (e.g. the code bench's dev.jsonl, --package
  keeping one package's lines), in file order, cycled only when there are fewer than
  --calls: a long-lived server meets new words, and the pages of the model's word table
  and of the index it touches for them count in its resident memory.
  --cold-rss (root only) drops the OS page cache before the server of the stdio round
  trips starts. Its resident memory counts the file pages it maps (libraries, the model's
  weights), and how many a touch maps depends on what is cached: a kernel with large
  page-cache folios (ext4 from Linux 6.16) maps a whole folio around each page touched,
  and a file just written (a fresh install, a model copy just made) sits in large folios.
  The same server measured 297 MB after a drop and 407 MB right after an install
  (Linux 6.18); the drop gives what a server started after a reboot holds.

--index-dir points the servers at an index kept outside the repository.

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

SERVE = (
    "from memserver.server.cli_command import serve_command; "
    "serve_command()(prog_name='memserver serve')"
)
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}
QUERIES = [
    "send a request again with backoff",
    "parse HTTP response bytes",
    "register routes for the app",
    "load the JSON settings file",
    "RetryPolicy.delays",
]


def read_queries(path: Path, package: str | None) -> list[str]:
    """The distinct queries of a JSONL file (one package's, if named), in file order."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    queries = [r["query"] for r in rows if package is None or r.get("package") == package]
    if not queries:
        raise SystemExit(f"no queries in {path}" + (f" for package {package}" if package else ""))
    return list(dict.fromkeys(queries))


def sample_repo(work: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from memserver.engine import Engine
    from tests.conftest import SAMPLE, write_tree

    root = write_tree(work / "repo", SAMPLE)
    Engine(root, None, embedder_flag="hashing", env={}).index()
    return root


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSERVER_")}
    return {**env, **extra}


def drop_page_cache() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _line(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    proc.stdin.flush()


def _reply(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    reply: dict[str, Any] = json.loads(proc.stdout.readline())
    return reply


ARGS: list[str] = []  # --index-dir, when given


def serve_args(root: Path) -> list[str]:
    return ["-c", SERVE, "--root", str(root), *ARGS, "--log-level", "warning"]


def server_memory() -> dict[str, Any]:
    """VmRSS and VmHWM in MB of this process's `memserver serve` child, its anonymous and
    file-backed shares, and the mappings holding the most of it (`largest`, MB)."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
            cmdline = (status.parent / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if int(fields.get("PPid", "0")) == os.getpid() and b"serve_command" in cmdline:
            out: dict[str, Any] = {
                k.lower() + "_mb": round(int(fields[k].split()[0]) / 1024, 1)
                for k in ("VmRSS", "VmHWM", "RssAnon", "RssFile")
            }
            out["largest"] = largest_mappings(status.parent / "smaps")
            return out
    return {}


def largest_mappings(smaps: Path, top: int = 12) -> dict[str, float]:
    """Resident MB per mapped file (anonymous mappings as "[anon]"), the largest first."""
    held: dict[str, int] = {}
    name = ""
    try:
        lines = smaps.read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        head, _, rest = line.partition(" ")
        if "-" in head and not head.endswith(":"):  # a mapping's first line
            parts = line.split(None, 5)
            name = Path(parts[5]).name if len(parts) > 5 else "[anon]"
        elif head == "Rss:":
            held[name] = held.get(name, 0) + int(rest.split()[0])
    ranked = sorted(held.items(), key=lambda kv: -kv[1])[:top]
    return {k: round(v / 1024, 1) for k, v in ranked}


def one_start(root: Path, env: dict[str, str], first_recall: bool) -> dict[str, float]:
    """Seconds from spawning the process to each answer over raw stdio."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *serve_args(root)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        _line(proc, {"id": 1, "method": "initialize", "params": INIT})
        _reply(proc)
        out = {"initialize": time.perf_counter() - started}
        _line(proc, {"method": "notifications/initialized"})
        _line(proc, {"id": 2, "method": "tools/list"})
        _reply(proc)
        out["tools_list"] = time.perf_counter() - started
        if first_recall:
            call = {"name": "recall", "arguments": {"query": QUERIES[0]}}
            _line(proc, {"id": 3, "method": "tools/call", "params": call})
            _reply(proc)
            out["first_recall"] = time.perf_counter() - started
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    return out


def startup(root: Path, runs: int, mode: str) -> dict[str, Any]:
    samples: list[dict[str, float]] = []
    if mode == "warm":
        one_start(root, server_env(), first_recall=False)  # fill the page cache once
    for _ in range(runs):
        env = server_env()
        with tempfile.TemporaryDirectory(prefix="pycache-") as prefix:
            if mode == "cold_no_bytecode":
                env |= {"PYTHONPYCACHEPREFIX": prefix, "PYTHONDONTWRITEBYTECODE": "1"}
            elif mode == "cold_page_cache":
                drop_page_cache()
            samples.append(one_start(root, env, first_recall=True))
    return {
        key: round(statistics.median(s[key] for s in samples), 3)
        for key in ("initialize", "tools_list", "first_recall")
    }


def percentiles(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(p95, 2),
        "max_ms": round(ordered[-1], 2),
        "calls": len(ordered),
    }


async def round_trips(client: Any, calls: int) -> dict[str, float]:
    await client.call_tool("recall", {"query": "warm up"})  # the engine load is not a round trip
    ms: list[float] = []
    for i in range(calls):
        started = time.perf_counter()
        result = await client.call_tool("recall", {"query": QUERIES[i % len(QUERIES)]})
        ms.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result
    return percentiles(ms)


async def stdio_round_trips(root: Path, calls: int, cold: bool) -> dict[str, float]:
    from mcp import Client, StdioServerParameters

    if cold:
        drop_page_cache()
    params = StdioServerParameters(command=sys.executable, args=serve_args(root),
                                   env=server_env())  # fmt: skip
    async with Client(params) as client:
        return {**await round_trips(client, calls), **server_memory()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("the HTTP server did not start")


async def http_round_trips(root: Path, calls: int) -> dict[str, float]:
    from mcp import Client

    port = free_port()
    cmd = [sys.executable, *serve_args(root), "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=server_env())  # fmt: skip
    try:
        wait_listening(port, proc)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            return await round_trips(client, calls)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="An indexed repository (default: a sample).")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--drop-caches", action="store_true", help="Also time page-cache-cold starts.")
    ap.add_argument("--index-dir", type=Path, help="The index, when not in the repository.")
    ap.add_argument("--queries", type=Path, help="JSONL with a `query` per line to recall.")
    ap.add_argument("--package", help="With --queries: only the lines of this `package`.")
    ap.add_argument(
        "--cold-rss",
        action="store_true",
        help="Drop the page cache before the stdio round trips (see above).",
    )
    args = ap.parse_args()
    if args.queries:
        QUERIES[:] = read_queries(args.queries, args.package)
    if args.index_dir:
        ARGS.extend(["--index-dir", str(args.index_dir.resolve())])
    with tempfile.TemporaryDirectory(prefix="mcp-latency-") as tmp:
        root = args.root.resolve() if args.root else sample_repo(Path(tmp))
        modes = ["warm", "cold_no_bytecode"] + (["cold_page_cache"] if args.drop_caches else [])
        report: dict[str, Any] = {
            "root": str(root),
            "cpus": os.cpu_count(),
            "runs": args.runs,
            "distinct_queries": len(QUERIES),
        }
        for mode in modes:
            report[f"startup_{mode}_s"] = startup(root, args.runs, mode)
        if args.calls:
            report["recall_stdio"] = anyio.run(stdio_round_trips, root, args.calls, args.cold_rss)
            report["recall_http"] = anyio.run(http_round_trips, root, args.calls)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
