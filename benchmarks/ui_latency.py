"""Review page latency, measured in a real browser: page loads and searches.

Usage:
  python benchmarks/ui_latency.py --root REPO --index-dir DIR [--dataset dev.jsonl]
      [--package click] [--searches 50] [--loads 10] [--chromium /usr/bin/chromium] [--serve]

Indexes REPO into DIR first when DIR holds no index (`memserver index`, the configured
embedder: the real model from the fastembed cache). Then starts `memserver ui` on a free
port (with --serve: `memserver serve --transport http`, the page at /ui/ beside /mcp) and
drives headless Chromium (Debian's, through playwright; no browser download):

- page load: each page --loads times after one warm-up visit; from the Performance API's
  navigation entry, `ttfb` (responseStart − startTime: the server's work) and `load`
  (loadEventEnd − startTime: the page ready, styles and script included).
- search: --searches queries (the package's queries of the code bench's dev.jsonl when
  --dataset is given, else a built-in list), each a navigation to /search?q=…, as the
  search box submits it; the same two timings, and the server's own recall time shown
  on the page. The first search (model and snapshot warm-up) is reported apart.

Prints one JSON object on stdout: p50 / p95 / max in milliseconds.
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
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
FALLBACK_QUERIES = [
    "how are command line options parsed",
    "where is the help text formatted",
    "prompt the user for a value",
    "open a file lazily",
    "shell completion for arguments",
    "echo output with colors",
    "invoke a command with a context",
    "default values of parameters",
    "progress bar rendering",
    "environment variable for an option",
]
NAV = """() => { const e = performance.getEntriesByType('navigation')[0];
  return {ttfb: e.responseStart - e.startTime, load: e.loadEventEnd - e.startTime}; }"""


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(p95, 1), "max_ms": round(ordered[-1], 1)}  # fmt: skip


def _queries(dataset: str | None, package: str, n: int) -> list[str]:
    if dataset:
        rows = [json.loads(line) for line in Path(dataset).read_text().splitlines() if line]
        found = [r["query"] for r in rows if r.get("package") == package]
    else:
        found = list(FALLBACK_QUERIES)
    if not found:
        raise SystemExit(f"no queries for package {package!r} in {dataset}")
    return [found[i % len(found)] for i in range(n)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ensure_index(root: Path, index_dir: Path) -> None:
    if (index_dir / "meta.json").exists():
        return
    print(f"indexing {root} into {index_dir} …", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "memserver", "index", str(root), "--index-dir",
                    str(index_dir), "--json"], check=True, stdout=subprocess.DEVNULL)  # fmt: skip


def _start(root: Path, index_dir: Path, port: int, log: Path, serve: bool
           ) -> subprocess.Popen[bytes]:  # fmt: skip
    how = ["serve", "--transport", "http"] if serve else ["ui", "--no-open"]
    cmd = [sys.executable, "-m", "memserver", *how, "--root", str(root), "--index-dir",
           str(index_dir), "--port", str(port)]  # fmt: skip
    page = f"http://127.0.0.1:{port}" + ("/ui/" if serve else "/")
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"memserver ui exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(page, timeout=60):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{' '.join(how)} did not start within 120 s")


def _measure(page: Any, url: str) -> dict[str, float]:
    page.goto(url, wait_until="load")
    timing: dict[str, float] = page.evaluate(NAV)
    return timing


def run(args: argparse.Namespace) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    root, index_dir = Path(args.root).resolve(), Path(args.index_dir).resolve()
    _ensure_index(root, index_dir)
    port = _free_port()
    origin = f"http://127.0.0.1:{port}"
    base = origin + ("/ui" if args.serve else "")
    out: dict[str, Any] = {"root": str(root), "index_dir": str(index_dir),
                           "page": "serve --transport http, at /ui/" if args.serve
                           else "memserver ui"}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ui-latency-") as tmp:
        proc = _start(root, index_dir, port, Path(tmp) / "ui.log", args.serve)
        try:
            with sync_playwright() as p:
                context = p.chromium.launch_persistent_context(
                    str(Path(tmp) / "profile"), executable_path=args.chromium, headless=True,
                    args=FLAGS, viewport={"width": 1280, "height": 800},
                )  # fmt: skip
                page = context.new_page()
                out["first_search"] = _measure(page, f"{base}/search?q=warm+up+query")
                out["pages"] = _pages(page, origin, base, args.loads)
                out["search"] = _searches(page, base, _queries(args.dataset, args.package,
                                                               args.searches))  # fmt: skip
                context.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return out


def _pages(page: Any, origin: str, base: str, loads: int) -> dict[str, Any]:
    page.goto(f"{base}/memories?status=active")
    first = page.locator("ol.list a.title").first
    memory = first.get_attribute("href") if first.count() else None  # the prefix included
    paths = ["/", "/memories", "/review", "/review/consolidation", "/events", "/health"]
    urls = {path: base + path for path in paths}
    if memory:
        urls[memory] = origin + memory
    results: dict[str, Any] = {}
    for path, url in urls.items():
        _measure(page, url)  # warm-up visit
        runs = [_measure(page, url) for _ in range(loads)]
        key = "/memories/{id}" if path == memory else path
        results[key] = {"ttfb": _stats([r["ttfb"] for r in runs]),
                        "load": _stats([r["load"] for r in runs])}  # fmt: skip
    return results


def _searches(page: Any, base: str, queries: list[str]) -> dict[str, Any]:
    runs, server = [], []
    for q in queries:
        runs.append(_measure(page, f"{base}/search?{urllib.parse.urlencode({'q': q})}"))
        shown = page.locator("#recall-ms")
        if shown.count():
            server.append(float(shown.inner_text()))
    return {"queries": len(queries), "ttfb": _stats([r["ttfb"] for r in runs]),
            "load": _stats([r["load"] for r in runs]),
            "recall_on_server": _stats(server) if server else None}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--index-dir", required=True)
    ap.add_argument("--dataset", default=None, help="the code bench's dev.jsonl")
    ap.add_argument("--package", default="click")
    ap.add_argument("--searches", type=int, default=50)
    ap.add_argument("--loads", type=int, default=10)
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument(
        "--serve",
        action="store_true",
        help="measure the page as a route of `memserver serve --transport http`",
    )
    print(json.dumps(run(ap.parse_args()), indent=1))


if __name__ == "__main__":
    main()
