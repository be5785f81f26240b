"""The repository map's order: PageRank over the files' reference graph, as Aider's repo
map ranks (a file that uses a name another file defines links to it), then each
definition's share of the rank that flows into its file through its name.

Names are matched as written, not resolved: the map is a survey, and matching by name
over every file costs one pass where resolving every reference costs a resolution each.
A name defined in many files says little about which one is meant and weighs less, as do
private names; a file's many uses of one name count as the square root of their number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import compress

import numpy as np

from memserver.navigate.view import FileEntry, GraphIndex

__all__ = ["Ranked", "rank"]

# file → rank; (path, place among its file's definitions) → the definition's rank
Ranked = tuple[dict[str, float], dict[tuple[str, int], float]]
_DAMPING = 0.85
_ROUNDS = 30
_SPREAD = 10  # a name defined in more files than this links nowhere
_SKIPPED = frozenset({"field", "variable"})  # members and locals: their class or file ranks
_OWN = frozenset({"self", "cls", "this", "super()"})
_UNTYPED = 0.2
_OWN_FILE = 0.5
_TESTS = frozenset({"tests", "test", "testing", "examples", "docs"})


def _weight(name: str, files: int) -> float:
    weight = 1.0
    if name.startswith("_"):
        weight *= 0.1
    if files > 3:
        weight *= 0.3
    if len(name) >= 8 and ("_" in name or any(c.isupper() for c in name[1:])):
        weight *= 3.0  # a specific identifier: its use is telling
    return weight


def rank(g: GraphIndex) -> Ranked:
    """(file → rank, (path, place) → definition rank), cached on the reading."""
    held = g.cache.get("rank")
    if held is None:
        held = g.cache["rank"] = _rank(g)
    return held


def _rank(g: GraphIndex) -> Ranked:
    defined: dict[str, dict[str, list[int]]] = {}  # name -> path -> places of definitions
    for path, f in g.files.items():
        for place, d in enumerate(f.tags.definitions):
            if d.kind not in _SKIPPED:
                defined.setdefault(d.name, {}).setdefault(path, []).append(place)
    # only uses of these names link: a file reads the rest (most of them) at C speed
    linked = {name for name, where in defined.items() if len(where) <= _SPREAD}.__contains__
    weights: dict[str, float] = {}  # name -> what a use of it weighs, before counting uses
    edges: dict[str, dict[str, float]] = {}
    flows: list[tuple[str, str, str, float]] = []  # (from, to, name, weight)
    for path, entry in g.files.items():
        names, kinds, qualifiers = _uses(entry)
        modules: frozenset[str] | set[str] | None = None
        uses: dict[str, float] = {}
        rows = zip(names, kinds, qualifiers, strict=True)
        for name, kind, qualifier in compress(rows, map(linked, names)):
            if kind == "import":
                continue
            weight = 1.0
            if qualifier:  # obj.name, obj of an unknown type: any class's `name`, counts little
                if modules is None:
                    modules = {i.bound.split(".", 1)[0] for i in entry.tags.imports} | _OWN
                if qualifier.partition(".")[0] not in modules:
                    weight = _UNTYPED
            uses[name] = uses.get(name, 0.0) + weight
        for name, count in uses.items():
            where = defined[name]
            each = weights.get(name)
            if each is None:
                each = weights[name] = _weight(name, len(where)) / len(where)
            weight = each * math.sqrt(count)
            out = edges.setdefault(path, {})
            for target in where:  # a use in the defining file itself counts half
                share = weight * (_OWN_FILE if target == path else 1.0)
                out[target] = out.get(target, 0.0) + share
                flows.append((path, target, name, share))
    ranks = _pagerank(list(g.files), edges)
    totals = {src: sum(out.values()) for src, out in edges.items()}
    scores: dict[tuple[str, int], float] = {}
    for src, dst, name, weight in flows:
        places = defined[name][dst]
        share = ranks[src] * weight / totals[src] / len(places)
        for place in places:
            key = (dst, place)
            scores[key] = scores.get(key, 0.0) + share
    tests = {p for p, _ in scores if _TESTS.intersection(p.split("/")[:-1])}
    if tests:  # the map is of the code, its tests come after it
        scores = {k: s * 0.1 if k[0] in tests else s for k, s in scores.items()}
    return ranks, scores


def _uses(entry: FileEntry) -> tuple[Sequence[str], Sequence[str], Sequence[str]]:
    """(names, kinds, qualifiers) of a file's references, read by column when they are."""
    cols = entry.stored.columns
    if cols is not None:
        return cols.name, cols.kind, cols.qualifier
    refs = [at.ref for at in entry.refs()]
    return [r.name for r in refs], [r.kind for r in refs], [r.qualifier for r in refs]


def _pagerank(nodes: list[str], edges: dict[str, dict[str, float]]) -> dict[str, float]:
    """PageRank over weighted edges, a round a few array operations (mongoose's 301 files
    and 4k edges: 30 rounds of Python loops were half of the map's first answer)."""
    if not nodes:
        return {}
    n = len(nodes)
    index = {v: i for i, v in enumerate(nodes)}
    src, dst, share = [], [], []
    for source, out in edges.items():
        total = sum(out.values())
        for target, weight in out.items():
            src.append(index[source])
            dst.append(index[target])
            share.append(weight / total)
    sources, targets = np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)
    shares = np.array(share, dtype=np.float64)
    dangling = np.ones(n, dtype=bool)  # no edge out: their rank spreads over every node
    dangling[sources] = False
    rank = np.full(n, 1.0 / n)
    for _ in range(_ROUNDS):
        following = np.bincount(targets, weights=_DAMPING * rank[sources] * shares, minlength=n)
        rank = following + (1.0 - _DAMPING) / n + _DAMPING * float(rank[dangling].sum()) / n
    return dict(zip(nodes, rank.tolist(), strict=True))
