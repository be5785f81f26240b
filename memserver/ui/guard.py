"""The review page's gate: the HTTP transport's rules, for a browser.

Every request must name a Host this bind answers to (421 otherwise) and, when it sends an
Origin, come from a page of this machine (403): the same rules as the HTTP transport's
(`memserver.server.guard.HostGuard`, wildcard binds included). With a token
(MEMSERVER_TOKEN) every request must also carry it (401): as `Authorization: Bearer
<token>`, or as the cookie a visit to `/?token=<token>` sets (the address `memserver ui`
opens), since a browser cannot add the header itself.

A POST must also carry the form token its page was rendered with (`form_token`, checked
in `actions`), so a page elsewhere cannot submit a form here, and its Origin, when sent,
must be this very page's. Responses forbid framing, sniffing and outside resources.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from memserver.server.guard import HostGuard

__all__ = ["COOKIE", "Guard", "origin_allowed"]

COOKIE = "memserver_ui"
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    # not no-referrer: under it a browser sends `Origin: null` with its form posts
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def origin_allowed(origin: str | None) -> bool:
    return HostGuard.origin_ok(origin)


class Guard:
    """ASGI middleware in front of the review page (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, host: str, port: int, token: str | None = None,
                 extra_hosts: Sequence[str] = ()) -> None:  # fmt: skip
        self.app = app
        self.hosts = HostGuard(app, host, port, extra_hosts)
        self.token = token or None
        # the cookie holds a digest of the token, never the token itself
        self._cookie = hashlib.sha256(f"memserver-ui:{token}".encode()).hexdigest() if token else ""
        self.form_token = secrets.token_urlsafe(32)

    def host_allowed(self, host: str, server: Any = None) -> bool:
        return self.hosts.host_ok(host, server)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        denied = self._check(scope)
        if denied is not None:
            await denied(scope, receive, send)
            return

        async def send_secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_secured)

    def _check(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self.host_allowed(host, scope.get("server")):
            return PlainTextResponse("Invalid Host header", status_code=421)
        origin = headers.get("origin")
        if not origin_allowed(origin):
            return PlainTextResponse("Invalid Origin header", status_code=403)
        if scope["method"] not in ("GET", "HEAD") and origin and origin != f"http://{host}":
            return PlainTextResponse("A form of another page may not post here", 403)
        if self.token is None:
            return None
        return self._check_token(scope, headers)

    def _check_token(self, scope: Scope, headers: Headers) -> Response | None:
        assert self.token is not None
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and hmac.compare_digest(
            auth[7:].strip().encode(), self.token.encode()
        ):
            return None
        cookie = SimpleCookie(headers.get("cookie", ""))
        if COOKIE in cookie and hmac.compare_digest(cookie[COOKIE].value, self._cookie):
            return None
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        given = dict(query).get("token", "")
        if (
            scope["method"] == "GET"
            and given
            and hmac.compare_digest(given.encode(), self.token.encode())
        ):  # the address `memserver ui` opened: set the cookie, drop the token from the URL
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            response = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), 303)
            response.set_cookie(COOKIE, self._cookie, httponly=True, samesite="strict")
            return response
        return PlainTextResponse(
            "This page needs the token in $MEMSERVER_TOKEN: open the address `memserver ui` "
            "printed (it carries the token), or send 'Authorization: Bearer <token>'.",
            status_code=401, headers={"www-authenticate": "Bearer"},
        )  # fmt: skip
