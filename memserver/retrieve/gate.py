"""The answerability gate: is the answer in the index at all?

Signals (all computed from what recall already has, no extra model call):
- dense: cosine of the best chunk for the original query (the strongest single signal);
- memory: cosine of the best distilled memory;
- coverage: share of the query's content words found in the top evidence
  (text, symbol and path, identifiers split);
- agree: whether the top result is also near the top of both the dense and
  the BM25 arm of the original query;
- margin: how far the best dense score stands above the tenth.
A logistic model over these gives `confidence`; `found` is confidence ≥ the
threshold. Weights are fitted on the DEV code bench (`memserver eval code
--calibrate`) and live in the config, so they can be refitted without code.
Expansions never feed the gate: only original-route signals do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from memserver.text.terms import words

FEATURES = ("dense", "memory", "coverage", "agree", "margin")


@dataclass(frozen=True, slots=True)
class GateSignals:
    dense: float = 0.0
    memory: float = 0.0
    coverage: float = 0.0
    agree: float = 0.0
    margin: float = 0.0

    def vector(self) -> list[float]:
        return [getattr(self, f) for f in FEATURES]


def coverage(content_words: Sequence[str], text: str) -> float:
    if not content_words:
        return 0.0
    have = set(words(text))
    stems = {w[:5] for w in have}
    hit = sum(1 for w in content_words if w in have or w[:5] in stems)
    return hit / len(content_words)


def confidence(signals: GateSignals, weights: Sequence[float], bias: float) -> float:
    z = bias + sum(w * x for w, x in zip(weights, signals.vector(), strict=True))
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))
