"""Weighted reciprocal-rank fusion of ranked candidate lists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fused:
    id: str
    score: float
    arms: tuple[str, ...]


def rrf(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float] | None = None,
    k: int = 60,
) -> list[Fused]:
    """score(d) = Σ_arm weight / (k + rank); ties broken by id for determinism."""
    scores: dict[str, float] = {}
    arms: dict[str, list[str]] = {}
    for arm, hits in ranked.items():
        weight = 1.0 if weights is None else weights.get(arm, 1.0)
        for rank, (doc, _) in enumerate(hits, start=1):
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
            arms.setdefault(doc, []).append(arm)
    order = sorted(scores, key=lambda d: (-scores[d], d))
    return [Fused(d, scores[d], tuple(arms[d])) for d in order]
