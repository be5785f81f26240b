"""The HTTP listener: Host/Origin checks (DNS rebinding) on loopback and wildcard binds, the
request-head deadline against slowloris sockets, and the idle keep-alive timeout."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from memserver.server import transports
from memserver.server.guard import HostGuard, split_host
from tests.server.httpkit import ThreadedServer, dribble_until_closed, free_port, local_address

PORT = 8765


async def hello(scope: Any, receive: Any, send: Any) -> None:
    """The app behind the guard: 200 for any request."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})  # fmt: skip
    await send({"type": "http.response.body", "body": b"ok"})


async def status_of(guard: HostGuard, headers: dict[str, str], server: Any = None) -> int:
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http", "method": "POST", "path": "/mcp",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "server": server or ("127.0.0.1", PORT),
    }  # fmt: skip
    await guard(scope, receive, send)
    return int(sent[0]["status"])


@pytest.mark.parametrize(
    "value, parsed",
    [
        ("localhost:8765", ("localhost", 8765)),
        ("LOCALHOST", ("localhost", 80)),
        ("[::1]:8765", ("::1", 8765)),
        ("[fd00::2]", ("fd00::2", 80)),
        ("::1", None),
        ("host:port", None),
        ("[::1", None),
        ("", None),
    ],
)
def test_split_host(value: str, parsed: tuple[str, int] | None) -> None:
    assert split_host(value) == parsed


LOOPBACK_CASES = [
    ({"Host": f"127.0.0.1:{PORT}"}, 200),
    ({"Host": f"localhost:{PORT}"}, 200),
    ({"Host": f"LocalHost:{PORT}"}, 200),
    ({"Host": f"[::1]:{PORT}"}, 200),
    ({"Host": f"127.0.0.1:{PORT}", "Origin": "http://localhost:3000"}, 200),
    ({"Host": f"127.0.0.1:{PORT}", "Origin": "https://127.0.0.1"}, 200),
    ({"Host": f"evil.example:{PORT}"}, 421),
    ({"Host": "127.0.0.1:9999"}, 421),  # another port: another server
    ({"Host": "localhost"}, 421),
    ({}, 421),
    ({"Host": f"127.0.0.1:{PORT}", "Origin": "http://evil.example"}, 403),
    ({"Host": f"127.0.0.1:{PORT}", "Origin": "http://localhost.evil.example:80"}, 403),
    ({"Host": f"127.0.0.1:{PORT}", "Origin": "null"}, 403),
    ({"Host": f"127.0.0.1:{PORT}", "Origin": "file://"}, 403),
    ({"Host": f"127.0.0.1:{PORT}", "Origin": "http://localhost:x"}, 403),
]


@pytest.mark.anyio
@pytest.mark.parametrize("headers, status", LOOPBACK_CASES)
async def test_loopback_bind_serves_only_its_own_names(
    headers: dict[str, str], status: int
) -> None:
    assert await status_of(HostGuard(hello, "127.0.0.1", PORT), headers) == status


@pytest.mark.anyio
async def test_wildcard_bind_accepts_the_address_a_connection_arrived_on() -> None:
    guard = HostGuard(hello, "0.0.0.0", PORT)
    via = ("192.0.2.7", PORT)
    assert await status_of(guard, {"Host": f"192.0.2.7:{PORT}"}, via) == 200
    assert await status_of(guard, {"Host": f"192.0.2.7:{PORT}"}, ("::ffff:192.0.2.7", PORT)) == 200
    assert await status_of(guard, {"Host": f"[fd00::2]:{PORT}"}, ("fd00::2", PORT)) == 200
    assert await status_of(guard, {"Host": f"{socket.gethostname()}:{PORT}"}, via) == 200
    # another address of this machine, or a name, is not this connection's: 421
    assert await status_of(guard, {"Host": f"192.0.2.8:{PORT}"}, via) == 421
    assert await status_of(guard, {"Host": f"192.0.2.7:{PORT + 1}"}, via) == 421
    assert await status_of(guard, {"Host": f"rebound.evil.example:{PORT}"}, via) == 421
    foreign_page = {"Host": f"192.0.2.7:{PORT}", "Origin": "http://evil.example"}
    assert await status_of(guard, foreign_page, via) == 403
    # a specific bind does not take the arrival address: it is always the bound one
    assert await status_of(HostGuard(hello, "192.0.2.7", PORT), {"Host": "192.0.2.7:1"}, via) == 421


@pytest.mark.anyio
async def test_allowed_host_exact_with_a_port_any_port_without() -> None:
    guard = HostGuard(hello, "127.0.0.1", PORT, ["proxy.example", "mem.internal:443"])
    assert await status_of(guard, {"Host": "proxy.example"}) == 200
    assert await status_of(guard, {"Host": "proxy.example:8443"}) == 200
    assert await status_of(guard, {"Host": "mem.internal:443"}) == 200
    assert await status_of(guard, {"Host": "mem.internal"}) == 421
    assert await status_of(guard, {"Host": "other.example"}) == 421


@pytest.mark.anyio
async def test_two_host_or_origin_headers_are_refused() -> None:
    guard = HostGuard(hello, "127.0.0.1", PORT)
    scope_headers = [(b"host", f"127.0.0.1:{PORT}".encode()), (b"host", b"evil.example")]
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "headers": scope_headers, "server": ("127.0.0.1", PORT)}
    await guard(scope, None, send)  # type: ignore[arg-type]
    assert sent[0]["status"] == 421


def test_guard_names_are_logged_at_start() -> None:
    names = HostGuard(hello, "0.0.0.0", PORT, ["proxy.example"]).names()
    assert f"localhost:{PORT}" in names and f"[::1]:{PORT}" in names and "proxy.example" in names
    assert f"{socket.gethostname().lower()}:{PORT}" in names
    assert any("arrives on" in n for n in names)


# -- over real sockets ----------------------------------------------------------------------


def http_get(address: str, port: int, host: str, origin: str | None = None) -> int:
    """One GET over a fresh socket; the status code."""
    extra = f"Origin: {origin}\r\n" if origin else ""
    with socket.create_connection((address, port), timeout=5) as s:
        s.sendall(f"GET /mcp HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n".encode())
        head = s.recv(4096)
    return int(head.split(b" ", 2)[1])


@pytest.fixture
def wildcard_server() -> Iterator[int]:
    port = free_port()
    options = transports.HttpOptions("0.0.0.0", port, header_timeout=0.5, idle_timeout=1)
    with ThreadedServer(HostGuard(hello, "0.0.0.0", port), options):
        yield port


def test_a_client_connecting_by_ip_to_a_wildcard_bind_is_served(wildcard_server: int) -> None:
    port, address = wildcard_server, local_address()
    assert http_get(address, port, f"{address}:{port}") == 200
    assert http_get("127.0.0.1", port, f"localhost:{port}") == 200
    assert http_get(address, port, f"evil.example:{port}") == 421
    assert http_get(address, port, f"{address}:{port}", origin="http://evil.example") == 403


# -- slowloris: a deadline for the request head ----------------------------------------------

SLOW_SOCKETS = 50
HEADER_TIMEOUT = 0.5
CLOSE_WITHIN = HEADER_TIMEOUT + 4.0  # generous for a loaded 2-core runner


def open_slow_sockets(port: int, n: int) -> list[socket.socket]:
    sockets = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.settimeout(0.01)
        s.send(b"GE")  # half a request line
        sockets.append(s)
    return sockets


def test_slow_header_sockets_are_closed_while_others_are_served() -> None:
    port = free_port()
    options = transports.HttpOptions("127.0.0.1", port, header_timeout=HEADER_TIMEOUT)
    with ThreadedServer(HostGuard(hello, "127.0.0.1", port), options):
        sockets = open_slow_sockets(port, SLOW_SOCKETS)
        try:
            assert http_get("127.0.0.1", port, f"127.0.0.1:{port}") == 200  # served meanwhile
            closed = dribble_until_closed(sockets, CLOSE_WITHIN)
            assert http_get("127.0.0.1", port, f"127.0.0.1:{port}") == 200
        finally:
            for s in sockets:
                s.close()
    assert len(closed) == SLOW_SOCKETS, f"{SLOW_SOCKETS - len(closed)} slow sockets still open"
    assert max(closed.values()) < CLOSE_WITHIN
    assert min(closed.values()) > HEADER_TIMEOUT * 0.5  # the deadline, not an instant refusal


def test_a_silent_connection_and_an_idle_kept_alive_one_are_closed() -> None:
    port = free_port()
    options = transports.HttpOptions("127.0.0.1", port, header_timeout=HEADER_TIMEOUT,
                                     idle_timeout=1)  # fmt: skip
    with ThreadedServer(HostGuard(hello, "127.0.0.1", port), options):
        silent = socket.create_connection(("127.0.0.1", port), timeout=CLOSE_WITHIN)
        kept = socket.create_connection(("127.0.0.1", port), timeout=CLOSE_WITHIN)
        with silent, kept:
            kept.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            response = b""
            while not response.endswith(b"ok"):
                response += kept.recv(4096)
            start = time.monotonic()
            assert silent.recv(1) == b""  # closed by the head deadline
            assert kept.recv(1) == b""  # closed after the idle keep-alive timeout
            assert time.monotonic() - start < CLOSE_WITHIN


def test_a_kept_alive_connection_gets_a_fresh_deadline_per_request() -> None:
    port = free_port()
    options = transports.HttpOptions("127.0.0.1", port, header_timeout=HEADER_TIMEOUT,
                                     idle_timeout=30)  # fmt: skip
    with (
        ThreadedServer(HostGuard(hello, "127.0.0.1", port), options),
        socket.create_connection(("127.0.0.1", port), timeout=CLOSE_WITHIN) as s,
    ):
        request = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        for _ in range(3):  # each request within its deadline: all answered
            s.sendall(request)
            response = b""
            while not response.endswith(b"ok"):
                response += s.recv(4096)
            assert response.startswith(b"HTTP/1.1 200")
        s.sendall(b"GET / HT")  # the next head never completes
        start = time.monotonic()
        assert s.recv(1) == b""
        assert HEADER_TIMEOUT * 0.5 < time.monotonic() - start < CLOSE_WITHIN


def test_http_app_puts_the_guard_in_front_of_the_sdk_app(tmp_path: Any) -> None:
    from memserver.server.app import build_server

    server = build_server(tmp_path, None, env={})
    options = transports.HttpOptions("0.0.0.0", PORT)
    app = transports.http_app(server, "http", options)
    assert isinstance(app, HostGuard) and app.wildcard
    security = transports.transport_security()
    assert security.enable_dns_rebinding_protection is False  # HostGuard's job, not the SDK's


def test_a_slow_body_is_closed_even_after_an_early_answer() -> None:
    """A 401 (or any answer) before the body is read must not leave the socket to dribble:
    each body byte cancels uvicorn's own keep-alive timer."""
    port = free_port()
    options = transports.HttpOptions("127.0.0.1", port, header_timeout=HEADER_TIMEOUT,
                                     body_timeout=HEADER_TIMEOUT, idle_timeout=30)  # fmt: skip
    with ThreadedServer(HostGuard(hello, "127.0.0.1", port), options):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  "Content-Length: 1000000\r\n\r\n".encode())  # fmt: skip
        s.settimeout(0.01)
        with s:
            closed = dribble_until_closed([s], CLOSE_WITHIN)
        assert http_get("127.0.0.1", port, f"127.0.0.1:{port}") == 200
    assert list(closed) == [0] and closed[0] > HEADER_TIMEOUT * 0.5


def test_a_normal_post_with_a_body_is_answered() -> None:
    port = free_port()
    options = transports.HttpOptions("127.0.0.1", port, header_timeout=HEADER_TIMEOUT,
                                     body_timeout=HEADER_TIMEOUT)  # fmt: skip
    body = b"x" * 200_000
    with (
        ThreadedServer(HostGuard(hello, "127.0.0.1", port), options),
        socket.create_connection(("127.0.0.1", port), timeout=5) as s,
    ):
        s.sendall(f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: "
                  f"{len(body)}\r\nConnection: close\r\n\r\n".encode() + body)  # fmt: skip
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
