"""Identifier-aware word splitting shared by the BM25 analyser and query planning.

`parseHTTPResponse` → parse http response; `snake_case_name` → snake case name;
`Client.send` → client send. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TOKEN = re.compile(r"[A-Za-z0-9_]+")
_CAMEL = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def split_identifier(token: str) -> list[str]:
    """Split one identifier into lower-case word parts."""
    parts: list[str] = []
    for piece in token.split("_"):
        if piece:
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return parts


def words(text: str) -> list[str]:
    """Every identifier part of `text`, lower-cased, in order."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        out.extend(split_identifier(token))
    return out


def analysed(text: str) -> str:
    """Text for the split-identifier BM25 field: whole identifiers lowered, plus their parts."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        parts = split_identifier(token)
        whole = token.lower().strip("_")
        if len(parts) > 1 and whole:
            out.append(whole.replace("_", ""))
        out.extend(parts)
    return " ".join(out)


def splice(text: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, replacement) applied; edits in order, not overlapping."""
    out, last = [], 0
    for start, end, replacement in edits:
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return "".join(out)
