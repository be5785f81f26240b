"""`memserver serve` as a real subprocess over stdio, streamable HTTP and SSE."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from memserver.server.cli_command import serve_command
from tests.conftest import SAMPLE, write_tree

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# Independent of the `memserver` entry point: the command object itself, as the CLI will run it.
SERVE = (
    "from memserver.server.cli_command import serve_command; "
    "serve_command()(prog_name='memserver serve')"
)
TOKEN = "test-token-" + "0123456789" * 3  # 32 or more characters, as every token must be
WAIT = 60  # seconds: process start plus the first engine load, on a busy 2-core runner
QUERY = {"query": "send a request again with backoff"}
TOOLS = {"recall", "remember", "attribute", "forget", "status", "outline", "symbol", "references",
         "neighbors"}  # fmt: skip
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "raw-test", "version": "0"},
}


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSERVER_")}
    return {**env, "MEMSERVER_RERANK_ENABLED": "false", **extra}


def serve_args(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-c", SERVE, "--root", str(root), *args]


class RawStdio:
    """A server subprocess driven line by line, every stdout line kept for inspection."""

    def __init__(self, root: Path, log: Path) -> None:
        self.log = log
        with log.open("wb") as err:
            self.proc = subprocess.Popen(
                serve_args(root), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=err, env=server_env(),
            )  # fmt: skip
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stdout: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, request_id: int, deadline: float) -> dict[str, Any]:
        while True:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            self.stdout.append(line)
            message = json.loads(line)
            if message.get("id") == request_id:
                return message

    def close(self) -> None:
        """EOF on stdin ends the server; then collect what is left on stdout."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        stop(self.proc)
        self.reader.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        while not self.lines.empty():
            self.stdout.append(self.lines.get())


def stop(proc: subprocess.Popen[bytes], terminate: bool = False) -> None:
    if terminate and proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class WebServer:
    def __init__(self, root: Path, transport: str, log: Path) -> None:
        self.transport, self.port, self.log = transport, free_port(), log
        with log.open("wb") as err:
            self.proc = subprocess.Popen(
                serve_args(root, "--transport", transport, "--port", str(self.port)),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                env=server_env(MEMSERVER_TOKEN=TOKEN),
            )  # fmt: skip
        path = "/mcp" if transport == "http" else "/sse"
        self.url = f"http://127.0.0.1:{self.port}{path}"

    def wait_listening(self) -> str:
        wait_listening(self.proc, self.log, "127.0.0.1", self.port)
        return self.url


def wait_listening(proc: subprocess.Popen[bytes], log: Path, host: str, port: int) -> None:
    """Until the server accepts a connection on host:port (it fails if the server exits or
    stays silent for WAIT seconds)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.05)  # poll interval (connect fails at once); the deadline bounds it
    raise AssertionError(f"the server on {host}:{port} did not listen within {WAIT}s")


@pytest.fixture(scope="module")
def servers(
    indexed_repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """Every server process at once, so their slow engine loads overlap."""
    logs = tmp_path_factory.mktemp("logs")
    started: dict[str, Any] = {"stdio": RawStdio(indexed_repo, logs / "stdio.log")}
    try:
        for transport in ("http", "sse"):
            started[transport] = WebServer(indexed_repo, transport, logs / f"{transport}.log")
        yield started
    finally:
        started["stdio"].close()
        for name in ("http", "sse"):
            if name in started:
                stop(started[name].proc, terminate=True)


# -- stdio ------------------------------------------------------------------------


async def test_stdio_client_recalls(indexed_repo: Path, servers: dict[str, Any]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=serve_args(indexed_repo)[1:],
        env={"MEMSERVER_RERANK_ENABLED": "false"},
        cwd=str(indexed_repo),
    )
    with anyio.fail_after(WAIT):
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("recall", QUERY)
    assert names == TOOLS
    assert not result.is_error
    assert result.structured_content["evidence"][0]["path"] == "src/http_client.py"


async def test_serve_watch_indexes_a_fresh_tree_and_follows_edits(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "fresh", SAMPLE)  # never indexed: --watch builds it
    params = StdioServerParameters(
        command=sys.executable,
        args=[*serve_args(root)[1:], "--watch"],
        env={"MEMSERVER_RERANK_ENABLED": "false", "MEMSERVER_EMBEDDING_MODEL": "hashing"},
        cwd=str(root),
    )

    async def poll(client: Client, query: str, path: str) -> dict[str, Any]:
        while True:
            result = await client.call_tool("recall", {"query": query})
            pack = result.structured_content or {}
            if not result.is_error and any(e["path"] == path for e in pack.get("evidence", [])):
                return pack
            await anyio.sleep(0.2)

    with anyio.fail_after(WAIT * 2):
        async with Client(params) as client:
            await poll(client, QUERY["query"], "src/http_client.py")
            (root / "src" / "late.py").write_text(
                "def reconcile_ledger_entries(ledger):\n    return sorted(ledger)\n"
            )
            pack = await poll(client, "reconcile_ledger_entries", "src/late.py")
            while True:  # searchable first; the manifest entry follows within the batch
                status = (await client.call_tool("status", {})).structured_content
                if "src/late.py" not in status["new_files"]:
                    break
                await anyio.sleep(0.1)
    late = [e for e in pack["evidence"] if e["path"] == "src/late.py"]
    assert "def reconcile_ledger_entries" in late[0]["text"]
    assert status["watcher"]["state"] == "on" and status["watcher"]["errors"] == 0


def test_stdio_stdout_carries_nothing_but_json_rpc(servers: dict[str, Any]) -> None:
    raw: RawStdio = servers["stdio"]
    deadline = time.monotonic() + WAIT
    raw.send({"id": 1, "method": "initialize", "params": INIT})
    init = raw.reply(1, deadline)
    raw.send({"method": "notifications/initialized"})
    raw.send({"id": 2, "method": "tools/list"})
    tools = raw.reply(2, deadline)
    raw.send({"id": 3, "method": "tools/call", "params": {"name": "recall", "arguments": QUERY}})
    good = raw.reply(3, deadline)
    bad_args = {"name": "recall", "arguments": {"query": "x", "budget_tokens": 1}}
    raw.send({"id": 4, "method": "tools/call", "params": bad_args})
    bad = raw.reply(4, deadline)
    raw.close()
    assert init["result"]["serverInfo"]["name"] == "memserver"
    assert {t["name"] for t in tools["result"]["tools"]} == TOOLS
    assert not good["result"].get("isError") and good["result"]["structuredContent"]["evidence"]
    assert bad["result"]["isError"] and "budget_tokens" in bad["result"]["content"][0]["text"]
    assert raw.proc.returncode == 0 and raw.stdout
    for line in raw.stdout:  # every byte on stdout is one JSON-RPC message per line
        assert json.loads(line)["jsonrpc"] == "2.0", line
    log = raw.log.read_text()
    assert "index loaded" in log and "Tool 'recall' failed" in log  # logs went to stderr


# -- HTTP and SSE -------------------------------------------------------------------


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_web_client_with_token_recalls(servers: dict[str, Any], transport: str) -> None:
    url = servers[transport].wait_listening()
    with anyio.fail_after(WAIT):
        if transport == "http":
            async with (
                httpx2.AsyncClient(headers=bearer(), timeout=WAIT) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                result = await client.call_tool("recall", QUERY)
        else:
            async with Client(sse_client(url, headers=bearer()), mode="legacy") as client:
                result = await client.call_tool("recall", QUERY)
    assert not result.is_error
    assert result.structured_content["evidence"][0]["path"] == "src/http_client.py"


def post_initialize(url: str, headers: dict[str, str]) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
    accept = {"Accept": "application/json, text/event-stream"}
    return httpx2.post(url, json=body, headers={**accept, **headers}, timeout=WAIT)


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_web_requests_without_the_token_get_401(servers: dict[str, Any], transport: str) -> None:
    url = servers[transport].wait_listening()
    for headers in ({}, bearer("wrong-token"), {"Authorization": TOKEN}):
        if transport == "http":
            response = post_initialize(url, headers)
        else:  # a refused SSE stream answers at once instead of streaming
            response = httpx2.get(url, headers=headers, timeout=WAIT)
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_http_refuses_foreign_origin_and_host(servers: dict[str, Any]) -> None:
    url = servers["http"].wait_listening()
    port = servers["http"].port
    foreign_origin = post_initialize(url, {**bearer(), "Origin": "http://evil.example"})
    foreign_host = post_initialize(url, {**bearer(), "Host": f"evil.example:{port}"})
    local_page = post_initialize(url, {**bearer(), "Origin": "http://localhost:3000"})
    assert foreign_origin.status_code == 403
    assert foreign_host.status_code == 421
    assert local_page.status_code == 200


# -- refusing unsafe binds ---------------------------------------------------------------


@pytest.mark.parametrize(
    "args, env, expected",
    [
        (["--host", "0.0.0.0"], {}, "--allow-remote"),
        (["--host", "0.0.0.0", "--allow-remote"], {}, "MEMSERVER_TOKEN"),
        (["--host", "192.0.2.1", "--allow-remote"], {"MEMSERVER_TOKEN": ""}, "without a token"),
    ],
)
def test_remote_bind_needs_allow_remote_and_a_token(
    indexed_repo: Path, args: list[str], env: dict[str, str], expected: str
) -> None:
    result = CliRunner().invoke(
        serve_command(), ["--root", str(indexed_repo), "--transport", "http", *args],
        env={"MEMSERVER_TOKEN": None, **env},
    )  # fmt: skip
    assert result.exit_code == 2
    assert "refusing to listen" in result.stderr and expected in result.stderr


# -- client configs ---------------------------------------------------------------------

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "clients"


@pytest.mark.parametrize(
    "name, key",
    [("claude-desktop.json", "mcpServers"), ("cursor-mcp.json", "mcpServers"),
     ("vscode-mcp.json", "servers")],
)  # fmt: skip
def test_client_configs_start_a_valid_serve_command(
    indexed_repo: Path, name: str, key: str
) -> None:
    entry = json.loads((CONFIGS / name).read_text())[key]["memserver"]
    args = [str(indexed_repo) if a == "/path/to/repo" else a for a in entry["args"]]
    assert entry["command"] == "memserver" and args[0] == "serve"
    ctx = serve_command().make_context("serve", args[1:])
    assert ctx.params["root"] == str(indexed_repo) and ctx.params["transport"] == "stdio"


def test_claude_code_script_adds_the_serve_command() -> None:
    lines = [x for x in (CONFIGS / "claude-code.sh").read_text().splitlines() if x[:1] != "#"]
    command = [x for x in lines if x.strip()]
    assert command == ["claude mcp add memserver -- memserver serve --root /path/to/repo"]
