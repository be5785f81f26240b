"""Candidate arms: each route × {dense, BM25} × {chunks, memories}, plus exact names.

Every arm returns chunk ids ranked best first; memory arms resolve their hits
to the chunks the memories cite before they are returned. Filters are a mask
over chunk rows applied inside every arm, so nothing outside them is ever a
candidate (fail closed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

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
    return snap.memory_mask_by(lambda s: _in_scope(s, filters.scope))


def filter_mask(snap: Snapshot, filters: Filters) -> np.ndarray | None:
    """Chunk rows the filters allow (None: all of them)."""
    if not filters:
        return None
    mask = np.ones(snap.size(), dtype=bool)
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
        mask &= snap.mask_by("path", spec.match_file)
    if filters.languages:
        langs = {x.lower() for x in filters.languages}
        mask &= snap.mask_by("language", lambda v: v in langs)
    if filters.kinds:
        kinds = {x.lower() for x in filters.kinds}
        mask &= snap.mask_by("kind", lambda v: v in kinds)
    if filters.scope:
        mask &= snap.mask_by("scope", lambda s: _in_scope(s, filters.scope))
    return mask


_SLACK = timedelta(days=1)  # a named day also takes the days either side (time zones)


def time_mask(snap: Snapshot, spans: Sequence[tuple[datetime, datetime]],
              mask: np.ndarray | None) -> np.ndarray | None:  # fmt: skip
    """Rows (within `mask`) of notes and turns from a day or month the query names, a day
    either side for time zones; None when there are none (or the view holds no rows:
    the lean view of a large code index)."""
    if not spans or not snap.chunks:
        return None
    wide = [(a - _SLACK, b + _SLACK) for a, b in spans]
    keep = np.array([c.event_time is not None and any(a <= c.event_time < b for a, b in wide)
                     for c in snap.chunks], dtype=bool)  # fmt: skip
    if mask is not None:
        keep &= mask
    return keep if keep.any() else None


def _top(scores: np.ndarray, allowed: np.ndarray, k: int) -> list[int]:
    """The k best allowed rows with a positive score: a vector at or below zero shares
    nothing with the query, and the order of such ties is arbitrary."""
    allowed = allowed & (scores > 0)
    scores = np.where(allowed, scores, -np.inf)
    k = min(k, int(allowed.sum()))
    if k <= 0:
        return []
    idx = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in idx[np.argsort(-scores[idx], kind="stable")]]


def _ann_k(k: int, allowed: np.ndarray | None) -> int:
    return k if allowed is None else k * 10  # a narrow filter may leave fewer than k


def prefetch_dense(snap: Snapshot, qv: np.ndarray, masks: tuple[np.ndarray | None, ...], k: int,
                   memories: bool) -> None:  # fmt: skip
    """Start the lean view's chunk and memory searches side by side (no-op in memory)."""
    if snap.ann is not None:
        requests = [(_ann_k(k, masks[0]), False)]
        if memories:
            requests.append((_ann_k(3 * k, masks[1]), True))
        snap.ann.prefetch(qv, requests)


def _ann_rows(snap: Snapshot, qv: np.ndarray, allowed: np.ndarray | None, k: int,
              memories: bool) -> tuple[list[int], list[float]]:  # fmt: skip
    """The lean view's dense search: LanceDB's ANN, then the mask (asking for more when
    the mask can drop hits)."""
    hits = snap.ann.search(qv, _ann_k(k, allowed), memories)
    rows, scores = [], []
    for (_, score), row in zip(hits, snap.rows_of([h for h, _ in hits], memories), strict=True):
        if row is not None and score > 0 and (allowed is None or allowed[row]):
            rows.append(row)
            scores.append(score)
    return rows[:k], scores[:k]


def dense_chunks(snap: Snapshot, qv: np.ndarray, mask: np.ndarray | None, k: int) -> Ranked:
    if snap.ann is not None:
        rows, scores = _ann_rows(snap, qv, mask, k, memories=False)
        return [(snap.id_at(r), s) for r, s in zip(rows, scores, strict=True)]
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
                cid = snap.id_at(row)
                out.setdefault(cid, s)
                via.setdefault(cid, set()).add(snap.memory_ids[m])
    return list(out.items())


def dense_memories(
    snap: Snapshot, qv: np.ndarray, mask: np.ndarray | None, k: int,
    via: dict[str, set[str]], mmask: np.ndarray | None = None,
) -> Ranked:  # fmt: skip
    if snap.ann is not None:
        mrows, mscores = _ann_rows(snap, qv, mmask, k * 3, memories=True)
        return _resolve(snap, mrows, mscores, mask, via, mmask)[:k]
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
    found = snap.rows_of([h for h, _ in hits], memories=view == "memory")
    if view == "memory":
        rows = [r for r in found if r is not None]
        scores = [s for (_, s), r in zip(hits, found, strict=True) if r is not None]
        return _resolve(snap, rows, scores, mask, via, mmask)[:k]
    out = [(cid, s) for (cid, s), r in zip(hits, found, strict=True)
           if r is not None and (mask is None or mask[r])]  # fmt: skip
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
    return [(snap.id_at(i), s) for i, s in ranked if mask is None or mask[i]][:50]
