"""`memserver serve`: the click command, built by `serve_command()` for the CLI to register.

Cheap to import (no MCP SDK, no engine): both load when the command runs, and the
engine loads in the background after the server is up, so a client's `initialize`
is answered while the index and models are still loading.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from memserver.core.requests import Scope
    from memserver.server.backend import Backend
    from memserver.server.transports import HttpOptions

TOKEN_ENV = "MEMSERVER_TOKEN"
# (the server's backend, its HTTP options, $MEMSERVER_TOKEN) → the review page's ASGI app
ReviewPage = Callable[["Backend", "HttpOptions", "str | None"], Any]
PAGE_OFF_SCOPED = (
    "The review page is off on this server: its callers are pinned to scopes (--tokens or "
    "--scope), and the page shows and changes every scope's memories. Run `memserver ui` "
    "on the machine that holds the index instead.\n"
)


def serve_command(review_page: ReviewPage | None = None) -> click.Command:
    """The `serve` command; with `review_page`, `--transport http` also serves the review
    page at /ui/ over the server's own backend (the CLI passes it; the server package does
    not import the page)."""

    @click.command(name="serve")
    @click.option(
        "--root", "root", type=click.Path(exists=True, file_okay=False), default=None,
        help="Project root (default: the current directory).",
    )  # fmt: skip
    @click.option(
        "--index-dir", type=click.Path(file_okay=False), default=None,
        envvar="MEMSERVER_INDEX_DIR", help="Index location (default: <root>/.memserver).",
    )  # fmt: skip
    @click.option(
        "--transport", type=click.Choice(["stdio", "sse", "http"]), default="stdio",
        show_default=True,
        help="stdio for a client that starts the server; http = streamable HTTP at /mcp; "
        "sse = the older HTTP+SSE transport at /sse.",
    )  # fmt: skip
    @click.option("--host", default="127.0.0.1", show_default=True, help="HTTP/SSE bind address.")
    @click.option(
        "--port", type=click.IntRange(1, 65535), default=8765, show_default=True,
        help="HTTP/SSE port.",
    )  # fmt: skip
    @click.option(
        "--allow-remote", is_flag=True,
        help=f"Allow a non-loopback --host; requires a bearer token (32+ characters) in "
        f"${TOKEN_ENV} or --tokens.",
    )  # fmt: skip
    @click.option(
        "--allowed-host", "allowed_hosts", multiple=True,
        help="Extra Host header to accept (repeatable): NAME:PORT exactly, or NAME with any "
        "port, e.g. behind a proxy. On 0.0.0.0 the address a client connects to is accepted.",
    )  # fmt: skip
    @click.option(
        "--tokens", "tokens_file", type=click.Path(dir_okay=False), default=None,
        help='HTTP/SSE: a JSON or TOML file mapping bearer tokens to the scope each caller is '
        'pinned to, e.g. {"<token>": {"user": "alice"}}; instead of $' + TOKEN_ENV + ".",
    )  # fmt: skip
    @click.option(
        "--scope", "scopes", multiple=True, metavar="KEY=VALUE",
        help="Pin every caller to this scope (user, session, agent; repeatable), whatever "
        "scope a tool call names.",
    )  # fmt: skip
    @click.option(
        "--header-timeout", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True,
        help="HTTP/SSE: seconds a client has to send a request line and headers.",
    )  # fmt: skip
    @click.option(
        "--body-timeout", type=click.FloatRange(0.1, 3600), default=30.0, show_default=True,
        help="HTTP/SSE: seconds a client has to send a request body, after its headers.",
    )  # fmt: skip
    @click.option(
        "--idle-timeout", type=click.IntRange(1, 3600), default=5, show_default=True,
        help="HTTP/SSE: seconds a kept-alive connection may stay idle between requests.",
    )  # fmt: skip
    @click.option(
        "--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
        default="info", show_default=True, help="Logs go to stderr.",
    )  # fmt: skip
    @click.option(
        "--watch", is_flag=True,
        help="Also keep the index fresh as files change (indexes the tree first if needed).",
    )  # fmt: skip
    @click.option(
        "--no-ui", is_flag=True,
        help="HTTP: do not serve the review page at /ui/ (served by default, with the same "
        "Host/Origin checks and token as /mcp).",
    )  # fmt: skip
    def serve(
        root: str | None,
        index_dir: str | None,
        transport: str,
        host: str,
        port: int,
        allow_remote: bool,
        allowed_hosts: tuple[str, ...],
        tokens_file: str | None,
        scopes: tuple[str, ...],
        header_timeout: float,
        body_timeout: float,
        idle_timeout: int,
        log_level: str,
        watch: bool,
        no_ui: bool,
    ) -> None:
        """Run the MCP server over stdio (default), streamable HTTP or SSE.

        With a token in $MEMSERVER_TOKEN (or a --tokens file), HTTP and SSE requests must
        send 'Authorization: Bearer <token>'. Over HTTP the review page (`memserver ui`)
        is a route too, at /ui/, unless --no-ui.
        """
        from memserver.core.errors import MemserverError
        from memserver.server import transports

        _server_heap()
        try:
            auth = _auth(transport, host, allow_remote, tokens_file, scopes, allowed_hosts)
        except MemserverError as err:
            raise click.UsageError(f"{err.message}\n  hint: {err.hint}") from err
        transports.configure_logging(log_level)
        from memserver.server.app import build_server
        from memserver.server.backend import Backend

        backend = Backend(root, index_dir)
        server = build_server(
            root, index_dir, token=auth.token, tokens=auth.tokens, pinned_scope=auth.pinned,
            backend=backend,
        )  # fmt: skip
        if transport == "sse":  # SSE enters the lifespan per connection: start loading now
            backend.warm_up()
        if watch:
            backend.watch()
        options = transports.HttpOptions(
            host, port, allowed_hosts, header_timeout, body_timeout, idle_timeout
        )
        mounts: dict[str, Any] = {}
        if transport == "http" and review_page is not None and not no_ui:
            scoped = auth.tokens is not None or auth.pinned is not None
            mounts[transports.UI_PATH] = (
                transports.unavailable(PAGE_OFF_SCOPED) if scoped
                else review_page(backend, options, auth.token)
            )  # fmt: skip
        try:
            transports.serve(server, transport, options, log_level=log_level,  # type: ignore[arg-type]
                             mounts=mounts)  # fmt: skip
        finally:
            backend.stop_watching()

    return serve


MALLOC_ARENAS = 2  # glibc heap arenas for the server's threads (see `_server_heap`)


def _server_heap() -> None:
    """A long-lived process that mostly waits needs few heaps:

    - at most `MALLOC_ARENAS` glibc heap arenas for the server's threads (the event loop,
      tool calls, LanceDB's and ONNX Runtime's pools), where glibc gives each thread that
      meets a busy heap an arena of its own, up to eight per core, and keeps the pages
      each one freed: on the click index, 10 MB less RSS after 100 recalls;
    - Arrow's buffers from the system allocator (those capped arenas, trimmed after large
      reads) instead of a heap of Arrow's own beside it: 3 MB less.

    `MALLOC_ARENA_MAX` and `ARROW_DEFAULT_MEMORY_POOL` in the environment win; elsewhere
    than glibc the arenas are left alone."""
    from memserver.core import heap

    heap.cap_arenas(MALLOC_ARENAS)
    heap.arrow_system_pool()


@dataclass(frozen=True, slots=True)
class ServeAuth:
    token: str | None  # $MEMSERVER_TOKEN, checked; pins no scope
    tokens: dict[str, Scope] | None  # --tokens: token → the scope it pins
    pinned: Scope | None  # --scope: every caller's scope


def _auth(
    transport: str, host: str, allow_remote: bool, tokens_file: str | None,
    scopes: tuple[str, ...], allowed_hosts: tuple[str, ...],
) -> ServeAuth:  # fmt: skip
    """Tokens, pinned scope and bind, checked before anything starts."""
    from memserver.core.errors import ConfigError
    from memserver.server import bearer, guard, transports

    pinned = None
    if scopes:
        for pair in scopes:
            if "=" not in pair:
                raise ConfigError(f"--scope {pair!r}: write KEY=VALUE", hint="e.g. user=alice")
        pairs = [(k.strip(), v) for k, _, v in (pair.partition("=") for pair in scopes)]
        pinned = bearer.scope_from_pairs(pairs, "--scope")
    if transport == "stdio":
        if tokens_file:
            raise ConfigError(
                "--tokens is for --transport http or sse",
                hint="a stdio server has one caller: pin its scope with --scope",
            )
        return ServeAuth(None, None, pinned)
    env_token = os.environ.get(TOKEN_ENV) or None  # set but empty counts as unset
    if tokens_file and (env_token or pinned is not None):
        raise ConfigError(
            f"--tokens cannot be combined with ${TOKEN_ENV} or --scope",
            hint=f"each token in the file pins its own scope: unset {TOKEN_ENV} and drop --scope",
        )
    token = bearer.check_token(env_token) if env_token else None
    tokens = bearer.load_token_file(tokens_file) if tokens_file else None
    guard.check_allowed_hosts(allowed_hosts)
    transports.check_bind(host, allow_remote, bool(token or tokens))
    return ServeAuth(token, tokens, pinned)


__all__ = ["serve_command"]
