"""A map answer: ranked files, each with its most relevant places, a line apiece.

Like a repository map, but for one question: per file its path, then its best chunks, best
first, as `L73-149 class URLValidator(RegexValidator):` (the span and the first line of
code: a signature, a heading), as many as `PLACES` gives for the file's rank and one for
the rest. Twenty files fit in about 1,000 tokens, so an agent sees the candidates first and
reads only what it needs.

On the DEV issues (keyword only) three places for the first file and two for the next four,
best first, listed every function of the fix among the first ten places for 65.6% of the
issues and the first five for 60.8%, against 60.8% and 57.1% with two places each in line
order; chosen leave-one-release-out among eleven layouts (in 8 of 9 folds; held out:
64.6% and 60.4%). A third place for more files, or a fourth, cost the later files' places
more than it gave.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memserver.core.types import Evidence, MapFile, MapSymbol

__all__ = ["PLACES", "build_map", "signature"]

PLACES = (3, 2, 2, 2, 2)  # places listed for the first, second, … file; one for the others
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
    the places the evidence (best first) holds in it, in that order."""
    rank = {path: i for i, path in enumerate(dict.fromkeys(path for path, _, _ in ranked))}
    places: dict[str, list[MapSymbol]] = {}
    for e in evidence:
        got = places.setdefault(e.path, [])
        i = rank.get(e.path, len(PLACES))
        if len(got) < (PLACES[i] if i < len(PLACES) else 1):
            got.append(MapSymbol(e.id, e.symbol or e.kind, e.start_line, e.end_line,
                                 signature(e)))  # fmt: skip
    out: list[MapFile] = []
    seen: set[str] = set()
    for path, score, role in ranked:
        if path in seen or path not in places:
            continue
        seen.add(path)
        out.append(MapFile(path, score, role, tuple(places[path])))
        if len(out) >= limit:
            break
    return out
