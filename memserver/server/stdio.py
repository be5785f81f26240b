"""Serving over stdio, answering lines that are not JSON-RPC messages.

The SDK's `stdio_server` parses each stdin line; a line it cannot parse (invalid JSON, a
lone surrogate escape, nesting past the parser's depth limit) or that is no single
message (a batch array, an object without a method) becomes an exception on the read
stream, which the SDK's dispatcher drops with a debug log: the client waits for an answer
that never comes. We keep `stdio_server` as it is (it claims fd 0 and 1 so stray prints
cannot corrupt the protocol) and read its stream through `AnswerUnparseable`, which
answers each such line with a JSON-RPC error (`id: null`, as the id cannot be known) and
logs one line to stderr. Blank lines are skipped silently.
"""

from __future__ import annotations

import logging
import sys
from types import TracebackType
from typing import Any, Self

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError
from pydantic import ValidationError

__all__ = ["INVALID_REQUEST", "PARSE_ERROR", "AnswerUnparseable", "error_for", "run_stdio"]

logger = logging.getLogger("memserver.server")

PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def error_for(exc: Exception) -> ErrorData | None:
    """The JSON-RPC error for a line the transport could not turn into a message; None for
    a blank line."""
    if not isinstance(exc, ValidationError):
        return ErrorData(code=PARSE_ERROR, message=f"Parse error: {type(exc).__name__}")
    errors = exc.errors(include_url=False)
    raw = errors[0].get("input") if errors else None
    if isinstance(raw, str) and not raw.strip():
        return None
    invalid_json = [e["msg"] for e in errors if e["type"] == "json_invalid"]
    if invalid_json or not errors:
        return ErrorData(code=PARSE_ERROR, message=f"Parse error: {(invalid_json or ['?'])[0]}")
    if isinstance(raw, list):
        return ErrorData(code=INVALID_REQUEST, message="Invalid Request: batches are not supported")
    return ErrorData(
        code=INVALID_REQUEST,
        message="Invalid Request: not a JSON-RPC 2.0 request, notification or response",
    )


class AnswerUnparseable:
    """A read stream that passes messages on and answers the exceptions between them."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner, self._write = inner, write

    @property
    def last_context(self) -> Any:  # the sender context the SDK restores per message
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            error = error_for(item)
            if error is None:
                continue
            logger.warning("stdio: answered a line that is not a JSON-RPC message with %d (%s)",
                           error.code, error.message)  # fmt: skip
            reply = JSONRPCError(jsonrpc="2.0", id=None, error=error)
            await self._write.send(SessionMessage(reply))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        await self.aclose()


async def _serve(server: Any) -> None:
    # `MCPServer.run_stdio_async` with the read stream wrapped; the SDK's own in-memory
    # client reaches the low-level server the same way.
    lowlevel = server._lowlevel_server
    async with stdio_server() as (read, write):
        try:
            await lowlevel.run(
                AnswerUnparseable(read, write), write, lowlevel.create_initialization_options()
            )
        finally:  # a stray print still buffered must land on stderr, where fd 1 points now,
            sys.stdout.flush()  # not on the protocol channel once the SDK gives fd 1 back


def run_stdio(server: Any) -> None:
    """Block serving `server` over stdin/stdout until stdin closes."""
    anyio.run(_serve, server)
