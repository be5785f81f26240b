"""The benchmarks use names the package still has: a benchmark is run by hand, weeks after
the change that renamed what it imports, so nothing else would notice."""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import write_tree

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


_PACKAGE = {
    "shop/__init__.py": "from shop.cart import Cart\n",
    "shop/cart.py": "from shop.prices import total_of\n\n\nclass Cart:\n"
    "    def __init__(self):\n        self.items = []\n\n"
    "    def add(self, item):\n        self.items.append(item)\n        return self\n\n"
    "    def total(self):\n        return total_of(self.items)\n",
    "shop/prices.py": "def total_of(items):\n    return sum(price_of(i) for i in items)\n\n\n"
    "def price_of(item):\n    return item.price\n",
    "shop/checkout.py": "from shop.cart import Cart\n\n\ndef checkout(things):\n"
    "    cart = Cart()\n    for t in things:\n        cart.add(t)\n    return cart.total()\n",
}


@pytest.mark.slow
def test_the_graph_benchmarks_run_on_a_small_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """They call into the graph's internals (a reading, resolution): run, not only
    imported, so a change there that breaks them fails here, not weeks later."""
    root = write_tree(tmp_path / "shop", _PACKAGE)
    sys.path.insert(0, str(BENCHMARKS[0].parent))
    try:
        graph_jedi = importlib.import_module("graph_jedi")
        graph_latency = importlib.import_module("graph_latency")
        graph_overhead = importlib.import_module("graph_overhead")
    finally:
        sys.path.remove(str(BENCHMARKS[0].parent))
    assert graph_jedi.main([str(root), "--stored", "--names", "4", "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    [package] = checked if isinstance(checked, list) else checked["packages"]
    assert package["names"] == 4 and package["symbol_agreement"] == 1.0
    assert package["references_recall"] == 1.0
    assert graph_latency.main([str(root), "--names", "4", "--json"]) == 0
    [timed] = json.loads(capsys.readouterr().out)
    assert timed["files"] == len(_PACKAGE) and timed["names"] == 4
    assert timed["outline_map_first_ms"] > 0 and timed["symbol_ms"]["p95"] > 0
    assert graph_overhead.main([str(root), "--repeat", "2", "--floor", "--json"]) == 0
    [overhead] = json.loads(capsys.readouterr().out)
    low, high = overhead["paired_interval"]
    assert low <= overhead["paired_share"] <= high and overhead["graph_bytes"] > 0
    low, high = overhead["floor_paired_interval"]
    assert low <= overhead["floor_paired_share"] <= high
    low, high = overhead["whole_run_paired_interval"]
    assert low <= overhead["whole_run_paired_share"] <= high
    assert graph_overhead.main([str(root), "--cli", "--repeat", "1", "--json"]) == 0
    [command] = json.loads(capsys.readouterr().out)
    assert command["keyword_phase_s"] > 0 and command["with_graph_s"] > 0
    low, high = command["whole_run_paired_interval"]
    assert low == command["whole_run_paired_share"] == high  # one repetition
    low, high = command["index_work_paired_interval"]
    assert low == command["index_work_paired_share"] == high


def test_the_paired_share_and_its_interval() -> None:
    """Run by run: a graph that costs a tenth of every run is a tenth with no doubt, however
    much the runs themselves vary; shares that vary give an interval around their median."""
    sys.path.insert(0, str(BENCHMARKS[0].parent))
    try:
        paired = importlib.import_module("graph_overhead").paired
    finally:
        sys.path.remove(str(BENCHMARKS[0].parent))
    without = [0.2, 0.5, 0.3, 0.9, 0.25]
    share, low, high = paired([w * 1.1 for w in without], without)
    assert round(share, 9) == round(low, 9) == round(high, 9) == 0.1
    varied = [w * (1 + s) for w, s in zip(without, (0.02, 0.3, 0.05, 0.08, 0.12), strict=True)]
    share, low, high = paired(varied, without)
    assert round(share, 9) == 0.08 and low < share < high
    assert round(low, 9) >= 0.02 and round(high, 9) <= 0.3  # within the shares seen
    # a whole run's extra time, of its keyword phase: 0.05 s more on a 0.25 s phase
    share, low, high = paired([1.05, 2.05, 0.55], [1.0, 2.0, 0.5], of=[0.25, 0.25, 0.25])
    assert round(share, 9) == round(low, 9) == round(high, 9) == 0.2
