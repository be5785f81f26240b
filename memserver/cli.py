"""The `memserver` command line (the sole click importer).

Commands are thin: parse, call one Engine method, format. Data goes to stdout
(one JSON object with --json); progress, logs and errors go to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from memserver.core import cpuload  # noqa: F401  (its first sample: the process's start)
from memserver.core.errors import MemserverError
from memserver.core.requests import LIMITS

F = TypeVar("F", bound=Callable[..., Any])


def _emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False))


def _fail(err: MemserverError) -> None:
    click.secho(f"error: {err.message}", fg="red", err=True)
    if err.hint:
        click.echo(f"  hint: {err.hint}", err=True)
    sys.exit(err.exit_code)


def handle_errors(fn: F, *, interrupted: bool = True) -> F:
    """Map our errors to a message, a hint and an exit code; Ctrl-C to exit 130 (unless
    not `interrupted`: a command that stops on Ctrl-C as its way to end)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MemserverError as err:
            _fail(err)
        except KeyboardInterrupt:
            if not interrupted:
                raise
            click.echo(
                "interrupted: finished batches are kept; run the command again to resume", err=True
            )
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


def index_options(fn: F) -> F:
    fn = click.option(
        "--index-dir",
        type=click.Path(file_okay=False),
        default=None,
        envvar="MEMSERVER_INDEX_DIR",
        help="Index location (default: <root>/.memserver).",
    )(fn)
    fn = click.option(
        "--root",
        "root_opt",
        type=click.Path(),
        default=None,
        help="Project root (default: the current directory).",
    )(fn)
    return fn


def _engine(root: str | None, index_dir: str | None, embedder: str | None = None,
            note: bool = True) -> Any:  # fmt: skip
    from memserver.engine import Engine

    context = click.get_current_context(silent=True)
    source = context.get_parameter_source("index_dir") if context is not None else None
    if root is None and source is click.core.ParameterSource.ENVIRONMENT:
        root = "."  # an index set for every command ($MEMSERVER_INDEX_DIR): this folder's
    engine = Engine(root, index_dir, embedder_flag=embedder)
    if engine.held_gone and note:
        click.echo(f"note: the project the index at {engine.index_dir} holds, "
                   f"{engine.held_gone}, is gone; reading {engine.root} instead (name the "
                   "project's new place with PATH or --root)", err=True)  # fmt: skip
    return engine


def _is_tty() -> bool:
    return sys.stderr.isatty()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memserver")
def main() -> None:
    """memserver: a local memory of whole codebases for coding agents."""


# -- index ----------------------------------------------------------------------


@main.command()
@click.argument("path", required=False, type=click.Path())
@index_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="List what would be indexed and why the rest is "
    "skipped, with totals; stores and embeds nothing.",
)
@click.option("--rebuild", is_flag=True, help="Drop the index and build it again.")
@click.option(
    "--embedder",
    default=None,
    help="Embedding model: a fastembed model name, "
    "'hashing' (tests), or 'none' (BM25 only). Default: the index's, else config.",
)
@click.option(
    "--no-embed",
    is_flag=True,
    help="Store chunks (BM25-searchable) and leave embedding for a later run.",
)
@click.option(
    "--ci", is_flag=True,
    help="For CI pre-indexing: no stat cache, no progress bar, JSON output, and compacted "
    "tables without old versions (ready for `memserver export`).",
)  # fmt: skip
@handle_errors
def index(
    path: str | None,
    root_opt: str | None,
    index_dir: str | None,
    as_json: bool,
    dry_run: bool,
    rebuild: bool,
    embedder: str | None,
    no_embed: bool,
    ci: bool,
) -> None:
    """Index the project at PATH (default: current directory) incrementally."""
    from memserver.core import heap

    heap.arrow_system_pool()  # a lower peak (see there)
    as_json = as_json or ci
    engine = _engine(path or root_opt, index_dir, embedder, note=False)  # it refuses instead
    if engine.root_from_index and engine.root != Path.cwd().resolve():
        click.echo(f"indexing {engine.root}: the project the index at {engine.index_dir} "
                   "holds (name a PATH to index another)", err=True)  # fmt: skip
    if dry_run:
        from memserver.cli_format import dry_run_summary, print_dry_run

        if not rebuild:
            engine.check_claim_now()  # what the run would refuse
        summary = dry_run_summary(engine)
        _emit_json(summary) if as_json else print_dry_run(summary)
        return
    from memserver.cli_format import RichProgress, print_index_report

    progress = RichProgress() if _is_tty() and not as_json else None
    report = engine.index(rebuild=rebuild, embed=not no_embed, progress=progress, ci=ci)
    _emit_json(report.to_dict()) if as_json else print_index_report(report)


# -- export / import ------------------------------------------------------------


@main.command()
@index_options
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Artifact file to write, e.g. index.tar.zst.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def export(root_opt: str | None, index_dir: str | None, out: str, as_json: bool) -> None:
    """Write the index as a portable artifact (zstd tar) for another checkout.

    It holds the index and what built it: project, git commit, embedder. Build it with
    `memserver index --ci` for a small, compacted artifact.
    """
    result = _engine(root_opt, index_dir).export(out)
    if as_json:
        _emit_json(result)
        return
    a = result["artifact"]
    click.echo(f"exported {a['files']} files, {a['chunks']} chunks ({a['embedder']}, commit "
               f"{a['git_commit'][:12] or 'none'}) to {result['path']}: "
               f"{result['bytes'] / 1e6:.1f} MB in {result['seconds']:.1f}s")  # fmt: skip


@main.command(name="import")
@click.argument("archive", type=click.Path(exists=True, dir_okay=False))
@index_options
@click.option(
    "--embedder", default=None,
    help="This checkout's embedder (default: config); must match the artifact's.",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Replace an existing index.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def import_(archive: str, root_opt: str | None, index_dir: str | None, embedder: str | None,
            force: bool, as_json: bool) -> None:  # fmt: skip
    """Restore an artifact from `memserver export` as this checkout's index.

    Refuses another schema or embedder, and an existing index unless --force. Then run
    `memserver index` to process only what differs from the artifact's commit.
    """
    # this checkout's: never the project an index already there was built from
    result = _engine(root_opt or ".", index_dir, embedder).import_artifact(archive, force=force)
    if as_json:
        _emit_json(result)
        return
    a = result["artifact"]
    click.echo(f"imported {a['files']} files, {a['chunks']} chunks of {a['project']} (commit "
               f"{a['git_commit'][:12] or 'none'}) into {result['index_dir']} in "
               f"{result['seconds']:.1f}s")  # fmt: skip
    for note in result["notes"]:
        click.echo(f"  {note}")


# -- recall ---------------------------------------------------------------------


@main.command()
@click.argument("query", required=False)
@index_options
@click.option("-k", "k", type=click.IntRange(1, LIMITS.k_max), default=None,
              help="Evidence items (10).")  # fmt: skip
@click.option(
    "--budget-tokens",
    type=click.IntRange(LIMITS.budget_min, LIMITS.budget_max),
    default=None,
    help="Token budget of the whole answer as printed (4096).",
)
@click.option(
    "--max-files",
    type=click.IntRange(1, LIMITS.files_max),
    default=None,
    help="Distinct files in the pack (5).",
)
@click.option(
    "--queries",
    type=click.File("r"),
    default=None,
    help="Batch mode: a JSONL file of {qid, query}; one result line per query.",
)
@click.option(
    "--path", "paths", multiple=True, help="Only these paths (gitignore-style globs; repeatable)."
)
@click.option("--language", "languages", multiple=True, help="Only these languages (repeatable).")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    help="Only these chunk kinds: function, method, class, module, section, text.",
)
@click.option("--no-memories", is_flag=True, help="Search the raw chunks only.")
@click.option("--no-rerank", is_flag=True, help="Skip the cross-encoder stage.")
@click.option(
    "--scope", "scopes", multiple=True, metavar="KEY=VALUE",
    help="Only notes of this user/session/agent (and project-wide ones); repeatable.",
)  # fmt: skip
@click.option(
    "--explain",
    is_flag=True,
    help="Also show scores, the searches that found each item and its notes.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["chunks", "map"]), default="chunks",
    help="chunks: evidence with code; map: ranked files with their places (~1,000 tokens).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def recall(
    query: str | None,
    root_opt: str | None,
    index_dir: str | None,
    k: int | None,
    budget_tokens: int | None,
    max_files: int | None,
    queries: Any,
    paths: tuple[str, ...],
    languages: tuple[str, ...],
    kinds: tuple[str, ...],
    no_memories: bool,
    no_rerank: bool,
    scopes: tuple[str, ...],
    explain: bool,
    fmt: str,
    as_json: bool,
) -> None:
    """Find the code that answers QUERY: ranked chunks with paths and line ranges.

    The answer says whether the index holds an answer at all (found, confidence),
    and each item which routes and arms found it.
    """
    from memserver.core import render
    from memserver.core.requests import Filters

    if not query and queries is None:
        raise click.UsageError("give a QUERY or --queries FILE.jsonl")
    recaller = _engine(root_opt, index_dir).recaller(rerank=not no_rerank)
    opts = {
        "k": k, "budget_tokens": budget_tokens, "max_files": max_files,
        "filters": Filters(paths, languages, kinds, _scope(scopes)),
        "include_memories": not no_memories, "explain": explain, "format": fmt,
    }  # fmt: skip
    if queries is not None:
        for n, line in enumerate(queries, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                text = item["query"]
            except (ValueError, KeyError, TypeError) as exc:
                raise click.UsageError(
                    f"--queries line {n} is not a {{qid, query}} object: {exc}"
                ) from exc
            found = recaller.recall(text, **opts)
            click.echo(
                render.dumps({"qid": item.get("qid", n), **render.recall_dict(found, explain)})
            )
        return
    result = recaller.recall(query, **opts)
    if as_json:  # compact, as the budget was measured (json.dumps spacing overruns it)
        click.echo(render.dumps(render.recall_dict(result, explain)))
    else:
        from memserver.cli_format import print_recall

        print_recall(result, explain)


def _scope(pairs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    from memserver.core.requests import check_scope

    parsed = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.UsageError(f"--scope {pair!r}: write KEY=VALUE, e.g. --scope user=alice")
        parsed.append((key.strip(), value))
    return check_scope(parsed)


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (value or "").split(",") if x.strip())


# -- remember / forget -------------------------------------------------------------


@main.command()
@click.argument("text", required=False)
@index_options
@click.option("--kind", default=None, help="Memory type for every statement (else inferred).")
@click.option("--tags", default=None, help="Comma-separated tags.")
@click.option("--event-time", default=None, help="When it happened (ISO-8601; default now).")
@click.option("--paths", default=None, help="Comma-separated files the note is about.")
@click.option(
    "--scope", "scopes", multiple=True, metavar="KEY=VALUE",
    help="user=…, session=… or agent=…; repeatable.",
)  # fmt: skip
@click.option(
    "--conversation", type=click.File("r"), default=None,
    help="Ingest a JSONL conversation: one {speaker, text, time, turn_id} per line.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def remember(
    text: str | None, root_opt: str | None, index_dir: str | None, kind: str | None,
    tags: str | None, event_time: str | None, paths: str | None, scopes: tuple[str, ...],
    conversation: Any, as_json: bool,
) -> None:  # fmt: skip
    """Store a note (a decision, a fact, a fix) so recall finds it later.

    Secrets and personal data are redacted first; code blocks are kept verbatim;
    "yesterday" and the like become dates. TEXT '-' (or none) reads standard input.
    With --conversation, every turn is remembered as its own `turn` (its time and
    turn id kept), in the given --scope.
    """
    from memserver.core.requests import Note, parse_event_time, read_conversation

    if conversation is not None:
        notes = read_conversation(conversation, _scope(scopes), conversation.name)
        summary = _engine(root_opt, index_dir).memory_service().remember_conversation(notes)
        if summary.warning:
            click.secho(f"warning: {summary.warning}", fg="yellow", err=True)
        if as_json:
            _emit_json(summary.to_dict())
        else:
            click.echo(
                f"remembered {summary.stored} of {summary.turns} turns "
                f"({summary.duplicates} already known, {summary.discarded} "
                f"low-information turns dropped, {summary.redactions} redactions)"
            )
        return
    if text is None or text == "-":
        text = sys.stdin.read()
    note = Note(
        text, kind=kind, tags=_csv(tags), event_time=parse_event_time(event_time),
        paths=_csv(paths), scope=_scope(scopes),
    )  # fmt: skip
    result = _engine(root_opt, index_dir).memory_service().remember(note)
    if as_json:
        _emit_json(result.to_dict())
        return
    verb = "already remembered" if result.duplicate else "remembered"
    counts = (
        f"{len(result.memory_ids)} memories, {len(result.code_blocks)} code blocks, "
        f"{result.redactions} redactions"
    )
    click.echo(f"{verb}: {result.note_id} ({counts})")


@main.command()
@index_options
@click.option("--id", "ids", multiple=True, help="Memory, note or code-block id; repeatable.")
@click.option(
    "--path", "paths", multiple=True,
    help="An indexed file or folder path, or a glob (`*`, `?`, `**`), relative to the root; it "
    "is also left out of later indexing. Repeatable.",
)  # fmt: skip
@click.option("--reason", default="", help="Why (kept in the audit log).")
@click.option(
    "--erase",
    is_flag=True,
    help="Also erase the text from every table, old version and keyword segment.",
)
@click.option(
    "--scope", "scopes", multiple=True, metavar="KEY=VALUE",
    help="Whose notes: only notes this scope may see can be forgotten; repeatable.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def forget(
    root_opt: str | None, index_dir: str | None, ids: tuple[str, ...], paths: tuple[str, ...],
    reason: str, erase: bool, scopes: tuple[str, ...], as_json: bool,
) -> None:  # fmt: skip
    """Make memories, notes or files unrecallable; memories citing them turn stale."""
    if not ids and not paths:
        raise click.UsageError("give --id ID or --path PATH")
    service = _engine(root_opt, index_dir).memory_service()
    result = service.forget(ids, paths, reason=reason, erase=erase, scope=_scope(scopes))
    if as_json:
        _emit_json(result.to_dict())
        return
    click.echo(f"forgot {len(result.forgotten)} items"
               + (f" ({len(result.paths)} files)" if result.paths else "")
               + f"; {len(result.stale_marked)} memories marked stale"
               + ("; erased" if erase else ""))  # fmt: skip


@main.command()
@index_options
@click.option("--dry-run", is_flag=True, help="Show the plan; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def consolidate(root_opt: str | None, index_dir: str | None, dry_run: bool, as_json: bool
                ) -> None:  # fmt: skip
    """Merge near-duplicate notes into abstractions and close contradicted ones.

    Sleep-time work: run it when nothing urgent is waiting. Every change is logged, and
    merged memories stay attributable.
    """
    report = _engine(root_opt, index_dir).consolidator().run(dry_run=dry_run)
    if as_json:
        _emit_json(report.to_dict())
        return
    verb = "would merge" if dry_run else "merged"
    click.echo(f"{verb} {report.superseded} memories into {len(report.abstractions)} "
               f"abstractions; {len(report.contradictions)} contradicted; active "
               f"{report.active_before} → {report.active_after}")  # fmt: skip
    for a in report.abstractions[:20]:
        click.echo(f"  {a['id']}: {a['text'][:100]}  ← {len(a['members'])} memories")
    for c in report.contradictions[:20]:
        click.echo(f"  closed {c['older']}: {c['older_text'][:60]!r} → {c['newer_text'][:60]!r}")


# -- status ---------------------------------------------------------------------


@main.command()
@index_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def status(root_opt: str | None, index_dir: str | None, as_json: bool) -> None:
    """What is indexed, when, with which embedder, and whether it matches the tree."""
    info = _engine(root_opt, index_dir).status().to_dict()
    if as_json:
        _emit_json(info)
    else:
        from memserver.cli_format import print_status

        print_status(info)


@main.command()
@index_options
@click.option("--repair", is_flag=True, help="Fix what can be fixed (takes the writer lock).")
@click.option("--embedder", default=None, help="Check against this embedder (the index's).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def doctor(root_opt: str | None, index_dir: str | None, repair: bool, embedder: str | None,
           as_json: bool) -> None:  # fmt: skip
    """Check the index: metadata, tables, keyword index, locks, crash marker, sync.

    Exit 0 when healthy (or repaired), 6 when problems remain.
    """
    report = _engine(root_opt, index_dir, embedder).doctor(repair=repair)
    if as_json:
        _emit_json(report.to_dict())
    else:
        for c in report.checks:
            mark = "fixed" if c.fixed and not c.ok else ("ok" if c.ok else "PROBLEM")
            click.echo(f"{mark:>7}  {c.check:<14} {c.detail}")
        verdict = "healthy" if report.healthy else "problems remain"
        hint = "" if report.healthy or repair else ": run `memserver doctor --repair`"
        click.echo(f"{verdict}{hint}", err=not report.healthy)
    sys.exit(report.exit_code)


# -- the code graph: outline, symbol, references, neighbors ------------------------


def graph_options(fn: F) -> F:
    """--budget-tokens and --json of the code graph commands."""
    fn = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")(fn)
    return click.option(
        "--budget-tokens", type=click.IntRange(LIMITS.budget_min, LIMITS.budget_max),
        default=None, help="Token budget of the whole answer as printed (4096).",
    )(fn)  # fmt: skip


def _navigation(found: Any, as_json: bool) -> None:
    """The answer as text, or (compact, as the budget counted it) as JSON."""
    if as_json:
        from memserver.core.render import dumps

        click.echo(dumps(found.data))
    else:
        from memserver.cli_format import print_plain

        print_plain(found.text)


@main.command()
@click.argument("path", required=False)
@index_options
@graph_options
@handle_errors
def outline(path: str | None, root_opt: str | None, index_dir: str | None,
            budget_tokens: int | None, as_json: bool) -> None:  # fmt: skip
    """What PATH (a file, folder or glob) defines, nested, with signatures and spans;
    without PATH, a map of the repository, most referenced definitions first."""
    found = _engine(root_opt, index_dir).navigator().outline(path, budget_tokens)
    _navigation(found, as_json)


@main.command()
@click.argument("name")
@index_options
@graph_options
@handle_errors
def symbol(name: str, root_opt: str | None, index_dir: str | None, budget_tokens: int | None,
           as_json: bool) -> None:  # fmt: skip
    """Where NAME is defined (`Client.send`, `send`, `utils.py:send`, or an id s_…)."""
    found = _engine(root_opt, index_dir).navigator().symbol(name, budget_tokens)
    _navigation(found, as_json)


@main.command()
@click.argument("name_or_id")
@index_options
@click.option(
    "--kind", "kinds", multiple=True,
    help="Only these kinds: call, import, inherit, type, other (repeatable).",
)  # fmt: skip
@graph_options
@handle_errors
def references(
    name_or_id: str, root_opt: str | None, index_dir: str | None, kinds: tuple[str, ...],
    budget_tokens: int | None, as_json: bool,
) -> None:  # fmt: skip
    """Every use of NAME_OR_ID, grouped by file, with the definition each is written in
    (`--kind call` lists the callers)."""
    navigator = _engine(root_opt, index_dir).navigator()
    _navigation(navigator.references(name_or_id, kinds, budget_tokens), as_json)


@main.command()
@click.argument("item_id", metavar="ID")
@index_options
@click.option("--depth", type=click.IntRange(1, 2), default=1, show_default=True,
              help="1: direct callers and callees; 2: also theirs.")  # fmt: skip
@graph_options
@handle_errors
def neighbors(item_id: str, root_opt: str | None, index_dir: str | None, depth: int,
              budget_tokens: int | None, as_json: bool) -> None:  # fmt: skip
    """Callers and callees of ID (a symbol id s_…, a chunk id c_… or a name)."""
    found = _engine(root_opt, index_dir).navigator().neighbors(item_id, depth, budget_tokens)
    _navigation(found, as_json)


# -- watch ----------------------------------------------------------------------


@main.command()
@click.argument("path", required=False, type=click.Path())
@index_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per batch.")
@handle_errors
def watch(path: str | None, root_opt: str | None, index_dir: str | None, as_json: bool) -> None:
    """Keep the index of PATH (default: current directory) fresh as files change.

    Catches up with the tree first, then indexes each burst of changes as one batch.
    Stop with Ctrl-C (the batch in progress finishes first).
    """
    import logging

    engine = _engine(path or root_opt, index_dir)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)

    def emit(report: Any) -> None:
        _emit_json(report.to_dict())
        sys.stdout.flush()

    watcher, _ = engine.watch(on_report=emit if as_json else None)
    click.echo(f"watching {engine.root} (index: {engine.index_dir}); Ctrl-C stops", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        click.echo("stopping: finishing the batch in progress", err=True)
    finally:
        watcher.stop()


# -- serve ----------------------------------------------------------------------


def _review_page(backend: Any, options: Any, token: str | None) -> Any:
    """The review page over the MCP server's backend, for `serve --transport http`."""
    from memserver.ui.mount import review_page

    return review_page(backend, host=options.host, port=options.port, token=token,
                       extra_hosts=options.extra_hosts)  # fmt: skip


def _register_serve() -> None:
    from memserver.server.cli_command import serve_command

    command = serve_command(review_page=_review_page)
    if command.callback is not None:  # its errors (a watcher refused) as every command's
        command.callback = handle_errors(command.callback, interrupted=False)
    main.add_command(command)


_register_serve()


# -- ui -------------------------------------------------------------------------


@main.command()
@index_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Bind address.")
@click.option("--port", type=click.IntRange(1, 65535), default=8766, show_default=True,
              help="Port of the page.")  # fmt: skip
@click.option("--no-open", is_flag=True, help="Do not open the browser.")
@click.option("--allow-remote", is_flag=True,
              help="Allow a non-loopback --host (needs a token in $MEMSERVER_TOKEN).")  # fmt: skip
@click.option("--allowed-host", "allowed_hosts", multiple=True,
              help="Extra Host header value (name:port) to accept (repeatable).")  # fmt: skip
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="warning", show_default=True, help="Logs go to stderr.")  # fmt: skip
@handle_errors
def ui(root_opt: str | None, index_dir: str | None, host: str, port: int, no_open: bool,
       allow_remote: bool, allowed_hosts: tuple[str, ...], log_level: str) -> None:  # fmt: skip
    """Serve the review page: memories with the code they cite, stale notes, consolidation
    proposals, forget and erase, the audit log and index health.

    Local only (127.0.0.1) by default, with the HTTP transport's Host/Origin checks; with a
    token in $MEMSERVER_TOKEN every request needs it (the printed address carries it).
    Opens the browser when run from a terminal. Every change is logged with actor `ui`.
    """
    from memserver.ui.serve import serve_ui

    serve_ui(
        _engine(root_opt, index_dir), host=host, port=port,
        token=os.environ.get("MEMSERVER_TOKEN") or None, allow_remote=allow_remote,
        extra_hosts=allowed_hosts, open_browser=sys.stdout.isatty() and not no_open,
        log_level=log_level, announce=lambda line: click.echo(line, err=True),
    )  # fmt: skip


# -- eval -----------------------------------------------------------------------


def bench_options(fn: F) -> F:
    """--dataset, --corpora and --work of the code-bench evaluations."""
    fn = click.option(
        "--work", type=click.Path(file_okay=False), default=None,
        help="Where the indexes go (default: a temporary folder, removed after).",
    )(fn)  # fmt: skip
    fn = click.option(
        "--corpora", type=click.Path(exists=True, file_okay=False), required=True,
        help="Folder with one prepared source tree per package.",
    )(fn)  # fmt: skip
    return click.option(
        "--dataset", type=click.Path(exists=True, dir_okay=False), required=True,
        help="Queries, one JSON object per line (the code bench's dev.jsonl format).",
    )(fn)  # fmt: skip


def report_option(fn: F) -> F:
    """--report DIR: a folder with index.html, PNG figures and the JSON (needs matplotlib)."""
    return click.option(
        "--report", "report_dir", type=click.Path(file_okay=False), default=None,
        help="Also write DIR/index.html with figures beside the JSON (pip install "
        "'memserver[reports]').",
    )(fn)  # fmt: skip


def _command_line() -> str:
    """The running command as a user would type it (for report captions)."""
    import shlex

    ctx = click.get_current_context()
    parts = ["memserver", *ctx.command_path.split()[1:]]
    for p in ctx.command.params:
        value = ctx.params.get(p.name or "")
        if not isinstance(p, click.Option) or value in (None, (), p.default):
            continue
        if p.is_flag:  # a --x/--no-x pair says which side; a plain flag only when set
            if value or p.secondary_opts:
                parts.append(p.opts[0] if value else p.secondary_opts[0])
        else:
            parts += [x for v in (value if p.multiple else (value,)) for x in (p.opts[0], str(v))]
    return shlex.join(parts)


def _write_report(report_dir: str, page: Any, data: Any) -> None:
    from pathlib import Path

    from memserver.eval.report import write_report

    written = write_report(Path(report_dir), page, command=_command_line(), data=data)
    click.echo(f"report: {written.index} ({len(written.figures)} figures)", err=True)


@main.group()
def model() -> None:
    """The embedding model: fetch it once into the per-user cache, see where it is."""


@model.command(name="fetch")
@index_options
@click.option("--model", "name", default=None, help="A fastembed model (default: the config's).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def model_fetch(root_opt: str | None, index_dir: str | None, name: str | None,
                as_json: bool) -> None:  # fmt: skip
    """Download the embedding model (once, with internet access) and check that it loads.

    It goes to the per-user model cache (or [embedding] cache_dir / FASTEMBED_CACHE_PATH),
    where every later `memserver` process finds it, MCP servers included."""
    found, where, dim, place = _engine(root_opt, index_dir, name).fetch_model()
    if as_json:
        _emit_json({"model": found, "cache_dir": where, "dim": dim, "location": place})
    else:
        click.echo(f"{found} is ready in {place} ({dim} dimensions)")


@model.command(name="where")
@index_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def model_where(root_opt: str | None, index_dir: str | None, as_json: bool) -> None:
    """Say which model this project uses, where it is looked for, and whether it is there."""
    check = _engine(root_opt, index_dir).model_check()
    if as_json:
        _emit_json({"ok": check.ok, "detail": check.detail})
    else:
        click.echo(check.detail)
    if not check.ok:
        raise SystemExit(7)


@main.group(name="eval")
def eval_() -> None:
    """Benchmarks: retrieval quality, abstention and latency on labelled data."""


@eval_.command(name="code")
@bench_options
@click.option("--embedder", default=None, help="Embedding model for fresh indexes.")
@click.option(
    "--ablations/--no-ablations",
    default=True,
    help="Also run without memories and without the reranker.",
)
@click.option(
    "--calibrate",
    is_flag=True,
    help="Fit the answerability gate on these queries and print its settings.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@report_option
@handle_errors
def eval_code(dataset: str, corpora: str, work: str | None, embedder: str | None,
              ablations: bool, calibrate: bool, as_json: bool,
              report_dir: str | None) -> None:  # fmt: skip
    """Recall@k, MRR@10, abstention and latency per package and macro-averaged."""
    import tempfile
    from pathlib import Path

    from memserver.engine import Engine
    from memserver.eval.code import ABLATIONS, run

    made: list[Engine] = []

    def make(root: Path, index_dir: Path) -> Engine:
        made.append(Engine(root, index_dir, embedder_flag=embedder))
        return made[-1]

    with tempfile.TemporaryDirectory(prefix="memserver-eval-") as tmp:
        report, outcomes = run(
            Path(dataset), Path(corpora), Path(work or tmp), make_engine=make,
            ablations=tuple(ABLATIONS) if ablations else (),
            log=lambda msg: click.echo(msg, err=True),
        )  # fmt: skip
    if calibrate:
        from memserver.eval.calibrate import calibrate as fit_gate

        report["calibration"] = fit_gate(outcomes)
    if report_dir:
        from memserver.eval import figures

        gate = report.get("calibration") or {
            "gate_weights": made[-1].settings.recall.gate_weights,
            "gate_bias": made[-1].settings.recall.gate_bias,
        }
        queries = figures.code_queries(outcomes, gate["gate_weights"], gate["gate_bias"])
        page = figures.code(report, queries, figures.load_baselines()["code"])
        _write_report(report_dir, page, {**report, "queries": queries})
    if as_json:
        _emit_json(report)
    else:
        from memserver.cli_format import print_eval

        print_eval(report)


@eval_.command(name="scrub")
@click.option("--code", is_flag=True, help="Also plant secrets in a copy of a repository.")
@click.option(
    "--repo", type=click.Path(exists=True, file_okay=False), default=None,
    help="The repository to copy for --code (default: memserver's own source).",
)  # fmt: skip
@click.option("--secrets", "n_secrets", type=click.IntRange(1), default=480, show_default=True,
              help="Secrets to plant (each run: notes and code).")  # fmt: skip
@click.option("--harmless", "n_harmless", type=click.IntRange(1), default=480,
              show_default=True, help="Harmless high-entropy tokens to plant.")  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--embedder", default="hashing", show_default=True,
              help="Embedding model for the index of the copy.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def eval_scrub(code: bool, repo: str | None, n_secrets: int, n_harmless: int, seed: int,
               embedder: str, as_json: bool) -> None:  # fmt: skip
    """Planted secrets that survive, and harmless tokens lost, in notes and indexed code."""
    import tempfile
    from pathlib import Path

    import memserver
    from memserver.engine import Engine
    from memserver.eval.scrub import run, run_code, source_lines

    source = Path(memserver.__file__).resolve().parents[1]
    lines = source_lines([source / "memserver", source / "indexers"], 3000, seed=seed)
    report: dict[str, Any] = {"notes": run(n_secrets, n_harmless, lines, seed=seed).to_dict()}
    if code:
        with tempfile.TemporaryDirectory(prefix="memserver-scrub-") as tmp:
            report["code"] = run_code(
                Path(repo) if repo else source, Path(tmp),
                lambda root, index_dir: Engine(root, index_dir, embedder_flag=embedder, env={}),
                n_secrets=n_secrets, n_harmless=n_harmless, seed=seed,
                log=lambda msg: click.echo(msg, err=True),
            ).to_dict()  # fmt: skip
    if as_json:
        _emit_json(report)
        return
    for name, r in report.items():
        masked = r.get("harmless_masked", r.get("harmless_redacted", 0))
        click.echo(
            f"{name}: {r['leaked']} of {r['secrets']} planted secrets ({r['kinds']} kinds) "
            f"recoverable; {masked} of {r['harmless_tokens']} harmless tokens masked "
            f"({masked / max(1, r['harmless_tokens']):.2%})"
        )
        for kind, n in r["per_kind"].items():
            click.echo(f"  {kind}: {n['leaked']} of {n['planted']} leaked")


@eval_.command(name="locomo")
@click.option(
    "--dataset", type=click.Path(exists=True, dir_okay=False), required=True,
    help="Conversations in LoCoMo's JSON format (a list of samples).",
)  # fmt: skip
@click.option(
    "--work", type=click.Path(file_okay=False), default=None,
    help="Where the per-conversation indexes go (default: a temporary folder).",
)  # fmt: skip
@click.option("--embedder", default=None, help="Embedding model for the indexes.")
@click.option(
    "--consolidate", is_flag=True,
    help="Also consolidate each conversation after asking, then ask again.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@report_option
@handle_errors
def eval_locomo(dataset: str, work: str | None, embedder: str | None, consolidate: bool,
                as_json: bool, report_dir: str | None) -> None:  # fmt: skip
    """Evidence recall (R@k, All@k per category) and abstention on long conversations."""
    import tempfile
    from pathlib import Path

    from memserver.engine import Engine
    from memserver.eval.locomo import run

    def make(root: Path, index_dir: Path) -> Engine:
        return Engine(root, index_dir, embedder_flag=embedder)

    with tempfile.TemporaryDirectory(prefix="memserver-locomo-") as tmp:
        report = run(
            Path(dataset), Path(work or tmp), make_engine=make, consolidate=consolidate,
            log=lambda msg: click.echo(msg, err=True),
        )  # fmt: skip
    if report_dir:
        from memserver.eval import figures

        page = figures.locomo(report, figures.load_baselines()["locomo"])
        _write_report(report_dir, page, report)
    if as_json:
        _emit_json(report)
        return
    pooled, cat5 = report["pooled"], report["cat5"]
    click.echo(
        f"pooled 1-4: R@5 {pooled['recall@5']:.3f} R@10 {pooled['recall@10']:.3f} "
        f"R@20 {pooled['recall@20']:.3f} All@10 {pooled['all@10']:.3f} "
        f"({pooled['questions']} questions)"
    )
    for cat, block in report["per_category"].items():
        click.echo(f"  category {cat}: R@10 {block['recall@10']:.3f} ({block['questions']})")
    click.echo(
        f"category 5: abstain {cat5['abstain']:.3f}, false abstain on 1-4 "
        f"{cat5['false_abstain']:.3f}, AUROC {cat5['auroc']:.3f}; ingest "
        f"{report['ingest_seconds']} s, recall p95 {report['recall_p95_ms']:.0f} ms"
    )


@eval_.command(name="attribution")
@bench_options
@click.option("--embedder", default=None, help="Embedding model for fresh indexes.")
@click.option(
    "--cases", type=click.Path(dir_okay=False), default=None,
    help="Keep the built answers here; a later run with it re-fits without re-embedding.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@report_option
@handle_errors
def eval_attribution(dataset: str, corpora: str, work: str | None, embedder: str | None,
                     cases: str | None, as_json: bool, report_dir: str | None) -> None:  # fmt: skip
    """Citation precision/recall of `attribute` on answers built from the code bench."""
    import tempfile
    from pathlib import Path

    from memserver.engine import Engine
    from memserver.eval.attribution import run

    def make(root: Path, index_dir: Path) -> Engine:
        return Engine(root, index_dir, embedder_flag=embedder)

    with tempfile.TemporaryDirectory(prefix="memserver-eval-") as tmp:
        report = run(Path(dataset), Path(corpora), Path(work or tmp), make_engine=make,
                     log=lambda msg: click.echo(msg, err=True),
                     cases_file=Path(cases) if cases else None)  # fmt: skip
    if report_dir:
        from memserver.eval import figures

        _write_report(report_dir, figures.attribution(report), report)
    if as_json:
        _emit_json(report)
        return
    held = report["leave_one_package_out_mean"]
    click.echo(
        f"held-out precision {held['precision']:.3f} recall {held['recall']:.3f}; "
        f"cited {held['cited_mean']:.2f} of {held['loaded_mean']:.2f} loaded sources\n"
        f"fitted: weights {report['weights']} bias {report['bias']} "
        f"threshold {report['threshold']}"
    )


@eval_.command(name="swebench")
@click.option(
    "--dataset", type=click.Path(exists=True, dir_okay=False), required=True,
    help="SWE-bench-format instances, one JSON object per line.",
)  # fmt: skip
@click.option(
    "--trees", type=click.Path(exists=True, file_okay=False), required=True,
    help="Source trees: <repo name>-<release>/, <instance_id>/ or <base_commit>/ per instance.",
)  # fmt: skip
@click.option(
    "--work", type=click.Path(file_okay=False), default=None,
    help="Where the working tree and its index go (default: a temporary folder, removed "
    "after); a second run with the same folder switches from where the last one stopped.",
)  # fmt: skip
@click.option("--embedder", default=None, help="Embedding model for the index (or hashing, none).")
@click.option("--limit", type=int, default=None, help="Only the first N instances.")
@click.option(
    "--releases", multiple=True,
    help="Only instances of these releases (repeat, or separate with commas).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@report_option
@handle_errors
def eval_swebench(dataset: str, trees: str, work: str | None, embedder: str | None,
                  limit: int | None, releases: tuple[str, ...], as_json: bool,
                  report_dir: str | None) -> None:  # fmt: skip
    """Issue localization: file and function Acc@k of recall on whole issue texts, beside
    whole-file BM25 from the same run, one working tree moved from tree to tree."""
    import tempfile
    from pathlib import Path

    from memserver.engine import Engine
    from memserver.eval.swebench import format_table, run

    def make(root: Path, index_dir: Path) -> Engine:
        return Engine(root, index_dir, embedder_flag=embedder)

    wanted = [r.strip() for item in releases for r in item.split(",") if r.strip()]
    with tempfile.TemporaryDirectory(prefix="memserver-swebench-") as tmp:
        report = run(
            Path(dataset), Path(trees), Path(work or tmp), make_engine=make, releases=wanted,
            limit=limit, log=lambda msg: click.echo(msg, err=True),
        )  # fmt: skip
    if report_dir:
        from memserver.eval import figures

        page = figures.swebench(report, figures.load_baselines()["swebench"])
        _write_report(report_dir, page, report)
    if as_json:
        _emit_json(report)
    else:
        click.echo(format_table(report))


@eval_.command(name="scale")
@click.option("--tokens", type=click.IntRange(min=1), multiple=True, required=True,
              help="Corpus size in tokens (repeat for a growth curve).")  # fmt: skip
@click.option("--source", "sources", type=click.Path(exists=True, file_okay=False),
              multiple=True,
              help="A source tree to replicate (every text file; repeatable).")  # fmt: skip
@click.option("--py-source", "py_sources", type=click.Path(exists=True, file_okay=False),
              multiple=True,
              help="A tree of which only the .py files are copied (repeatable).")  # fmt: skip
@click.option("--queries", type=click.Path(exists=True, dir_okay=False), required=True,
              help="JSONL with a `query` field per line (the code bench's dev.jsonl).")  # fmt: skip
@click.option("--n-queries", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--work", type=click.Path(file_okay=False), default=None,
              help="Where the corpora and indexes go (default: a temporary folder, removed "
              "after; a kept folder reuses corpora already built).")  # fmt: skip
@click.option("--embedder", default=None, help="Embedding model for the indexes (or hashing).")
@click.option("--ann-check", is_flag=True,
              help="Also the ANN index's recall@10 against exact search.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of rows.")
@report_option
@handle_errors
def eval_scale(tokens: tuple[int, ...], sources: tuple[str, ...], py_sources: tuple[str, ...],
               queries: str, n_queries: int, work: str | None, embedder: str | None,
               ann_check: bool, as_json: bool, report_dir: str | None) -> None:  # fmt: skip
    """Index and recall at scale: corpora of N tokens replicated from real trees; index
    time and peak RSS, disk, server RSS and recall p50/p95 per size."""
    import tempfile
    from pathlib import Path

    from memserver.eval.scale import Options, run, table

    with tempfile.TemporaryDirectory(prefix="memserver-scale-") as tmp:
        options = Options(
            list(tokens), Path(work or tmp), Path(queries), [Path(t) for t in sources],
            [Path(t) for t in py_sources], n_queries=n_queries, embedder=embedder,
            ann_check=ann_check,
        )  # fmt: skip
        rows = run(options, log=lambda msg: click.echo(msg, err=True))
    if report_dir:
        from memserver.eval import figures

        _write_report(report_dir, figures.scale(rows), rows)
    if as_json:
        _emit_json(rows)
    else:
        click.echo(table(rows))


def run() -> None:
    """The `memserver` command: `main`, then the process ends as soon as its work is done.

    Python's own end tears down every module and object the process holds. LanceDB's
    import alone brings about 700 modules (its namespace clients among them), and their
    teardown takes 0.2 s after the work is done (from the last exit handler to the
    process's end: 0.21 s after `import lancedb`, 0.004 s for a bare interpreter). So once
    the command is done, the process ends as Python's own end would, but for that teardown
    (`_quick_exit`): `status`, `recall` and a small project's first `index` took 0.11-0.13 s
    less (paired medians of 20, on cobra)."""
    try:
        main()  # standalone: ends by SystemExit, with the command's status
    except SystemExit as end:
        code = end.code
    else:  # pragma: no cover  (click always ends by SystemExit)
        code = 0
    _quick_exit(code)


def _quick_exit(code: object) -> None:
    """End the process as Python's own end does, but for its teardown: the other threads'
    work is waited for (`threading._shutdown`: executors' idle workers told to end, every
    thread but daemons joined), the exit handlers run, the output is flushed, and the
    status is the command's. Python's own end is taken instead where it cannot be done
    the same way (no such hooks, not the main thread), or where something waits to see it
    (a tracer or profiler: `python -m cProfile`, coverage, a debugger; `python -i`)."""
    import atexit
    import traceback

    shutdown = getattr(threading, "_shutdown", None)
    exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if shutdown is None or exit_handlers is None or _own_end_wanted():
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code if -(2**31) <= code < 2**31 else 255
    else:  # a message: said on stderr, status 1 (as Python's own end does)
        with contextlib.suppress(OSError, ValueError):
            print(code, file=sys.stderr or sys.__stderr__)
        status = 1
    try:
        shutdown()
    except BaseException:  # Ctrl-C while waiting for them: said, and the end goes on
        with contextlib.suppress(Exception):
            traceback.print_exc()
    exit_handlers()  # (one that fails is said, and the rest run: as at Python's own end)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except Exception:  # a reader gone (`| head`), a full disk
            status = 120  # what Python's own end says when it cannot flush
    os._exit(status)


def _own_end_wanted() -> bool:
    """Whether something waits for Python's own end: a tracer or profiler (they write what
    they saw then), an interactive prompt after the command (`python -i`), or a caller
    that is not the main thread (Python's end would wait for it)."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return True
    if sys.flags.inspect or os.environ.get("PYTHONINSPECT"):
        return True
    if threading.current_thread() is not threading.main_thread():
        return True
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12's tools (coverage)
    return monitoring is not None and any(monitoring.get_tool(i) for i in range(6))


__all__ = ["main", "run"]
