"""Candidate arms: each route × {dense, BM25} × {chunks, memories}, plus exact names.

Every arm returns chunk ids ranked best first; memory arms resolve their hits
to the chunks the memories cite before they are returned. Filters are a mask
over chunk rows applied inside every arm, so nothing outside them is ever a
candidate (fail closed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memserver.core.errors import ConfigError
from memserver.retrieve.plan import QueryPlan, Route
from memserver.retrieve.view import Snapshot
from memserver.store.bm25 import Bm25Index

Ranked = list[tuple[str, float]]


@dataclass(frozen=True, slots=True)
class Filters:
    paths: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    scope: tuple[tuple[str, str], ...] = ()  # (user|session|agent, value)

    def __bool__(self) -> bool:
        return bool(self.paths or self.languages or self.kinds or self.scope)


def _in_scope(item: tuple[tuple[str, str], ...], wanted: tuple[tuple[str, str], ...]) -> bool:
    """Fail closed: an item scoped to another user/session/agent is never visible; an
    item without that key (project-wide notes, code) is."""
    have = dict(item)
    return all(have.get(k, v) == v for k, v in wanted)


def memory_mask(snap: Snapshot, filters: Filters) -> np.ndarray | None:
    """Memory rows the scope allows (None: all of them)."""
    if not filters.scope:
        return None
    return np.array([_in_scope(s, filters.scope) for s in snap.memory_scope], dtype=bool)


def filter_mask(snap: Snapshot, filters: Filters) -> np.ndarray | None:
    """Chunk rows the filters allow (None: all of them)."""
    if not filters:
        return None
    mask = np.ones(len(snap.chunks), dtype=bool)
    if filters.paths:
        import pathspec

        try:
            spec = pathspec.GitIgnoreSpec.from_lines(filters.paths)
        except Exception as exc:
            raise ConfigError(
                f"invalid path filter {list(filters.paths)}: {exc}",
                hint="use gitignore-style globs relative to the root, "
                "e.g. 'src/**/*.py' or 'docs/'",
            ) from exc
        mask &= np.array([spec.match_file(c.path) for c in snap.chunks], dtype=bool)
    if filters.languages:
        wanted = {x.lower() for x in filters.languages}
        mask &= np.array([c.language in wanted for c in snap.chunks], dtype=bool)
    if filters.kinds:
        wanted = {x.lower() for x in filters.kinds}
        mask &= np.array([c.kind in wanted for c in snap.chunks], dtype=bool)
    if filters.scope:
        mask &= np.array([_in_scope(c.scope, filters.scope) for c in snap.chunks], dtype=bool)
    return mask


def _top(scores: np.ndarray, allowed: np.ndarray, k: int) -> list[int]:
    scores = np.where(allowed, scores, -np.inf)
    k = min(k, int(allowed.sum()))
    if k <= 0:
        return []
    idx = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in idx[np.argsort(-scores[idx], kind="stable")]]


def dense_chunks(snap: Snapshot, qv: np.ndarray, mask: np.ndarray | None, k: int) -> Ranked:
    if snap.vectors is None:
        return []
    allowed = snap.embedded if mask is None else snap.embedded & mask
    scores = snap.vectors @ qv
    return [(snap.chunks[i].id, float(scores[i])) for i in _top(scores, allowed, k)]


def _resolve(snap: Snapshot, memory_rows: Sequence[int], scores: Sequence[float],
             mask: np.ndarray | None, via: dict[str, set[str]],
             mmask: np.ndarray | None) -> Ranked:  # fmt: skip
    """Memory hits → the chunks they cite (best memory first); `via` records which memory."""
    out: dict[str, float] = {}
    for m, s in zip(memory_rows, scores, strict=True):
        if mmask is not None and not mmask[m]:
            continue
        for row in snap.memory_source[m]:
            if mask is None or mask[row]:
                cid = snap.chunks[row].id
                out.setdefault(cid, s)
                via.setdefault(cid, set()).add(snap.memory_ids[m])
    return list(out.items())


def dense_memories(
    snap: Snapshot, qv: np.ndarray, mask: np.ndarray | None, k: int,
    via: dict[str, set[str]], mmask: np.ndarray | None = None,
) -> Ranked:  # fmt: skip
    if snap.memory_vectors is None or not snap.memory_ids:
        return []
    scores = snap.memory_vectors @ qv
    allowed = np.ones(len(snap.memory_ids), dtype=bool) if mmask is None else mmask
    rows = _top(scores, allowed, k * 3)
    return _resolve(snap, rows, [float(scores[r]) for r in rows], mask, via, mmask)[:k]


def bm25_arm(bm25: Bm25Index, snap: Snapshot, route: Route, view: str,
             mask: np.ndarray | None, k: int, via: dict[str, set[str]],
             mmask: np.ndarray | None = None) -> Ranked:  # fmt: skip
    hits = bm25.search(route.terms, k * 5 if mask is not None else k, view=view)
    if view == "memory":
        rows = [snap.memory_row[h] for h, _ in hits if h in snap.memory_row]
        scores = [s for h, s in hits if h in snap.memory_row]
        return _resolve(snap, rows, scores, mask, via, mmask)[:k]
    out = [(cid, s) for cid, s in hits if cid in snap.row]
    if mask is not None:
        out = [(cid, s) for cid, s in out if mask[snap.row[cid]]]
    return out[:k]


def exact_names(snap: Snapshot, plan: QueryPlan, mask: np.ndarray | None) -> Ranked:
    """Chunks whose symbol or path the query names (`Client.send`, `utils.py`)."""
    rows: dict[int, float] = {}
    for ident in plan.identifiers:
        key = ident.lower()
        parts = key.split(".")
        # `Client.send`: the method itself, else its class (a class under the size cap is one
        # chunk), else any `send`
        for n in range(len(parts), 0, -1):
            for i in snap.by_symbol.get(".".join(parts[:n]), ()):
                rows.setdefault(i, 1.0 + n / len(parts))
        last = parts[-1]
        if len(parts) > 1 and last not in ("py", "js", "ts", "go", "rs", "md"):
            for i in snap.by_symbol.get(last, ()):
                rows.setdefault(i, 1.0)
        for i in snap.by_path.get(key, ()) or snap.by_path.get(key.rsplit("/", 1)[-1], ()):
            rows.setdefault(i, 0.5)
    ranked = sorted(rows.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(snap.chunks[i].id, s) for i, s in ranked if mask is None or mask[i]][:50]
