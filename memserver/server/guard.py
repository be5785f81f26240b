"""Host and Origin checks against DNS rebinding: one ASGI middleware in front of the SDK app.

A browser page from another site can reach a server on this machine by rebinding its own
DNS name to our address; its requests then carry that foreign name in `Host`, and in
`Origin` its own site. So a request is served only when `Host` names this server (421
otherwise) and `Origin`, if sent, is a page of this machine (403 otherwise).

The names this server answers to: the loopback names, the bound address, `--allowed-host`
values, and, on a wildcard bind (0.0.0.0, ::), the machine's own names plus whatever
local address the connection actually arrived on (the ASGI scope's `server`), so a client
that connects by IP works without listing every interface. An IP literal is safe to take:
a rebinding page never sends one, it sends its own domain name.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from memserver.core.errors import ConfigError

__all__ = [
    "LOOPBACK_NAMES", "WILDCARDS", "HostGuard", "check_allowed_hosts", "is_loopback", "split_host",
]  # fmt: skip

logger = logging.getLogger("memserver.server")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
ANY_PORT = -1


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def split_host(value: str, default_port: int = 80) -> tuple[str, int] | None:
    """`name[:port]` or `[v6][:port]` → (lower-case name without brackets, port); None if
    it is not a host."""
    value = value.strip().lower()
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    else:
        name, _, port = value.partition(":")
        if ":" in port:  # an unbracketed IPv6 literal is not a Host value
            return None
    if not name or (port and not port.isdigit()):
        return None
    return name, int(port) if port else default_port


def check_allowed_hosts(values: Sequence[str]) -> list[tuple[str, int]]:
    """`--allowed-host` values: `name:port` is taken exactly, a bare name with any port
    (behind a proxy the Host is often the proxy's name without a port)."""
    out = []
    for value in values:
        parsed = split_host(value, ANY_PORT)
        if parsed is None:
            raise ConfigError(
                f"--allowed-host {value!r} is not a host name or address with an optional port",
                hint="e.g. --allowed-host memserver.internal:8765, --allowed-host 192.0.2.7, "
                "--allowed-host [2001:db8::7]:8765",
            )
        out.append(parsed)
    return out


def _machine_names() -> list[str]:
    names = [socket.gethostname(), socket.getfqdn()]
    return [n for n in names if n]


class HostGuard:
    """Refuse requests whose Host is not this server (421) or whose Origin is a foreign
    page (403); everything else (and lifespan events) passes through to `app`."""

    def __init__(self, app: ASGIApp, host: str, port: int, extra_hosts: Sequence[str] = ()) -> None:
        self.app = app
        self.port = port
        self.wildcard = host.strip("[]") in WILDCARDS
        names = [*LOOPBACK_NAMES, *(_machine_names() if self.wildcard else [host.strip("[]")])]
        self.allowed: set[tuple[str, int]] = {(n.lower(), port) for n in names if n}
        self.allowed.update(check_allowed_hosts(extra_hosts))

    def names(self) -> list[str]:
        """The accepted Host values, for the start-up log."""
        shown = []
        for name, port in sorted(self.allowed):
            bracketed = f"[{name}]" if ":" in name else name
            shown.append(bracketed if port == ANY_PORT else f"{bracketed}:{port}")
        if self.wildcard:
            shown.append(f"<the local address each connection arrives on>:{self.port}")
        return shown

    def host_ok(self, value: str | None, server: Any) -> bool:
        parsed = split_host(value) if value else None
        if parsed is None:
            return False
        name, port = parsed
        if parsed in self.allowed or (name, ANY_PORT) in self.allowed:
            return True
        if not (self.wildcard and server):
            return False
        local = str(server[0]).lower()  # the address this connection was accepted on
        return name in (local, local.removeprefix("::ffff:")) and port == server[1]

    @staticmethod
    def origin_ok(value: str | None) -> bool:
        """No Origin (not a browser, or same-origin GET) or a page served from this machine."""
        if value is None:
            return True
        try:
            parts = urlsplit(value)
            _ = parts.port  # a malformed port raises
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan; no websocket route exists behind us
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, list[bytes]] = {}
        for key, value in scope.get("headers", ()):
            headers.setdefault(key.lower(), []).append(value)
        hosts, origins = headers.get(b"host", []), headers.get(b"origin", [])
        host = hosts[0].decode("latin-1") if len(hosts) == 1 else None
        if not self.host_ok(host, scope.get("server")):
            logger.warning("refused a request for Host %r (421): not a name of this server; "
                           "add it with --allowed-host if it is", host)  # fmt: skip
            await _refuse(send, 421, "Invalid Host header")
            return
        origin = origins[0].decode("latin-1") if len(origins) == 1 else None
        if len(origins) > 1 or not self.origin_ok(origin):
            logger.warning("refused a request from Origin %r (403): not a page of this "
                           "machine", origin)  # fmt: skip
            await _refuse(send, 403, "Invalid Origin header")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode())],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})
