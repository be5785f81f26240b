"""Readings of the stored graph: a reading derived from the last one when files change
answers as a reading built afresh, and a symbol table replaced file by file holds what a
new one would."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from indexers.treesitter.tags import extract_tags
from memserver.engine import Engine
from memserver.graph import SymbolTable
from memserver.graph.table import _INDEXES
from memserver.navigate.view import GraphIndex
from tests.conftest import write_tree
from tests.store.test_graph_store import FILES


def _contents(table: SymbolTable) -> dict[str, dict[object, Counter[str]]]:
    return {
        index: {k: Counter(map(repr, v)) if isinstance(v, list) else Counter([repr(v)])
                for k, v in getattr(table, index).items()}
        for index in _INDEXES
    }  # fmt: skip


def test_a_replaced_symbol_table_holds_what_a_new_one_would() -> None:
    tags = {p: extract_tags(p, t, "python") for p, t in FILES.items() if p.endswith(".py")}
    table = SymbolTable(tags.values())
    before = _contents(table)
    changed = extract_tags("pkg/util.py", "def jitter():\n    return 0\n", "python")
    replaced = table.replaced(["pkg/__init__.py"], [changed])
    expected = {**tags, "pkg/util.py": changed}
    del expected["pkg/__init__.py"]
    fresh = _contents(SymbolTable(expected.values()))
    got = _contents(replaced)
    for index in _INDEXES:
        if index != "folder_tails":  # a folder's tails stay, naming no file
            assert got[index] == fresh[index], index
    assert _contents(table) == before  # the old table is left as it was
    assert [d.qualified for d in replaced.lookup("jitter")] == ["jitter"]
    assert table.lookup("jitter") == []


def test_a_derived_reading_answers_as_a_fresh_one(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", FILES)
    engine = Engine(root, None, embedder_flag="none", env={})
    engine.index()
    store = engine.open_store()
    view = engine.graph_view(store)
    first = view.get()
    (root / "pkg/util.py").write_text("def backoff(request, tries=3):\n    return [request]\n")
    (root / "pkg/__init__.py").unlink()
    engine.index()
    derived = view.get()
    assert derived is not first
    fresh = GraphIndex(store.graph.load(columns=True), store.files.read())
    assert set(derived.files) == set(fresh.files) == {"pkg/client.py", "pkg/util.py"}
    for name in ("backoff", "Client.send", "Client"):
        [d1], [d2] = derived.lookup(name), fresh.lookup(name)
        assert d1 == d2 and derived.def_id(d1) == fresh.def_id(d2)
        assert [a.ref for a in derived.references_to([d1])] == [
            a.ref for a in fresh.references_to([d2])]  # fmt: skip
    assert first.lookup("backoff")[0].signature == "def backoff(request):"  # unchanged
    assert derived.name_files == fresh.name_files
    assert derived.chunks == fresh.chunks and derived.versions == fresh.versions


def test_references_read_by_column_are_the_references_stored(tmp_path: Path) -> None:
    """The whole graph read as compact columns (codes into distinct strings, integer
    arrays) gives every file the references and chunks the object reading gives it, as
    plain Python values."""
    real = Path(extract_tags.__code__.co_filename).read_text()  # a module with many uses
    root = write_tree(tmp_path / "repo", {**FILES, "pkg/tags.py": real})
    engine = Engine(root, None, embedder_flag="none", env={})
    engine.index()
    graph = engine.open_store().graph
    plain = {s.tags.path: s for s in graph.load()}
    by_column = {s.tags.path: s for s in graph.load(columns=True)}
    assert plain.keys() == by_column.keys()
    assert sum(len(s.tags.references) for s in plain.values()) > 500
    for path, stored in by_column.items():
        cols = stored.columns
        assert cols is not None
        made = cols.references(path)
        assert made == list(plain[path].tags.references), path
        assert list(cols.chunk_id) == list(plain[path].reference_chunks)
        assert all(type(r.line) is int and type(r.name) is str for r in made)
        assert len(cols.name) == len(made) and list(cols.name[1:3]) == [r.name for r in made[1:3]]


def test_a_files_uses_of_a_name_are_those_of_all_its_references(tmp_path: Path) -> None:
    """Asked before a file's references are made, `named` makes only that name's; they are
    the ones, in the order and with the chunks, that its whole list holds."""
    from memserver.navigate.view import FileEntry

    real = Path(extract_tags.__code__.co_filename).read_text()  # a module with many uses
    root = write_tree(tmp_path / "repo", {**FILES, "pkg/tags.py": real})
    engine = Engine(root, None, embedder_flag="none", env={})
    engine.index()
    [stored] = [s for s in engine.open_store().graph.load(columns=True)
                if s.tags.path == "pkg/tags.py"]  # fmt: skip
    names = Counter(stored.columns.name if stored.columns is not None else ())
    asked = [n for n, _ in names.most_common(5)] + ["no_such_name"]
    early = FileEntry(stored)
    first = {n: early.named(n) for n in asked}
    assert early._refs is None  # none made but the asked ones
    whole = FileEntry(stored).refs()
    for name in asked:
        assert first[name] == [at for at in whole if at.ref.name == name], name
        assert len(first[name]) == names[name]
    assert early.named(asked[0]) is first[asked[0]]  # made once
