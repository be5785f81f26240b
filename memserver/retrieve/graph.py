"""The graph arms of recall: definitions the query names, and the callers and callees of
the best hits so far, from the code graph (`core.protocols.CodeGraph`).

`graph/defs` ranks the chunks that define the query's identifiers (where the exact arm
matches chunk symbols, this one finds a method inside a class's chunk, a module-qualified
name, an import's target). `graph/near` runs after the other arms: their fusion's first
hits are looked up in the graph and the chunks of what they call and what calls them
follow, so the code an answer depends on can enter the pack. Both obey the filters (the
mask over chunk rows), like every arm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from memserver.core.protocols import CodeGraph, Snapshot
from memserver.retrieve.fuse import rrf

__all__ = ["defining_arm", "near_arm"]

Ranked = list[tuple[str, float]]


def _allowed(snap: Snapshot, hits: Ranked, mask: np.ndarray | None) -> Ranked:
    rows = snap.rows_of([cid for cid, _ in hits])
    seen: set[str] = set()
    out = []
    for (cid, score), row in zip(hits, rows, strict=True):
        if row is None or (mask is not None and not mask[row]) or cid in seen:
            continue
        seen.add(cid)
        out.append((cid, score))
    return out


def defining_arm(graph: CodeGraph, snap: Snapshot, identifiers: Sequence[str],
                 mask: np.ndarray | None, depth: int) -> Ranked:  # fmt: skip
    if not identifiers:
        return []
    return _allowed(snap, graph.defining(identifiers, 4 * depth), mask)[:depth]


def near_arm(
    graph: CodeGraph, snap: Snapshot, ranked: Mapping[str, Ranked], weights: Mapping[str, float],
    mask: np.ndarray | None, top: int, depth: int,
) -> Ranked:  # fmt: skip
    """Neighbours of the first `top` chunks of the other arms' fusion (not themselves)."""
    first = [f.id for f in rrf(dict(ranked), dict(weights))[:top]]
    if not first:
        return []
    found = [(cid, s) for cid, s in graph.around(first, 4 * depth) if cid not in first]
    return _allowed(snap, found, mask)[:depth]
