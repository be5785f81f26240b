"""Recall: plan → arms → fuse → evidence → merge → rerank → gate → conversation → pack.

One module per stage lives beside this one; this module only runs them in order over a
`Snapshot` (the read model the store keeps up to date) and the keyword index. No LLM call
is made on this path, except the optional query expansion.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from indexers.read import changed_on_disk
from memserver.config import RecallSettings
from memserver.core import render
from memserver.core.errors import ModelUnavailable
from memserver.core.ids import content_hash
from memserver.core.protocols import (
    CodeGraph,
    Embedder,
    KeywordIndex,
    Reranker,
    Snapshot,
    TokenCounter,
)
from memserver.core.requests import LIMITS, Filters, check_budget, check_format, check_query
from memserver.core.types import Evidence, MapFile, RecallResult
from memserver.retrieve import arms
from memserver.retrieve.arms import Masks, Ranked, Via
from memserver.retrieve.codemap import build_map
from memserver.retrieve.conversation import COMPARED, Conversation, continue_turns
from memserver.retrieve.files import about_tests_or_docs, asked_roles
from memserver.retrieve.fuse import Fused, rrf
from memserver.retrieve.gate import (
    FEATURES,
    GateSignals,
    confidence,
    confidence_of,
    coverage,
    long_signals,
    missing,
)
from memserver.retrieve.longquery import FileOrder, dense_text, retrieve_long
from memserver.retrieve.merge import merge_adjacent
from memserver.retrieve.pack import pack
from memserver.retrieve.plan import QueryPlan, plan_query
from memserver.retrieve.roles import TEST, path_role
from memserver.text.task import parse_task

__all__ = ["Expander", "Recaller"]

Expander = Callable[[str], Sequence[str]]  # a query's rewordings (an LLM's), [] on failure


class Recaller:
    def __init__(
        self,
        snapshots: Callable[[], Snapshot],
        keyword: KeywordIndex,
        embedder: Embedder | None,
        settings: RecallSettings,
        *,
        tokens: TokenCounter | None = None,
        reranker: Reranker | None = None,
        expander: Expander | None = None,
        root: Path | None = None,
        graph: CodeGraph | None = None,
        files: KeywordIndex | None = None,
        dense_chars: int = 2000,
        file_order: FileOrder | None = None,
    ) -> None:
        self.snapshots = snapshots  # the current Snapshot (brought up to date by the store)
        self.keyword = keyword
        self.embedder = embedder
        self.settings = settings
        self.tokens = tokens
        self.reranker = reranker
        self.expander = expander
        self.file_order = file_order  # an LLM's order of a long query's files (optional)
        self.root = root  # the project root, to tell when a returned file changed since
        self.graph = graph  # the code graph, for the graph arms (None: no graph arms)
        self.files = files  # whole-file keyword index (long queries' file arm), if any
        self.dense_chars = dense_chars  # what the embedding model sees of a text
        self.degraded = ""  # set when recall runs without the model (and why)
        s = settings
        self.conversation = Conversation(s.speaker_boost, s.turn_continuations, s.gate_threshold)

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
        explain: bool = False,
        format: str = "chunks",
    ) -> RecallResult:
        """The ranked evidence for `query`; the whole answer fits `budget_tokens` as the
        agent reads it (`memserver.core.render`, with routes and scores when `explain`).
        `format="map"`: ranked files with their most relevant places instead of code."""
        s = self.settings
        check_format(format)
        k = min(k or s.k, LIMITS.k_max)
        default_budget = s.map_budget_tokens if format == "map" else s.budget_tokens
        budget = check_budget(default_budget if budget_tokens is None else budget_tokens)
        check_query(query)
        started = time.perf_counter()
        snap = self.snapshots()
        filters = filters or Filters()
        masks = (arms.filter_mask(snap, filters), arms.memory_mask(snap, filters))
        plan = self._plan(query)
        files = max_files or s.max_files
        if plan.task is not None:
            result = self._recall_long(snap, plan, masks, include_memories, k, budget, files,
                                       explain, format)  # fmt: skip
        else:
            result = self._recall_short(snap, plan, masks, include_memories, k, budget, files,
                                        explain, format, rerank)  # fmt: skip
        result.signals["ms"] = (time.perf_counter() - started) * 1000
        return result

    def _plan(self, query: str) -> QueryPlan:
        s = self.settings
        return plan_query(
            query, expansions=s.expansions,
            weights=(s.original_weight, s.canonical_weight, s.expansion_weight),
            base_depth=s.candidates, long_words=s.long_query_words,
            rewrites=self.expander(query) if self.expander is not None else (),
        )  # fmt: skip

    def _empty(self, snap: Snapshot, query: str, conf: float, found: bool, fmt: str
               ) -> RecallResult:  # fmt: skip
        return RecallResult(
            query=query, found=found, confidence=round(conf, 4), tokens=0, truncated=False,
            evidence=(), unembedded=snap.unembedded() if self.embedder is not None else 0,
            degraded=self.degraded, format=fmt,
        )  # fmt: skip

    def _recall_short(
        self, snap: Snapshot, plan: QueryPlan, masks: Masks, include_memories: bool, k: int,
        budget: int, max_files: int, explain: bool, fmt: str, rerank: bool,
    ) -> RecallResult:  # fmt: skip
        s = self.settings
        query = plan.query
        evidence, firsts = self._retrieve(snap, plan, masks, include_memories, k)
        evidence = self._refine(snap, query, evidence, k, rerank)
        evidence = tests_after_code(evidence, query, s.secondary_weight)
        signals = self._signals(plan, evidence, firsts)
        conf = self._confidence(signals)
        # a question naming speakers of remembered turns: ask it again without the names
        # and prefer its subject's turns; the gate keeps the question's own signals and,
        # with one speaker named, holds back what only someone else said
        named, stripped = self.conversation.names(query, evidence[: 3 * k])
        if stripped:
            conf = self.conversation.hold_back(named, stripped, conf, self._lexical(snap, firsts))
            evidence, _ = self._retrieve(snap, self._plan(stripped), masks, include_memories, k)
            evidence = self._refine(snap, stripped, evidence, k, rerank)
        evidence = self.conversation.prefer_subject(query, named, evidence)
        evidence = continue_turns(
            evidence, s.turn_continuations, lambda e: self._next_turns(snap, e, masks[0])
        )
        result = self._empty(snap, query, conf, conf >= s.gate_threshold if evidence else False,
                             fmt)  # fmt: skip
        if fmt == "map":
            ranked = [(e.path, e.score, path_role(e.path)) for e in evidence]
            result = self._fit_map(result, ranked, evidence, budget, explain)
        else:
            result = self._fit(snap, result, evidence, budget, max_files, k, explain)
        result.signals.update(dict(zip(FEATURES, signals.vector(), strict=True)))
        return result

    def _recall_long(
        self, snap: Snapshot, plan: QueryPlan, masks: Masks, include_memories: bool, k: int,
        budget: int, max_files: int, explain: bool, fmt: str,
    ) -> RecallResult:  # fmt: skip
        s = self.settings

        def query_vector() -> np.ndarray | None:
            if not s.long_dense:
                return None
            qvs = self._query_vectors(snap, lambda: [dense_text(plan, self.dense_chars)])
            return qvs[0] if qvs else None

        answer = retrieve_long(
            snap, self.keyword, self.files, plan, query_vector, masks, s,
            include_memories=include_memories, k=k if fmt != "map" else s.map_files,
            evidence_of=lambda fused, via: self._evidence(snap, fused, via),
            reorder=self.file_order,
        )  # fmt: skip
        gate = long_signals(answer.files, answer.best_of)
        conf = confidence_of(gate, s.long_gate_weights, s.long_gate_bias)
        found = conf >= s.long_gate_threshold if answer.evidence else False
        result = self._empty(snap, plan.query, conf, found, fmt)
        ranked = [(f.path, f.score, f.role) for f in answer.files]
        if fmt == "map":
            result = self._fit_map(result, ranked, answer.evidence, budget, explain)
        else:
            result = self._fit(snap, result, answer.evidence, budget, max_files, k, explain,
                               also=ranked)  # fmt: skip
        result.signals.update(gate)
        return result

    def _fit_map(
        self, result: RecallResult, ranked: Sequence[tuple[str, float, str]],
        evidence: Sequence[Evidence], budget: int, explain: bool,
    ) -> RecallResult:  # fmt: skip
        """A map answer: as many of the ranked files (up to `map_files`) as fit the budget."""
        count = self.tokens.count if self.tokens is not None else _rough_count
        files = build_map(ranked, evidence, self.settings.map_files)
        while True:
            shown = replace(result, files=tuple(files), truncated=len(files) < len(ranked))
            used = max(count(render.dumps(render.recall_dict(shown, explain))),
                       count(render.recall_text(shown, explain)))  # fmt: skip
            if used <= budget or not files:
                return replace(shown, tokens=used)
            files.pop()

    def _fit(
        self, snap: Snapshot, result: RecallResult, ranked: list[Evidence], budget: int,
        max_files: int, k: int, explain: bool,
        also: Sequence[tuple[str, float, str]] | None = None,
    ) -> RecallResult:  # fmt: skip
        """Pack the ranked evidence so the whole answer, as the agent reads it (the JSON form
        and the text form, each counted with the real tokenizer), fits the budget. With
        `also` (a task's ranked files), the answer then names the files its evidence does
        not reach (`_also`)."""
        count = self.tokens.count if self.tokens is not None else _rough_count

        def cost(e: Evidence) -> int:
            return count(render.dumps(render.evidence_dict(e, explain))) + 1

        envelope = count(render.dumps(render.recall_dict(result, explain)))
        packed = pack(ranked, budget, max_files, k, cost=cost, overhead=envelope + 4)
        evidence = list(self._mark_changed(snap, packed.evidence))
        named: list[MapFile] = []
        if also is not None and evidence:
            evidence, named = self._also(evidence, also, ranked, budget - packed.tokens,
                                         max_files, explain, count)  # fmt: skip
        truncated = packed.truncated or len(evidence) < len(packed.evidence)
        while True:  # the estimates were close; the measure decides
            shown = replace(result, evidence=tuple(evidence), truncated=truncated,
                            also=tuple(named))  # fmt: skip
            used = max(count(render.dumps(render.recall_dict(shown, explain))),
                       count(render.recall_text(shown, explain)))  # fmt: skip
            if used <= budget or not evidence:
                return replace(shown, tokens=used)
            if named:
                named.pop()
            else:
                evidence.pop()
                truncated = True

    def _also(
        self, evidence: list[Evidence], ranked: Sequence[tuple[str, float, str]],
        pool: Sequence[Evidence], room: int, max_files: int, explain: bool,
        count: Callable[[str], int],
    ) -> tuple[list[Evidence], list[MapFile]]:  # fmt: skip
        """The next ranked files the evidence does not reach, one place each, until the
        answer spans `max_files` files: k chunks seldom span k files (on the DEV issues, 10
        chunks held 6.7 files), and where to look next costs a line where its code costs a
        chunk. When the `room` left in the budget holds too few of those lines, the last
        chunk that repeats a file gives way to them. Estimates: `_fit` measures."""

        def line(f: MapFile) -> int:
            return max(count(render.dumps(render.map_file_dict(f, explain))),
                       count(render.map_file_text(f, explain))) + 1  # fmt: skip

        def item(e: Evidence) -> int:
            return count(render.dumps(render.evidence_dict(e, explain))) + 1

        evidence = list(evidence)
        room -= count(render.ALSO_HEADING) + 4
        named: list[MapFile] = []
        while evidence:
            shown = {e.path for e in evidence}
            if len(shown) >= max_files:
                return evidence, []
            rest = [r for r in ranked if r[0] not in shown]
            wanted = [replace(f, symbols=f.symbols[:1])
                      for f in build_map(rest, pool, max_files - len(shown))]  # fmt: skip
            named, left = [], room
            for f in wanted:
                left -= line(f)
                if left < 0:
                    break
                named.append(f)
            firsts = {e.path: i for i, e in reversed(list(enumerate(evidence)))}
            repeats = [i for i, e in enumerate(evidence) if firsts[e.path] != i]
            if len(named) == len(wanted) or not repeats:
                break
            room += item(evidence.pop(repeats[-1]))
        return evidence, named

    # -- stages --------------------------------------------------------------------

    def _retrieve(
        self, snap: Snapshot, plan: QueryPlan, masks: Masks, include_memories: bool, k: int
    ) -> tuple[list[Evidence], dict[str, Ranked]]:
        """Arms and fusion for a short query: the evidence rows, best first."""
        s = self.settings
        # dense arms for the first routes only: MiniLM already maps synonyms close together,
        # and each extra route costs a model call (~6 ms on 2 cores)
        routes = plan.routes[: max(1, s.dense_routes)]
        qvs = self._query_vectors(snap, lambda: [r.text for r in routes])
        specs = arms.plan_arms(plan, s, dense_count=len(qvs), include_memories=include_memories,
                               large=snap.large, graph=self.graph is not None)  # fmt: skip
        ranked, weights, via = arms.run_arms(specs, snap, self.keyword, plan, qvs, masks,
                                             self.graph)  # fmt: skip
        fused = rrf(ranked, weights, k=s.rrf_k)[: max(plan.depth, 3 * k)]
        firsts = {a.split("/", 1)[1]: r for a, r in ranked.items() if a.startswith("original/")}
        return self._evidence(snap, fused, via), firsts

    def _query_vectors(self, snap: Snapshot, texts: Callable[[], list[str]]
                       ) -> list[np.ndarray]:  # fmt: skip
        """The query's vectors for the dense arms; none without vectors in the index, or
        when the model cannot be loaded: recall then runs on keywords and says why."""
        if self.embedder is None or not snap.has_vectors():
            return []
        try:
            vectors = self.embedder.embed_documents(texts())
        except ModelUnavailable as exc:
            self.degraded = (f"keyword search only: {exc.message}; fix: run `memserver model "
                             "fetch`, or see `memserver doctor`")  # fmt: skip
            return []
        self.degraded = ""
        return [np.asarray(v, dtype=np.float32) for v in vectors]

    def _refine(
        self, snap: Snapshot, query: str, evidence: list[Evidence], k: int, rerank: bool
    ) -> list[Evidence]:
        """Neighbouring chunks merged in the first k (only what can reach the pack is worth
        merging and re-counting), then the cross-encoder's order when there is one."""
        evidence = merge_adjacent(snap, evidence[:k], self.tokens) + evidence[k:]
        if rerank and self.reranker is not None and evidence:
            evidence = self._rerank(query, evidence)
        return evidence

    def _evidence(self, snap: Snapshot, fused: Sequence[Fused], via: Via) -> list[Evidence]:
        out = []
        rows = snap.rows_of([f.id for f in fused])
        found = [(f, row) for f, row in zip(fused, rows, strict=True) if row is not None]
        chunks = snap.fetch([row for _, row in found])  # the lean view reads them by id
        for (f, row), c in zip(found, chunks, strict=True):
            out.append(
                Evidence(
                    id=c.id, path=c.path, start_line=c.start_line, end_line=c.end_line,
                    symbol=c.symbol, kind=c.kind, language=c.language, text=c.text,
                    score=f.score, tokens=c.tokens, routes=f.arms,
                    embedded=snap.embedded_at(row),
                    memory_ids=tuple(sorted(via.get(c.id, set()))),
                    stale=snap.is_stale(row), speaker=c.speaker,
                )
            )  # fmt: skip
        return out

    def _lexical(self, snap: Snapshot, firsts: dict[str, Ranked]) -> list[Evidence]:
        """The keyword arm's best turns: who states the question's words is a lexical
        question, and the fused order mixes in turns found by meaning alone."""
        best = firsts.get("bm25", [])[:COMPARED]
        return self._evidence(snap, [Fused(cid, score, ("bm25",)) for cid, score in best], {})

    def _next_turns(self, snap: Snapshot, e: Evidence, mask: np.ndarray | None
                    ) -> list[Evidence]:  # fmt: skip
        """The turns that follow `e` in its conversation (up to 3 on), as evidence."""
        row = snap.rows_of([e.id])[0]
        if row is None:
            return []
        rows = [r for r in snap.next_turns(row, 3) if mask is None or mask[r]]
        return self._evidence(snap, [Fused(snap.id_at(r), e.score, ("next-turn",))
                                     for r in rows], {})  # fmt: skip

    def _mark_changed(self, snap: Snapshot, evidence: Sequence[Evidence]) -> tuple[Evidence, ...]:
        """Evidence from a file that changed on disk since it was indexed gets `stale`.

        One stat per file returned; the content is hashed only when size or mtime moved,
        so a touched but unchanged file is not reported."""
        if self.root is None:
            return tuple(evidence)
        changed: dict[str, bool] = {}
        out = []
        for e in evidence:
            known = snap.file_state(e.path)
            if known is None:  # a note or turn: its staleness comes from its memories
                out.append(e)
                continue
            if e.path not in changed:
                size, mtime_ns, digest = known
                changed[e.path] = changed_on_disk(
                    self.root, e.path, size, mtime_ns, content_hash, digest
                )
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
        text = f"{top.path} {top.symbol} {top.text}"
        documents, frequencies = self.keyword.doc_frequencies(plan.content_words)
        return GateSignals(
            dense=dense[0][1] if dense else 0.0,
            memory=memory[0][1] if memory else 0.0,
            coverage=coverage(plan.content_words, text),
            agree=(in_dense + in_bm25) / 2,
            margin=(dense[0][1] - dense[min(9, len(dense) - 1)][1]) if dense else 0.0,
            missing=missing(plan.content_words, text, documents, frequencies),
        )

    def _confidence(self, signals: GateSignals) -> float:
        s = self.settings
        if self.embedder is None or self.degraded:  # BM25 only: lexical coverage is all
            return signals.coverage
        return confidence(signals, s.gate_weights, s.gate_bias)


def _rough_count(text: str) -> int:
    """Without a tokenizer (tests of single stages): about four characters a token."""
    return len(text) // 4 + 1


def tests_after_code(evidence: list[Evidence], query: str, weight: float) -> list[Evidence]:
    """Test files' chunks ranked at `weight` times their score, unless the query asks
    about tests: a question about behaviour means the code, and a test of that code shares
    its words (on the DEV code set the top hit was a test for 21 of 375 questions, the
    gold never). Notes and turns are never test files, so they keep their place. A query
    of several lines is an issue or task, asked about as a long one is (its title's words
    decide, `about_tests_or_docs`); a line alone is a question."""
    if weight >= 1.0:
        return evidence
    text = query.strip()
    asked = about_tests_or_docs(parse_task(text)) if "\n" in text else asked_roles(text)
    if TEST in asked:
        return evidence
    if not any(path_role(e.path) == TEST for e in evidence):
        return evidence

    def lowered(score: float) -> float:  # a reranker's scores may be negative
        return score * weight if score >= 0 else score / max(weight, 1e-6)

    scaled = [replace(e, score=lowered(e.score)) if path_role(e.path) == TEST else e
              for e in evidence]  # fmt: skip
    return sorted(scaled, key=lambda e: -e.score)
