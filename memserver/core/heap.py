"""glibc's heap, where there is one: its arenas capped, its free pages given back.

A long-lived process (the server) keeps what glibc freed in each thread's arena for the
rest of its life; both functions do nothing where the C library is not glibc (macOS,
musl), so they are safe to call anywhere.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["arrow_system_pool", "cap_arenas", "frozen_heap", "trim"]

_M_ARENA_MAX = -8  # mallopt's parameter (malloc.h)


@functools.cache
def _glibc() -> Any | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def trim() -> None:
    """Give the heap's free pages back to the system (every arena's)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def cap_arenas(arenas: int) -> None:
    """At most `arenas` heap arenas for the threads to come, unless `MALLOC_ARENA_MAX` in
    the environment says how many (glibc read it at start-up; the user's setting wins)."""
    libc = _glibc()
    if libc is not None and not os.environ.get("MALLOC_ARENA_MAX"):
        libc.mallopt(_M_ARENA_MAX, arenas)


def arrow_system_pool() -> None:
    """Arrow's buffers from the system allocator instead of a mimalloc heap of its own
    beside glibc's, which keeps what it freed: LanceDB's writes pass every batch through
    Arrow compute (its checks of the vector column), and `memserver index` on Django 3.2
    peaked at 896-926 MB with mimalloc against 776 MB with this, as fast (keyword phase,
    two runs each). `ARROW_DEFAULT_MEMORY_POOL` in the environment wins."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"  # for pyarrow imported from now on
    pa = sys.modules.get("pyarrow")
    if pa is not None:  # imported already: its default pool is chosen; set it
        pa.set_memory_pool(pa.system_memory_pool())


_FROZEN = [0]  # runs inside `frozen_heap` now
_FROZEN_LOCK = threading.Lock()


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Python's cycle collector leaves the objects that exist now alone until the block
    ends (`gc.freeze`): its full collections then go through what the block made, not
    through every module, table and grammar the process holds. In `memserver index` on
    rxjs's sources the code graph's answers and rows set one off, 26-33 ms of the main
    process's CPU in a keyword phase of 0.6 s (three runs; none without the graph).
    Objects are still freed by their counts as usual; a cycle among the frozen ones is
    collected after the block. Nested and concurrent blocks unfreeze when the last one
    ends."""
    with _FROZEN_LOCK:
        _FROZEN[0] += 1
        gc.freeze()
    try:
        yield
    finally:
        with _FROZEN_LOCK:
            _FROZEN[0] -= 1
            if _FROZEN[0] == 0:
                gc.unfreeze()
