"""`memserver serve --transport http` as a real subprocess, tried as a hostile client would:
a wildcard bind reached by IP and by foreign names, and slow-header sockets."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_mcp_transports import (
    INIT,
    QUERY,
    WAIT,
    serve_args,
    server_env,
    stop,
    wait_listening,
)
from tests.server.httpkit import dribble_until_closed, free_port, local_address

ALICE = "alice-" + "a" * 40
HEADER_TIMEOUT = 1.0
SLOW_SOCKETS = 50
CLOSE_WITHIN = HEADER_TIMEOUT + 5.0


class WildcardServer:
    """`serve --transport http --host 0.0.0.0 --allow-remote --tokens FILE`."""

    def __init__(self, root: Path, tmp: Path) -> None:
        tokens = tmp / "tokens.json"
        tokens.write_text(json.dumps({ALICE: {"user": "alice"}}))
        tokens.chmod(0o600)
        self.port, self.address, self.log = free_port(), local_address(), tmp / "serve.log"
        args = ["--transport", "http", "--host", "0.0.0.0", "--port", str(self.port),
                "--allow-remote", "--tokens", str(tokens),
                "--header-timeout", str(HEADER_TIMEOUT)]  # fmt: skip
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                serve_args(root, *args), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=err, env=server_env(),
            )  # fmt: skip
        self.url = f"http://{self.address}:{self.port}/mcp"

    def wait_listening(self) -> None:
        wait_listening(self.proc, self.log, self.address, self.port)


@pytest.fixture(scope="module")
def wildcard(indexed_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    server = WildcardServer(indexed_repo, tmp_path_factory.mktemp("wildcard"))
    try:
        server.wait_listening()
        yield server
    finally:
        stop(server.proc, terminate=True)


def initialize(url: str, **headers: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
    accept = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {ALICE}"}
    return httpx2.post(url, json=body, headers={**accept, **headers}, timeout=WAIT)


def test_wildcard_bind_serves_a_client_by_ip_and_refuses_foreign_names(wildcard: Any) -> None:
    port = wildcard.port
    by_ip = initialize(wildcard.url)
    by_loopback = initialize(f"http://127.0.0.1:{port}/mcp")
    rebound = initialize(wildcard.url, Host=f"rebound.evil.example:{port}")
    foreign_page = initialize(wildcard.url, Origin="http://evil.example")
    local_page = initialize(wildcard.url, Origin="http://localhost:3000")
    no_token = httpx2.post(wildcard.url, json={}, timeout=WAIT)
    assert by_ip.status_code == 200 and by_loopback.status_code == 200
    assert rebound.status_code == 421 and foreign_page.status_code == 403
    assert local_page.status_code == 200 and no_token.status_code == 401
    log = wildcard.log.read_text()
    assert "accepting Host" in log and f"localhost:{port}" in log and "arrives on" in log
    assert "refused a request for Host 'rebound.evil.example" in log


def open_slow_sockets(address: str, port: int) -> list[socket.socket]:
    sockets = []
    for _ in range(SLOW_SOCKETS):
        s = socket.create_connection((address, port), timeout=5)
        s.settimeout(0.01)
        s.send(b"POST /mc")  # half a request line, then a byte at a time
        sockets.append(s)
    return sockets


async def recall_by_ip(url: str) -> Any:
    with anyio.fail_after(WAIT):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}, timeout=WAIT) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool("recall", QUERY)


def test_slow_header_sockets_are_closed_while_a_client_recalls(wildcard: Any) -> None:
    sockets = open_slow_sockets(wildcard.address, wildcard.port)
    try:
        result = anyio.run(recall_by_ip, wildcard.url)  # answered while 50 sockets dribble
        closed = dribble_until_closed(sockets, CLOSE_WITHIN)
    finally:
        for s in sockets:
            s.close()
    assert not result.is_error
    assert result.structured_content["evidence"][0]["path"] == "src/http_client.py"
    assert len(closed) == SLOW_SOCKETS, f"{SLOW_SOCKETS - len(closed)} slow sockets still open"
    assert max(closed.values()) < CLOSE_WITHIN
