"""glibc's heap, where there is one: its arenas capped, its free pages given back.

A long-lived process (the server) keeps what glibc freed in each thread's arena for the
rest of its life; both functions do nothing where the C library is not glibc (macOS,
musl), so they are safe to call anywhere.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from typing import Any

__all__ = ["cap_arenas", "trim"]

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
