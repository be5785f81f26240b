"""Markdown chunking: one section per ATX or setext heading, fence-aware.

Lines inside ``` / ~~~ fences, indented code and front matter are never headings. A section's
symbol is its heading path ("Install > Linux"); text before the first heading is a section with
symbol "". Sections over the token cap are cut into windows that prefer blank lines outside
fences. The merge group is the enclosing top-level (#) heading, so tiny sections never merge
across two of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from indexers.text import Lines, Piece, windows
from memserver.core.types import ChunkOptions

_ATX = re.compile(r"^ {0,3}(#{1,6})(?=\s|$)(.*)$")
_ATX_CLOSE = re.compile(r"(?:^|\s)#+\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_NOT_PARAGRAPH = re.compile(r"^\s*(?:[-*+>|]\s|\d+[.)]\s|[-*+>|]$)")
_FRONT_MATTER = {"---": ("---", "..."), "+++": ("+++",)}


@dataclass(frozen=True, slots=True)
class Heading:
    line: int  # first line of the section (for setext: the first text line)
    level: int
    title: str


def markdown_pieces(lines: Lines, options: ChunkOptions) -> list[Piece]:
    headings, quiet = find_headings(lines)
    pieces: list[Piece] = []
    first = headings[0].line if headings else len(lines) + 1
    pieces += _section(lines, options, quiet, 1, first - 1, "", "", "0")
    path: list[Heading] = []
    top = 0
    for index, heading in enumerate(headings):
        end = headings[index + 1].line - 1 if index + 1 < len(headings) else len(lines)
        while path and path[-1].level >= heading.level:
            path.pop()
        path.append(heading)
        top += heading.level == 1
        symbol = " > ".join(h.title for h in path)
        title_line = lines.line(heading.line).strip()[:200]
        pieces += _section(lines, options, quiet, heading.line, end, symbol, title_line, str(top))
    return pieces


def _section(
    lines: Lines,
    options: ChunkOptions,
    quiet: list[bool],
    start: int,
    end: int,
    symbol: str,
    title_line: str,
    group: str,
) -> list[Piece]:
    span = lines.trim(start, end) if start <= end else None
    if span is None:
        return []
    start, end = span
    if lines.tokens(start, end) <= options.max_tokens:
        return [Piece(start, end, "section", symbol, "", group)]

    def nice(k: int) -> bool:
        return lines.is_blank(k - 1) and not quiet[k - 2] and not quiet[k - 1]

    spans = windows(lines, start, end, options.window_lines, options.max_tokens, nice)
    return [
        Piece(s, e, "section", symbol, "" if s == start else title_line, group) for s, e in spans
    ]


def find_headings(lines: Lines) -> tuple[list[Heading], list[bool]]:
    """Headings in order, and per line (0-based) whether it is fenced code or front matter."""
    quiet = [False] * len(lines)
    headings: list[Heading] = []
    fence: tuple[str, int] | None = None
    paragraph: int | None = None  # first line of the open paragraph that may become setext
    for n in range(_front_matter_end(lines, quiet) + 1, len(lines) + 1):
        raw = lines.line(n).rstrip()
        if fence is not None:
            quiet[n - 1] = True
            if _closes(fence, raw):
                fence = None
            continue
        opened = _FENCE.match(raw)
        if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence, paragraph = (opened.group(1)[0], len(opened.group(1))), None
            quiet[n - 1] = True
            continue
        heading = _heading_at(lines, n, raw, paragraph)
        if heading is not None:
            headings.append(heading)
            paragraph = None
        elif not raw or _SETEXT.match(raw) or (raw.startswith(("    ", "\t")) and not paragraph):
            paragraph = None
        elif paragraph is None:
            paragraph = None if _NOT_PARAGRAPH.match(raw) else n
    return headings, quiet


def _heading_at(lines: Lines, n: int, raw: str, paragraph: int | None) -> Heading | None:
    atx = _ATX.match(raw)
    if atx:
        title = _ATX_CLOSE.sub("", atx.group(2)).strip()
        return Heading(n, len(atx.group(1)), title)
    underline = _SETEXT.match(raw)
    if underline and paragraph is not None:
        title = " ".join(lines.line(k).strip() for k in range(paragraph, n))
        return Heading(paragraph, 1 if underline.group(1)[0] == "=" else 2, title)
    return None


def _closes(fence: tuple[str, int], raw: str) -> bool:
    stripped = raw.strip()
    char, length = fence
    return len(stripped) >= length and set(stripped) == {char} and len(raw) - len(raw.lstrip()) < 4


def _front_matter_end(lines: Lines, quiet: list[bool]) -> int:
    """The last line of front matter (--- or +++ delimited) at the top, or 0 when there is none."""
    closers = _FRONT_MATTER.get(lines.line(1).rstrip()) if len(lines) > 1 else None
    if not closers:
        return 0
    for n in range(2, len(lines) + 1):
        if lines.line(n).rstrip() in closers:
            quiet[:n] = [True] * n
            return n
    return 0


__all__ = ["Heading", "find_headings", "markdown_pieces"]
