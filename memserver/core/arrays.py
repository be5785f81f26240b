"""Array helpers shared by the layers that compute over whole columns (the store's graph
rows, navigation's rank)."""

from __future__ import annotations

import numpy as np

__all__ = ["ranges"]


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of range(s, s + n) for each start s and length n, in one go."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, np.int64)
    offsets = np.cumsum(lengths) - lengths  # where each range begins in the output
    out: np.ndarray = np.arange(total, dtype=np.int64) - np.repeat(offsets - starts, lengths)
    return out
