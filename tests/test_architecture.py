"""The shape of the code: what may import what, read from the source with `ast`.

Imports point inward (STYLE.md): edges (server, CLI) → the engine → services (ingest,
retrieve, memory, navigate) → adapters (store, embed, llm, indexers) → text → core. Services never
import each other; ranking never touches storage; Arrow and LanceDB stay in the store.
Imports under `if TYPE_CHECKING:` name types only and are not counted.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import memserver

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("memserver", "indexers")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> set[str]:
    """Every module imported anywhere in a file (functions included), but type-only ones."""
    found: set[str] = set()
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)  # and each name, which may be a module of the package
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            graph[_module(path)] = _imports(ast.parse(path.read_text(encoding="utf-8")))
    return graph


GRAPH = _graph()


def _ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def _layer(module: str) -> str:
    """`memserver.store.index` → `store`; `indexers.walk` → `indexers`."""
    parts = module.split(".")
    if parts[0] == "indexers":
        return "indexers"
    return parts[1] if len(parts) > 1 else "memserver"


def _edges(within: str = "") -> dict[str, set[str]]:
    """module → the modules of ours it imports (module names resolved to files we have)."""
    out: dict[str, set[str]] = defaultdict(set)
    for module, imported in GRAPH.items():
        for name in imported:
            if not _ours(name):
                continue
            target = name
            while target not in GRAPH and "." in target:  # `from x.y import z` names x.y
                target = target.rsplit(".", 1)[0]
            if target in GRAPH and target != module:
                out[module].add(target)
    return out


def test_no_import_cycles() -> None:
    edges = _edges()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    # a package's __init__ re-exporting its own modules is not a cycle between modules
    cycles = [c for c in cycles if not all(m.startswith(c[0] + ".") or m == c[0] for m in c)]
    assert cycles == []


# layer → the layers of ours it may import
ALLOWED = {
    "core": {"core"},
    "text": {"core", "text"},
    "indexers": {"core", "indexers"},
    "config": {"core", "llm"},  # llm.settings: a plain dataclass
    "tokens": {"core"},
    "embed": {"core", "config", "text", "embed"},
    "llm": {"core", "config", "llm"},
    "store": {"core", "text", "store"},
    "graph": {"core", "graph"},
    "ingest": {"core", "config", "text", "store", "indexers", "ingest"},
    "retrieve": {"core", "config", "text", "indexers", "retrieve"},
    "navigate": {"core", "text", "store", "graph", "indexers", "navigate"},
    "memory": {"core", "config", "text", "store", "indexers", "memory"},
}


def test_layers_import_only_inward() -> None:
    wrong = [
        (module, target)
        for module, targets in _edges().items()
        for target in targets
        if _layer(module) in ALLOWED and _layer(target) not in ALLOWED[_layer(module)]
    ]
    assert wrong == []


def test_the_edges_talk_to_the_engine_not_to_services() -> None:
    services = {"ingest", "retrieve", "memory", "navigate", "graph", "store", "embed", "llm"}
    wrong = [
        (module, target)
        for module, targets in _edges().items()
        if _layer(module) in ("server", "cli")
        for target in targets
        if _layer(target) in services and target != "memserver.store.meta"
    ]
    assert wrong == []


def test_services_name_only_the_index_store_of_the_store() -> None:
    """A service holds an `IndexStore` and its readers; nothing below it. (The tags' row
    form too: a tags worker makes it without importing the store.)"""
    wrong = [
        (module, target)
        for module, targets in _edges().items()
        if _layer(module) in ("ingest", "memory", "navigate")
        for target in targets
        if _layer(target) == "store"
        and target not in ("memserver.store.index", "memserver.store.graphpart")
    ]
    assert wrong == []


def test_arrow_and_lancedb_stay_in_the_store() -> None:
    wrong = [
        module
        for module, imported in GRAPH.items()
        if _layer(module) != "store"
        and any(name.split(".")[0] in ("pyarrow", "lancedb") for name in imported)
    ]
    assert wrong == []


def test_the_public_surface_is_pinned() -> None:
    assert memserver.__all__ == [
        "Engine",
        "Evidence",
        "Filters",
        "IndexReport",
        "MemserverError",
        "Note",
        "RecallResult",
        "__version__",
    ]
    assert all(hasattr(memserver, name) for name in memserver.__all__)
