"""A deterministic hashing embedder: no model, real storage, for fast tests.

Words and identifier parts are hashed into a fixed number of buckets with a
sign, then L2-normalised, so texts that share words are close. It is not a
semantic model; it exists so tests exercise the whole dense path quickly.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence

from memserver.text.terms import words


class HashingEmbedder:
    name = "hashing-256"
    dim = 256

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in words(text):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vec[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> list[list[float]]:
        out = [self._embed(t) for t in texts]
        if progress is not None and out:
            progress(len(out))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)
