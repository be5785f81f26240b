"""A map answer: ranked files, each with its most relevant places, a line apiece.

Like a repository map, but for one question: per file its path, then its best chunks as
`L73-149 class URLValidator(RegexValidator):` (the span and the first line of code: a
signature, a heading), `PLACES` for the first `WIDE` files and one for the rest. Twenty
files fit in about 1,000 tokens, so an agent sees the candidates first and reads only what
it needs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memserver.core.types import Evidence, MapFile, MapSymbol

__all__ = ["PLACES", "build_map", "signature"]

PLACES = 2  # places listed per file among the first WIDE files (one for the others)
WIDE = 5
_SIGNATURE_CHARS = 80
_SKIP = re.compile(r"^\s*(?:@|#|//|/\*|\*|\"\"\"|'''|$)")  # decorators, comments, blank lines
_DEFINES = re.compile(
    r"^\s*(?:export\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:def|class|function|func|fn|"
    r"interface|struct|enum|trait|impl|type|module|object|protocol|extension|[\w<>\[\],\s]+\()"
)


def signature(e: Evidence) -> str:
    """The chunk's first line of code (its definition line when it opens with one)."""
    lines = e.text.splitlines()
    first = next((ln for ln in lines if not _SKIP.match(ln)), lines[0] if lines else "")
    defining = next((ln for ln in lines[:8] if _DEFINES.match(ln)), first)
    line = " ".join(defining.split())
    return line if len(line) <= _SIGNATURE_CHARS else line[: _SIGNATURE_CHARS - 1] + "…"


def build_map(ranked: Sequence[tuple[str, float, str]], evidence: Sequence[Evidence],
              limit: int) -> list[MapFile]:  # fmt: skip
    """Up to `limit` of the ranked (path, score, role) files, distinct, in order, each with
    the places the evidence (best first) holds in it."""
    top = set(list(dict.fromkeys(path for path, _, _ in ranked))[:WIDE])
    places: dict[str, list[MapSymbol]] = {}
    for e in evidence:
        got = places.setdefault(e.path, [])
        if len(got) < (PLACES if e.path in top else 1):
            got.append(MapSymbol(e.id, e.symbol or e.kind, e.start_line, e.end_line,
                                 signature(e)))  # fmt: skip
    out: list[MapFile] = []
    seen: set[str] = set()
    for path, score, role in ranked:
        if path in seen or path not in places:
            continue
        seen.add(path)
        ordered = tuple(sorted(places[path], key=lambda m: m.start_line))
        out.append(MapFile(path, score, role, ordered))
        if len(out) >= limit:
            break
    return out
