"""Running the server: stdio (default), streamable HTTP at /mcp, or SSE for older clients.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memserver.core.errors import ConfigError
from memserver.server.guard import WILDCARDS, HostGuard, is_loopback

Transport = Literal["stdio", "sse", "http"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "sse", "http")
HTTP_PATH = "/mcp"
SSE_PATH, SSE_MESSAGES = "/sse", "/messages/"
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


def http_app(server: Any, transport: Transport, options: HttpOptions) -> HostGuard:
    """The ASGI app for `http` (streamable HTTP at /mcp) or `sse` (/sse + /messages/),
    behind the Host/Origin guard."""
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
          *, log_level: str = "info") -> None:  # fmt: skip
    """Block serving `server` until stdin closes (stdio) or the process is stopped (HTTP)."""
    if transport == "stdio":
        from memserver.server.stdio import run_stdio

        run_stdio(server)
        return
    import uvicorn

    options = options or HttpOptions()
    app = http_app(server, transport, options)
    path = HTTP_PATH if transport == "http" else SSE_PATH
    logger.info("memserver: serving %s at http://%s:%d%s", transport,
                _bracket(options.host), options.port, path)  # fmt: skip
    logger.info("memserver: accepting Host %s%s", ", ".join(app.names()),
                "" if options.host.strip("[]") not in WILDCARDS else
                " (another name, e.g. behind a proxy: --allowed-host NAME[:PORT])")  # fmt: skip
    uvicorn.Server(uvicorn_config(app, options, log_level)).run()


__all__ = [
    "TRANSPORTS", "HttpOptions", "check_bind", "configure_logging", "http_app", "serve",
    "transport_security", "uvicorn_config",
]  # fmt: skip
