"""Several HTTP clients recalling at once while `memserver index` keeps re-running.

Usage: python benchmarks/mcp_concurrency.py --root TREE [--index-dir INDEX] [--clients 8]
       [--calls 100] [--queries dev.jsonl] [--edit-files 10]

TREE is copied to a temporary folder (with INDEX, if given, as its index, so the cold
build is skipped), one `memserver serve --transport http` process serves the copy, and
--clients SDK clients, each in its own session, send --calls recalls each. Meanwhile a
writer loop appends a comment to --edit-files source files of the copy, runs `memserver
index` on it as a subprocess, and repeats until the clients are done; one `remember`
per loop goes through the server too. Every recall is checked: no tool error, and each
evidence item well formed (an id, a path, start ≤ end, text). Prints one JSON object:
errors, latency p50/p95/max over all recalls, and how many index runs overlapped them.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_latency import SERVE, free_port, percentiles, server_env, wait_listening

MEMSERVER = str(Path(sys.executable).parent / "memserver")
FALLBACK_QUERIES = [
    "where is the configuration loaded",
    "how are errors reported to the user",
    "parse command line arguments",
    "open a file lazily",
    "retry a failed request",
]


def load_queries(path: Path | None, package: str) -> list[str]:
    if path is None:
        return FALLBACK_QUERIES
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    mine = [r["query"] for r in rows if r.get("package") == package]
    return mine or [r["query"] for r in rows]


def well_formed(pack: dict[str, Any]) -> bool:
    return all(
        e.get("id", "").startswith("c_") and e.get("path") and e["start_line"] <= e["end_line"]
        and isinstance(e.get("text"), str)
        for e in pack.get("evidence", [])
    )  # fmt: skip


class Writer(threading.Thread):
    """Edits files and re-runs `memserver index` until told to stop."""

    def __init__(self, root: Path, files: list[Path], per_round: int) -> None:
        super().__init__(daemon=True)
        self.root, self.files, self.per_round = root, files, per_round
        self.stop = threading.Event()
        self.runs: list[dict[str, Any]] = []

    def run(self) -> None:
        rng = random.Random(0)
        n = 0
        while not self.stop.is_set():
            n += 1
            for path in rng.sample(self.files, min(self.per_round, len(self.files))):
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n# edited by the concurrency benchmark, round {n}\n")
            started = time.monotonic()
            proc = subprocess.run(
                [MEMSERVER, "index", str(self.root), "--json"],
                capture_output=True, text=True, env=server_env(),
            )  # fmt: skip
            report = json.loads(proc.stdout) if proc.returncode == 0 else {}
            self.runs.append({
                "exit": proc.returncode, "seconds": round(time.monotonic() - started, 2),
                "chunks_added": report.get("chunks_added"),
                "stderr": proc.stderr[-300:] if proc.returncode else "",
            })  # fmt: skip


async def client_load(url: str, queries: list[str], calls: int, seed: int,
                      out: dict[str, Any]) -> None:  # fmt: skip
    from mcp import Client

    rng = random.Random(seed)
    async with Client(url) as client:
        for _ in range(calls):
            started = time.perf_counter()
            try:
                result = await client.call_tool("recall", {"query": rng.choice(queries)})
                ok = not result.is_error and well_formed(result.structured_content or {})
                if not ok:
                    out["errors"].append(str(getattr(result.content[0], "text", ""))[:300]
                                         if result.content else "malformed")  # fmt: skip
            except Exception as exc:  # a transport failure counts as an error too
                out["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
            out["ms"].append((time.perf_counter() - started) * 1000)


async def remember_loop(url: str, writer: Writer, out: dict[str, Any]) -> None:
    from mcp import Client

    async with Client(url) as client:
        n = 0
        while not writer.stop.is_set():
            n += 1
            result = await client.call_tool(
                "remember", {"text": f"Benchmark note {n}: the index was re-run under load."}
            )
            if result.is_error:
                said = str(getattr(result.content[0], "text", ""))
                out["errors"].append("remember: " + said[:300])
            out["remembers"] += 1
            await anyio.sleep(1.0)


async def load(url: str, queries: list[str], clients: int, calls: int, writer: Writer
               ) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {"ms": [], "errors": [], "remembers": 0}
    async with anyio.create_task_group() as tg:
        tg.start_soon(remember_loop, url, writer, out)
        async with anyio.create_task_group() as recallers:
            for i in range(clients):
                recallers.start_soon(client_load, url, queries, calls, i, out)
        writer.stop.set()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--index-dir", type=Path, help="An index of ROOT to start from.")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--queries", type=Path, help="JSONL with {package, query} rows.")
    ap.add_argument("--edit-files", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-concurrency-") as tmp:
        root = Path(tmp) / args.root.name
        shutil.copytree(args.root, root, symlinks=True)
        if args.index_dir:
            shutil.copytree(args.index_dir, root / ".memserver")
        subprocess.run([MEMSERVER, "index", str(root), "--json"],
                       check=True, capture_output=True, env=server_env())  # fmt: skip
        files = sorted(p for p in root.rglob("*") if p.suffix in {".py", ".go", ".js", ".ts"}
                       and ".memserver" not in p.parts)  # fmt: skip
        port = free_port()
        cmd = [sys.executable, "-c", SERVE, "--root", str(root), "--transport", "http",
               "--port", str(port), "--log-level", "warning"]  # fmt: skip
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  env=server_env())  # fmt: skip
        writer = Writer(root, files, args.edit_files)
        try:
            wait_listening(port, server)
            url = f"http://127.0.0.1:{port}/mcp"
            queries = load_queries(args.queries, args.root.name)
            anyio.run(load, url, queries, 1, 1, Writer(root, [], 0))  # warm the engine
            writer.start()
            started = time.monotonic()
            out = anyio.run(load, url, queries, args.clients, args.calls, writer)
            wall = time.monotonic() - started
            writer.join(timeout=600)
        finally:
            server.terminate()
            server.wait(timeout=30)
    report = {
        "root": args.root.name, "clients": args.clients, "calls_per_client": args.calls,
        "recalls": len(out["ms"]), "errors": len(out["errors"]),
        "error_examples": out["errors"][:5], **percentiles(out["ms"]),
        "wall_s": round(wall, 1), "index_runs": len(writer.runs),
        "index_runs_failed": sum(1 for r in writer.runs if r["exit"] != 0),
        "index_run_seconds": [r["seconds"] for r in writer.runs],
        "index_failures": [r["stderr"] for r in writer.runs if r["exit"]][:3],
        "remembers": out["remembers"],
    }  # fmt: skip
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
