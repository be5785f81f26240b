"""The answerability gate: is the answer in the index at all?

Signals (all computed from what recall already has, no extra model call):
- dense: cosine of the best chunk for the original query (the strongest single signal);
- memory: cosine of the best distilled memory;
- coverage: share of the query's content words found in the top evidence
  (text, symbol and path, identifiers split);
- agree: whether the top result is also near the top of both the dense and
  the BM25 arm of the original query;
- margin: how far the best dense score stands above the tenth;
- missing: how rare in this index the rarest content word of the query is that the top
  evidence lacks (BM25's idf of it over the idf of a word one document has: 0 when the
  evidence has every word, about 1 for a word the index has once, above 1 for one it has
  nowhere). A question asked of the wrong repository names things this one does not have.
A logistic model over these gives `confidence`; `found` is confidence ≥ the
threshold. Weights are fitted on the DEV code bench (`memserver eval code
--calibrate`) per embedding model (the dense signals are that model's cosines): the
config's gate is the default model's, and an index built by another model whose gate
was fitted gets that one (`gate_for`) unless the config sets a gate of its own.
Expansions never feed the gate: only original-route signals do.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from memserver.config import DEFAULT_MODEL, FP32_MODEL, RecallSettings
from memserver.text.terms import words

FEATURES = ("dense", "memory", "coverage", "agree", "margin", "missing")

Gate = tuple[tuple[float, ...], float, float]  # (weights over FEATURES, bias, threshold)

# The gate fitted on the DEV code bench (`memserver eval code --calibrate`, false
# abstention at most 1.5 % on the fitting queries) for each model and `[index]
# memory_vectors` (which memories have a vector: the "memory" signal is the best of their
# cosines). The int8 copy's with "none" is the config's default (configs/default.toml
# says what it gave). The others were fitted before a chunk's embedded text opened with
# its name line (text.passages), on 512 characters of a chunk: the int8 copy's "own"
# gate abstained 0.909 with 0.013 false (left out in turn, click / cobra / mongoose
# 0.909 / 1.0 / 0.864 with 0.040 / 0 / 0.032), its "definitions" gate 0.894 with 0.013;
# the fp32 model's "own" gate (2,000 characters) 0.909 with 0.016. A pair not fitted
# takes the model's "own" gate, or with "none" (no memory has a vector) the config's.
# The others were fitted before the `missing` signal: their five weights give it 0.
FITTED_GATES: dict[tuple[str, str], Gate] = {
    (FP32_MODEL, "own"): ((18.4196, 14.5424, 3.9074, 1.2029, -5.2954), -16.1027, 0.6305),
    (DEFAULT_MODEL, "own"): ((17.0593, 17.5579, 3.6558, 0.9637, -0.8807), -17.1668, 0.6478),
    (DEFAULT_MODEL, "definitions"): ((14.9434, 19.1863, 5.1879, 1.5177, -1.0693), -16.4682,
                                     0.64),
    (DEFAULT_MODEL, "none"): (RecallSettings.gate_weights, RecallSettings.gate_bias,
                              RecallSettings.gate_threshold),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class GateSignals:
    dense: float = 0.0
    memory: float = 0.0
    coverage: float = 0.0
    agree: float = 0.0
    margin: float = 0.0
    missing: float = 0.0

    def vector(self) -> list[float]:
        return [getattr(self, f) for f in FEATURES]


def _found(content_words: Sequence[str], text: str) -> list[bool]:
    """Per content word, whether `text` has it (or a word of the same five-letter stem)."""
    have = set(words(text))
    stems = {w[:5] for w in have}
    return [w in have or w[:5] in stems for w in content_words]


def coverage(content_words: Sequence[str], text: str) -> float:
    if not content_words:
        return 0.0
    return sum(_found(content_words, text)) / len(content_words)


def missing(content_words: Sequence[str], text: str, documents: int,
            frequencies: Sequence[int]) -> float:  # fmt: skip
    """The gate's `missing` signal: of the content words `text` lacks, the rarest one's idf
    (`frequencies`: how many of the index's `documents` hold each word) over log(1 + N)."""
    if documents <= 0:
        return 0.0
    lacked = [f for f, hit in zip(frequencies, _found(content_words, text), strict=True)
              if not hit]  # fmt: skip
    if not lacked:
        return 0.0
    idf = math.log(1 + (documents - min(lacked) + 0.5) / (min(lacked) + 0.5))
    return idf / math.log(1 + documents)


def gate_for(settings: RecallSettings, model: str, memory_vectors: str) -> RecallSettings:
    """`settings` with the gate fitted for `model` and `memory_vectors`, when there is one
    and the settings hold the default gate (a gate set in the config or the environment is
    kept as it is)."""
    fitted = FITTED_GATES.get((model, memory_vectors))
    if fitted is None and memory_vectors != "none":
        # "own" weighs a memory signal that "none" never has; it keeps the config's gate
        fitted = FITTED_GATES.get((model, "own"))
    default = RecallSettings()
    mine = (settings.gate_weights, settings.gate_bias, settings.gate_threshold)
    if fitted is None or mine != (default.gate_weights, default.gate_bias,
                                  default.gate_threshold):  # fmt: skip
        return settings
    weights, bias, threshold = fitted
    return dataclasses.replace(
        settings, gate_weights=weights, gate_bias=bias, gate_threshold=threshold
    )


def padded(weights: Sequence[float]) -> list[float]:
    """`weights` over every feature: a gate fitted before a feature existed weighs it 0."""
    if len(weights) > len(FEATURES):
        raise ValueError(f"{len(weights)} gate weights for {len(FEATURES)} signals {FEATURES}")
    return [*weights, *[0.0] * (len(FEATURES) - len(weights))]


def confidence(signals: GateSignals, weights: Sequence[float], bias: float) -> float:
    z = bias + sum(w * x for w, x in zip(padded(weights), signals.vector(), strict=True))
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


# -- long queries (task descriptions): is the first file the one? ----------------------
#
# On an issue the short-query signals say nothing (confidence ~0.9999 on every DEV issue):
# a long text always shares words with many chunks. What separates a clear answer from a
# guess is how the file ranking looks:
# - share: the first file's score over the first two's (a clear winner, or a tie);
# - agree: share of the ranking's own signals (whole file, best chunk, dense) whose best
#   file is the first file.
# Against "a gold file is among the first five" on the DEV issues their plain sum has an
# AUROC of 0.71 (share alone 0.70, agree 0.69); the title's words in the first file (0.64)
# and whether the issue names it (0.53) added nothing, and a logistic fit over all four did
# worse out of sample (leave-one-release-out 0.62): the gate is the sum, thresholded.
LONG_FEATURES = ("long_share", "long_agree")


class _Ranked(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def score(self) -> float: ...


def long_signals(files: Sequence[_Ranked], best_of: Mapping[str, str]) -> dict[str, float]:
    """The long-query gate's inputs (`best_of`: each signal's own best file)."""
    if not files:
        return dict.fromkeys(LONG_FEATURES, 0.0)
    first = files[0]
    second = files[1].score if len(files) > 1 else 0.0
    agree = [best_of[s] == first.path for s in ("file", "chunk", "dense") if s in best_of]
    return {
        "long_share": first.score / (first.score + second) if first.score > 0 else 0.0,
        "long_agree": sum(agree) / len(agree) if agree else 0.0,
    }


def confidence_of(signals: Mapping[str, float], weights: Sequence[float], bias: float) -> float:
    """The long-query gate: a logistic model over `LONG_FEATURES`."""
    z = bias + sum(w * signals.get(f, 0.0) for w, f in zip(weights, LONG_FEATURES, strict=True))
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))
