"""Line primitives every chunker builds on, and the line-window chunker for data and text files.

A chunker here works on `Lines` (the file split on "\\n", with one token count per line) and
produces `Piece`s: line spans with a kind, symbol, header and a merge group. `to_drafts` turns
pieces into `ChunkDraft`s whose text is exactly the file's lines, so every chunker keeps the
same contract (raw text, 1-based inclusive spans, no blank edges, no overlap).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from indexers.treesitter.definitions import blank_rows
from memserver.core.protocols import TokenCounter
from memserver.core.types import ChunkDraft, ChunkOptions

# A boundary predicate says whether a window may nicely start at line k (1-based).
Boundary = Callable[[int], bool]

_YAML_TOP = re.compile(r"^(?:[^\s#\-][^:]*:|-\s|---|\.\.\.)")
_TOML_TABLE = re.compile(r"^\s*\[")
_JSON_TOP = re.compile(r"^\s{0,2}[\"{\[]")


@dataclass(frozen=True, slots=True)
class Lines:
    """A file's lines (``text.split("\\n")``) with per-line token counts and prefix sums."""

    rows: tuple[str, ...]
    counts: tuple[int, ...]
    prefix: tuple[int, ...]  # prefix[i] = tokens of rows[0:i]
    blank: tuple[bool, ...]

    @classmethod
    def of(cls, text: str, counter: TokenCounter) -> Lines:
        rows = tuple(text.split("\n"))
        blank = blank_rows(rows)
        counts = tuple(
            0 if empty else counter.count(row) for row, empty in zip(rows, blank, strict=True)
        )
        prefix = [0]
        for count in counts:
            prefix.append(prefix[-1] + count)
        return cls(rows, counts, tuple(prefix), blank)

    def __len__(self) -> int:
        return len(self.rows)

    def tokens(self, start: int, end: int) -> int:
        """Estimated tokens of lines start..end (1-based, inclusive): the sum of line counts."""
        return self.prefix[end] - self.prefix[start - 1]

    def is_blank(self, line: int) -> bool:
        return self.blank[line - 1]

    def line(self, line: int) -> str:
        return self.rows[line - 1]

    def text(self, start: int, end: int) -> str:
        return "\n".join(self.rows[start - 1 : end])

    def trim(self, start: int, end: int) -> tuple[int, int] | None:
        """The span without blank lines at its edges, or None when it is all blank."""
        while start <= end and self.blank[start - 1]:
            start += 1
        while end >= start and self.blank[end - 1]:
            end -= 1
        return (start, end) if start <= end else None


@dataclass(frozen=True, slots=True)
class Piece:
    """A chunk before it gets its text: a line span and what it is."""

    start: int
    end: int
    kind: str
    symbol: str = ""
    header: str = ""
    group: str = ""  # only pieces of one group (same nesting level) may be merged


def windows(
    lines: Lines,
    start: int,
    end: int,
    max_lines: int,
    max_tokens: int,
    boundary: Boundary | None = None,
) -> list[tuple[int, int]]:
    """Cut start..end into trimmed windows of at most max_lines lines and max_tokens tokens.

    A line over the token cap becomes a window of its own (never cut mid-line). When a window
    must be cut, it ends before the last line where a window may nicely start (after a blank
    line, or where `boundary` says so) in its second half.
    """
    max_lines, max_tokens = max(1, max_lines), max(1, max_tokens)
    nice = boundary or (lambda k: lines.is_blank(k - 1))
    out: list[tuple[int, int]] = []
    i = start
    while i <= end:
        while i <= end and lines.is_blank(i):
            i += 1
        if i > end:
            break
        j, total = i, lines.counts[i - 1]
        while j < end and j - i + 1 < max_lines and total + lines.counts[j] <= max_tokens:
            j += 1
            total += lines.counts[j - 1]
        if j < end and not lines.is_blank(j + 1) and not nice(j + 1):
            j = _break_before(i, j, nice)
        span = lines.trim(i, j)
        if span:
            out.append(span)
        i = j + 1
    return out


def _break_before(i: int, j: int, nice: Boundary) -> int:
    """The last line of a window i..j cut at a nice boundary in its second half, else j."""
    for k in range(j, i + (j - i + 1) // 2, -1):
        if nice(k):
            return k - 1
    return j


def text_pieces(lines: Lines, language: str, options: ChunkOptions) -> list[Piece]:
    """Line windows for data and text files, preferring blank lines and top-level keys/tables."""
    boundary = _boundary_for(lines, language)
    spans = windows(lines, 1, len(lines), options.window_lines, options.max_tokens, boundary)
    return [Piece(s, e, "text") for s, e in spans]


def _boundary_for(lines: Lines, language: str) -> Boundary:
    pattern = {"yaml": _YAML_TOP, "toml": _TOML_TABLE, "json": _JSON_TOP}.get(language)

    def boundary(k: int) -> bool:
        if lines.is_blank(k - 1):
            return True
        return bool(pattern and pattern.match(lines.line(k)))

    return boundary


def merge_tiny(pieces: Sequence[Piece], lines: Lines, options: ChunkOptions) -> list[Piece]:
    """Merge consecutive pieces of one group while one side is tiny and the result stays small.

    A piece below `min_tokens` joins its neighbour when the merged span stays within
    `merge_target_tokens` (and within `max_tokens`).
    """
    target = min(options.merge_target_tokens, options.max_tokens)
    runs: list[list[Piece]] = []
    for piece in pieces:
        if runs and _mergeable(runs[-1], piece, lines, options.min_tokens, target):
            runs[-1].append(piece)
        else:
            runs.append([piece])
    return [_combine(run) for run in runs]


def _mergeable(run: list[Piece], piece: Piece, lines: Lines, low: int, target: int) -> bool:
    if run[-1].group != piece.group:
        return False
    run_tokens = lines.tokens(run[0].start, run[-1].end)
    if run_tokens >= low and lines.tokens(piece.start, piece.end) >= low:
        return False
    return lines.tokens(run[0].start, piece.end) <= target


def _combine(run: list[Piece]) -> Piece:
    if len(run) == 1:
        return run[0]
    symbols: list[str] = []
    for piece in run:
        if piece.symbol and piece.symbol not in symbols:
            symbols.append(piece.symbol)
    kind = next((p.kind for p in run if p.kind != "module"), run[0].kind)
    first = run[0]
    return Piece(first.start, run[-1].end, kind, ", ".join(symbols), first.header, first.group)


def tiling_problem(pieces: Sequence[Piece], lines: Lines) -> str | None:
    """Why the pieces break the coverage contract, or None when they keep it."""
    covered = 0
    previous_end = 0
    for piece in pieces:
        if piece.start <= previous_end or piece.end < piece.start or piece.end > len(lines):
            return f"span {piece.start}-{piece.end} overlaps or is out of order"
        if lines.is_blank(piece.start) or lines.is_blank(piece.end):
            return f"span {piece.start}-{piece.end} has a blank edge"
        covered += sum(1 for b in lines.blank[piece.start - 1 : piece.end] if not b)
        previous_end = piece.end
    missing = sum(1 for b in lines.blank if not b) - covered
    return f"{missing} non-blank lines are in no chunk" if missing else None


def to_drafts(
    pieces: Sequence[Piece], lines: Lines, path: str, language: str, counter: TokenCounter
) -> tuple[ChunkDraft, ...]:
    """Give pieces their exact text and real token counts."""
    drafts = []
    for p in pieces:
        text = lines.text(p.start, p.end)
        # One line was already counted alone; its text is the same, so reuse the count.
        tokens = lines.counts[p.start - 1] if p.start == p.end else counter.count(text)
        drafts.append(
            ChunkDraft(
                path=path,
                language=language,
                kind=p.kind,
                symbol=p.symbol,
                start_line=p.start,
                end_line=p.end,
                text=text,
                header=p.header,
                tokens=tokens,
            )
        )
    return tuple(drafts)


__all__ = [
    "Boundary",
    "Lines",
    "Piece",
    "merge_tiny",
    "text_pieces",
    "tiling_problem",
    "to_drafts",
    "windows",
]
