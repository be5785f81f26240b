"""`memserver serve` over stdio as a real subprocess with only PATH and HOME in its
environment: stdin lines that are no JSON-RPC message get one error each, and the server
keeps serving; the SDK's claim on fd 1 still holds."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.e2e.test_mcp_transports import INIT, WAIT, serve_args, stop

BAD_LINES = {
    "lone surrogate": b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"s":"\\ud800"}}',
    "batch": b'[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","id":9,"method":"ping"}]',
    "5000 deep": b'{"jsonrpc":"2.0","id":10,"method":"ping","params":{"a":'
    + b"[" * 5000
    + b"]" * 5000
    + b"}}",
    "no method": b'{"jsonrpc":"2.0","id":11}',
    "not json": b"hello\x00",
}
EXPECTED = {"lone surrogate": -32700, "batch": -32600, "5000 deep": -32700,
            "no method": -32600, "not json": -32700}  # fmt: skip


class StdioProcess:
    """A server over stdio with only PATH and HOME in its environment, fed raw bytes; stdin
    stays open until the expected replies are in (EOF ends the server and cancels what is in
    flight)."""

    def __init__(self, args: list[str], home: Path) -> None:
        env = {"PATH": os.environ["PATH"], "HOME": str(home)}
        self.log = home / "stderr.log"
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, env=env, cwd=home)  # fmt: skip
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stdout: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout.append(line)
            self.replies.put(json.loads(line))

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def collect(self, done: Any) -> list[dict[str, Any]]:
        """Replies until `done(replies)` holds (bounded by WAIT)."""
        deadline, got = time.monotonic() + WAIT, []
        while not done(got):
            got.append(self.replies.get(timeout=max(0.01, deadline - time.monotonic())))
        return got

    def close(self) -> str:
        """EOF, exit, and what went to stderr."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        stop(self.proc)
        self.reader.join(timeout=10)
        self.proc.stdout.close()
        return self.log.read_text()


def test_stdio_answers_each_bad_line_once_and_keeps_serving(
    indexed_repo: Path, tmp_path: Path
) -> None:
    server = StdioProcess(serve_args(indexed_repo), tmp_path)
    frames = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
              {"jsonrpc": "2.0", "method": "notifications/initialized"}]  # fmt: skip
    stdin = "".join(json.dumps(f) + "\n" for f in frames).encode()
    for name, line in BAD_LINES.items():
        ping = {"jsonrpc": "2.0", "id": name, "method": "ping"}
        stdin += line + b"\n" + json.dumps(ping).encode() + b"\n\n"  # a blank line is skipped
    server.send(stdin)
    replies = server.collect(lambda got: len(got) == 1 + 2 * len(BAD_LINES))
    ping = {"jsonrpc": "2.0", "id": "last", "method": "ping"}
    server.send(json.dumps(ping).encode() + b"\n")
    last = server.collect(lambda got: len(got) == 1)  # nothing else came before it
    log = server.close()
    assert server.proc.returncode == 0, log[-2000:]
    assert replies[0]["id"] == 1 and "serverInfo" in replies[0]["result"]
    errors = [r for r in replies[1:] if r["id"] is None]  # in the order of the lines
    pongs = [r for r in replies[1:] if r["id"] is not None]  # answered concurrently
    assert [e["error"]["code"] for e in errors] == list(EXPECTED.values()), errors
    assert sorted(p["id"] for p in pongs) == sorted(BAD_LINES)  # every next request answered
    assert all(p["result"] == {} for p in pongs) and last[0]["id"] == "last"
    logged = [x for x in log.splitlines() if "not a JSON-RPC message" in x]
    assert len(logged) == len(BAD_LINES), log[-2000:]


def test_stdio_keeps_its_fd_claim(indexed_repo: Path, tmp_path: Path) -> None:
    """Stray output of a handler cannot reach stdout: the SDK still diverts fd 1, and a
    print still buffered when the server stops lands on stderr too."""
    code = (
        "import os, sys\n"
        "from memserver.server import stdio\n"
        "from memserver.server.app import build_server\n"
        "server = build_server(sys.argv[1], None, env={})\n"
        "@server.tool(name='stray')\n"
        "def stray() -> str:\n"
        "    os.write(1, b'STRAY BYTES\\n')\n"
        "    print('stray print')\n"
        "    return 'done'\n"
        "stdio.run_stdio(server)\n"
    )
    server = StdioProcess([sys.executable, "-c", code, str(indexed_repo)], tmp_path)
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "stray", "arguments": {}}},
    ]  # fmt: skip
    server.send("".join(json.dumps(f) + "\n" for f in frames).encode())
    replies = server.collect(lambda got: any(r.get("id") == 2 for r in got))
    log = server.close()
    assert all(r["jsonrpc"] == "2.0" for r in replies) and len(server.stdout) == 2
    assert replies[-1]["result"]["content"][0]["text"] == "done"
    assert "STRAY BYTES" in log and "stray print" in log
