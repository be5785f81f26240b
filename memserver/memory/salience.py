"""Information scoring of conversation turns (SimpleMem-style), before they are stored.

A turn's score is the mean of two signals, each in [0, 1]:
- novelty: the share of its entities and content words the conversation has not used yet;
- divergence: 1 − its best cosine with the previous `window` turns.
Small talk ("Thanks!", "Haha, same") scores low on both. Turns below the threshold are
counted and dropped; the threshold default is set on DEV so that no evidence turn of the
LoCoMo DEV set would be dropped (see `memserver eval locomo`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memserver.text.sentences import entities
from memserver.text.terms import STOP_WORDS, words

__all__ = ["WINDOW", "turn_scores"]

WINDOW = 5


def _terms(text: str) -> set[str]:
    body = text.split(":", 1)[-1]  # "<speaker>: <text>": the speaker is not news
    found = {e.lower() for e in entities(body)}
    found |= {w for w in words(body) if len(w) > 2 and w not in STOP_WORDS}
    return found


def turn_scores(texts: Sequence[str], vectors: np.ndarray | None, window: int = WINDOW
                ) -> list[float]:  # fmt: skip
    """One score per turn, in conversation order."""
    seen: set[str] = set()
    out = []
    unit = None
    if vectors is not None and len(vectors):
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = vectors / np.where(norms == 0, 1.0, norms)
    for i, text in enumerate(texts):
        terms = _terms(text)
        novelty = len(terms - seen) / len(terms) if terms else 0.0
        seen |= terms
        divergence = 1.0
        if unit is not None and i > 0:
            prev = unit[max(0, i - window) : i]
            divergence = 1.0 - float(np.max(prev @ unit[i]))
        out.append(0.5 * novelty + 0.5 * max(0.0, min(1.0, divergence)))
    return out
