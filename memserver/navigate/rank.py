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
from collections.abc import Iterable

import numpy as np

from memserver.core.graph import Definition
from memserver.navigate.view import FileEntry, GraphIndex

__all__ = ["Ranked", "rank"]

Ranked = tuple[dict[str, float], dict[Definition, float]]  # file ranks, definition ranks
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
    """(file → rank, definition → rank), cached on the reading."""
    held = g.cache.get("rank")
    if held is None:
        held = g.cache["rank"] = _rank(g)
    return held


def _rank(g: GraphIndex) -> Ranked:
    defined: dict[str, dict[str, list[Definition]]] = {}  # name -> path -> definitions
    for f in g.files.values():
        for d in f.tags.definitions:
            if d.kind not in _SKIPPED:
                defined.setdefault(d.name, {}).setdefault(d.path, []).append(d)
    edges: dict[str, dict[str, float]] = {}
    flows: list[tuple[str, str, str, float]] = []  # (from, to, name, weight)
    for path, entry in g.files.items():
        modules = {i.bound.split(".", 1)[0] for i in entry.tags.imports} | _OWN
        uses: dict[str, float] = {}
        for name, kind, qualifier in _uses(entry):
            if kind == "import":
                continue
            # obj.name with obj of unknown type: any class's `name`, so it counts little
            weight = 1.0 if not qualifier or qualifier.partition(".")[0] in modules else _UNTYPED
            uses[name] = uses.get(name, 0.0) + weight
        for name, count in uses.items():
            where = defined.get(name)
            if not where or len(where) > _SPREAD:
                continue
            weight = _weight(name, len(where)) * math.sqrt(count) / len(where)
            out = edges.setdefault(path, {})
            for target in where:  # a use in the defining file itself counts half
                share = weight * (_OWN_FILE if target == path else 1.0)
                out[target] = out.get(target, 0.0) + share
                flows.append((path, target, name, share))
    files = list(g.files)
    ranks = _pagerank(files, edges)
    totals = {src: sum(out.values()) for src, out in edges.items()}
    by_id: dict[int, float] = {}  # a definition's hash reads every field: hashed once each
    held: dict[int, Definition] = {}
    for src, dst, name, weight in flows:
        defs = defined[name][dst]
        share = ranks[src] * weight / totals[src] / len(defs)
        for d in defs:
            key = id(d)
            by_id[key] = by_id.get(key, 0.0) + share
            held[key] = d
    scores: dict[Definition, float] = {}
    for key, score in by_id.items():  # the map is of the code, its tests come after it
        d = held[key]
        if _TESTS.intersection(d.path.split("/")[:-1]):
            score *= 0.1
        scores[d] = scores.get(d, 0.0) + score
    return ranks, scores


def _uses(entry: FileEntry) -> Iterable[tuple[str, str, str]]:
    """(name, kind, qualifier) of a file's references, read by column when they are."""
    cols = entry.stored.columns
    if cols is not None:
        return zip(cols.name, cols.kind, cols.qualifier, strict=True)
    return ((at.ref.name, at.ref.kind, at.ref.qualifier) for at in entry.refs())


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
