"""Running the server: stdio (default), streamable HTTP at /mcp, or SSE for older clients.
Other apps can be mounted beside the MCP endpoint (`Mounts`: the review page at /ui),
behind the same Host/Origin guard.

HTTP and SSE bind to 127.0.0.1 unless told otherwise. A non-loopback address needs
`--allow-remote` and a bearer token (MEMSERVER_TOKEN, or a `--tokens` file that pins each
token's scope); with a token every request must carry `Authorization: Bearer <token>`
(401 otherwise, enforced by the SDK's bearer middleware, see `app.build_server`). Every
token is checked by `bearer.check_token` (long, no whitespace). Host and Origin headers are
checked against DNS rebinding by `guard.HostGuard` in front of the SDK's app (421 for a
foreign Host, 403 for a foreign Origin); uvicorn runs with deadlines for each request's
head and body (`timeouts`) and closes idle kept-alive connections. Stdio answers lines that are no
JSON-RPC message (`stdio`). All logs go to stderr: under stdio, stdout is the protocol
channel.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memserver.core.errors import ConfigError
from memserver.server.guard import WILDCARDS, ASGIApp, HostGuard, Receive, Scope, Send, is_loopback

Transport = Literal["stdio", "sse", "http"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "sse", "http")
HTTP_PATH = "/mcp"
SSE_PATH, SSE_MESSAGES = "/sse", "/messages/"
UI_PATH = "/ui"  # the review page, as a route of the HTTP transport
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
logger = logging.getLogger("memserver.server")


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """How the HTTP/SSE listener treats its connections."""

    host: str = "127.0.0.1"
    port: int = 8765
    extra_hosts: Sequence[str] = ()
    header_timeout: float = 10.0  # seconds for a request line and headers, from the first byte
    body_timeout: float = 30.0  # seconds for the body, from the end of the headers
    idle_timeout: int = 5  # seconds a kept-alive connection may sit idle between requests


def check_bind(host: str, allow_remote: bool, has_token: bool) -> None:
    """Refuse to listen beyond this machine without both consent and a token (each token
    has been checked by `bearer.check_token` already)."""
    if is_loopback(host):
        return
    if not allow_remote:
        raise ConfigError(
            f"refusing to listen on {host!r}: it is reachable from other machines",
            hint="bind 127.0.0.1 (the default), or pass --allow-remote and set MEMSERVER_TOKEN "
            "(or --tokens FILE) to a long random secret that every client must send as a "
            "bearer token",
        )
    if not has_token:
        raise ConfigError(
            f"refusing to listen on {host!r} without a token: --allow-remote needs "
            "MEMSERVER_TOKEN or --tokens FILE",
            hint="set it to a long random secret, e.g. export MEMSERVER_TOKEN=$(python3 -c "
            "'import secrets; print(secrets.token_urlsafe(32))'), and give clients the header "
            "'Authorization: Bearer <token>'",
        )


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def transport_security() -> Any:
    """The SDK's own check keeps only its Content-Type rule: Host and Origin are HostGuard's."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def configure_logging(level: str) -> None:
    """One stderr handler for everything (the SDK's own set-up then keeps it)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def uvicorn_log_config(level: str) -> dict[str, Any]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": LOG_FORMAT}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "plain",
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "uvicorn.access": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        },
    }


class Mounts:
    """Requests under a mounted prefix go to that prefix's app, everything else (lifespan
    included) to `app`. As Starlette's `Mount` does, the path stays whole and the prefix
    goes into `root_path`; the bare prefix redirects to the prefix with a slash."""

    def __init__(self, app: ASGIApp, mounts: Mapping[str, ASGIApp]) -> None:
        self.app = app
        self.mounts = dict(mounts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            for prefix, mounted in self.mounts.items():
                if path == prefix:
                    query = scope.get("query_string", b"")
                    where = (prefix + "/").encode() + (b"?" + query if query else b"")
                    await _plain(send, 308, "", [(b"location", where)])
                    return
                if path.startswith(prefix + "/"):
                    root = scope.get("root_path", "") + prefix
                    await mounted({**scope, "root_path": root}, receive, send)
                    return
        await self.app(scope, receive, send)


def unavailable(text: str, status: int = 404) -> ASGIApp:
    """An app that answers every request with `text` (e.g. why a page is off)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await _plain(send, status, text)

    return app


async def _plain(send: Send, status: int, text: str,
                 headers: Sequence[tuple[bytes, bytes]] = ()) -> None:  # fmt: skip
    body = text.encode()
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()), *headers],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def http_app(server: Any, transport: Transport, options: HttpOptions,
             mounts: Mapping[str, ASGIApp] | None = None) -> HostGuard:  # fmt: skip
    """The ASGI app for `http` (streamable HTTP at /mcp) or `sse` (/sse + /messages/),
    with `mounts` (prefix → app, e.g. the review page at /ui) beside it, all behind the
    Host/Origin guard."""
    security = transport_security()
    if transport == "http":
        app = server.streamable_http_app(
            streamable_http_path=HTTP_PATH, transport_security=security, host=options.host
        )
    else:
        app = server.sse_app(
            sse_path=SSE_PATH, message_path=SSE_MESSAGES, transport_security=security,
            host=options.host,
        )  # fmt: skip
    if mounts:
        app = Mounts(app, mounts)
    return HostGuard(app, options.host, options.port, options.extra_hosts)


def uvicorn_config(app: Any, options: HttpOptions, log_level: str = "info") -> Any:
    import uvicorn

    from memserver.server.timeouts import deadline_protocol

    return uvicorn.Config(
        app, host=options.host.strip("[]"), port=options.port,
        http=deadline_protocol(options.header_timeout, options.body_timeout),
        timeout_keep_alive=options.idle_timeout, log_config=uvicorn_log_config(log_level),
        access_log=log_level.lower() == "debug", timeout_graceful_shutdown=3,
    )  # fmt: skip


def serve(server: Any, transport: Transport, options: HttpOptions | None = None,
          *, log_level: str = "info", mounts: Mapping[str, ASGIApp] | None = None,
          ) -> None:  # fmt: skip
    """Block serving `server` until stdin closes (stdio) or the process is stopped (HTTP),
    with `mounts` beside it over HTTP (prefix → app)."""
    if transport == "stdio":
        from memserver.server.stdio import run_stdio

        run_stdio(server)
        return
    import uvicorn

    options = options or HttpOptions()
    app = http_app(server, transport, options, mounts)
    path = HTTP_PATH if transport == "http" else SSE_PATH
    logger.info("memserver: serving %s at http://%s:%d%s", transport,
                _bracket(options.host), options.port, path)  # fmt: skip
    for prefix in mounts or {}:
        logger.info("memserver: and at http://%s:%d%s/", _bracket(options.host), options.port,
                    prefix)  # fmt: skip
    logger.info("memserver: accepting Host %s%s", ", ".join(app.names()),
                "" if options.host.strip("[]") not in WILDCARDS else
                " (another name, e.g. behind a proxy: --allowed-host NAME[:PORT])")  # fmt: skip
    uvicorn.Server(uvicorn_config(app, options, log_level)).run()


__all__ = [
    "TRANSPORTS", "UI_PATH", "HttpOptions", "Mounts", "check_bind", "configure_logging",
    "http_app", "serve", "transport_security", "unavailable", "uvicorn_config",
]  # fmt: skip
