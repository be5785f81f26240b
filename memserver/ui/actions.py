"""The review page's changes (POST): each one service call, as actor `ui`, then a redirect.

Every form carries the page's form token (see `guard`); a stale one is refused with a
page that says to reload. Each change is an event with actor `ui` (the services log it),
and the services say what cannot be undone or no longer applies.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from memserver.core.errors import BadRequest
from memserver.core.requests import Note, check_ids, check_paths, check_size, check_text
from memserver.core.types import MEMORY_TYPES
from memserver.ui.state import ACTOR, UiState
from memserver.ui.views import CONSOLIDATION_OPS, csv_param

__all__ = ["routes"]


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _next(form: FormData, default: str) -> str:
    """Where to go after the change: a path of this page only (below its root path)."""
    target = str(form.get("next") or "")
    return target if target.startswith("/") and not target.startswith("//") else default


def _with_done(url: str, done: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}done={done}"


def action(fn: Callable[[Request, FormData, UiState], str]) -> Callable[[Request], Any]:
    """A POST endpoint: check the form token, run `fn` in a worker thread, redirect to
    the URL it returns."""

    async def endpoint(request: Request) -> Response:
        form = await request.form()
        token = form.get("form_token")
        if not isinstance(token, str) or not hmac.compare_digest(
            token.encode(), request.app.state.form_token.encode()
        ):
            raise BadRequest(
                "this form is out of date (the page was opened before the server restarted)",
                hint="reload the page and try again",
            )
        reason = str(form.get("reason") or "")
        check_size("reason", reason)
        url = await run_in_threadpool(fn, request, form, request.app.state.ui)
        return redirect(request.scope.get("root_path", "") + url)

    endpoint.__name__ = fn.__name__
    return endpoint


def _values(form: FormData, name: str) -> list[str]:
    return [str(v).strip() for v in form.getlist(name) if str(v).strip()]


@action
def keep(request: Request, form: FormData, state: UiState) -> str:
    mid = check_ids([request.path_params["id"]])[0]
    result = state.memory_service().keep(mid, reason=str(form.get("reason") or ""))
    return _with_done(f"/memories/{result.memory_ids[0]}", "keep")


@action
def rewrite(request: Request, form: FormData, state: UiState) -> str:
    mid = check_ids([request.path_params["id"]])[0]
    detail = state.browser.memory(mid)
    if detail is None:
        raise BadRequest(f"unknown memory {mid}", hint="reload the page")
    old = detail.record.memory
    note = Note(
        check_text("text", str(form.get("text") or "")),
        kind=old.type if old.type in MEMORY_TYPES else None,
        paths=check_paths(csv_param(str(form.get("paths") or ""))), scope=old.scope,
    )  # fmt: skip
    result = state.memory_service().rewrite(mid, note, reason=str(form.get("reason") or ""))
    return _with_done(f"/memories/{result.memory_ids[0]}", "rewrite")


@action
def checked(request: Request, form: FormData, state: UiState) -> str:
    cid = check_ids([request.path_params["id"]])[0]
    state.memory_service().mark_checked(cid, reason=str(form.get("reason") or ""))
    return _with_done(_next(form, "/review/redactions"), "checked")


def _proposal(form: FormData) -> tuple[list[str], list[tuple[str, str]]]:
    merges = list(check_ids(_values(form, "merge")))
    older, newer = check_ids(_values(form, "older")), check_ids(_values(form, "newer"))
    if len(older) != len(newer):
        raise BadRequest("a contradiction needs its older and its newer memory",
                         hint="reload the proposals")  # fmt: skip
    pairs = list(zip(older, newer, strict=True))
    if not merges and not pairs:
        raise BadRequest("no proposal chosen", hint="press accept or reject on one proposal")
    return merges, pairs


@action
def accept(request: Request, form: FormData, state: UiState) -> str:
    merges, pairs = _proposal(form)
    state.consolidator().accept(merges, pairs, actor=ACTOR)
    return _with_done("/review/consolidation", "accept")


@action
def reject(request: Request, form: FormData, state: UiState) -> str:
    merges, pairs = _proposal(form)
    state.consolidator().reject(merges, pairs, actor=ACTOR,
                                reason=str(form.get("reason") or ""))  # fmt: skip
    return _with_done("/review/consolidation", "reject")


@action
def forget(request: Request, form: FormData, state: UiState) -> str:
    ids = check_ids(_values(form, "id"))
    paths = check_paths(_values(form, "path"))
    erase = form.get("erase") == "1"
    service = state.memory_service()
    result = service.forget(ids, paths, reason=str(form.get("reason") or ""), erase=erase,
                            scope=service.owner_scope(ids))  # fmt: skip
    first = (result.forgotten or list(ids) or [""])[0]
    target = f"/events?target={quote(first)}" if first else "/events"
    return _with_done(target, "erase" if erase else "forget")


@action
def undo(request: Request, form: FormData, state: UiState) -> str:
    key = request.path_params["key"]
    near = _values(form, "near")
    record = state.browser.event(key, near[0] if near else "")
    if record is None:
        raise BadRequest(f"no event {key}", hint="reload the audit log")
    reason = str(form.get("reason") or "")
    if record.event.op in CONSOLIDATION_OPS:
        state.consolidator().undo(record.event, actor=ACTOR, reason=reason)
    else:
        state.memory_service().undo(record.event, reason=reason)
    return _with_done(_next(form, "/events"), "undo")


def routes() -> Sequence[Route]:
    post = ["POST"]
    return [
        Route("/memories/{id}/keep", keep, methods=post),
        Route("/memories/{id}/rewrite", rewrite, methods=post),
        Route("/notes/{id}/checked", checked, methods=post),
        Route("/review/consolidation/accept", accept, methods=post),
        Route("/review/consolidation/reject", reject, methods=post),
        Route("/forget", forget, methods=post),
        Route("/events/{key}/undo", undo, methods=post),
    ]
