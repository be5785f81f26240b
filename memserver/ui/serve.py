"""Run the review page: uvicorn on 127.0.0.1 (the HTTP transport's bind rules), the
browser opened on it when asked. Logs go to stderr."""

from __future__ import annotations

import logging
import threading
import webbrowser
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import uvicorn

from memserver.server.bearer import check_token
from memserver.server.transports import check_bind, configure_logging, uvicorn_log_config
from memserver.ui.app import build_app
from memserver.ui.state import UiState

if TYPE_CHECKING:
    from memserver.engine import Engine

__all__ = ["page_url", "serve_ui"]

logger = logging.getLogger("memserver.ui")


def page_url(host: str, port: int, token: str | None) -> str:
    name = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{name}:{port}/" + (f"?token={token}" if token else "")


def serve_ui(
    engine: Engine, *, host: str = "127.0.0.1", port: int = 8766, token: str | None = None,
    allow_remote: bool = False, extra_hosts: Sequence[str] = (), open_browser: bool = False,
    log_level: str = "info", announce: Callable[[str], None] = print,
) -> None:  # fmt: skip
    """Block serving the review page of `engine`'s index until stopped (Ctrl-C)."""
    if token:
        check_token(token)
    check_bind(host, allow_remote, bool(token))
    state = UiState(engine)  # no index: the error says how to make one, before any logging set-up
    configure_logging(log_level)
    state.warm_up()
    app = build_app(state, host=host, port=port, token=token, extra_hosts=extra_hosts)
    config = uvicorn.Config(
        app, host=host.strip("[]"), port=port, log_config=uvicorn_log_config(log_level),
        access_log=log_level.lower() == "debug", timeout_graceful_shutdown=3,
    )  # fmt: skip
    server = uvicorn.Server(config)
    url = page_url(host, port, token)
    announce(f"memserver ui: {url} (index {engine.index_dir}); Ctrl-C stops")
    if open_browser:

        def open_when_up() -> None:
            while not server.started and not server.should_exit:
                threading.Event().wait(0.05)
            if server.started:
                webbrowser.open(url)

        threading.Thread(target=open_when_up, name="memserver-ui-open", daemon=True).start()
    server.run()
