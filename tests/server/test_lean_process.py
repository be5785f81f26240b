"""What a server process leaves out: libraries it does not need, heaps beside glibc's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import os, sys
from memserver.server.cli_command import _server_heap
if sys.argv[1] == "served":
    _server_heap()
import pyarrow as pa
from memserver.server.app import build_server
build_server(sys.argv[2])
print(pa.default_memory_pool().backend_name, "rich" in sys.modules, "fastembed" in sys.modules)
"""


def probe(mode: str, root: Path, **env: str) -> list[str]:
    run = subprocess.run([sys.executable, "-c", PROBE, mode, str(root)], capture_output=True,
                         text=True, env={"PATH": "/usr/bin:/bin", **env}, timeout=120,
                         check=True)  # fmt: skip
    return run.stdout.split()


def test_a_server_takes_arrows_buffers_from_the_system_heap_unless_told_otherwise(
    tmp_path: Path,
) -> None:
    assert probe("served", tmp_path)[0] == "system"
    assert probe("served", tmp_path, ARROW_DEFAULT_MEMORY_POOL="mimalloc")[0] == "mimalloc"


def test_building_the_server_imports_neither_rich_nor_fastembed(tmp_path: Path) -> None:
    assert probe("plain", tmp_path)[1:] == ["False", "False"]
