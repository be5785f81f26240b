"""The deterministic distiller: says in words what a chunk is, with no model.

Up to three memories per chunk, each citing it:
- definition: kind, qualified name split into words, where it lives, its signature;
- fact: what its comments, docstrings and descriptive strings say;
- procedure: the names it calls, as words.
An identifier-only question ("parseHTTPResponse") and a prose question ("parse
the HTTP response") then meet the code on the same words.
"""

from __future__ import annotations

import re

from memserver.core.types import Chunk, MemoryDraft
from memserver.text.passages import name_line, phrase

NAME = "heuristic-v1"
_MAX_TEXT = 500
_COMMENT = re.compile(
    r'"""(.*?)"""|\'\'\'(.*?)\'\'\'|/\*+(.*?)\*/|(?:#|//+|--)\s?([^\n]*)', re.DOTALL
)
_STRING = re.compile(r'"([^"\n]{12,200})"|\'([^\'\n]{12,200})\'|`([^`\n]{12,200})`')
_CALL = re.compile(r"\b([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s*\(")
_KEYWORDS = frozenset(
    "if for while switch return catch function def fn func class new typeof sizeof await "
    "elif else match case with assert print super self this lambda async yield not and or in "
    "import require include".split()
)
_CODE_KINDS = frozenset({"function", "method", "class"})


def _signature(chunk: Chunk) -> str:
    """The line that names the unit, continued until its parentheses close."""
    name = chunk.symbol.split(", ")[0].rsplit(".", 1)[-1]
    lines = [ln.strip() for ln in chunk.text.split("\n") if ln.strip()]
    start = next(
        (i for i, ln in enumerate(lines)
         if name and name in ln and not ln.startswith(("#", "//", "/*", "*", "@"))),
        0,
    )  # fmt: skip
    parts: list[str] = []
    depth = 0
    for line in lines[start : start + 8]:
        parts.append(line)
        depth += line.count("(") - line.count(")")
        if depth <= 0:
            break
    return " ".join(parts)[:300]


def _comments(text: str) -> str:
    found: list[str] = []
    for m in _COMMENT.finditer(text):
        body = next((g for g in m.groups() if g), "")
        body = " ".join(body.replace("*", " ").split())
        if len(body.split()) >= 2 and not body.startswith(("!", "eslint", "noqa", "type:")):
            found.append(body)
    for m in _STRING.finditer(text):
        body = next((g for g in m.groups() if g), "")
        if len(body.split()) >= 3:
            found.append(body)
    return " ".join(found)


def _calls(text: str, own: str) -> list[str]:
    seen: dict[str, None] = {}
    for m in _CALL.finditer(text):
        name = m.group(1)
        last = name.rsplit(".", 1)[-1]
        if last.lower() in _KEYWORDS or last == own or len(last) < 3:
            continue
        seen.setdefault(name, None)
    return list(seen)[:12]


class HeuristicDistiller:
    """`Distiller` with no model: deterministic, fast, always available."""

    name = NAME

    def distill(self, chunk: Chunk) -> list[MemoryDraft]:
        symbol = chunk.symbol.split(", ")[0] if chunk.symbol else ""
        named = name_line(chunk.kind, symbol, chunk.path)
        drafts = [
            MemoryDraft(
                type="definition",
                key=(symbol or chunk.path)[:120],
                text=f"{named}: {_signature(chunk)}"[:_MAX_TEXT],
                entities=tuple(e for e in (symbol, chunk.path) if e),
            )
        ]
        if chunk.kind not in _CODE_KINDS:
            return drafts
        about = phrase(symbol) or chunk.path
        described = _comments(chunk.text)
        if described:
            drafts.append(
                MemoryDraft("fact", f"{symbol}: notes"[:120], f"{about}: {described}"[:_MAX_TEXT])
            )
        calls = _calls(chunk.text, symbol.rsplit(".", 1)[-1])
        if calls:
            spoken = ", ".join(phrase(c) for c in calls)
            drafts.append(
                MemoryDraft(
                    "procedure",
                    f"{symbol}: calls"[:120],
                    f"{about} calls {spoken}"[:_MAX_TEXT],
                    entities=tuple(calls),
                )
            )
        return drafts
