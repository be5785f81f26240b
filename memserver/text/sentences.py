"""Sentences of a text and the entities it names: notes, answers' claims and questions.

Deterministic: sentences never split inside code spans, parentheticals, paths or versions;
entities are identifiers, paths, versions and proper names, in order of appearance.
"""

from __future__ import annotations

import re

__all__ = ["entities", "sentences"]

_ABBREV = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|No|Fig)\.$", re.I)
_SPAN = re.compile(r"`[^`\n]*`|\[code block \d+\]|\([^()\n]{0,200}\)")
_BOUNDARY = re.compile(
    r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`]?[A-Z0-9`])|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)"
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_IDENT = re.compile(
    r"`([^`\n]+)`"  # code span
    r"|\b((?:[A-Za-z_][\w-]*/)+[\w.-]+|[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|java|rb|c|h|cpp|md|"
    r"toml|yaml|yml|json|sh|sql))\b"  # path / file name
    r"|\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|"
    r"[a-z0-9]+_[a-z0-9_]+|[A-Z][A-Z0-9_]{2,})\b"  # dotted, camelCase, PascalCase, snake, CONST
    r"|\b(v?\d+(?:\.\d+)+)\b"  # versions
)
_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
_STOP_NAMES = frozenset(
    "I The A An It Its This That These Those We Our You Your They Their He His She Her My "
    "Me Also But And Or So Then However When While If What Why How Where Who Which Yes No "
    "Oh Hey Hi Hello Thanks Thank Wow Well Sure Great Just Let Run Use See Note Please "
    "After Before Since Until Today Yesterday Tomorrow There Here Now Not Do Does Did "
    "In On At For From With By To Of As Is Are Was Were Be Have Has Had Can Will Would "
    "Should Could Maybe Some All Any Every Each One Two First Next Last Never Always".split()
)
_ABBREVIATION = re.compile(r"(?:[a-z]\.)+[a-z]?", re.I)


def sentences(text: str) -> list[str]:
    """Sentences of `text`; code spans, parentheticals and file names are never cut."""
    protected: dict[str, str] = {}

    def hide(m: re.Match[str]) -> str:
        key = f"\x00{len(protected)}\x00"
        protected[key] = m.group()
        return key

    masked = _SPAN.sub(hide, text)
    pieces: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(masked):
        head = masked[start : m.start()].rstrip()
        if _ABBREV.search(head):
            continue
        pieces.append(masked[start : m.start()])
        start = m.end()
    pieces.append(masked[start:])
    out = []
    for p in pieces:
        for key, value in protected.items():
            p = p.replace(key, value)
        p = _BULLET.sub("", " ".join(p.split()))
        if p:
            out.append(p)
    return out


def entities(text: str) -> tuple[str, ...]:
    """Identifiers, paths, versions and proper names the text mentions, in order."""
    found: list[str] = []
    for m in _IDENT.finditer(text):
        value = next(g for g in m.groups() if g).strip()
        if not _ABBREVIATION.fullmatch(value):
            found.append(value)
    for m in _NAME.finditer(text):
        parts = [w for w in m.group(1).split() if w not in _STOP_NAMES]
        if parts:
            found.append(" ".join(parts))
    return tuple(dict.fromkeys(x for x in found if x))
