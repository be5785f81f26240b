"""Attribution: which of the sources an agent loaded support each claim of its answer.

The answer is split into claims (sentences; code spans, paths and versions kept
whole). Each claim is scored against each loaded source on these signals:

- dense: best cosine between the claim and a window of the source (a long chunk is
  cut into windows, so one matching function is not diluted by the rest);
- idents: share of the claim's identifiers and paths found in the source (whole, or
  as the same split words: `load_settings` ≈ `loadSettings`);
- numbers: share of the claim's numbers found in the source;
- words: share of the claim's content words found in the source;
- defines: share of the claim's identifiers the source defines (its chunk symbol is
  that name: `Context.invoke` fully, `invoke` half), which tells the function a claim is
  about from the callers that merely mention it;
- leads: how far the source is ahead of the best other loaded source on dense,
  identifiers and words (support is relative: the function a claim paraphrases beats
  its neighbours in the same pack).

A logistic model over these (fitted on data built from the DEV code bench, see
`memserver.eval.attribution`) gives a support probability; a source is cited for
a claim when it reaches the threshold. Only loaded sources can be cited: ids the
index does not hold, or whose text was erased, are returned as `rejected`. The
answer is never rewritten.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memserver.core.errors import BadRequest
from memserver.core.ids import content_hash
from memserver.core.protocols import Embedder, Sources
from memserver.core.requests import Scope, visible
from memserver.text.sentences import entities, sentences
from memserver.text.terms import STOP_WORDS, split_identifier, words

__all__ = ["FEATURES", "Attribution", "Attributor", "claim_features"]

FEATURES = (
    "dense", "idents", "numbers", "words", "defines", "lead", "idents_lead", "words_lead",
    "defines_lead",
)  # fmt: skip
WINDOW_LINES = 12
MAX_WINDOWS = 40
MAX_CLAIMS = 200
MAX_SOURCES = 100
WINDOW_CACHE = 4096  # sources whose window vectors are kept
SPAN_CACHE = 20_000  # evidence spans remembered from recent recalls
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?![\w])")


@dataclass
class Attribution:
    cited: list[str] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _windows(text: str) -> list[str]:
    lines = text.splitlines() or [text]
    step = WINDOW_LINES // 2
    out = ["\n".join(lines[i : i + WINDOW_LINES]) for i in range(0, max(1, len(lines)), step)]
    return [w for w in out if w.strip()][:MAX_WINDOWS] or [text]


def _ident_keys(ident: str) -> tuple[str, str]:
    """(lower-cased whole, its split words joined) — `loadSettings` and `load_settings` meet."""
    parts = [p for piece in re.split(r"[^A-Za-z0-9_]+", ident) for p in split_identifier(piece)]
    return ident.lower().strip("`()"), " ".join(parts)


@dataclass(frozen=True)
class _Source:
    id: str
    text: str
    lower: str
    split: str  # identifier words, space-joined
    words: frozenset[str]
    numbers: frozenset[str]
    symbols: frozenset[str]  # lower-cased qualified names the chunk defines, and last parts


def _source(sid: str, text: str, symbol: str = "") -> _Source:
    split_words = words(text)
    names = {s.strip().lower() for s in symbol.split(",") if s.strip()}
    names |= {f"~{n.rsplit('.', 1)[-1]}" for n in names}  # last parts, marked
    return _Source(
        sid, text, text.lower(), " " + " ".join(split_words) + " ", frozenset(split_words),
        frozenset(_NUMBER.findall(text)), frozenset(names),
    )  # fmt: skip


def _defines(ident: str, s: _Source) -> float:
    name = ident.strip("`").removesuffix("()").lower()
    if name in s.symbols:
        return 1.0
    return 0.5 if f"~{name.rsplit('.', 1)[-1]}" in s.symbols else 0.0


def _mentions(whole: str, split: str, s: _Source) -> float:
    if whole in s.lower or f" {split} " in s.split:
        return 1.0
    last = whole.rsplit(".", 1)[-1]
    return 0.5 if "." in whole and len(last) > 2 and last in s.lower else 0.0


def claim_features(claim: str, sources: Sequence[_Source], dense: np.ndarray) -> np.ndarray:
    """(n_sources, len(FEATURES)) signals of one claim; `dense` is its best cosine per source."""
    idents = [e for e in entities(claim) if not e[:1].isupper() or not e.isalpha()]
    keys = [_ident_keys(e) for e in idents]
    numbers = set(_NUMBER.findall(claim))
    content = {w for w in words(claim) if w not in STOP_WORDS and len(w) > 2}
    out = np.zeros((len(sources), len(FEATURES)), dtype=np.float32)
    for j, s in enumerate(sources):
        if keys:
            out[j, 1] = sum(_mentions(whole, split, s) for whole, split in keys) / len(keys)
            out[j, 4] = sum(_defines(i, s) for i in idents) / len(idents)
        out[j, 2] = len(numbers & s.numbers) / len(numbers) if numbers else 0.0
        out[j, 3] = len(content & s.words) / len(content) if content else 0.0
    out[:, 0] = dense
    if len(sources) > 1:  # how far ahead of the best other source, per signal
        for j in range(len(sources)):
            others = np.delete(out, j, axis=0)
            for lead, col in ((5, 0), (6, 1), (7, 3), (8, 4)):
                out[j, lead] = out[j, col] - float(others[:, col].max())
    return out


class Attributor:
    def __init__(
        self, store: Sources, embedder: Embedder | None, weights: Sequence[float],
        bias: float, threshold: float,
    ) -> None:  # fmt: skip
        self.store = store
        self.embedder = embedder
        self.weights = np.asarray(weights, dtype=np.float32)
        self.bias = bias
        self.threshold = threshold
        # window vectors by source text hash
        self._windows: OrderedDict[str, np.ndarray] = OrderedDict()
        # evidence recall returned: id → the text the caller saw (a merged span is longer
        # than the chunk its id names), so attribution scores what was actually loaded
        self._spans: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def note_evidence(self, evidence: Sequence[Any]) -> None:
        """Record evidence items (with .id, .path, .symbol, .text) a recall handed out."""
        for e in evidence:
            self._spans[e.id] = (f"{e.path} {e.symbol}\n{e.text}", e.symbol)
            self._spans.move_to_end(e.id)
        while len(self._spans) > SPAN_CACHE:
            self._spans.popitem(last=False)

    def load(self, ids: Sequence[str], scope: Scope = ()) -> tuple[list[_Source], list[str]]:
        """The sources behind `ids` (chunks, memories) the caller's scope may see, and the
        ids that cannot be cited (unknown, erased, forgotten or outside the scope)."""
        chunks, memories = self.store.sources(list(ids))
        chunks = {k: c for k, c in chunks.items() if visible(c.scope, scope)}
        memories = {k: m for k, m in memories.items() if visible(m.scope, scope)}
        sources, rejected = [], []
        for sid in dict.fromkeys(ids):
            if sid in self._spans and sid in chunks and chunks[sid].text:
                text, symbol = self._spans[sid]
                sources.append(_source(sid, text, symbol))
            elif sid in chunks and chunks[sid].text:
                c = chunks[sid]
                sources.append(_source(sid, f"{c.path} {c.symbol}\n{c.text}", c.symbol))
            elif sid in memories and memories[sid].text and memories[sid].status != "forgotten":
                sources.append(_source(sid, memories[sid].text))
            else:
                rejected.append(sid)
        return sources, rejected

    def dense(self, claims: Sequence[str], sources: Sequence[_Source]) -> np.ndarray:
        """(n_claims, n_sources): best cosine of each claim against each source's windows."""
        dense = np.zeros((len(claims), len(sources)), dtype=np.float32)
        if self.embedder is not None and claims and sources:
            cv = np.asarray(self.embedder.embed_documents(list(claims)), dtype=np.float32)
            for j, wv in enumerate(self._window_vectors(sources)):
                dense[:, j] = (cv @ wv.T).max(axis=1)
        return dense

    def features(self, claims: Sequence[str], sources: Sequence[_Source]) -> list[np.ndarray]:
        """Per claim, the (n_sources, n_features) signal matrix."""
        dense = self.dense(claims, sources)
        return [claim_features(c, sources, dense[i]) for i, c in enumerate(claims)]

    def _window_vectors(self, sources: Sequence[_Source]) -> list[np.ndarray]:
        assert self.embedder is not None
        keys = [content_hash(s.text) for s in sources]
        todo = [(k, s) for k, s in zip(keys, sources, strict=True) if k not in self._windows]
        windows = [_windows(s.text) for _, s in todo]
        flat = [w for ws in windows for w in ws]
        if flat:
            vecs = np.asarray(self.embedder.embed_documents(flat), dtype=np.float32)
            start = 0
            for (key, _), ws in zip(todo, windows, strict=True):
                self._windows[key] = vecs[start : start + len(ws)]
                start += len(ws)
        out = []
        for key in keys:
            self._windows.move_to_end(key)
            out.append(self._windows[key])
        while len(self._windows) > WINDOW_CACHE:
            self._windows.popitem(last=False)
        return out

    def probability(self, feats: np.ndarray) -> np.ndarray:
        z = feats @ self.weights + self.bias
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))), dtype=np.float64)

    def attribute(self, answer: str, evidence_ids: Sequence[str], scope: Scope = ()
                  ) -> Attribution:  # fmt: skip
        if not answer.strip():
            raise BadRequest("the answer is empty", hint="pass the text you want attributed")
        if not evidence_ids:
            raise BadRequest(
                "no evidence ids given",
                hint="pass the ids of the evidence items you loaded (from recall)",
            )
        if len(evidence_ids) > MAX_SOURCES:
            raise BadRequest(
                f"{len(evidence_ids)} evidence ids; at most {MAX_SOURCES}",
                hint="pass only the evidence you actually used",
            )
        claims = [c for c in sentences(answer) if any(ch.isalnum() for ch in c)][:MAX_CLAIMS]
        sources, rejected = self.load(list(evidence_ids), scope)
        out = Attribution(rejected=rejected)
        if not sources:
            out.claims = [{"text": c, "supported_by": [], "score": 0.0} for c in claims]
            out.unsupported = list(claims)
            return out
        cited: dict[str, None] = {}
        for claim, feats in zip(claims, self.features(claims, sources), strict=True):
            probs = self.probability(feats)
            ranked = sorted(
                ((s.id, float(p)) for s, p in zip(sources, probs, strict=True)
                 if p >= self.threshold),
                key=lambda x: -x[1],
            )  # fmt: skip
            support = [{"id": sid, "score": round(p, 4)} for sid, p in ranked]
            best = float(probs.max()) if len(probs) else 0.0
            out.claims.append({"text": claim, "supported_by": support, "score": round(best, 4)})
            if ranked:
                cited.update((sid, None) for sid, _ in ranked)
            else:
                out.unsupported.append(claim)
        out.cited = list(cited)
        return out
