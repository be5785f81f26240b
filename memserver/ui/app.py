"""`build_app`: the review page as a Starlette app — its pages (GET); changes are in
`actions`. Every handler reads through `UiState` in a worker thread (the stores block)
and renders one template; our errors become a page that says what to do.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memserver.core.errors import BadRequest, MemserverError
from memserver.core.requests import LIMITS, Filters, check_paths, check_query
from memserver.core.types import MEMORY_TYPES
from memserver.store.browse import EventQuery, MemoryQuery
from memserver.ui import actions
from memserver.ui.guard import Guard
from memserver.ui.highlight import code_css
from memserver.ui.state import UiState
from memserver.ui.templates import render
from memserver.ui.views import (
    CONSOLIDATION_OPS,
    csv_param,
    date_param,
    scope_params,
    span_diff,
    undo_label,
)

__all__ = ["build_app"]

STATUSES = ("active", "stale", "superseded", "archived", "forgotten")
PAGE = 50
DONE = {  # ?done=… after a change: what the person is told
    "keep": "Kept: a copy citing the current code replaces the stale memory.",
    "rewrite": "Saved as a new note; it replaces the old memory.",
    "checked": "Marked as checked.",
    "accept": "Accepted: the merge or closing is applied.",
    "reject": "Rejected: it will not be proposed again.",
    "forget": "Forgotten.",
    "erase": "Forgotten and erased: no copy of the text is left in the index.",
    "undo": "Undone.",
}


def page(request: Request, name: str, title: str, code: int = 200, **context: Any
         ) -> HTMLResponse:  # fmt: skip
    state: UiState = request.app.state.ui
    done = request.query_params.get("done", "")
    html = render(name, {
        "title": title, "request": request, "form_token": request.app.state.form_token,
        "root": request.scope.get("root_path", ""),  # "/ui" as a route of `memserver serve`
        "project": state.engine.project, "index_dir": str(state.engine.index_dir),
        "flash": DONE.get(done, ""), "q": request.query_params.get("q", ""), **context,
    })  # fmt: skip
    return HTMLResponse(html, status_code=code)


def blocking(fn: Callable[..., Any]) -> Callable[[Request], Any]:
    """An endpoint whose body `fn(request, state)` runs in a worker thread."""

    async def endpoint(request: Request) -> Response:
        result: Response = await run_in_threadpool(fn, request, request.app.state.ui)
        return result

    endpoint.__name__ = fn.__name__
    return endpoint


# -- pages -----------------------------------------------------------------------------


@blocking
def overview(request: Request, state: UiState) -> Response:
    b = state.browser
    return page(request, "overview.html", "Overview", counts=b.counts(),
                stale=len(b.stale_notes()), redacted=sum(not n.checked for n in b.redacted_notes()),
                events=b.events(EventQuery(limit=10)).items, undo_label=undo_label)  # fmt: skip


@blocking
def search(request: Request, state: UiState) -> Response:
    p = request.query_params
    q = p.get("q", "").strip()
    form = {k: p.get(k, "") for k in ("paths", "languages", "kinds", "user", "session",
                                      "agent", "budget")}  # fmt: skip
    # the checkbox sends nothing when cleared: the full form says it was there
    form["memories"] = p.get("memories", "") if p.get("filters") == "1" else "1"
    if not q:
        return page(request, "search.html", "Search", form=form, result=None, memories={})
    filters = Filters(check_paths(csv_param(form["paths"])), csv_param(form["languages"]),
                      csv_param(form["kinds"]), scope_params(p))  # fmt: skip
    budget = int(form["budget"]) if form["budget"].isdigit() else None
    if budget is not None and not LIMITS.budget_min <= budget <= LIMITS.budget_max:
        raise BadRequest(f"budget {budget} is out of range",
                         hint=f"{LIMITS.budget_min} to {LIMITS.budget_max} tokens")  # fmt: skip
    started = time.perf_counter()
    result = state.recaller().recall(check_query(q), budget_tokens=budget, filters=filters,
                                     include_memories=form["memories"] == "1")  # fmt: skip
    ms = (time.perf_counter() - started) * 1000
    ids = list(dict.fromkeys(m for e in result.evidence for m in e.memory_ids))
    memories = {r.memory.id: r for r in state.browser.records(ids)}
    return page(request, "search.html", f"Search: {q}", form=form, result=result,
                memories=memories, ms=ms)  # fmt: skip


def _memory_query(request: Request) -> MemoryQuery:
    p = request.query_params
    statuses = tuple(s for s in p.getlist("status") if s in STATUSES)
    offset = int(p["offset"]) if p.get("offset", "").isdigit() else 0
    return MemoryQuery(
        statuses=statuses, types=tuple(t for t in p.getlist("type") if t),
        distillers=tuple(d for d in p.getlist("distiller") if d), scope=scope_params(p),
        project_wide=p.get("project_wide") == "1", since=date_param(p.get("since")),
        until=date_param(p.get("until"), end_of_day=True), limit=PAGE, offset=offset,
    )  # fmt: skip


@blocking
def memories(request: Request, state: UiState) -> Response:
    query = _memory_query(request)
    found = state.browser.memories(query)
    types, distillers = state.browser.memory_facets()
    p = request.query_params
    keep = [(k, v) for k, v in p.multi_items() if k not in ("offset", "done")]
    return page(request, "memories.html", "Memories", query=query, found=found,
                statuses=STATUSES, types=sorted(set(types) | set(MEMORY_TYPES)),
                distillers=distillers, params=keep, form=p)  # fmt: skip


@blocking
def memory(request: Request, state: UiState) -> Response:
    mid = request.path_params["id"]
    detail = state.browser.memory(mid)
    if detail is None:
        raise HTTPException(404, f"no memory {mid} in this index")
    diffs = {}
    if detail.record.memory.status == "stale":
        diffs = {s.chunk.id: span_diff(state.engine, state.browser, s.chunk)
                 for s in detail.sources if not s.current and s.chunk.origin == "file"}  # fmt: skip
    paths = sorted({s.chunk.path for s in detail.sources if s.chunk.origin == "file"})
    return page(request, "memory.html", f"Memory {mid}", detail=detail, diffs=diffs,
                paths=paths, undo_label=undo_label)  # fmt: skip


@blocking
def chunk(request: Request, state: UiState) -> Response:
    cid = request.path_params["id"]
    detail = state.browser.chunk(cid)
    if detail is None:
        raise HTTPException(404, f"no chunk {cid} in this index")
    return page(request, "chunk.html", f"{detail.cited.chunk.path}", detail=detail,
                undo_label=undo_label)  # fmt: skip


@blocking
def review_stale(request: Request, state: UiState) -> Response:
    return page(request, "review_stale.html", "Review: stale memories",
                stale=state.browser.stale_notes(), section="stale")  # fmt: skip


@blocking
def review_consolidation(request: Request, state: UiState) -> Response:
    report = state.consolidator().run(dry_run=True, actor="ui")
    return page(request, "review_consolidation.html", "Review: consolidation",
                report=report, section="consolidation")  # fmt: skip


@blocking
def review_redactions(request: Request, state: UiState) -> Response:
    return page(request, "review_redactions.html", "Review: redactions",
                notes=state.browser.redacted_notes(), section="redactions")  # fmt: skip


@blocking
def forget_confirm(request: Request, state: UiState) -> Response:
    p = request.query_params
    ids = tuple(i.strip() for i in p.getlist("id") if i.strip())
    paths = check_paths([x for x in p.getlist("path") if x.strip()])
    service = state.memory_service()
    erase = p.get("erase") == "1"
    preview = service.preview_forget(ids, paths, erase=erase, scope=service.owner_scope(ids))
    chunks = state.browser.cited(preview.chunks)[0]
    groups = {name: state.browser.records(getattr(preview, name))
              for name in ("memories", "stale", "derived")}  # fmt: skip
    return page(request, "forget.html", "Forget", ids=ids, paths=paths, preview=preview,
                chunks=chunks, groups=groups, erase=erase)  # fmt: skip


@blocking
def events(request: Request, state: UiState) -> Response:
    p = request.query_params
    offset = int(p["offset"]) if p.get("offset", "").isdigit() else 0
    query = EventQuery(
        ops=tuple(o for o in p.getlist("op") if o),
        actors=tuple(a for a in p.getlist("actor") if a),
        target=p.get("target", "").strip(), since=date_param(p.get("since")),
        until=date_param(p.get("until"), end_of_day=True), limit=PAGE, offset=offset,
    )  # fmt: skip
    ops, actors = state.browser.event_facets()
    keep = [(k, v) for k, v in p.multi_items() if k not in ("offset", "done")]
    return page(request, "events.html", "Audit log", query=query,
                found=state.browser.events(query), ops=ops, actors=actors, params=keep,
                form=p, undo_label=undo_label, consolidation_ops=CONSOLIDATION_OPS)  # fmt: skip


@blocking
def health(request: Request, state: UiState) -> Response:
    from memserver.ui.health import problems

    status = state.engine.status(state.store)
    doctor = state.engine.doctor()
    return page(request, "health.html", "Index health", status=status, doctor=doctor,
                problems=problems(status, doctor))  # fmt: skip


async def code_stylesheet(request: Request) -> Response:
    return Response(code_css(), media_type="text/css")


async def not_found(request: Request, exc: Exception) -> Response:
    detail = getattr(exc, "detail", "not found")
    code = getattr(exc, "status_code", 404)
    return page(request, "error.html", "Not found", code=code, message=detail,
                hint="go back, or search for it")  # fmt: skip


async def our_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MemserverError)
    status = 400 if isinstance(exc, BadRequest) else 500
    return page(request, "error.html", "Something needs attention", code=status,
                message=exc.message, hint=exc.hint)  # fmt: skip


def routes() -> Sequence[Route | Mount]:
    return [
        Route("/", overview),
        Route("/search", search),
        Route("/memories", memories),
        Route("/memories/{id}", memory),
        Route("/chunks/{id}", chunk),
        Route("/review", review_stale),
        Route("/review/consolidation", review_consolidation),
        Route("/review/redactions", review_redactions),
        Route("/forget", forget_confirm),
        Route("/events", events),
        Route("/health", health),
        Route("/static/code.css", code_stylesheet),
        *actions.routes(),
        Mount("/static", StaticFiles(packages=[("memserver.ui", "static")]), name="static"),
    ]


def build_app(state: UiState, *, host: str = "127.0.0.1", port: int = 8766,
              token: str | None = None, extra_hosts: Sequence[str] = ()) -> Guard:  # fmt: skip
    """The review page over `state`, behind the Host/Origin/token guard."""
    app = Starlette(routes=list(routes()), exception_handlers={
        HTTPException: not_found, MemserverError: our_error,
    })  # fmt: skip
    guard = Guard(app, host=host, port=port, token=token, extra_hosts=extra_hosts)
    app.state.ui = state
    app.state.form_token = guard.form_token
    return guard
