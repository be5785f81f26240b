"""The model's word-embedding table read row by row, only where a text's tokens are.

The int8 copy (`embed.quantize`) keeps its 30,522 x 384 word table in fp32 in the weights
file, 47 MB, which ONNX Runtime maps. A query reads a few dozen of its rows, but every
row touched maps the file around it (64 KB of fault-around, or a whole large page-cache
folio on kernels that keep files in them), so a long-lived server's resident set grew by
the vocabulary its queries met: 2.3 -> 16.5 MB of the weights file after 100 distinct
questions on one package, the whole of the difference between 100 repeated questions and
100 distinct ones.

Here the table is an initializer this process supplies instead (`SessionOptions.
add_initializer`: ONNX Runtime then reads that buffer and not the file): anonymous
memory, reserved but untouched (no huge pages, so a row costs its own 4 KB pages), and
each row is read from the weights file (`os.pread`) the first time a text asks for it.
The Gather reads the same float32 values, so the vectors are bit-identical. All sessions
of one weights file in a process share one table.

Where the graph reads the ids' values in that Gather alone (`slots` in the file, decided
from the graph when the copy is built), rows are packed: the first row a text asks for
takes the table's first slot, the next the second, and the ids fed to the session are
translated to slots. A row then costs its 1.5 KB, not the 4 KB page around it: 100
distinct questions on one package touched 509 rows, 560 pages scattered and 191 packed.

Where the table is comes from `quantize.WORD_TABLE_FILE` beside the model (written when a
copy is built; `quantize.resolve` adds it to a copy built before): without it, or when it
does not match the weights file, sessions read the table from the file as before.
"""

from __future__ import annotations

import json
import mmap
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["WORD_TABLE_FILE", "WordTable"]

WORD_TABLE_FILE = "word_table.json"  # {name, location, offset, length, rows, dim, slots}|null
_ROW_BYTES = 4  # float32

_SHARED: dict[tuple[str, int], WordTable] = {}
_SHARED_LOCK = threading.Lock()


class WordTable:
    """One weights file's word table, filled lazily; `value` is the ONNX Runtime OrtValue
    over it (kept alive here: sessions read it for as long as they live)."""

    def __init__(self, weights: Path, name: str, offset: int, rows: int, dim: int,
                 slots: bool = False) -> None:  # fmt: skip
        import onnxruntime as ort

        self.name, self.rows, self.dim, self.slots = name, rows, dim, slots
        self._row_bytes = dim * _ROW_BYTES
        self._offset = offset
        self._fd = os.open(weights, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        size = rows * self._row_bytes
        if hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS"):
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS  # plain anonymous memory
            self._buffer = mmap.mmap(-1, size, flags=flags)  # zero, nothing resident yet
        else:
            self._buffer = mmap.mmap(-1, size)
        if hasattr(mmap, "MADV_NOHUGEPAGE"):  # a 2 MB page per row touched would undo it
            self._buffer.madvise(mmap.MADV_NOHUGEPAGE)
        self.table = np.frombuffer(self._buffer, np.float32).reshape(rows, dim)
        # each token id's row in `table` (-1: not read yet); the id itself without slots
        self.slot_of = np.full(rows, -1, dtype=np.int32)
        self.used = 0  # slots taken (packed: rows 0 .. used-1 of `table` hold rows)
        self._lock = threading.Lock()
        self.value: Any = ort.OrtValue.ortvalue_from_numpy(self.table)

    @classmethod
    def of(cls, folder: Path) -> WordTable | None:
        """The shared table of the model in `folder`, or None when its place is not known
        or does not fit the weights file (the session then reads the file itself)."""
        try:
            place = json.loads((folder / WORD_TABLE_FILE).read_text(encoding="utf-8"))
            weights = folder / str(place["location"])
            offset, length = int(place["offset"]), int(place["length"])
            rows, dim, name = int(place["rows"]), int(place["dim"]), str(place["name"])
            slots = place.get("slots") is True
            fits = (
                "/" not in str(place["location"])
                and rows > 0
                and dim > 0
                and length == rows * dim * _ROW_BYTES
                and offset >= 0
                and offset + length <= weights.stat().st_size
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not fits or not hasattr(os, "pread"):  # (no pread: Windows reads the file itself)
            return None
        key = (str(weights.resolve()), offset)
        with _SHARED_LOCK:
            held = _SHARED.get(key)
            if held is None:
                try:
                    held = _SHARED[key] = cls(weights, name, offset, rows, dim, slots)
                except OSError:
                    return None
            return held

    @property
    def loaded(self) -> np.ndarray:
        """Per token id: whether its row has been read."""
        return self.slot_of >= 0

    def need(self, ids: np.ndarray) -> np.ndarray:
        """Read the rows of these token ids that no text has asked for yet; the ids to feed
        the session (their slots, when rows are packed). An id out of the table's range is
        left as it is (the session rejects it, as it would have)."""
        valid = (ids >= 0) & (ids < self.rows)
        wanted = np.unique(ids[valid])
        missing = wanted[self.slot_of[wanted] < 0]
        if len(missing):
            with self._lock:
                for row in missing[self.slot_of[missing] < 0].tolist():
                    at = self.used if self.slots else row
                    data = os.pread(self._fd, self._row_bytes,
                                    self._offset + row * self._row_bytes)  # fmt: skip
                    if len(data) != self._row_bytes:
                        raise OSError(f"the weights file ended before row {row} of its word table")
                    self.table[at] = np.frombuffer(data, np.float32)
                    self.slot_of[row] = at  # after the row is in place: readers see it whole
                    self.used += 1
        if not self.slots:
            return ids
        return np.where(valid, self.slot_of[np.where(valid, ids, 0)], ids)
