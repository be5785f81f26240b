"""What the pages show, worked out away from the HTTP layer: the diff of a stale memory's
cited code against the file on disk, the filters a query string asks for, and which
events a person can undo.

The diff reads a file from disk only when indexing would read it now (the walk decides:
a file since ignored or forgotten is not shown), and only inside the project root.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from memserver.core.errors import BadRequest
from memserver.core.requests import SCOPE_KEYS, Scope, check_scope
from memserver.core.types import PathSet

if TYPE_CHECKING:
    from memserver.core.types import Chunk
    from memserver.engine import Engine
    from memserver.store.browse import Browser, EventRecord

__all__ = ["SpanDiff", "date_param", "scope_params", "span_diff", "undo_label"]

MAX_DIFF_LINES = 400


@dataclass(frozen=True, slots=True)
class SpanDiff:
    """The cited span as indexed against the same place in the file on disk."""

    chunk_id: str
    path: str
    indexed: tuple[int, int]
    on_disk: tuple[int, int] | None  # None when the file is gone or not shown
    lines: tuple[tuple[str, str], ...]  # (file | hunk | add | del | ctx, text)
    note: str  # what changed in words, or why no file text is shown


def _where_now(chunk: Chunk, now: Sequence[Chunk], disk_lines: int) -> tuple[int, int]:
    """The lines that stand where `chunk` stood: the chunk of the same symbol the index
    holds now, else the old line range (clamped to the file)."""
    same = [c for c in now if chunk.symbol and c.symbol == chunk.symbol]
    if same:
        return same[0].start_line, same[-1].end_line
    start = min(chunk.start_line, max(1, disk_lines))
    return start, min(max(chunk.end_line, start), max(1, disk_lines))


def _indexed_now(engine: Engine, rel: str) -> bool:
    """Would indexing read this file now (not removed, ignored, forgotten or too big)?"""
    walked = engine.walk(only=PathSet([rel]))
    return any(f.path == rel for f in walked.files)


def span_diff(engine: Engine, browser: Browser, chunk: Chunk) -> SpanDiff:
    indexed = chunk.text.splitlines()
    span = (chunk.start_line, chunk.end_line)
    path = (engine.root / chunk.path).resolve()
    if not path.is_relative_to(engine.root) or not path.is_file():
        return _diff(chunk, indexed, [], None, "the file is gone from the working tree")
    if not _indexed_now(engine, chunk.path):
        return SpanDiff(chunk.id, chunk.path, span, None, (),
                        "not shown: the file is no longer indexed (ignored, forgotten or "
                        "too big)")  # fmt: skip
    try:
        disk = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return SpanDiff(chunk.id, chunk.path, span, None, (), f"cannot read it: {exc}")
    start, end = _where_now(chunk, browser.current_chunks_of(chunk.path), len(disk))
    now = disk[start - 1 : end]
    note = "the cited lines changed on disk" if now != indexed else (
        "the cited text is unchanged on disk (the index has not seen the edit yet, or the "
        "lines only moved)")  # fmt: skip
    return _diff(chunk, indexed, now, (start, end), note)


def _diff(chunk: Chunk, indexed: list[str], now: list[str], where: tuple[int, int] | None,
          note: str) -> SpanDiff:  # fmt: skip
    span = (chunk.start_line, chunk.end_line)
    after = f"{chunk.path}:{where[0]}-{where[1]} (on disk)" if where else "(gone)"
    raw = difflib.unified_diff(indexed, now, f"{chunk.path}:{span[0]}-{span[1]} (indexed)",
                               after, n=3, lineterm="")  # fmt: skip
    lines: list[tuple[str, str]] = []
    for line in raw:
        kind = ("file" if line.startswith(("---", "+++")) else "hunk" if line.startswith("@@")
                else "add" if line.startswith("+") else "del" if line.startswith("-")
                else "ctx")  # fmt: skip
        lines.append((kind, line))
        if len(lines) >= MAX_DIFF_LINES:
            lines.append(("hunk", "… (diff cut short)"))
            break
    return SpanDiff(chunk.id, chunk.path, span, where, tuple(lines), note)


# -- query strings -------------------------------------------------------------------------


def date_param(value: str | None, *, end_of_day: bool = False) -> datetime | None:
    """A YYYY-MM-DD (or ISO) value of a filter form; `end_of_day` makes a date inclusive."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise BadRequest(f"{text!r} is not a date", hint="write it as YYYY-MM-DD") from exc
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    if end_of_day and len(text) == 10:
        when += timedelta(days=1) - timedelta(microseconds=1)
    return when


def scope_params(params: Mapping[str, str]) -> Scope:
    """The user / session / agent fields of a form, blank ones left out."""
    return check_scope([(k, params[k]) for k in SCOPE_KEYS if params.get(k, "").strip()])


def csv_param(value: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (value or "").split(",") if x.strip())


# -- undo ------------------------------------------------------------------------------

# what the services can undo (memory.review.UNDOABLE, memory.consolidate.UNDOABLE), as a
# button label; the services check again and say why when they cannot
_UNDO = {
    "keep": "Undo keep", "rewrite": "Undo edit", "checked": "Undo checked",
    "forget": "Bring back", "consolidate": "Split again", "supersede": "Reopen the older",
    "reject-merge": "Reconsider", "reject-contradiction": "Reconsider",
}  # fmt: skip
CONSOLIDATION_OPS = ("consolidate", "supersede", "reject-merge", "reject-contradiction")


def undo_label(record: EventRecord) -> str | None:
    e = record.event
    label = _UNDO.get(e.op)
    if label is None or record.undone_by:
        return None
    if e.op == "forget" and (e.reason.endswith("(erased)")
                             or not all(t.startswith("m_") for t in e.targets)):  # fmt: skip
        return None
    if e.op == "consolidate" and (not e.targets or e.after == "finished an interrupted run"):
        return None
    return label
