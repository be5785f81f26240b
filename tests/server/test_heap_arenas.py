"""`memserver serve` caps glibc's heap arenas (each thread would otherwise get its own)."""

from __future__ import annotations

import ctypes.util
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)

# Threads alive at once, each allocating from the C heap (buffers over pymalloc's 512 bytes);
# then glibc's own report of its heaps (malloc_info: one <heap> per arena) is counted.
PROBE = """
import ctypes, ctypes.util, os, sys, tempfile, threading
from memserver.server.cli_command import _server_heap
if sys.argv[1] == "capped":
    _server_heap()
barrier, held = threading.Barrier(6), []
def work():
    barrier.wait()
    held.append([bytearray(4096) for _ in range(200)])
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.fdopen.restype = ctypes.c_void_p
with tempfile.TemporaryFile() as fh:
    stream = libc.fdopen(os.dup(fh.fileno()), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    fh.seek(0)
    print(fh.read().decode().count("<heap nr="))
"""


def heaps(mode: str, **env: str) -> int:
    run = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", **env}, check=True)  # fmt: skip
    return int(run.stdout)


@pytest.mark.skipif(ctypes.util.find_library("c") is None, reason="no libc to load")
def test_the_server_keeps_to_a_few_heap_arenas_unless_the_environment_says_otherwise() -> None:
    assert heaps("default") >= 4  # six threads at once: arenas of their own
    assert heaps("capped") <= 2
    assert heaps("capped", MALLOC_ARENA_MAX="8") >= 4  # the user's setting wins


POOL = """
import sys
import pyarrow as pa  # imported first: the default pool is chosen already
from memserver.core import heap
heap.arrow_system_pool()
print(pa.default_memory_pool().backend_name)
"""


def pool(**env: str) -> str:
    run = subprocess.run([sys.executable, "-c", POOL], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", **env}, check=True)  # fmt: skip
    return run.stdout.strip()


def test_arrow_takes_the_system_allocator_unless_the_environment_says_otherwise() -> None:
    """`memserver index` and `serve` give Arrow's buffers to the system allocator, also
    when pyarrow was imported before (its default pool chosen)."""
    assert pool() == "system"
    chosen = pa_default_backend()
    assert pool(ARROW_DEFAULT_MEMORY_POOL=chosen) == chosen  # the user's setting wins


def pa_default_backend() -> str:
    """The pool pyarrow picks by itself here (mimalloc or jemalloc where built in)."""
    code = "import pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"}, check=True)  # fmt: skip
    return run.stdout.strip()
