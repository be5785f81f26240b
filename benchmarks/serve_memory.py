"""Memory of a watching MCP server over many saves, and whether each save becomes findable.

Usage: python benchmarks/serve_memory.py TREE [--work DIR] [--saves 300] [--every 50]
                                         [--embedder hashing]

TREE is copied to DIR/tree and indexed; then `memserver serve --root DIR/tree --watch` runs
over stdio behind the SDK's client, with only PATH, HOME and the model cache variables in
its environment (what an MCP client gives it). Each save appends a function with a unique
name to a random `.py` file of the copy, then `symbol` is asked for it every 50 ms until
it answers (20 s at most: a miss), then one `recall` and one `references` call. Every
--every saves the server's VmRSS, RssAnon, RssFile and VmHWM (MB, from /proc) are printed
as a JSON line; the last line sums up: the misses and the growth per save.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


def memory(pid: int) -> dict[str, int]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    status = dict(line.split(":", 1) for line in lines if ":" in line)
    return {key: int(status[key].split()[0]) // 1024 for key in FIELDS}


def server_pid(root: Path) -> int:
    found = subprocess.run(["pgrep", "-f", f"serve --root {root}"], capture_output=True,
                           text=True, check=True)  # fmt: skip
    return int(found.stdout.split()[0])


def found(result: Any, name: str) -> bool:
    content = result.structured_content or {}
    return any(d.get("symbol") == name for d in content.get("definitions", []))


async def run(root: Path, env: dict[str, str], saves: int, every: int) -> list[dict[str, Any]]:
    from mcp import Client, StdioServerParameters

    files = sorted(root.rglob("*.py"))
    args = ["-m", "memserver", "serve", "--root", str(root), "--watch", "--log-level", "warning"]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    rows: list[dict[str, Any]] = []
    async with Client(params) as client:
        await client.call_tool("recall", {"query": "warm up"})
        pid = server_pid(root)
        rows.append({"save": 0, **memory(pid)})
        print(json.dumps(rows[-1]), flush=True)
        misses = []
        for i in range(1, saves + 1):
            name = f"served_fn_{i}"
            path = random.Random(i).choice(files)
            with path.open("a", encoding="utf-8") as out:
                out.write(f"\n\ndef {name}(value):\n    return value + {i}\n")
            started = time.monotonic()
            while not found(await client.call_tool("symbol", {"name": name}), name):
                if time.monotonic() - started > 20:
                    misses.append(f"{name} in {path.relative_to(root)}")
                    break
                await asyncio.sleep(0.05)
            await client.call_tool("recall", {"query": f"{name} returns value plus"})
            await client.call_tool("references", {"name_or_id": "echo"})
            if i % every == 0 or i == saves:
                rows.append({"save": i, **memory(pid)})
                print(json.dumps(rows[-1]), flush=True)
        rows.append({"misses": misses})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--saves", type=int, default=300)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--embedder", default="hashing")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="serve-memory-"))
    root = work / "tree"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(args.tree, root, ignore=shutil.ignore_patterns(".memserver"))
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env.update({k: v for k, v in os.environ.items()
                if k in ("FASTEMBED_CACHE_PATH", "HF_HUB_OFFLINE")})  # fmt: skip
    index = [sys.executable, "-m", "memserver", "index", str(root), "--embedder", args.embedder]
    subprocess.run(index, env=env, check=True, capture_output=True)
    rows = asyncio.run(run(root, env, args.saves, args.every))
    first, last = rows[0], rows[-2]
    print(json.dumps({
        "saves": last["save"], "misses": rows[-1]["misses"],
        "rss_mb": [first["VmRSS"], last["VmRSS"]],
        "mb_per_save": round((last["VmRSS"] - first["VmRSS"]) / max(1, last["save"]), 2),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
