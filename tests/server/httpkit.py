"""A real uvicorn listener in a thread (our protocol class and config), for fast HTTP tests."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from memserver.server import transports

START_WAIT = 10.0  # seconds for uvicorn to bind


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def local_address() -> str:
    """This machine's address on its default route (no packet is sent), else 127.0.0.2:
    an address a wildcard bind accepts connections on that is not a listed loopback name."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the route
            address = str(s.getsockname()[0])
        except OSError:
            return "127.0.0.2"
    return "127.0.0.2" if address in ("0.0.0.0", "127.0.0.1") else address


class ThreadedServer:
    """`with ThreadedServer(app, options):` serves `app` until the block ends."""

    def __init__(self, app: Any, options: transports.HttpOptions) -> None:
        import uvicorn

        self.server = uvicorn.Server(transports.uvicorn_config(app, options, "warning"))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)

    def __enter__(self) -> ThreadedServer:
        self.thread.start()
        waited = 0.0
        while not self.server.started:
            if not self.thread.is_alive() or waited > START_WAIT:
                raise AssertionError("uvicorn did not start listening")
            self.thread.join(timeout=0.02)  # returns at once if it died; bounded wait otherwise
            waited += 0.02
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def dribble_until_closed(sockets: list[socket.socket], within: float) -> dict[int, float]:
    """Send one more byte of a never-ending request line on each open socket, round after
    round, until the server closes it; seconds until each was closed."""
    start, closed = time.monotonic(), {}
    line = b"GET /" + b"a" * 10_000
    sent = 0
    while len(closed) < len(sockets) and time.monotonic() - start < within:
        for i, s in enumerate(sockets):
            if i in closed:
                continue
            try:
                s.send(line[sent : sent + 1])
                if s.recv(1) == b"":  # the timeout (0.01 s) paces the dribble
                    closed[i] = time.monotonic() - start
            except TimeoutError:
                pass
            except OSError:  # reset or broken pipe: closed as well
                closed[i] = time.monotonic() - start
        sent += 1
    return closed
