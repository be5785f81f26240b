"""The review page as a route of `memserver serve --transport http` (at /ui/).

It borrows the MCP server's backend (`state.Shared`): the same engine, store and recaller
the tools use, loaded once, reloaded together; writes go through the same services, as
actor `ui`. The guard is the page's own (`guard.Guard`), with the server's bind, allowed
hosts and $MEMSERVER_TOKEN: the Host/Origin rules of the transport, the bearer token (or
the cookie a visit with `?token=` sets), and the form token on every change.
"""

from __future__ import annotations

from collections.abc import Sequence

from memserver.ui.app import build_app
from memserver.ui.guard import Guard
from memserver.ui.state import Ready, Shared, UiState

__all__ = ["review_page"]


def review_page(backend: Ready, *, host: str, port: int, token: str | None,
                extra_hosts: Sequence[str] = ()) -> Guard:  # fmt: skip
    """The review page over `backend` (the server's; see the module docstring)."""
    return build_app(UiState(Shared(backend)), host=host, port=port, token=token,
                     extra_hosts=extra_hosts)  # fmt: skip
