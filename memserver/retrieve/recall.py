"""Recall: plan → arms → resolve → fuse → merge → rerank → gate → pack.

One module per stage lives beside this one; this module only runs them in
order. No LLM call is made on this path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from memserver.config import RecallSettings
from memserver.core.errors import ConfigError
from memserver.core.ids import content_hash
from memserver.core.protocols import Embedder, Reranker, TokenCounter
from memserver.core.types import Evidence, RecallResult
from memserver.retrieve import arms
from memserver.retrieve.arms import Filters, Ranked
from memserver.retrieve.fuse import Fused, rrf
from memserver.retrieve.gate import FEATURES, GateSignals, confidence, coverage
from memserver.retrieve.merge import merge_adjacent
from memserver.retrieve.pack import pack
from memserver.retrieve.plan import QueryPlan, plan_query
from memserver.retrieve.speakers import (
    COMPARED,
    named_speakers,
    next_turn_paths,
    prefer,
    speaker_of,
    stated_by_another,
    subject,
    without_names,
)
from memserver.retrieve.view import RecallView, Snapshot
from memserver.store.bm25 import QUERY_STOP_WORDS, query_terms
from memserver.store.index import IndexStore

MIN_BUDGET, MAX_BUDGET = 1, 1_000_000


@cache
def _keyword_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="memserver-bm25")


def _bm25(
    bm25: Any, snap: Snapshot, route: Any, view: str, mask: np.ndarray | None, depth: int,
    mmask: np.ndarray | None,
) -> tuple[Ranked, dict[str, set[str]]]:  # fmt: skip
    """One keyword arm, with the memories it went through (its own map: it runs beside the
    others)."""
    via: dict[str, set[str]] = {}
    return arms.bm25_arm(bm25, snap, route, view, mask, depth, via, mmask), via


class Recaller:
    def __init__(
        self,
        store: IndexStore,
        embedder: Embedder | None,
        settings: RecallSettings,
        *,
        tokens: TokenCounter | None = None,
        reranker: Reranker | None = None,
        expander: Any = None,
        root: Path | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.tokens = tokens
        self.reranker = reranker
        self.expander = expander  # an LlmExpander, or None for the terminology table
        self.view = RecallView(
            store, with_memories=True, ann_min_rows=settings.ann_min_rows,
            nprobes=settings.ann_nprobes, refine=settings.ann_refine,
            memory_refine=settings.ann_memory_refine, probe_factor=settings.ann_probe_factor,
            memory_probe_factor=settings.ann_memory_probe_factor,
        )  # fmt: skip
        self.root = root  # the project root, to tell when a returned file changed since

    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        budget_tokens: int | None = None,
        max_files: int | None = None,
        filters: Filters | None = None,
        include_memories: bool = True,
        rerank: bool = True,
    ) -> RecallResult:
        s = self.settings
        k = k or s.k
        budget = s.budget_tokens if budget_tokens is None else budget_tokens
        if not query.strip():
            raise ConfigError("the query is empty", hint="ask in words or name an identifier")
        if not MIN_BUDGET <= budget <= MAX_BUDGET:
            raise ConfigError(f"budget_tokens must be positive, got {budget}", hint="e.g. 4096")
        started = time.perf_counter()
        snap = self.view.get()
        filters = filters or Filters()
        masks = (arms.filter_mask(snap, filters), arms.memory_mask(snap, filters))
        plan, evidence, firsts = self._retrieve(snap, query, masks, include_memories, k)
        evidence = self._refine(snap, query, evidence, k, rerank)
        signals = self._signals(plan, evidence, firsts)
        conf = self._confidence(signals)
        # a question naming speakers of remembered turns: ask it again without the names
        # and prefer its subject's turns; the gate keeps the question's own signals and,
        # with one speaker named, holds back what only someone else said (retrieve.speakers)
        named, speakers = named_speakers(query, evidence[: 3 * k])
        stripped = without_names(query, speakers) if named else ""
        terms = query_terms(stripped) if stripped and stripped != query else []
        if terms:
            if len(named) == 1 and stated_by_another(terms, self._lexical(snap, firsts), named[0]):
                conf = min(conf, s.gate_threshold / 2)
            plan, evidence, _ = self._retrieve(snap, stripped, masks, include_memories, k)
            evidence = self._refine(snap, stripped, evidence, k, rerank)
        if who := subject(query, named):
            evidence = prefer(evidence, who, s.speaker_boost)
        evidence = self._continue_turns(snap, evidence, s.turn_continuations, masks[0])
        packed = pack(evidence, budget, max_files or s.max_files, k)
        packed = replace(packed, evidence=self._mark_changed(snap, packed.evidence))
        unembedded = int((~snap.embedded).sum()) if self.embedder is not None else 0
        result = RecallResult(
            query=query, found=conf >= s.gate_threshold if evidence else False,
            confidence=round(conf, 4), tokens=packed.tokens, truncated=packed.truncated,
            evidence=packed.evidence, unembedded=unembedded,
        )  # fmt: skip
        result.signals.update(dict(zip(FEATURES, signals.vector(), strict=True)))
        result.signals["ms"] = (time.perf_counter() - started) * 1000
        return result

    # -- stages --------------------------------------------------------------------

    def _retrieve(
        self, snap: Snapshot, query: str,
        masks: tuple[np.ndarray | None, np.ndarray | None], include_memories: bool, k: int,
    ) -> tuple[QueryPlan, list[Evidence], dict[str, Ranked]]:  # fmt: skip
        """Plan, arms, fusion and the evidence rows, best first."""
        s = self.settings
        plan = plan_query(
            query, expansions=s.expansions,
            weights=(s.original_weight, s.canonical_weight, s.expansion_weight),
            base_depth=s.candidates,
            rewrites=self.expander.expand(query) if self.expander is not None else (),
        )  # fmt: skip
        via: dict[str, set[str]] = {}
        ranked, weights, firsts = self._arms(snap, plan, masks, include_memories, via)
        fused = rrf(ranked, weights, k=s.rrf_k)[: max(plan.depth, 3 * k)]
        return plan, self._evidence(snap, fused, via), firsts

    def _refine(
        self, snap: Snapshot, query: str, evidence: list[Evidence], k: int, rerank: bool
    ) -> list[Evidence]:
        """Neighbouring chunks merged in the first k (only what can reach the pack is worth
        merging and re-counting), then the cross-encoder's order when there is one."""
        evidence = merge_adjacent(snap, evidence[:k], self.tokens) + evidence[k:]
        if rerank and self.reranker is not None and evidence:
            evidence = self._rerank(query, evidence)
        return evidence

    def _arms(
        self, snap: Snapshot, plan: QueryPlan,
        masks: tuple[np.ndarray | None, np.ndarray | None],
        include_memories: bool, via: dict[str, set[str]],
    ) -> tuple[dict[str, Ranked], dict[str, float], dict[str, Ranked]]:  # fmt: skip
        mask, mmask = masks  # chunk rows, memory rows the filters allow
        ranked: dict[str, Ranked] = {}
        weights: dict[str, float] = {}
        depth = plan.depth
        qvs: list[np.ndarray] = []
        if self.embedder is not None and (snap.vectors is not None or snap.ann is not None):
            # dense arms for the first routes only: MiniLM already maps synonyms close
            # together, and each extra route costs a model call (~6 ms on 2 cores)
            dense_routes = plan.routes[: max(1, self.settings.dense_routes)]
            vecs = self.embedder.embed_documents([r.text for r in dense_routes])
            qvs = [np.asarray(v, dtype=np.float32) for v in vecs]
        for qv in qvs:  # the lean view starts its dense searches side by side
            arms.prefetch_dense(snap, qv, masks, depth, include_memories)
        # the keyword searches run side by side too (tantivy lets go of the GIL): at 348k
        # chunks a query's six took 85 ms one after another, 45 ms on four threads
        # past ann_min_rows stop words mostly slow a keyword search down (their postings are
        # the longest): the original wording is searched without them there, often the
        # canonical search itself (at 348k chunks recall p95 228 -> 197 ms). Below, they
        # stay: on the DEV LoCoMo set dropping them cost 0.8 points of R@10
        keyword = {}
        started: dict[tuple[tuple[str, ...], str], Any] = {}
        lean = snap.ann is not None
        for i, route in enumerate(plan.routes):
            views = ("chunk", "memory") if include_memories and i < 2 else ("chunk",)
            terms = route.terms
            if lean:
                terms = tuple(t for t in terms if t not in QUERY_STOP_WORDS) or terms
            for view in views:  # memories: original and canonical wording only
                if (terms, view) not in started:
                    started[terms, view] = _keyword_pool().submit(
                        _bm25, self.store.bm25, snap, replace(route, terms=terms), view, mask,
                        depth, mmask,
                    )  # fmt: skip
                keyword[route.name, view] = started[terms, view]
        # a dense arm stands for its route and, the last one, for every route not embedded:
        # the model maps rewordings close together, so one call covers them, and the arm
        # carries their weight, as each route has its keyword arm (weighted as one route, the
        # dense arm was outvoted: DEV LoCoMo R@10 0.745, summed 0.793; code MRR 0.653 -> 0.663)
        stands_for = [route.weight for route in plan.routes]
        if qvs:
            stands_for[len(qvs) - 1] += sum(stands_for[len(qvs) :])
        for i, route in enumerate(plan.routes):
            name = route.name
            for view, arm in (("chunk", f"{name}/bm25"), ("memory", f"{name}/bm25-memory")):
                if (name, view) in keyword:
                    hits, found_via = keyword[name, view].result()
                    ranked[arm] = list(hits)
                    for cid, mids in found_via.items():
                        via.setdefault(cid, set()).update(mids)
            if i < len(qvs):
                ranked[f"{name}/dense"] = arms.dense_chunks(snap, qvs[i], mask, depth)
                if include_memories:
                    ranked[f"{name}/dense-memory"] = arms.dense_memories(
                        snap, qvs[i], mask, depth, via, mmask
                    )
            for arm in list(ranked):
                if arm.startswith(name + "/"):
                    memory = arm.endswith("-memory")
                    weight = stands_for[i] if "/dense" in arm else route.weight
                    weights[arm] = weight * (self.settings.memory_weight if memory else 1.0)
        dated = arms.time_mask(snap, plan.dates, mask)
        if dated is not None:  # the original route again, over what was said on that day
            ranked["date/bm25"] = arms.bm25_arm(self.store.bm25, snap, plan.routes[0], "chunk",
                                                dated, 4 * depth, via)[:depth]  # fmt: skip
            if qvs:
                ranked["date/dense"] = arms.dense_chunks(snap, qvs[0], dated, depth)
            for arm in ("date/bm25", "date/dense"):
                weights[arm] = self.settings.date_weight
        exact = arms.exact_names(snap, plan, mask)
        if exact:
            ranked["exact"] = exact
            weights["exact"] = self.settings.exact_weight
        firsts = {a.split("/", 1)[1]: r for a, r in ranked.items() if a.startswith("original/")}
        return ranked, weights, firsts

    def _evidence(
        self, snap: Snapshot, fused: list[Fused], via: dict[str, set[str]]
    ) -> list[Evidence]:
        out = []
        rows = snap.rows_of([f.id for f in fused])
        found = [(f, row) for f, row in zip(fused, rows, strict=True) if row is not None]
        chunks = snap.fetch([row for _, row in found])  # the lean view reads them by id
        for (f, row), c in zip(found, chunks, strict=True):
            mids = via.get(c.id, set())
            out.append(
                Evidence(
                    id=c.id,
                    path=c.path,
                    start_line=c.start_line,
                    end_line=c.end_line,
                    symbol=c.symbol,
                    kind=c.kind,
                    language=c.language,
                    text=c.text,
                    score=f.score,
                    tokens=c.tokens,
                    routes=f.arms,
                    embedded=bool(snap.embedded[row]),
                    memory_ids=tuple(sorted(mids)),
                    stale=row in snap.stale_rows,
                )
            )
        return out

    def _lexical(self, snap: Snapshot, firsts: dict[str, Ranked]) -> list[Evidence]:
        """The keyword arm's best turns: who states the question's words is a lexical
        question, and the fused order mixes in turns found by meaning alone."""
        best = firsts.get("bm25", [])[:COMPARED]
        return self._evidence(snap, [Fused(cid, score, ("bm25",)) for cid, score in best], {})

    def _continue_turns(
        self, snap: Snapshot, evidence: list[Evidence], best: int, mask: np.ndarray | None
    ) -> list[Evidence]:
        """After each of the `best` first turns, its speaker's next turn (retrieve.speakers)."""
        out = list(evidence)
        for e in evidence[:best]:
            who = speaker_of(e)
            if not who:
                continue
            paths = next_turn_paths(e, 3)
            rows = [r for p in paths for r in snap.by_path.get(p.lower(), ())[:1]]
            rows = [r for r in rows if mask is None or mask[r]]
            fused = [Fused(snap.id_at(r), e.score, ("next-turn",)) for r in rows]
            for n in self._evidence(snap, fused, {}):
                if speaker_of(n) == who:
                    ids = [x.id for x in out]
                    at = ids.index(e.id)
                    if n.id not in ids[: at + 1]:  # moved up when it is further down
                        out = [x for x in out if x.id != n.id]
                        out.insert(at + 1, n)
                    break
        return out

    def _mark_changed(self, snap: Snapshot, evidence: Sequence[Evidence]) -> tuple[Evidence, ...]:
        """Evidence from a file that changed on disk since it was indexed gets `stale`.

        One stat per file returned; the content is hashed only when size or mtime moved,
        so a touched but unchanged file is not reported."""
        if self.root is None:
            return tuple(evidence)
        changed: dict[str, bool] = {}
        out = []
        for e in evidence:
            known = snap.files.get(e.path)
            if known is None:  # a note or turn: its staleness comes from its memories
                out.append(e)
                continue
            if e.path not in changed:
                changed[e.path] = _changed(self.root / e.path, *known)
            out.append(replace(e, stale=True) if changed[e.path] else e)
        return tuple(out)

    def _rerank(self, query: str, evidence: list[Evidence]) -> list[Evidence]:
        assert self.reranker is not None
        n = self.settings.rerank_candidates
        head, tail = evidence[:n], evidence[n:]
        passages = [f"{e.path} {e.symbol}\n{e.text}" for e in head]
        scores = self.reranker.score(query, passages)
        order = sorted(range(len(head)), key=lambda i: -scores[i])
        return [replace(head[i], score=float(scores[i])) for i in order] + tail

    def _signals(
        self, plan: QueryPlan, evidence: list[Evidence], firsts: dict[str, Ranked]
    ) -> GateSignals:
        if not evidence:
            return GateSignals()
        top = evidence[0]
        dense = firsts.get("dense", [])
        bm25 = firsts.get("bm25", [])
        memory = firsts.get("dense-memory", [])
        in_dense = any(cid == top.id for cid, _ in dense[:10])
        in_bm25 = any(cid == top.id for cid, _ in bm25[:10])
        return GateSignals(
            dense=dense[0][1] if dense else 0.0,
            memory=memory[0][1] if memory else 0.0,
            coverage=coverage(plan.content_words, f"{top.path} {top.symbol} {top.text}"),
            agree=(in_dense + in_bm25) / 2,
            margin=(dense[0][1] - dense[min(9, len(dense) - 1)][1]) if dense else 0.0,
        )

    def _confidence(self, signals: GateSignals) -> float:
        s = self.settings
        if self.embedder is None:  # BM25 only: lexical coverage is all there is
            return signals.coverage
        return confidence(signals, s.gate_weights, s.gate_bias)


def _changed(path: Path, size: int, mtime_ns: int, digest: str) -> bool:
    try:
        st = path.stat()
        if (st.st_size, st.st_mtime_ns) == (size, mtime_ns):
            return False
        return content_hash(path.read_bytes()) != digest
    except OSError:  # deleted or unreadable since indexing
        return True


__all__ = ["Filters", "Recaller"]
