"""uvicorn's h11 protocol with deadlines for reading a request (slowloris).

uvicorn 0.54 closes a kept-alive connection that stays idle after a response
(`timeout_keep_alive`), but nothing bounds the time a client may take to send a request:
a socket that dribbles a byte now and then, or opens and sends nothing, holds a
connection (and a file descriptor) for as long as it likes, and so does one that sends
headers and then a body a byte at a time (even after an early answer such as a 401, as
each byte cancels uvicorn's keep-alive timer). This subclass gives the request head a
deadline, counted from the connection's start (or, on a kept-alive connection, from the
first byte of the next request), and the body one more, counted from the end of the head;
neither is reset by each byte. A connection that misses one is closed.

Imported only when an HTTP transport starts (uvicorn is not needed for `--help`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DeadlineProtocol", "deadline_protocol"]

logger = logging.getLogger("memserver.server")


class DeadlineProtocol(H11Protocol):
    """H11Protocol that closes a connection whose request head, or body, is late."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase: Any = None  # the h11 state of the client the deadline is for

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._follow()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None:
            self._follow()  # the next request on a kept-alive connection begins
        super().data_received(data)
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _reading(self) -> Any:
        """h11.IDLE while the head is awaited, h11.SEND_BODY while the body is; else None."""
        state = self.conn.their_state
        if self.transport.is_closing() or state not in (h11.IDLE, h11.SEND_BODY):
            return None
        return state

    def _follow(self) -> None:
        """Keep one deadline for the part of the request being read now."""
        phase = self._reading()
        if phase is None:
            self._disarm()
        elif phase is not self._phase or self._deadline is None:
            self._disarm()
            seconds = self.header_timeout if phase is h11.IDLE else self.body_timeout
            self._deadline = self.loop.call_later(seconds, self._timed_out)
            self._phase = phase

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._phase = None, None

    def _timed_out(self) -> None:
        phase, self._deadline = self._phase, None
        if self._reading() is not phase or phase is None:
            return
        what = "request head" if phase is h11.IDLE else "request body"
        logger.debug("closed a connection from %s: no complete %s in time", self.client, what)
        if self.conn.our_state is h11.IDLE:
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()


def deadline_protocol(header_timeout: float, body_timeout: float) -> type[DeadlineProtocol]:
    """The protocol class to pass as `uvicorn.Config(http=...)`, with its deadlines set."""
    attrs = {"header_timeout": header_timeout, "body_timeout": body_timeout}
    return type("DeadlineProtocol", (DeadlineProtocol,), attrs)
