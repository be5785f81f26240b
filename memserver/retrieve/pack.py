"""Pack ranked evidence into a token budget and a cap on distinct files.

A chunk that does not fit is skipped, never cut mid-line, and later smaller
chunks may still fit. The pack is never over budget. `cost` is what an item adds to the
result as the agent reads it (its rendered form, header and all), `overhead` what the
result costs with no item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memserver.core.types import Evidence


@dataclass(frozen=True, slots=True)
class Pack:
    evidence: tuple[Evidence, ...]
    tokens: int
    truncated: bool


def pack(
    ranked: Sequence[Evidence], budget_tokens: int, max_files: int, k: int,
    cost: Callable[[Evidence], int] | None = None, overhead: int = 0,
) -> Pack:  # fmt: skip
    chosen: list[Evidence] = []
    files: set[str] = set()
    used = overhead
    truncated = False
    for ev in ranked:
        if len(chosen) >= k:
            break
        size = ev.tokens if cost is None else cost(ev)
        if size > budget_tokens - used:
            truncated = True
            continue
        if ev.path not in files and len(files) >= max_files:
            truncated = True
            continue
        chosen.append(ev)
        files.add(ev.path)
        used += size
    return Pack(tuple(chosen), used, truncated)
