"""Running the server: stdio (default), streamable HTTP at /mcp, or SSE for older clients.

HTTP and SSE bind to 127.0.0.1 unless told otherwise. A non-loopback address needs
`--allow-remote` and a bearer token (MEMSERVER_TOKEN); with a token every request must
carry `Authorization: Bearer <token>` (401 otherwise, enforced by the SDK's bearer
middleware, see `app.build_server`). Host and Origin headers are checked against DNS
rebinding by the SDK's transport security (421 for a foreign Host, 403 for a foreign
Origin). Stdio answers lines that are no JSON-RPC message (`stdio`). All logs go to
stderr: under stdio, stdout is the protocol channel.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
from collections.abc import Sequence
from typing import Any, Literal

from memserver.core.errors import ConfigError

Transport = Literal["stdio", "sse", "http"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "sse", "http")
HTTP_PATH = "/mcp"
SSE_PATH, SSE_MESSAGES = "/sse", "/messages/"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, allow_remote: bool, token: str | None) -> None:
    """Refuse to listen beyond this machine without both consent and a token."""
    if is_loopback(host):
        return
    if not allow_remote:
        raise ConfigError(
            f"refusing to listen on {host!r}: it is reachable from other machines",
            hint="bind 127.0.0.1 (the default), or pass --allow-remote and set MEMSERVER_TOKEN "
            "to a long random secret that every client must send as a bearer token",
        )
    if not token:
        raise ConfigError(
            f"refusing to listen on {host!r} without a token: --allow-remote needs MEMSERVER_TOKEN",
            hint="set it to a long random secret, e.g. export MEMSERVER_TOKEN=$(python -c "
            "'import secrets; print(secrets.token_urlsafe(32))'), and give clients the header "
            "'Authorization: Bearer <token>'",
        )


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(host: str, port: int, extra: Sequence[str] = ()) -> list[str]:
    """Host header values a client of this bind may send: the bound host:port variants."""
    names: list[str] = list(LOOPBACK_NAMES)
    if host in WILDCARDS:  # every interface: the machine's own names and addresses
        names += [socket.gethostname(), socket.getfqdn()]
    elif not is_loopback(host):
        names.append(host)
    names += list(extra)
    out: list[str] = []
    for name in dict.fromkeys(_bracket(n) for n in names if n):
        out += [f"{name}:{port}", name] if port == 80 else [f"{name}:{port}"]
    return out


def allowed_origins() -> list[str]:
    """Browser origins allowed to call: pages served from this machine only."""
    return [f"{scheme}://{name}:*" for scheme in ("http", "https") for name in LOOPBACK_NAMES]


def transport_security(host: str, port: int, extra_hosts: Sequence[str] = ()) -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts(host, port, extra_hosts),
        allowed_origins=allowed_origins(),
    )


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


def http_app(server: Any, transport: Transport, host: str, port: int,
             extra_hosts: Sequence[str] = ()) -> Any:  # fmt: skip
    """The Starlette app for `http` (streamable HTTP at /mcp) or `sse` (/sse + /messages/)."""
    security = transport_security(host, port, extra_hosts)
    if transport == "http":
        return server.streamable_http_app(
            streamable_http_path=HTTP_PATH, transport_security=security, host=host
        )
    return server.sse_app(
        sse_path=SSE_PATH, message_path=SSE_MESSAGES, transport_security=security, host=host
    )


def serve(server: Any, transport: Transport, host: str = "127.0.0.1", port: int = 8765,
          *, log_level: str = "info", extra_hosts: Sequence[str] = ()) -> None:  # fmt: skip
    """Block serving `server` until stdin closes (stdio) or the process is stopped (HTTP)."""
    if transport == "stdio":
        from memserver.server.stdio import run_stdio

        run_stdio(server)
        return
    import uvicorn

    app = http_app(server, transport, host, port, extra_hosts)
    config = uvicorn.Config(
        app, host=host.strip("[]"), port=port, log_config=uvicorn_log_config(log_level),
        access_log=log_level.lower() == "debug", timeout_graceful_shutdown=3,
    )  # fmt: skip
    url = f"http://{_bracket(host)}:{port}{HTTP_PATH if transport == 'http' else SSE_PATH}"
    logging.getLogger("memserver.server").info("memserver: serving %s at %s", transport, url)
    uvicorn.Server(config).run()


__all__ = ["TRANSPORTS", "check_bind", "configure_logging", "serve", "transport_security"]
