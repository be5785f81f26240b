"""The repository map's order: PageRank over the files' reference graph, as Aider's repo
map ranks (a file that uses a name another file defines links to it), then each
definition's share of the rank that flows into its file through its name.

Names are matched as written, not resolved: the map is a survey, and matching by name
over every file costs one pass where resolving every reference costs a resolution each.
A name defined in many files says little about which one is meant and weighs less, as do
private names; a file's many uses of one name count as the square root of their number.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memserver.core.arrays import ranges
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
    if len(name) >= 8 and ("_" in name or any(map(str.isupper, name[1:]))):
        weight *= 3.0  # a specific identifier: its use is telling
    return weight


def rank(g: GraphIndex) -> Ranked:
    """(file → rank, (path, place) → definition rank), cached on the reading."""
    held = g.cache.get("rank")
    if held is None:
        held = g.cache["rank"] = _rank(g)
    return held


class _Defined:
    """Where each name is defined, by file, as arrays. Definitions are numbered through the
    files in turn (`first`: each file's first number). Of the names defined in at most
    `_SPREAD` files (those that link; `names`, numbered in that order): name n's files are
    `files[at[n]:at[n + 1]]`, and its definitions in the k-th of them are the numbers
    `defs[starts[k]:starts[k + 1]]`. `number(values)`: each name's number, -1 if none."""

    def __init__(self, entries: Sequence[FileEntry]) -> None:
        first: list[int] = []
        names: list[str] = []
        numbers: list[int] = []
        total = 0
        for entry in entries:
            defs = entry.tags.definitions
            first.append(total)
            kept = [i for i, d in enumerate(defs) if d.kind not in _SKIPPED]
            names += [defs[i].name for i in kept]
            numbers += [total + i for i in kept]
            total += len(defs)
        self.count = total
        self.first = np.array(first, np.int64)
        self._code: dict[str, int] = {}
        code = self._code.setdefault
        ids = np.fromiter((code(n, len(self._code)) for n in names), np.int64, len(names))
        number = np.array(numbers, np.int64)
        file = np.searchsorted(self.first, number, side="right") - 1
        order = np.lexsort((number, file, ids))  # by name, then file, then place
        ids, file, number = ids[order], file[order], number[order]
        fresh = np.ones(len(ids), bool)  # where a (name, file) run starts
        fresh[1:] = (ids[1:] != ids[:-1]) | (file[1:] != file[:-1])
        run = np.flatnonzero(fresh)
        length = np.diff(np.append(run, len(ids)))
        spread = np.bincount(ids[run], minlength=len(self._code))  # files defining each name
        linked = (spread > 0) & (spread <= _SPREAD)
        self._number = np.full(len(self._code) + 1, -1, np.int64)  # code -> name number
        chosen = np.flatnonzero(linked)
        self._number[chosen] = np.arange(len(chosen))
        every = list(self._code)
        self.names = [every[i] for i in chosen.tolist()]
        linking = linked[ids[run]]  # the runs of names that link
        self.at = np.concatenate([[0], np.cumsum(spread[chosen])]).astype(np.int64)
        self.files = file[run[linking]]
        self.starts = np.concatenate([[0], np.cumsum(length[linking])]).astype(np.int64)
        self.defs = number[ranges(run[linking], length[linking])]

    def number(self, values: Sequence[str]) -> np.ndarray:
        missing = len(self._code)
        return self._number[[self._code.get(v, missing) for v in values]]


def _rank(g: GraphIndex) -> Ranked:
    paths = list(g.files)
    entries = list(g.files.values())
    defined = _Defined(entries)
    linked = max(1, len(defined.names))
    src, name, weight = _uses(entries, defined)
    # a file's uses of a name, summed: a link to each file defining the name
    pair, back = np.unique(src * linked + name, return_inverse=True)
    uses = np.bincount(back, weights=weight)
    src, name = pair // linked, pair % linked
    fan = defined.at[name + 1] - defined.at[name]  # how many files define each pair's name
    each = np.zeros(linked)
    for i in np.flatnonzero(np.bincount(name)).tolist():
        files = int(defined.at[i + 1] - defined.at[i])
        each[i] = _weight(defined.names[i], files) / files
    link = each[name] * np.sqrt(uses)
    # one flow per (pair, file defining its name); a use in the defining file counts half
    flow = np.repeat(np.arange(len(name)), fan)
    at = ranges(defined.at[name], fan)  # each flow's (name, file) entry in `defined`
    flow_src, flow_dst = src[flow], defined.files[at]
    share = link[flow] * np.where(flow_dst == flow_src, _OWN_FILE, 1.0)
    n = len(paths)
    totals = np.bincount(flow_src, weights=share, minlength=n)
    edge, back = np.unique(flow_src * n + flow_dst, return_inverse=True)  # flows summed
    ranks = _pagerank(n, edge // n, edge % n, np.bincount(back, weights=share), totals)
    # each definition's part of the rank that flows into its file through its name
    per = ranks[flow_src] * share / np.where(totals[flow_src] > 0, totals[flow_src], 1.0)
    held = defined.starts[at + 1] - defined.starts[at]  # definitions of the name there
    numbers = defined.defs[ranges(defined.starts[at], held)]
    scores = np.bincount(numbers, weights=np.repeat(per / held, held), minlength=defined.count)
    reached = np.flatnonzero(np.bincount(numbers, minlength=defined.count))
    owner = np.searchsorted(defined.first, reached, side="right") - 1
    tests = np.array([bool(_TESTS.intersection(p.split("/")[:-1])) for p in paths], bool)
    values = np.where(tests[owner], 0.1, 1.0) * scores[reached]  # the code before its tests
    keys = zip(map(paths.__getitem__, owner.tolist()),
               (reached - defined.first[owner]).tolist(), strict=True)  # fmt: skip
    return (dict(zip(paths, ranks.tolist(), strict=True)),
            dict(zip(keys, values.tolist(), strict=True)))  # fmt: skip


def _uses(entries: Sequence[FileEntry], defined: _Defined
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(file, name number, weight) of every reference to a linked name but imports, read
    by column: the files read together share their columns' values, so each group of
    them is one array operation. A use `obj.name` with `obj` of unknown type (not a module
    the file imports, nor self) means any class's `name`, so it counts little."""
    groups: dict[tuple[int, ...], list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]] = {}
    values: dict[int, Sequence[str]] = {}  # kept alive, so their ids stay theirs
    for f, entry in enumerate(entries):
        (names, n_values), (kinds, k_values), (quals, q_values) = map(_codes, _columns(entry))
        key = (id(n_values), id(k_values), id(q_values))
        values.update(zip(key, (n_values, k_values, q_values), strict=True))
        groups.setdefault(key, []).append((f, names, kinds, quals))
    heads: dict[str, int] = {}  # the first part of a qualifier -> its number
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for (n_id, k_id, q_id), members in groups.items():
        number = defined.number(values[n_id])
        plain = np.array([v != "import" for v in values[k_id]], bool)
        head = np.array([heads.setdefault(v.partition(".")[0], len(heads)) if v else -1
                         for v in values[q_id]], np.int64)  # fmt: skip
        files = np.repeat([m[0] for m in members], [len(m[1]) for m in members])
        names = number[np.concatenate([m[1] for m in members])]
        keep = (names >= 0) & plain[np.concatenate([m[2] for m in members])]
        files, names = files[keep], names[keep]
        qualified = head[np.concatenate([m[3] for m in members])][keep]
        weight = np.ones(len(names))
        asked = np.flatnonzero(qualified >= 0)
        if len(asked):
            known = [
                f * len(heads) + heads[m]
                for f in np.flatnonzero(np.bincount(files[asked])).tolist()
                for m in {i.bound.split(".", 1)[0] for i in entries[f].tags.imports} | _OWN
                if m in heads
            ]  # fmt: skip
            inside = _among(files[asked] * len(heads) + qualified[asked], known)
            weight[asked] = np.where(inside, 1.0, _UNTYPED)
        out.append((files, names, weight))
    if not out:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return tuple(np.concatenate(part) for part in zip(*out, strict=True))  # type: ignore[return-value]


def _among(values: np.ndarray, among: list[int]) -> np.ndarray:
    """Which `values` are in `among` (np.isin and np.unique import numpy.ma on first use:
    7 ms of the first map)."""
    ordered = np.sort(np.array(among, np.int64))
    if not len(ordered):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    found: np.ndarray = ordered[at] == values
    return found


def _codes(column: Sequence[str]) -> tuple[np.ndarray, Sequence[str]]:
    """A column of strings as (codes, values): a coded one as it is (`RefColumns`), any
    other coded here."""
    codes = getattr(column, "codes", None)
    if codes is not None:
        return codes, column.values  # type: ignore[attr-defined]
    values: dict[str, int] = {}
    codes = np.fromiter((values.setdefault(v, len(values)) for v in column), np.int64,
                        len(column))  # fmt: skip
    return codes, list(values)


def _columns(entry: FileEntry) -> tuple[Sequence[str], Sequence[str], Sequence[str]]:
    """(names, kinds, qualifiers) of a file's references, read by column when they are."""
    cols = entry.stored.columns
    if cols is not None:
        return cols.name, cols.kind, cols.qualifier
    refs = [at.ref for at in entry.refs()]
    return [r.name for r in refs], [r.kind for r in refs], [r.qualifier for r in refs]


def _pagerank(n: int, sources: np.ndarray, targets: np.ndarray, weights: np.ndarray,
              totals: np.ndarray) -> np.ndarray:  # fmt: skip
    """PageRank over weighted edges (a file's links share its rank by weight), a round a
    few array operations; a file that links nowhere spreads its rank over every file."""
    if not n:
        return np.zeros(0)
    shares = weights / np.where(totals[sources] > 0, totals[sources], 1.0)
    dangling = totals <= 0
    rank: np.ndarray = np.full(n, 1.0 / n)
    for _ in range(_ROUNDS):
        following = np.bincount(targets, weights=_DAMPING * rank[sources] * shares, minlength=n)
        rank = following + (1.0 - _DAMPING) / n + _DAMPING * float(rank[dangling].sum()) / n
    return rank
