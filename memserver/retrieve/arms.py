"""Candidate arms: each route × {dense, BM25} × {chunks, memories}, the date arms, exact names.

`plan_arms` decides which arms a query gets and with what weight (pure: a plan in, specs
out); `run_arms` runs them over a `Snapshot` and the keyword index. Every arm returns chunk
ids ranked best first; memory arms resolve their hits to the chunks the memories cite.
Filters are a mask over chunk rows applied inside every arm, so nothing outside them is
ever a candidate (fail closed).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Literal

import numpy as np

from memserver.config import RecallSettings
from memserver.core.protocols import CodeGraph, KeywordIndex, Snapshot
from memserver.core.requests import Filters, visible
from memserver.retrieve import graph as graph_arms
from memserver.retrieve.plan import QueryPlan
from memserver.text.terms import QUERY_STOP_WORDS

__all__ = [
    "ArmSpec", "Masks", "Ranked", "Via", "filter_mask", "memory_mask", "plan_arms",
    "resolve_memories", "run_arms",
]  # fmt: skip

Ranked = list[tuple[str, float]]
Via = dict[str, set[str]]  # chunk id → the memories an arm reached it through
Masks = tuple[np.ndarray | None, np.ndarray | None]  # chunk rows, memory rows allowed
ArmKind = Literal["bm25", "dense", "exact", "graph"]
_SLACK = timedelta(days=1)  # a named day also takes the days either side (time zones)


@dataclass(frozen=True, slots=True)
class ArmSpec:
    """One candidate arm of a query."""

    name: str  # "original/bm25", "canonical/dense-memory", "date/dense", "exact"
    kind: ArmKind
    view: Literal["chunk", "memory"]
    route: int  # index into the plan's routes (the exact arm: -1)
    weight: float  # its fusion weight
    depth: int  # candidates it returns
    terms: tuple[str, ...] = ()  # what a keyword arm searches
    dated: bool = False  # only notes and turns of the days the query names
    top: int = 0  # graph/near: how many of the other arms' fused hits it looks around


def memory_mask(snap: Snapshot, filters: Filters) -> np.ndarray | None:
    """Memory rows the caller may see (None: all of them, when none is scoped)."""
    if not snap.scoped(memories=True):
        return None
    return snap.memory_mask_by(lambda s: visible(s, filters.scope))


def filter_mask(snap: Snapshot, filters: Filters) -> np.ndarray | None:
    """Chunk rows the filters allow and the caller's scope may see (None: all of them).
    The scope is a boundary, not a filter: a caller without one sees project-wide rows
    only, whenever any row is scoped."""
    scoped = snap.scoped(memories=False)
    if not (filters.paths or filters.languages or filters.kinds or scoped):
        return None
    mask = np.ones(snap.size(), dtype=bool)
    if filters.paths:
        from indexers.ignore import path_matcher  # pathspec: 1 MB a server may never need

        mask &= snap.mask_by("path", path_matcher(filters.paths, "path filter"))
    if filters.languages:
        langs = {x.lower() for x in filters.languages}
        mask &= snap.mask_by("language", lambda v: v in langs)
    if filters.kinds:
        kinds = {x.lower() for x in filters.kinds}
        mask &= snap.mask_by("kind", lambda v: v in kinds)
    if scoped:
        mask &= snap.mask_by("scope", lambda s: visible(s, filters.scope))
    return mask


def time_mask(snap: Snapshot, spans: Sequence[tuple[datetime, datetime]],
              mask: np.ndarray | None) -> np.ndarray | None:  # fmt: skip
    """Rows (within `mask`) of notes and turns from a day or month the query names, a day
    either side for time zones; None when there are none."""
    if not spans:
        return None
    keep = snap.time_mask([(a - _SLACK, b + _SLACK) for a, b in spans])
    if keep is None:
        return None
    if mask is not None:
        keep = keep & mask
    return keep if keep.any() else None


def plan_arms(
    plan: QueryPlan, s: RecallSettings, *, dense_count: int, include_memories: bool,
    large: bool, graph: bool = False,
) -> list[ArmSpec]:  # fmt: skip
    """The arms of a query, in fusion order. Memories are searched by keyword for the
    original and canonical wording only. A dense arm stands for its route and, the last one,
    for every route not embedded: the model maps rewordings close together, so one call
    covers them, and the arm carries their weight, as each route has its keyword arm
    (weighted as one route, the dense arm was outvoted: DEV LoCoMo R@10 0.745, summed 0.793;
    code MRR 0.653 -> 0.663). Past `ann_min_rows` (`large`) stop words mostly slow a keyword
    search down (their postings are the longest): the wording is searched without them
    there (at 348k chunks recall p95 228 -> 197 ms); below, they stay (on the DEV LoCoMo set
    dropping them cost 0.8 points of R@10)."""
    depth = plan.depth
    stands_for = [route.weight for route in plan.routes]
    if dense_count:
        stands_for[dense_count - 1] += sum(stands_for[dense_count:])
    memory = s.memory_weight
    specs: list[ArmSpec] = []
    for i, route in enumerate(plan.routes):
        terms = route.terms
        if large:
            terms = tuple(t for t in terms if t not in QUERY_STOP_WORDS) or terms
        name = route.name
        specs.append(ArmSpec(f"{name}/bm25", "bm25", "chunk", i, route.weight, depth, terms))
        if include_memories and i < 2:
            specs.append(ArmSpec(f"{name}/bm25-memory", "bm25", "memory", i,
                                 route.weight * memory, depth, terms))  # fmt: skip
        if i < dense_count:
            specs.append(ArmSpec(f"{name}/dense", "dense", "chunk", i, stands_for[i], depth))
            if include_memories:
                specs.append(ArmSpec(f"{name}/dense-memory", "dense", "memory", i,
                                     stands_for[i] * memory, depth))  # fmt: skip
    if plan.dates:  # the original route again, over what was said on those days
        first = plan.routes[0]
        specs.append(ArmSpec("date/bm25", "bm25", "chunk", 0, s.date_weight, depth, first.terms,
                             dated=True))  # fmt: skip
        if dense_count:
            specs.append(ArmSpec("date/dense", "dense", "chunk", 0, s.date_weight, depth,
                                 dated=True))  # fmt: skip
    if plan.identifiers:
        specs.append(ArmSpec("exact", "exact", "chunk", -1, s.exact_weight, 50))
    if graph:  # the code graph's arms (retrieve/graph.py), when there is a graph
        specs += _graph_specs(plan, s)
    return specs


def _graph_specs(plan: QueryPlan, s: RecallSettings) -> list[ArmSpec]:
    specs = []
    if s.graph_weight > 0 and plan.identifiers:
        specs.append(ArmSpec("graph/defs", "graph", "chunk", -1, s.graph_weight, 20))
    if s.graph_near_weight > 0 and s.graph_near_top > 0:
        specs.append(ArmSpec("graph/near", "graph", "chunk", -1, s.graph_near_weight,
                             s.graph_near_depth, top=s.graph_near_top))  # fmt: skip
    return specs


@cache
def keyword_pool() -> ThreadPoolExecutor:
    """The threads keyword searches run on side by side (recall's arms, a long query's)."""
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="memserver-bm25")


def run_arms(
    specs: Sequence[ArmSpec], snap: Snapshot, keyword: KeywordIndex, plan: QueryPlan,
    qvs: Sequence[np.ndarray], masks: Masks, graph: CodeGraph | None = None,
) -> tuple[dict[str, Ranked], dict[str, float], Via]:  # fmt: skip
    """Each arm's ranked chunk ids, the arms' weights, and which memories led where.

    The lean view's dense searches are started side by side first, then the keyword
    searches run side by side too (tantivy lets go of the GIL: at 348k chunks a query's six
    took 85 ms one after another, 45 ms on four threads)."""
    mask, mmask = masks
    memories = any(sp.kind == "dense" and sp.view == "memory" for sp in specs)
    for qv in qvs:
        snap.prefetch_dense(qv, plan.depth, mask, 3 * plan.depth if memories else None, mmask)
    started: dict[tuple[tuple[str, ...], str], Future[tuple[Ranked, Via]]] = {}
    for sp in specs:
        if sp.kind == "bm25" and not sp.dated and (sp.terms, sp.view) not in started:
            started[sp.terms, sp.view] = keyword_pool().submit(
                _bm25, keyword, snap, sp.terms, sp.view, mask, sp.depth, mmask
            )
    dated = time_mask(snap, plan.dates, mask) if plan.dates else None
    ranked: dict[str, Ranked] = {}
    weights: dict[str, float] = {}
    via: Via = {}
    for sp in specs:
        if sp.dated and dated is None:
            continue
        if sp.kind == "bm25" and not sp.dated:
            hits, found_via = started[sp.terms, sp.view].result()
            for cid, mids in found_via.items():
                via.setdefault(cid, set()).update(mids)
        elif sp.kind == "bm25":
            hits = bm25_arm(keyword, snap, sp.terms, "chunk", dated, 4 * sp.depth, via)
            hits = hits[: sp.depth]
        elif sp.kind == "dense" and sp.view == "chunk":
            hits = dense_chunks(snap, qvs[sp.route], dated if sp.dated else mask, sp.depth)
        elif sp.kind == "dense":
            hits = dense_memories(snap, qvs[sp.route], mask, sp.depth, via, mmask)
        elif sp.kind == "graph":
            continue  # after the others: graph/near looks around their fused hits
        else:
            hits = exact_names(snap, plan, mask)
            if not hits:
                continue
        ranked[sp.name] = list(hits)
        weights[sp.name] = sp.weight
    for sp in specs:
        if sp.kind == "graph" and graph is not None:
            found = _graph(sp, graph, snap, plan, ranked, weights, mask)
            if found:
                ranked[sp.name], weights[sp.name] = found, sp.weight
    return ranked, weights, via


def _graph(
    sp: ArmSpec, graph: CodeGraph, snap: Snapshot, plan: QueryPlan, ranked: dict[str, Ranked],
    weights: dict[str, float], mask: np.ndarray | None,
) -> Ranked:  # fmt: skip
    if sp.name == "graph/defs":
        return graph_arms.defining_arm(graph, snap, plan.identifiers, mask, sp.depth)
    return graph_arms.near_arm(graph, snap, ranked, weights, mask, sp.top, sp.depth)


def _bm25(
    keyword: KeywordIndex, snap: Snapshot, terms: tuple[str, ...], view: str,
    mask: np.ndarray | None, depth: int, mmask: np.ndarray | None,
) -> tuple[Ranked, Via]:  # fmt: skip
    """One keyword arm, with the memories it went through (its own map: it runs beside the
    others)."""
    via: Via = {}
    return bm25_arm(keyword, snap, terms, view, mask, depth, via, mmask), via


def dense_chunks(snap: Snapshot, qv: np.ndarray, mask: np.ndarray | None, k: int) -> Ranked:
    return [(snap.id_at(r), s) for r, s in snap.dense(qv, k, mask)]


def resolve_memories(snap: Snapshot, memory_rows: Sequence[tuple[int, float]],
             mask: np.ndarray | None, via: Via, mmask: np.ndarray | None) -> Ranked:  # fmt: skip
    """Memory hits → the chunks they cite (best memory first); `via` records which memory."""
    out: dict[str, float] = {}
    for m, s in memory_rows:
        if mmask is not None and not mmask[m]:
            continue
        for row in snap.memory_sources(m):
            if mask is None or mask[row]:
                cid = snap.id_at(row)
                out.setdefault(cid, s)
                via.setdefault(cid, set()).add(snap.memory_id_at(m))
    return list(out.items())


def dense_memories(
    snap: Snapshot, qv: np.ndarray, mask: np.ndarray | None, k: int, via: Via,
    mmask: np.ndarray | None = None,
) -> Ranked:  # fmt: skip
    return resolve_memories(snap, snap.dense_memories(qv, 3 * k, mmask), mask, via, mmask)[:k]


def bm25_arm(keyword: KeywordIndex, snap: Snapshot, terms: Sequence[str], view: str,
             mask: np.ndarray | None, k: int, via: Via,
             mmask: np.ndarray | None = None) -> Ranked:  # fmt: skip
    hits = keyword.search(terms, k * 5 if mask is not None else k, view=view)
    found = snap.rows_of([h for h, _ in hits], memories=view == "memory")
    if view == "memory":
        rows = [(r, s) for (_, s), r in zip(hits, found, strict=True) if r is not None]
        return resolve_memories(snap, rows, mask, via, mmask)[:k]
    out = [(cid, s) for (cid, s), r in zip(hits, found, strict=True)
           if r is not None and (mask is None or mask[r])]  # fmt: skip
    return out[:k]


_EXTENSIONS = ("py", "js", "ts", "go", "rs", "md")


def exact_names(snap: Snapshot, plan: QueryPlan, mask: np.ndarray | None) -> Ranked:
    """Chunks whose symbol or path the query names (`Client.send`, `utils.py`)."""
    rows: dict[int, float] = {}
    for ident in plan.identifiers:
        key = ident.lower()
        parts = key.split(".")
        # `Client.send`: the method itself, else its class (a class under the size cap is one
        # chunk), else any `send`
        for n in range(len(parts), 0, -1):
            for i in snap.rows_named(".".join(parts[:n])):
                rows.setdefault(i, 1.0 + n / len(parts))
        last = parts[-1]
        if len(parts) > 1 and last not in _EXTENSIONS:
            for i in snap.rows_named(last):
                rows.setdefault(i, 1.0)
        for i in snap.rows_at_path(key) or snap.rows_at_path(key.rsplit("/", 1)[-1]):
            rows.setdefault(i, 0.5)
    ranked = sorted(rows.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(snap.id_at(i), s) for i, s in ranked if mask is None or mask[i]][:50]
