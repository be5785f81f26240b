"""Memory of a watching MCP server over many saves, and whether each save becomes findable.

Usage: python benchmarks/serve_memory.py TREE [--work DIR] [--saves 300] [--every 50]
                                         [--embedder hashing]

TREE is copied to DIR/tree and indexed; then `memserver serve --root DIR/tree --watch` runs
over stdio behind the SDK's client, with only PATH, HOME and the model cache variables in
its environment (what an MCP client gives it). Each save appends a function with a unique
name to a `.py` file of the copy (the files in a shuffled order, round and round: every
file gets saves once there are as many saves as files), then `symbol` is asked for it
every 50 ms until it answers (20 s at most: a miss), then one `recall` and one
`references` call. Every --every saves the server's VmRSS, RssAnon, RssFile and VmHWM (MB,
from /proc), and its child processes' VmRSS summed (ChildRss: a tags worker kept after a
run that used one), are printed as a JSON line; the last line sums up: the misses, the
growth per save over the whole run, and the slope (least squares, MB a save) over its
second half, once the caches that fill up to their bounds have mostly filled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":", 1) for line in lines if ":" in line)


def memory(pid: int) -> dict[str, int]:
    """The server's memory (MB), and its child processes' VmRSS summed (`ChildRss`: a tags
    worker kept after a run that used one, see `ingest.tagging`)."""
    status = _status(pid)
    out = {key: int(status[key].split()[0]) // 1024 for key in FIELDS}
    children = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            child = _status(int(entry.name))
        except OSError:  # gone meanwhile
            continue
        if child.get("PPid", "").strip() == str(pid) and "VmRSS" in child:
            children += int(child["VmRSS"].split()[0])
    out["ChildRss"] = children // 1024
    return out


def server_pid(root: Path) -> int:
    """The process serving `root` (from /proc: no `pgrep` needed)."""
    wanted = ["serve", "--root", str(root)]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile
            continue
        if any(args[i : i + 3] == wanted for i in range(len(args))):
            return int(entry.name)
    raise LookupError(f"no process serves {root}")


def found(result: Any, name: str) -> bool:
    content = result.structured_content or {}
    return any(d.get("symbol") == name for d in content.get("definitions", []))


async def run(root: Path, env: dict[str, str], saves: int, every: int) -> list[dict[str, Any]]:
    from mcp import Client, StdioServerParameters

    files = sorted(root.rglob("*.py"))
    random.Random(0).shuffle(files)
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
            path = files[(i - 1) % len(files)]
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


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The misses, the growth per save, and the slope over the second half of the saves."""
    samples = [r for r in rows if "save" in r]
    first, last = samples[0], samples[-1]
    late = [r for r in samples if r["save"] >= last["save"] / 2]
    slope = None
    if len(late) >= 2:
        slope = statistics.linear_regression([r["save"] for r in late],
                                             [r["VmRSS"] for r in late]).slope  # fmt: skip
    return {
        "saves": last["save"], "misses": rows[-1]["misses"],
        "rss_mb": [first["VmRSS"], last["VmRSS"]],
        "children_rss_mb": [first["ChildRss"], last["ChildRss"]],
        "mb_per_save": round((last["VmRSS"] - first["VmRSS"]) / max(1, last["save"]), 2),
        "late_mb_per_save": None if slope is None else round(slope, 3),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--saves", type=int, default=300)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--embedder", default="hashing")
    args = parser.parse_args(argv)
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
    result = summary(asyncio.run(run(root, env, args.saves, max(1, args.every))))
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
