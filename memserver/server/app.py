"""`build_server`: the MCPServer with its lifespan, tools and resources.

Thin by design: each handler checks its arguments (`core.requests`), runs one `Backend`
method in a worker thread (the engine blocks) and returns its dict. Every failure
becomes an `isError` result (tools) or a JSON-RPC error (resources) whose text says what
went wrong and what to do; nothing a caller sends can stop the server.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.to_thread
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from memserver.core import requests
from memserver.core.errors import BadRequest, MemserverError
from memserver.core.requests import CHUNK_ID, MEMORY_ID, Note, Scope
from memserver.server import schemas
from memserver.server.backend import Backend
from memserver.server.bearer import BearerTokens, current_token_scope

logger = logging.getLogger("memserver.server")

T = TypeVar("T")
READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITES = ToolAnnotations(  # adds a note; the same note twice is a no-op
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


@dataclass(frozen=True, slots=True)
class AppContext:
    """What the lifespan hands to every request."""

    backend: Backend
    limiter: anyio.CapacityLimiter


def explain(err: MemserverError) -> str:
    return f"{err.message}\nWhat to do: {err.hint}" if err.hint else err.message


@contextmanager
def tool_errors(tool: str) -> Iterator[None]:
    """Our errors → a ToolError carrying message and hint; anything else → logged, reported."""
    try:
        yield
    except MemserverError as err:
        raise ToolError(explain(err)) from err
    except Exception as exc:
        logger.exception("%s failed unexpectedly", tool)
        raise ToolError(
            f"{tool} failed: {type(exc).__name__}: {str(exc)[:500]}\nWhat to do: the server is "
            "still running; retry once, and if it fails again run `memserver status` or "
            "`memserver doctor` in a terminal and check the server log (stderr)."
        ) from exc


async def run_blocking(app: AppContext, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    call = functools.partial(fn, *args, **kwargs)
    return await anyio.to_thread.run_sync(call, limiter=app.limiter)


def _auth_options(token: str | None, tokens: Mapping[str, Scope] | None) -> dict[str, Any]:
    table: dict[str, Scope | None] = {**(tokens or {}), **({token: None} if token else {})}
    if not table:
        return {}
    # A resource server with static tokens: no OAuth routes, no resource metadata.
    auth = AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=None)  # type: ignore[arg-type]
    return {"auth": auth, "token_verifier": BearerTokens(table)}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memserver")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


def build_server(
    root: str | Path | None,
    index_dir: str | Path | None = None,
    *,
    token: str | None = None,
    tokens: Mapping[str, Scope] | None = None,
    pinned_scope: Scope | None = None,
    embedder_flag: str | None = None,
    env: Mapping[str, str] | None = None,
    backend: Backend | None = None,
) -> MCPServer[AppContext]:
    """The memserver MCP server for one project root; `token` (no scope) and `tokens`
    (token → the scope it pins, read per request by `bearer.current_token_scope()`) guard
    the HTTP transports. `pinned_scope` (`--scope`) is every caller's scope. A call may
    narrow the scope it acts in (more keys), never change a pinned key."""
    backend = backend or Backend(root, index_dir, embedder_flag=embedder_flag, env=env)
    backend.pinned_scope = pinned_scope or ()
    backend.token_scope = current_token_scope
    limiter = anyio.CapacityLimiter(_parallel_calls(root, env))

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        # Entered per connection under SSE, so the backend outlives it and loads once.
        backend.warm_up()
        yield AppContext(backend, limiter)

    _plain_sdk_logging()
    server: MCPServer[AppContext] = MCPServer(
        "memserver",
        title="memserver: codebase memory",
        instructions=schemas.INSTRUCTIONS,
        version=_version(),
        lifespan=lifespan,
        **_auth_options(token, tokens),
    )
    _add_tools(server)
    _add_resources(server, backend, limiter)
    return server


def _plain_sdk_logging() -> None:
    """MCPServer sets up logging with `logging.basicConfig` and a rich handler, importing
    rich (2 MB resident) even when the root logger has a handler already and basicConfig
    does nothing (`transports.configure_logging` gives it one first). The same set-up with
    the standard library's handler, where the SDK has that hook."""
    from mcp.server.mcpserver import server as sdk

    def configure(level: str = "INFO") -> None:
        logging.basicConfig(level=level, format="%(message)s", handlers=[logging.StreamHandler()])

    if callable(getattr(sdk, "configure_logging", None)):
        sdk.configure_logging = configure  # type: ignore[attr-defined]


def _parallel_calls(root: str | Path | None, env: Mapping[str, str] | None) -> int:
    """`[server] max_parallel_calls` (the settings load again with the engine; a bad file
    is reported then)."""
    from memserver.config import ServerSettings, load_settings

    try:
        settings = load_settings(Path(root or ".").expanduser(), env=env).server
    except MemserverError:
        settings = ServerSettings()
    return max(1, settings.max_parallel_calls)


def _recall_filters(
    paths: list[str] | None, languages: list[str] | None, kinds: list[str] | None
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(paths, languages, kinds) checked; blank languages and kinds are dropped."""
    checked = requests.check_paths(paths)
    langs = tuple(x.strip() for x in requests.check_list("languages", languages) if x.strip())
    kinds_ = tuple(x.strip() for x in requests.check_list("kinds", kinds) if x.strip())
    return checked, langs, kinds_


def _add_tools(server: MCPServer[AppContext]) -> None:
    @server.tool(title="Recall code and notes", description=schemas.RECALL, annotations=READ_ONLY)
    async def recall(
        ctx: Context[AppContext, Any],
        query: Annotated[str, Field(description=schemas.QUERY)],
        budget_tokens: schemas.BudgetTokens = None,
        paths: Annotated[list[str] | None, Field(description=schemas.PATHS)] = None,
        languages: Annotated[list[str] | None, Field(description=schemas.LANGUAGES)] = None,
        kinds: Annotated[list[str] | None, Field(description=schemas.KINDS)] = None,
        include_memories: Annotated[bool, Field(description=schemas.INCLUDE_MEMORIES)] = True,
        scope: Annotated[dict[str, str] | None, Field(description=schemas.SCOPE)] = None,
        explain: Annotated[bool, Field(description=schemas.EXPLAIN)] = False,
        format: Annotated[Literal["chunks", "map"], Field(description=schemas.FORMAT)] = "chunks",
    ) -> Annotated[CallToolResult, schemas.RecallOutput]:
        app = ctx.request_context.lifespan_context
        with tool_errors("recall"):
            query = requests.check_query(query)
            budget = None if budget_tokens is None else requests.check_budget(budget_tokens)
            path_globs, langs, kinds_ = _recall_filters(paths, languages, kinds)
            text, structured = await run_blocking(
                app, app.backend.recall, query, budget_tokens=budget, paths=path_globs,
                languages=langs, kinds=kinds_, include_memories=include_memories,
                scope=requests.check_scope(scope or {}), explain=explain,
                format=requests.check_format(format),
            )  # fmt: skip
        # what the agent reads is the compact text; the same answer as data beside it, each
        # within the budget
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=structured)  # fmt: skip

    @server.tool(title="Remember a note", description=schemas.REMEMBER, annotations=WRITES)
    async def remember(
        ctx: Context[AppContext, Any],
        text: Annotated[str, Field(description=schemas.TEXT)],
        kind: Annotated[str | None, Field(description=schemas.KIND)] = None,
        tags: Annotated[list[str] | None, Field(description=schemas.TAGS)] = None,
        event_time: Annotated[str | None, Field(description=schemas.EVENT_TIME)] = None,
        paths: Annotated[list[str] | None, Field(description=schemas.NOTE_PATHS)] = None,
        scope: Annotated[dict[str, str] | None, Field(description=schemas.SCOPE)] = None,
    ) -> schemas.RememberOutput:
        app = ctx.request_context.lifespan_context
        with tool_errors("remember"):
            note = Note(
                requests.check_text("text", text), kind=kind or None,
                tags=requests.check_list("tags", tags),
                event_time=requests.parse_event_time(event_time),
                paths=requests.check_paths(paths),
                scope=requests.check_scope(scope or {}),
            )  # fmt: skip
            result = await run_blocking(app, app.backend.remember, note)
        return schemas.RememberOutput.model_validate(result)

    @server.tool(title="Forget notes or files", description=schemas.FORGET,
                 annotations=DESTRUCTIVE)  # fmt: skip
    async def forget(
        ctx: Context[AppContext, Any],
        reason: Annotated[str, Field(description=schemas.REASON)],
        ids: Annotated[list[str] | None, Field(description=schemas.IDS)] = None,
        paths: Annotated[list[str] | None, Field(description=schemas.FORGET_PATHS)] = None,
        erase: Annotated[bool, Field(description=schemas.ERASE)] = False,
        scope: Annotated[dict[str, str] | None, Field(description=schemas.SCOPE)] = None,
    ) -> schemas.ForgetOutput:
        app = ctx.request_context.lifespan_context
        with tool_errors("forget"):
            ids_ = requests.check_ids(ids)
            paths_ = tuple(requests.check_forget_path(p) for p in requests.check_list(
                "paths", paths))  # fmt: skip
            if not ids_ and not paths_:
                raise BadRequest(
                    "nothing to forget", hint="pass ids (from recall/remember) or paths"
                )
            requests.check_size("reason", reason)
            result = await run_blocking(app, app.backend.forget, ids_, paths_, reason, erase,
                                        requests.check_scope(scope or {}))  # fmt: skip
        return schemas.ForgetOutput.model_validate(result)

    @server.tool(title="Attribute an answer", description=schemas.ATTRIBUTE,
                 annotations=READ_ONLY)  # fmt: skip
    async def attribute(
        ctx: Context[AppContext, Any],
        answer: Annotated[str, Field(description=schemas.ANSWER)],
        evidence_ids: Annotated[list[str], Field(description=schemas.EVIDENCE_IDS)],
        scope: Annotated[dict[str, str] | None, Field(description=schemas.SCOPE)] = None,
    ) -> schemas.AttributeOutput:
        app = ctx.request_context.lifespan_context
        with tool_errors("attribute"):
            text = requests.check_text("answer", answer)
            ids_ = requests.check_ids(evidence_ids)
            if not ids_:
                raise BadRequest(
                    "no evidence ids given", hint="pass the ids of the recall evidence you used"
                )
            result = await run_blocking(app, app.backend.attribute, text, ids_,
                                        requests.check_scope(scope or {}))  # fmt: skip
        return schemas.AttributeOutput.model_validate(result)

    _add_graph_tools(server)

    @server.tool(title="Index status", description=schemas.STATUS, annotations=READ_ONLY)
    async def status(ctx: Context[AppContext, Any]) -> dict[str, Any]:
        app = ctx.request_context.lifespan_context
        with tool_errors("status"):
            return await run_blocking(app, app.backend.status)


async def _navigate(
    ctx: Context[AppContext, Any], tool: str, budget_tokens: int | None,
    args: Callable[[], tuple[Any, ...]],
) -> CallToolResult:  # fmt: skip
    """One graph tool's call: the budget and `args` (checked inside, so a bad value is the
    tool's error), the backend's answer off the event loop, its text and data."""
    app = ctx.request_context.lifespan_context
    with tool_errors(tool):
        budget = None if budget_tokens is None else requests.check_budget(budget_tokens)
        text, data = await run_blocking(app, getattr(app.backend, tool), *args(), budget)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=data)  # fmt: skip


def _add_graph_tools(server: MCPServer[AppContext]) -> None:
    """outline, symbol, references, neighbors: the code graph, read-only and budgeted."""

    @server.tool(title="Outline files or map the repository", description=schemas.OUTLINE,
                 annotations=READ_ONLY)  # fmt: skip
    async def outline(
        ctx: Context[AppContext, Any],
        path: Annotated[str | None, Field(description=schemas.OUTLINE_PATH)] = None,
        budget_tokens: schemas.BudgetTokens = None,
    ) -> Annotated[CallToolResult, schemas.GraphOutput]:
        return await _navigate(ctx, "outline", budget_tokens, lambda: (path or None,))

    @server.tool(title="Find definitions", description=schemas.SYMBOL, annotations=READ_ONLY)
    async def symbol(
        ctx: Context[AppContext, Any],
        name: Annotated[str, Field(description=schemas.NAME)],
        budget_tokens: schemas.BudgetTokens = None,
    ) -> Annotated[CallToolResult, schemas.GraphOutput]:
        return await _navigate(ctx, "symbol", budget_tokens, lambda: (name,))

    @server.tool(title="Find references and callers", description=schemas.REFERENCES,
                 annotations=READ_ONLY)  # fmt: skip
    async def references(
        ctx: Context[AppContext, Any],
        name_or_id: Annotated[str, Field(description=schemas.NAME_OR_ID)],
        kinds: Annotated[list[str] | None, Field(description=schemas.REF_KINDS)] = None,
        budget_tokens: schemas.BudgetTokens = None,
    ) -> Annotated[CallToolResult, schemas.GraphOutput]:
        return await _navigate(
            ctx, "references", budget_tokens,
            lambda: (name_or_id, requests.check_list("kinds", kinds)),
        )  # fmt: skip

    @server.tool(title="Callers and callees", description=schemas.NEIGHBORS,
                 annotations=READ_ONLY)  # fmt: skip
    async def neighbors(
        ctx: Context[AppContext, Any],
        id: Annotated[str, Field(description=schemas.ITEM_ID)],
        depth: Annotated[int, Field(description=schemas.DEPTH, ge=1, le=2)] = 1,
        budget_tokens: schemas.BudgetTokens = None,
    ) -> Annotated[CallToolResult, schemas.GraphOutput]:
        return await _navigate(ctx, "neighbors", budget_tokens, lambda: (id, depth))


@contextmanager
def resource_errors() -> Iterator[None]:
    try:
        yield
    except MemserverError as err:
        raise ResourceError(explain(err)) from err


def _add_resources(
    server: MCPServer[AppContext], backend: Backend, limiter: anyio.CapacityLimiter
) -> None:
    # Static resources get no Context in this SDK, so they use the backend directly.
    app = AppContext(backend, limiter)

    @server.resource(
        "memserver://status", name="status", title="Index status",
        description="The `status` tool's report as JSON.", mime_type="application/json",
    )  # fmt: skip
    async def status_resource() -> str:
        with resource_errors():
            return json.dumps(await run_blocking(app, backend.status), indent=1)

    @server.resource(
        "memserver://chunk/{id}", name="chunk", title="Indexed chunk",
        description="One indexed chunk by the id recall returned: path, line range, symbol, "
        "kind, language and its verbatim text, as JSON.", mime_type="application/json",
    )  # fmt: skip
    async def chunk_resource(id: str) -> str:  # the URI variable names the parameter
        return await _read_one(app, id, CHUNK_ID, "chunk", backend.chunk)

    @server.resource(
        "memserver://memory/{id}", name="memory", title="Distilled memory",
        description="One distilled memory by id (from evidence `memory_ids`): its statement "
        "and the chunk ids it cites, as JSON.", mime_type="application/json",
    )  # fmt: skip
    async def memory_resource(id: str) -> str:
        return await _read_one(app, id, MEMORY_ID, "memory", backend.memory)


async def _read_one(
    app: AppContext, item_id: str, pattern: Any, what: str, fetch: Callable[[str], Any]
) -> str:
    example = ("c_" if what == "chunk" else "m_") + "0123456789abcdef" * 2
    with resource_errors():
        try:
            requests.check_id(item_id, pattern, what, example)
        except MemserverError as err:
            raise ResourceNotFoundError(explain(err)) from err
        found = await run_blocking(app, fetch, item_id)
    if found is None:
        raise ResourceNotFoundError(
            f"no {what} with id {item_id} in this index\nWhat to do: ids change when the "
            "code changes; run recall again for current ids"
        )
    return json.dumps(found, indent=1, ensure_ascii=False)


__all__ = ["AppContext", "build_server"]
