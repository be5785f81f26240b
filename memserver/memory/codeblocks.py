"""Code out of a note, raw: fenced blocks, and unfenced runs that are shaped like code.

Each block is cut out verbatim (never summarised or rewritten) and replaced in the
prose by a reference `[code block N]`, so the note's statements stay readable and
the code is stored as its own chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CodeBlock", "split_code"]

_FENCE = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_CODE_LINE = re.compile(
    r"""^(?:\s{4,}\S|\t\S)                                   # indented
      |^\s*(?:def|class|async\s+def|import|from\s+\S+\s+import|return|func|fn|pub\s+fn|
              const|let|var|package|public|private|static|\#include|if\s*\(|for\s*\(|
              while\s*\(|@\w+)\b
      |[;{}]\s*(?://.*)?$|\)\s*:\s*$|=>|^\s*[}\])]+[;,]?\s*$
      |^\s*[$>]\s+\S                                         # shell prompt
    """,
    re.X,
)
MIN_UNFENCED_LINES = 3


@dataclass(frozen=True, slots=True)
class CodeBlock:
    language: str  # from the fence's info string, "" when unknown
    text: str  # verbatim lines, fences excluded
    fenced: bool


def split_code(text: str) -> tuple[str, list[CodeBlock]]:
    """(prose with `[code block N]` references, the blocks in order)."""
    lines = text.split("\n")
    prose: list[str] = []
    blocks: list[CodeBlock] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m:
            fence = m.group("fence")
            end = i + 1
            while end < len(lines) and not lines[end].strip().startswith(fence):
                end += 1
            body = "\n".join(lines[i + 1 : end])
            if body.strip():
                lang = (m.group("info").split() or [""])[0].lower()
                blocks.append(CodeBlock(lang, body, fenced=True))
                prose.append(f"[code block {len(blocks)}]")
            i = end + 1
            continue
        run = _code_run(lines, i)
        if run > i:
            blocks.append(CodeBlock("", "\n".join(lines[i:run]), fenced=False))
            prose.append(f"[code block {len(blocks)}]")
            i = run
            continue
        prose.append(lines[i])
        i += 1
    return "\n".join(prose), blocks


def _code_run(lines: list[str], start: int) -> int:
    """End of a run of ≥ 3 code-shaped lines starting at `start` (or `start` if none)."""
    end = start
    while end < len(lines) and lines[end].strip() and _CODE_LINE.search(lines[end]):
        end += 1
    if end - start >= MIN_UNFENCED_LINES:
        return end
    return start
