"""Merge evidence whose chunks sit next to each other in one file into one span."""

from __future__ import annotations

from dataclasses import replace

from memserver.core.protocols import Snapshot, TokenCounter
from memserver.core.types import Evidence


def _join(first: Evidence, second: Evidence, tokens: TokenCounter | None) -> Evidence:
    gap = second.start_line - first.end_line - 1  # blank lines: chunks cover every other line
    text = first.text + "\n" * (gap + 1) + second.text
    count = tokens.count(text) if tokens is not None else first.tokens + second.tokens + gap
    return replace(
        first, end_line=second.end_line, text=text, tokens=count,
        symbol=", ".join(s for s in (first.symbol, second.symbol) if s),
        routes=tuple(dict.fromkeys(first.routes + second.routes)),
        memory_ids=tuple(sorted(set(first.memory_ids) | set(second.memory_ids))),
        embedded=first.embedded and second.embedded,
    )  # fmt: skip


def merge_adjacent(
    snap: Snapshot, evidence: list[Evidence], tokens: TokenCounter | None
) -> list[Evidence]:
    """Adjacent chunks of one file that are both candidates become one item, at the better rank."""
    out: list[Evidence] = []
    where: dict[int, int] = {}  # chunk row of an item's first/last chunk → index in out
    rows = snap.rows_of([ev.id for ev in evidence])
    for ev, found in zip(evidence, rows, strict=True):
        assert found is not None  # evidence is made of shown rows
        row = found
        before = row - 1 if row > 0 and snap.next_in_file(row - 1) == row else None
        after = row + 1 if snap.next_in_file(row) == row + 1 else None
        if before is not None and before in where:
            i = where.pop(before)
            out[i] = _join(out[i], ev, tokens)
            where[row] = i
        elif after is not None and after in where:
            i = where.pop(after)
            out[i] = replace(_join(ev, out[i], tokens), score=max(out[i].score, ev.score))
            where[row] = i
        else:
            where[row] = len(out)
            out.append(ev)
    return out
