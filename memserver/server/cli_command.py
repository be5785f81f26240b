"""`memserver serve`: the click command, built by `serve_command()` for the CLI to register.

Cheap to import (no MCP SDK, no engine): both load when the command runs, and the
engine loads in the background after the server is up, so a client's `initialize`
is answered while the index and models are still loading.
"""

from __future__ import annotations

import os

import click

TOKEN_ENV = "MEMSERVER_TOKEN"


def serve_command() -> click.Command:
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
        help=f"Allow a non-loopback --host; requires a bearer token in ${TOKEN_ENV}.",
    )  # fmt: skip
    @click.option(
        "--allowed-host", "allowed_hosts", multiple=True,
        help="Extra Host header value (name:port) to accept, e.g. behind a proxy (repeatable).",
    )  # fmt: skip
    @click.option(
        "--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
        default="info", show_default=True, help="Logs go to stderr.",
    )  # fmt: skip
    @click.option(
        "--watch", is_flag=True,
        help="Also keep the index fresh as files change (indexes the tree first if needed).",
    )  # fmt: skip
    def serve(
        root: str | None,
        index_dir: str | None,
        transport: str,
        host: str,
        port: int,
        allow_remote: bool,
        allowed_hosts: tuple[str, ...],
        log_level: str,
        watch: bool,
    ) -> None:
        """Run the MCP server over stdio (default), streamable HTTP or SSE.

        With a token in $MEMSERVER_TOKEN, HTTP and SSE requests must send
        'Authorization: Bearer <token>'.
        """
        from memserver.core.errors import MemserverError
        from memserver.server import transports

        token = os.environ.get(TOKEN_ENV) or None
        if transport != "stdio":
            try:
                transports.check_bind(host, allow_remote, token)
            except MemserverError as err:
                raise click.UsageError(f"{err.message}\n  hint: {err.hint}") from err
        transports.configure_logging(log_level)
        from memserver.server.app import build_server
        from memserver.server.backend import Backend

        backend = Backend(root, index_dir)
        server = build_server(root, index_dir, token=token, backend=backend)
        if transport == "sse":  # SSE enters the lifespan per connection: start loading now
            backend.warm_up()
        if watch:
            backend.watch()
        try:
            transports.serve(
                server, transport, host, port,  # type: ignore[arg-type]
                log_level=log_level, extra_hosts=allowed_hosts,
            )  # fmt: skip
        finally:
            backend.stop_watching()

    return serve


__all__ = ["serve_command"]
