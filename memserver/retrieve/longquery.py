"""Recall for a task description: files first, then the best chunks of each, spread out.

The stages of `Recaller.recall` for a long query (`plan.task` set, see `plan.py`):

1. candidate chunks: one keyword arm over the query's words with their counts
   (`files.weighted_terms`), the exact-name arm and, with `[recall] long_dense` (on by
   default), the dense arm over its title and prose and the dense memory arm; fused by
   reciprocal rank;
2. files: ranked by `files.rank_files` over five signals, the chunk arms' among them;
3. evidence: each file's chunks in their order within it (their keyword scores for the
   whole query, plus a little where the query names a chunk's symbol), the first chunk of
   each file in file order, then the second chunks, and so on: the answer spans the most
   likely files before it adds a second chunk of one;
4. a file whose best chunk reads as tests (`roles.content_is_test`) counts as a test file.

With an optional `FileOrder` (an LLM's, `memserver.llm.locate`), the first files of stage 2
are re-ordered by it before stage 3; when it answers None, recall's own order stands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from memserver.config import RecallSettings
from memserver.core.protocols import KeywordIndex, Snapshot
from memserver.core.types import Evidence
from memserver.retrieve import arms
from memserver.retrieve.arms import Masks, Ranked, Via
from memserver.retrieve.files import (
    SIGNALS,
    FileRank,
    about_tests_or_docs,
    file_signals,
    names_symbol,
    rank_files,
    weighted_terms,
)
from memserver.retrieve.fuse import Fused, rrf
from memserver.retrieve.plan import QueryPlan
from memserver.retrieve.roles import CODE, TEST, Roles, content_is_test

__all__ = ["FileOrder", "LongAnswer", "dense_text", "retrieve_long"]

EvidenceOf = Callable[[Sequence[Fused], Via], list[Evidence]]
# (the task's title and prose, [(path, names it defines)]) → the paths in the order to open
# them (a subset is fine), or None to keep the order given
FileOrder = Callable[[str, Sequence[tuple[str, Sequence[str]]]], Sequence[str] | None]


@dataclass
class LongAnswer:
    evidence: list[Evidence]
    files: list[FileRank]
    chunks: dict[str, Ranked] = field(default_factory=dict)  # each chunk arm's hits
    best_of: dict[str, str] = field(default_factory=dict)  # each file signal's best file


def dense_text(plan: QueryPlan, max_chars: int) -> str:
    """What the dense arm embeds: the title and prose (the model sees their start). A second
    arm over the code sample gave file Acc@1/@10 61.8/92.5 against 62.3/93.0 without it on
    the DEV issues (function Acc@10 59.9 against 60.8), for a second embedding and search."""
    task = plan.task
    assert task is not None
    prose = f"{task.title}\n{task.prose}".strip()[:max_chars]
    return prose or plan.query[:max_chars]


def _allowed_files(snap: Snapshot, mask: np.ndarray | None) -> set[str] | None:
    if mask is None:
        return None
    return {snap.path_at(int(r)) for r in np.flatnonzero(mask)}


def retrieve_long(
    snap: Snapshot, keyword: KeywordIndex, files_index: KeywordIndex | None, plan: QueryPlan,
    query_vector: Callable[[], np.ndarray | None], masks: Masks, s: RecallSettings, *,
    include_memories: bool, k: int, evidence_of: EvidenceOf, reorder: FileOrder | None = None,
) -> LongAnswer:  # fmt: skip
    """`query_vector` embeds `dense_text` (or gives None: no dense arm); it runs while the
    keyword searches do (both let go of the GIL)."""
    task = plan.task
    assert task is not None
    mask, mmask = masks
    terms = weighted_terms(task, plan.query, s.title_weight)
    # files by square roots (`weighted_terms`), a file's chunks by raw counts: a word the
    # issue repeats names the function to change more often than the file (DEV issues,
    # keyword only: function Acc@10 57.1 this way, 54.7 with square roots for both)
    counted = weighted_terms(task, plan.query, s.title_weight, tf=float)
    depth = s.long_candidates
    ranked: dict[str, Ranked] = {}
    weights: dict[str, float] = {}
    via: Via = {}
    widen = 5 if mask is not None else 1
    deep = max(depth, s.within_file_candidates)
    # the keyword searches side by side (tantivy lets go of the GIL: on Django 3.2's issues
    # a pair took 23 ms on two threads, 43 ms one after the other), the dense ones beside.
    # No keyword search over the memories: files rank by the code's own signals, and on
    # Django 3.2's 34 DEV issues it changed one answer of 34 (no score) for a third of the
    # time (p50 164 -> 119 ms, loaded machine). The query is embedded meanwhile.
    pool = arms.keyword_pool()
    counted_hits = pool.submit(keyword.search_weighted, counted, deep * widen)
    chunk_hits = pool.submit(keyword.search_weighted, terms, depth * widen)
    file_hits = pool.submit(files_index.search_weighted, terms, s.long_file_candidates,
                            view="file") if files_index is not None else None  # fmt: skip
    qv = query_vector()
    near = s.long_dense_candidates
    if qv is not None:
        snap.prefetch_dense(qv, near, mask, 3 * near if include_memories else None, mmask)
    hits = _allowed(snap, counted_hits.result(), mask)
    ranked["bm25"] = _allowed(snap, chunk_hits.result(), mask)[:depth]
    weights["bm25"] = 1.0
    dense_rows: list[tuple[int, float]] = []
    if qv is not None:
        dense_rows = snap.dense(qv, near, mask)
        ranked["dense"] = [(snap.id_at(r), sc) for r, sc in dense_rows]
        weights["dense"] = 1.0
        if include_memories:
            ranked["dense-memory"] = arms.dense_memories(snap, qv, mask, near, via, mmask)
            weights["dense-memory"] = s.memory_weight
    exact = arms.exact_names(snap, plan, mask)
    if exact:
        ranked["exact"] = exact
        weights["exact"] = s.exact_weight
    fused = rrf(ranked, weights, k=s.rrf_k)
    signals = file_signals(
        snap, file_hits.result() if file_hits is not None else [], task, ranked["bm25"],
        dense_rows, allowed=_allowed_files(snap, mask),
    )  # fmt: skip
    roles = Roles(s.test_paths, s.doc_paths, s.vendored_paths, s.code_paths)
    asked = about_tests_or_docs(task)
    files = rank_files(
        signals, dict(zip(SIGNALS, s.file_weights, strict=True)), roles,
        secondary_weight=s.secondary_weight, asked=asked, limit=max(s.map_files, k, 20),
    )  # fmt: skip
    if reorder is not None and s.llm_files > 1:
        files = reordered(snap, f"{task.title}\n{task.prose}".strip(), files, reorder,
                          s.llm_files)  # fmt: skip
    evidence = _spread(
        snap,
        keyword,
        counted,
        files,
        fused,
        via,
        mask,
        evidence_of,
        k,
        s.second_chunk_weight,
        limit=3 * k,
        words=dict(hits),
        named=names_symbol(task),
        name_weight=s.chunk_name_weight,
    )
    files, evidence = _tests_by_content(files, evidence, s.secondary_weight, asked)
    best_of = {name: max(scores, key=lambda p: (scores[p], p))
               for name, scores in signals.items() if scores}  # fmt: skip
    return LongAnswer(evidence, files, ranked, best_of)


def reordered(snap: Snapshot, task: str, files: Sequence[FileRank], reorder: FileOrder,
              n: int) -> list[FileRank]:  # fmt: skip
    """The first `n` files in the order `reorder` gives (the files it leaves out after the
    ones it names, in their order), each taking the score of the rank it lands on."""
    head = list(files[:n])
    candidates = [(f.path, _names(snap, f.path)) for f in head]
    order = reorder(task, candidates) or []
    by_path = {f.path: f for f in head}
    named = [by_path[p] for p in dict.fromkeys(order) if p in by_path]
    if not named:
        return list(files)
    moved = named + [f for f in head if f not in named]
    scores = sorted((f.score for f in head), reverse=True)
    return [replace(f, score=sc) for f, sc in zip(moved, scores, strict=True)] + list(files[n:])


def _names(snap: Snapshot, path: str) -> list[str]:
    """The symbols a file's chunks define, in line order, each once."""
    chunks = snap.fetch(list(snap.rows_in_file(path)))
    return list(dict.fromkeys(c.symbol for c in chunks if c.symbol))


def _allowed(snap: Snapshot, hits: Ranked, mask: np.ndarray | None) -> Ranked:
    if mask is None:
        return list(hits)
    rows = snap.rows_of([h for h, _ in hits])
    return [h for h, r in zip(hits, rows, strict=True) if r is not None and mask[r]]


def _spread(
    snap: Snapshot, keyword: KeywordIndex, terms: Sequence[tuple[str, float]],
    files: Sequence[FileRank], fused: Sequence[Fused], via: Via, mask: np.ndarray | None,
    evidence_of: EvidenceOf, k: int, decay: float, limit: int,
    words: Mapping[str, float] | None = None, named: Callable[[str], float] = lambda _: 0.0,
    name_weight: float = 0.0,
) -> list[Evidence]:  # fmt: skip
    """Each file's chunks in their order within it (`_within_file`, from the keyword arm's
    scores `words`), files in rank order, then dealt out: a file's n-th chunk scores its
    file's score times `decay`**n (0: every file's first chunk before any second one); the
    first `limit` items become evidence."""
    words = words or {}
    rank = {f.path: i for i, f in enumerate(files)}
    per_file: dict[str, list[Fused]] = {f.path: [] for f in files}
    seen = {c.id for c in fused}
    deeper = [Fused(cid, 0.0, ("bm25",)) for cid in words if cid not in seen]
    everyone = [*fused, *deeper]
    rows = snap.rows_of([c.id for c in everyone])
    for c, row in zip(everyone, rows, strict=True):
        if row is not None:
            path = snap.path_at(row)
            if path in per_file:
                per_file[path].append(c)
    # a file no keyword hit reached (found by its name or as a whole) gets its chunks by a
    # keyword search within it: those searches side by side
    pool = arms.keyword_pool()
    within = {f.path: pool.submit(keyword.search_weighted, terms, k, path=f.path)
              for f in files if not any(c.id in words for c in per_file[f.path])}  # fmt: skip
    for f in files:
        searched = _allowed(snap, within[f.path].result(), mask) if f.path in within else []
        per_file[f.path] = _within_file(snap, f.path, per_file[f.path], mask, k, words,
                                        searched, named, name_weight)  # fmt: skip
    dealt = [(f.score * decay**depth, -i, -depth, item) for i, f in enumerate(files)
             for depth, item in enumerate(per_file[f.path])]  # fmt: skip
    dealt.sort(key=lambda d: d[:3], reverse=True)
    order = [item for *_, item in dealt[:limit]]
    score = {item.id: sc for sc, *_, item in dealt[:limit]}
    evidence = evidence_of(order, via)
    out = []
    for e in evidence:
        signals = tuple(f"file:{n}" for n in files[rank[e.path]].signals)
        out.append(replace(e, score=round(score.get(e.id, 0.0), 6),
                           routes=tuple(dict.fromkeys((*e.routes, *signals)))))  # fmt: skip
    return out


def _within_file(
    snap: Snapshot, path: str, candidates: Sequence[Fused], mask: np.ndarray | None, k: int,
    words: Mapping[str, float], searched: Ranked, named: Callable[[str], float],
    name_weight: float,
) -> list[Fused]:  # fmt: skip
    """A file's first `k` chunks, best first: each candidate's keyword score against the
    whole query (`words`: the keyword arm's, scaled to the file's best), plus `name_weight`
    where the query names the chunk's symbol (`named`: 0..1). The fused order mixes in the
    exact-name arm's ranks across the repository; within one file the chunk the query's
    words describe best was the fix's function more often (DEV issues, gold functions
    in their files: first 47%, 50% with the names, against 44%).
    A file no keyword hit reached has its chunks' scores from a keyword search within it
    (`searched`)."""
    scores = {c.id: words[c.id] for c in candidates if c.id in words}
    if not scores:
        scores = dict(searched)
    if not scores and not candidates:
        scores = {snap.id_at(r): 0.0 for r in list(snap.rows_in_file(path))[:1]
                  if mask is None or mask[r]}  # fmt: skip
    best = max(scores.values(), default=0.0) or 1.0
    pool = list(dict.fromkeys([*scores, *(c.id for c in candidates)]))
    arms_of = {c.id: c.arms for c in candidates}
    symbols = dict(zip(pool, _symbols(snap, pool), strict=True))
    scored = {cid: scores.get(cid, 0.0) / best + name_weight * named(symbols[cid])
              for cid in pool}  # fmt: skip
    first = {cid: i for i, cid in enumerate(pool)}
    order = sorted(pool, key=lambda cid: (-scored[cid], first[cid]))[:k]
    return [Fused(cid, scored[cid], arms_of.get(cid, ("file",))) for cid in order]


def _symbols(snap: Snapshot, ids: Sequence[str]) -> list[str]:
    rows = snap.rows_of(list(ids))
    return [snap.symbol_at(r) if r is not None else "" for r in rows]


def _tests_by_content(files: list[FileRank], evidence: list[Evidence], secondary: float,
                      asked: frozenset[str]) -> tuple[list[FileRank], list[Evidence]]:  # fmt: skip
    """Files the path calls code whose best chunk is tests count as tests (re-ranked)."""
    if TEST in asked:
        return files, evidence
    first: dict[str, Evidence] = {}
    for e in evidence:
        first.setdefault(e.path, e)
    tests = {
        f.path
        for f in files
        if f.role == CODE and f.path in first and content_is_test(first[f.path].text)
    }
    if not tests:
        return files, evidence
    files = sorted(
        (replace(f, score=f.score * secondary, role=TEST) if f.path in tests else f
         for f in files), key=lambda f: (-f.score, f.path),
    )  # fmt: skip
    rank = {f.path: i for i, f in enumerate(files)}
    depth: dict[str, int] = {}
    keyed = []
    for e in evidence:
        d = depth.get(e.path, 0)
        depth[e.path] = d + 1
        keyed.append(((d, rank.get(e.path, len(rank))), e))
    keyed.sort(key=lambda x: x[0])
    return files, [e for _, e in keyed]
