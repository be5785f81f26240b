"""Long queries ranked by file first: which files a task description is about, in order.

A task description (an issue: a title, prose, a traceback, a code sample) is about a few
files. Ranking its chunks one by one lets one file's many chunks, or its test module, fill
the answer. So a long query ranks files, from five signals, each scaled to its best file:

- `file`: BM25 over whole files (the file-level keyword index), each of the query's words
  weighted by the square root of how often it says it, the title's `title_weight` more;
- `chunk`: the best BM25 score of any of the file's chunks for the same words;
- `names`: the definitions the query names (`URLValidator`, `parse_duration()`), each name
  shared out over the files that define it (a name defined in one file points there);
- `paths`: files and modules it names, traceback frames included (by path suffix:
  `/site-packages/django/db/models/query.py` is `django/db/models/query.py` here);
- `dense`: the best cosine of the file's chunks to the prose (when there are vectors).

The weighted sum is multiplied by the file's role weight: tests, docs, examples, vendored,
generated and data files count `secondary_weight` as much as code, unless the query is about
them. Weights were chosen on the DEV issues by leave-one-release-out (`memserver eval
swebench`); the sum of scaled scores beat reciprocal-rank fusion there (file Acc@1 55.7 vs
53.9), and the five weights are flat near their optimum.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from memserver.core.protocols import Snapshot
from memserver.retrieve.roles import CODE, DOC, TEST, Roles
from memserver.text.task import Task
from memserver.text.terms import QUERY_STOP_WORDS, analysed, whole_words

__all__ = [
    "SIGNALS",
    "FileRank",
    "about_tests_or_docs",
    "file_signals",
    "names_symbol",
    "rank_files",
    "weighted_terms",
]  # fmt: skip

SIGNALS = ("file", "chunk", "names", "paths", "dense")
_MAX_DEFINING = 20  # a name defined in more files than this says little about where to look


@dataclass(frozen=True, slots=True)
class FileRank:
    path: str
    score: float
    role: str
    signals: Mapping[str, float]  # each signal's share, scaled (what `explain` shows)


def weighted_terms(task: Task, text: str, title_weight: float,
                   tf: Callable[[int], float] = math.sqrt) -> list[tuple[str, float]]:  # fmt: skip
    """Each analysed word of `text` weighted by the square root of how often it occurs, plus
    `title_weight` times its count in the title; stop words and single characters left out.

    The square root keeps a word that a pasted model or traceback repeats twenty times from
    outweighing the rest of the issue. On the 215 DEV issues that read as task descriptions
    (keyword only, the ranked files), file Acc@1/3/5/10 went from 58.1/75.8/82.3/90.2 with
    raw counts to 59.1/77.7/84.2/92.1; leave-one-release-out among raw counts, square root,
    1 + log and presence, with title weights 0, 2 and 4, chose the square root and 4 in
    8 of 9 folds. `tf=float` gives the raw counts (see `longquery.retrieve_long`)."""
    counts: dict[str, int] = {}
    for word in analysed(text).split():
        if len(word) > 1 and word not in QUERY_STOP_WORDS:
            counts[word] = counts.get(word, 0) + 1
    weights = {word: tf(n) for word, n in counts.items()}
    for word in analysed(task.title).split():
        if word in weights:
            weights[word] += title_weight
    return sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))


def names_symbol(task: Task) -> Callable[[str], float]:
    """1.0 for a chunk symbol the task names (`A.b` or `b`: a name it mentions, a frame's
    function, a qualified name `A.b` it writes), else 0. Dunder names count only from
    tracebacks: an issue saying `__init__` rarely means one in particular."""
    said = {n for n, _ in task.names if not (n.startswith("__") and n.endswith("__"))}
    said |= {f.function for f in task.frames}
    qualified = {".".join(m.split(".")[-2:]) for m in task.modules}

    def score(symbol: str) -> float:
        for part in symbol.split(","):
            names = part.strip().split(".")
            if names[-1] in said or (len(names) > 1 and ".".join(names[-2:]) in qualified):
                return 1.0
        return 0.0

    return score


def about_tests_or_docs(task: Task) -> frozenset[str]:
    """Roles the query asks about in its title: 'add tests for …', 'docs for …'. A title
    about a failure (`… tests failing on Python 3.10`) is about the code under test: on the
    DEV issues every such fix changed code, not the tests."""
    return asked_roles(task.title, fixtures=False)


def asked_roles(text: str, fixtures: bool = True) -> frozenset[str]:
    """The roles (TEST, DOC) a short text asks about, unless it speaks of a failure. Its
    words as written decide, not the parts of its identifiers: an issue titled
    `LiveServerTestCase's ThreadedWSGIServer doesn't close …` is about a server class (on
    the DEV issues, the one answer with a test file first when the fix was in code).
    `fixtures`: whether "fixture" asks about tests (an issue's title names a feature of
    the code by it as often: Django's FIXTURE_DIRS, pytest's own fixtures)."""
    words = whole_words(text)
    asked = set()
    if words & _FAILURE:
        return frozenset()
    if words & (_TESTS | ({"fixture"} if fixtures else set())):
        asked.add(TEST)
    if words & {"doc", "docs", "documentation", "docstring", "readme", "typo"}:
        asked.add(DOC)
    return frozenset(asked)


_TESTS = frozenset({"test", "tests", "testing", "testcase", "pytest", "unittest"})
_FAILURE = frozenset(
    "fail fails failing failed failure error errors crash crashes broken breaks regression "
    "raise raises exception wrong incorrect".split()
)


def _suffix_files(snap: Snapshot, wanted: Sequence[str]) -> dict[str, list[str]]:
    """For each wanted path (or module path without extension), the indexed files whose path
    ends with its longest suffix that any file ends with."""
    by_name = _files_by_name(snap)
    out: dict[str, list[str]] = {}
    for w in dict.fromkeys(wanted):
        parts = [x for x in w.replace("\\", "/").split("/") if x and x not in (".", "..")]
        if not parts:
            continue
        best, hits = 0, []
        for p in by_name.get(parts[-1], []):
            n = _shared_tail(p, parts)
            if n > best:
                best, hits = n, [p]
            elif n == best and n:
                hits.append(p)
        if hits:
            out[w] = hits
    return out


# the last snapshot's files by name: building it took about 20 ms of a long query's recall
# on Django (4,500 files), and one snapshot serves every recall until the index changes
_BY_NAME: list[tuple[weakref.ref[Snapshot], dict[str, list[str]]]] = []


def _files_by_name(snap: Snapshot) -> dict[str, list[str]]:
    """Indexed files by file name, by stem, and (for `__init__` files) by package name."""
    for ref, cached in list(_BY_NAME):
        if ref() is snap:
            return cached
    by_name: dict[str, list[str]] = {}
    for p in snap.file_paths():
        name = p.rsplit("/", 1)[-1]
        by_name.setdefault(name, []).append(p)
        stem = name.rsplit(".", 1)[0]
        if stem != name:
            by_name.setdefault(stem, []).append(p)
        if stem == "__init__" and "/" in p:
            by_name.setdefault(p.rsplit("/", 2)[-2], []).append(p)
    with contextlib.suppress(TypeError):  # a snapshot with no weak references: not cached
        _BY_NAME[:] = [(weakref.ref(snap), by_name)]
    return by_name


def _shared_tail(path: str, parts: Sequence[str]) -> int:
    """How many of `parts`, from the last, `path` ends with (at a `/`), allowing its
    extension (or `/__init__.*`) off: the longest suffix of a wanted path it matches."""
    name = path.rsplit("/", 1)[-1]
    forms = [path, path.rsplit(".", 1)[0]]
    if name.startswith("__init__.") and "/" in path:
        forms.append(path.rsplit("/", 1)[0])
    best = 0
    for form in forms:
        tail = form.split("/")
        n = 0
        while n < len(parts) and n < len(tail) and tail[-1 - n] == parts[-1 - n]:
            n += 1
        best = max(best, n)
    return best


def _module_paths(modules: Sequence[str]) -> list[str]:
    """`core.validators.URLValidator` → `core/validators/URLValidator`, `core/validators`, …
    (longest first: the longest that names a file wins)."""
    out: list[str] = []
    for m in modules:
        parts = m.split(".")
        out.extend("/".join(parts[:j]) for j in range(len(parts), 1, -1))
    return out


def file_signals(
    snap: Snapshot, file_hits: Sequence[tuple[str, float]], task: Task,
    chunk_hits: Sequence[tuple[str, float]], dense_hits: Sequence[tuple[int, float]],
    *, allowed: set[str] | None,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """Each signal's raw score per file (files outside `allowed`, when given, left out), from
    the file-level keyword index's hits (path, score) for the `weighted_terms`, the chunk
    arms' and the task's names and paths."""
    out: dict[str, dict[str, float]] = {s: {} for s in SIGNALS}

    def ok(path: str) -> bool:
        return allowed is None or path in allowed

    for path, score in file_hits:
        if ok(path):
            out["file"][path] = score
    for row, (_, score) in zip(snap.rows_of([cid for cid, _ in chunk_hits]), chunk_hits,
                               strict=True):  # fmt: skip
        where = snap.path_at(row) if row is not None else None
        if where is not None and ok(where) and score > out["chunk"].get(where, 0.0):
            out["chunk"][where] = score
    for name, _count in task.names:
        defining = {p for p in _defining(snap, name) if ok(p)}
        if 0 < len(defining) <= _MAX_DEFINING:
            for p in defining:
                out["names"][p] = out["names"].get(p, 0.0) + 1.0 / len(defining)
    named = [*task.paths, *(f.path for f in task.frames)]
    resolved = _suffix_files(snap, [*named, *_module_paths(task.modules)])
    seen_modules: set[str] = set()
    for m in task.modules:  # each module counts once, by its longest part that names a file
        for cand in _module_paths([m]):
            if cand in resolved and m not in seen_modules:
                seen_modules.add(m)
                hits = [p for p in resolved[cand] if ok(p)]
                for p in hits:
                    out["paths"][p] = out["paths"].get(p, 0.0) + 1.0 / len(hits)
    for w in dict.fromkeys(named):
        hits = [p for p in resolved.get(w, []) if ok(p)]
        for p in hits:
            out["paths"][p] = out["paths"].get(p, 0.0) + 1.0 / len(hits)
    for row, score in dense_hits:
        path = snap.path_at(row)
        if ok(path) and score > out["dense"].get(path, 0.0):
            out["dense"][path] = score
    return out


def _defining(snap: Snapshot, name: str) -> set[str]:
    """Files with a chunk whose symbol (or its last part) is `name`."""
    paths = {snap.path_at(r) for r in list(snap.rows_named(name.lower()))[:200]}
    return {p for p in paths if snap.file_state(p) is not None}


def rank_files(
    signals: Mapping[str, Mapping[str, float]], weights: Mapping[str, float], roles: Roles,
    *, secondary_weight: float, asked: frozenset[str] = frozenset(), limit: int = 50,
) -> list[FileRank]:  # fmt: skip
    """Files by the weighted sum of their signals, each scaled to its best file, times the
    role weight; ties by path."""
    total: dict[str, float] = {}
    parts: dict[str, dict[str, float]] = {}
    for name, scores in signals.items():
        w = weights.get(name, 0.0)
        best = max(scores.values(), default=0.0)
        if w <= 0 or best <= 0:
            continue
        for path, s in scores.items():
            share = w * s / best
            total[path] = total.get(path, 0.0) + share
            parts.setdefault(path, {})[name] = round(share, 4)
    out = []
    for path, score in total.items():
        role = roles.of(path)
        if role != CODE and role not in asked:
            score *= secondary_weight
        out.append(FileRank(path, score, role, parts[path]))
    out.sort(key=lambda f: (-f.score, f.path))
    return out[:limit]
