"""The benchmarks use names the package still has: a benchmark is run by hand, weeks after
the change that renamed what it imports, so nothing else would notice."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def _ours(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every `from memserver… / indexers… import name` in the file,
    at its top or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] in ("memserver", "indexers")
        ):
            found += [(str(node.module), alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_a_benchmark_imports_only_what_exists(path: Path) -> None:
    missing = []
    for module, name in _ours(path):
        held = importlib.import_module(module)
        if not hasattr(held, name):
            try:  # a submodule (`from memserver.store import graph`)
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    assert not missing, f"{path.name} imports names that are gone: {missing}"


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    script = tmp_path / "b.py"
    script.write_text(
        "from memserver.engine import Engine\n"
        "def run():\n    from memserver.store.chunks import chunk_from_row\n"
    )
    assert _ours(script) == [("memserver.engine", "Engine"),
                             ("memserver.store.chunks", "chunk_from_row")]  # fmt: skip
