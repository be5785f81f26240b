"""The code graph's tables: written with the chunks of their file, one version per file
content, closed when the file changes or goes, reopened when it comes back, reconciled
after a crash, forgotten and erased with their file, and checked by `doctor`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from indexers.treesitter.tags import extract_tags
from memserver.core.errors import StoreError
from memserver.core.graph import file_version
from memserver.core.types import IndexReport
from memserver.engine import Engine
from memserver.store.index import IndexStore
from tests.conftest import write_tree

FILES = {
    "pkg/__init__.py": "from pkg.client import Client\n",
    "pkg/client.py": '''"""A client."""

from pkg.util import backoff


class Client:
    """Talks to the server."""

    def send(self, request):
        return backoff(request)

    def close(self):
        self.send(None)
''',
    "pkg/util.py": "def backoff(request):\n    return [request]\n",
    "README.md": "# Demo\n\nNothing to see.\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", FILES)


def _engine(root: Path) -> Engine:
    return Engine(root, None, embedder_flag="none", env={})


def _current(store: IndexStore) -> dict[str, str]:
    return {r.path: v for v, r in store.graph.file_rows().items() if r.current}


def test_the_graph_is_stored_with_the_chunks_and_reads_back_as_extracted(repo: Path) -> None:
    engine = _engine(repo)
    engine.index()
    store = engine.open_store()
    manifest = store.files.read()
    current = _current(store)
    assert set(current) == set(manifest)  # every file has a version, code or not
    for path, record in manifest.items():
        assert current[path] == file_version(path, record.content_hash, record.chunk_ids)
    stored = {f.tags.path: f for f in store.graph.load()}
    for path in ("pkg/client.py", "pkg/util.py", "pkg/__init__.py"):
        assert stored[path].tags == extract_tags(path, (repo / path).read_text(), "python")
    client = stored["pkg/client.py"]
    chunks = {c.id: c for c in store.chunks.find("origin = 'file' AND valid_to IS NULL")}
    for d, cid in zip(client.tags.definitions, client.definition_chunks, strict=True):
        assert chunks[cid].path == d.path
        assert chunks[cid].start_line <= d.start_line <= chunks[cid].end_line
    for r, cid in zip(client.tags.references, client.reference_chunks, strict=True):
        assert chunks[cid].start_line <= r.line <= chunks[cid].end_line
    assert len(set(client.definition_ids)) == len(client.definition_ids)
    assert all(i.startswith("s_") and len(i) == 34 for i in client.definition_ids)
    assert stored["README.md"].tags.definitions == ()
    assert not store.needs_reconcile()
    assert not any(store.desync().values())


@pytest.mark.parametrize("max_bytes", [2**31 - 1, 40])
def test_names_beyond_ascii_and_declarations_read_back_as_extracted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_bytes: int
) -> None:
    """The row form is Arrow's buffers built by hand and joined across a batch's files:
    multi-byte names, docs and qualifiers, and the flag of a declaration without a body,
    come back as written, also when a column's bytes are split over several record
    batches (`max_bytes`: what one string array may hold)."""
    monkeypatch.setattr("memserver.store.graph._MAX_OFFSET", max_bytes)
    files = {
        "größe.py": (
            'def grüße(name: "Straße") -> str:\n    """Grüßt — höflich."""\n'
            "    return café.größe(name)\n\n\nclass Café:\n    pass\n"
        ),
        "Shape.java": "interface Shape {\n    double area();\n}\n",
    }
    engine = _engine(write_tree(tmp_path / "repo", files))
    engine.index()
    stored = {f.tags.path: f.tags for f in engine.open_store().graph.load()}
    for path, text in files.items():
        language = "python" if path.endswith(".py") else "java"
        assert stored[path] == extract_tags(path, text, language)
    assert any(d.declaration for d in stored["Shape.java"].definitions)
    assert {d.name for d in stored["größe.py"].definitions} >= {"grüße", "Café"}


def test_row_buffers_that_do_not_hold_together_are_refused() -> None:
    """Columns whose offsets point past their bytes (or cut a character in two) raise
    before anything is written, rather than storing what Arrow would read as garbage."""
    import pyarrow as pa

    from memserver.store.graph import REF_OWN_SCHEMA, _batch
    from memserver.store.graphpart import REF_OWN, Columns, graph_part

    tags = extract_tags("a.py", "def f():\n    return g(1)\n", "python")
    good = graph_part(tags).references
    assert good is not None and _batch([good, good], REF_OWN_SCHEMA).num_rows == 2 * good.rows
    at = [name for name, _ in REF_OWN].index("name")
    offsets, data = good.values[at]  # type: ignore[misc]
    line = [name for name, _ in REF_OWN].index("line")
    lines = good.values[line]
    assert isinstance(lines, bytes)
    # offsets past their bytes, short of them (the next file's strings would be read
    # shifted), one offset too few, a character cut in two; a number column one value
    # long or short (the next file's values shifted)
    for column, broken in (
        (at, (offsets, data[:-1])), (at, (offsets, data + b"x")), (at, (offsets[:-4], data)),
        (at, (offsets, b"\xc3" + data[1:])), (line, lines + lines[:4]), (line, lines[:-4]),
    ):  # fmt: skip
        bad = Columns(good.rows, (*good.values[:column], broken, *good.values[column + 1 :]))
        for parts in ([good, bad], [bad, good]):
            with pytest.raises(pa.ArrowInvalid):
                _batch(parts, REF_OWN_SCHEMA)


def test_each_row_names_the_chunk_its_line_sits_in_within_its_own_file() -> None:
    """Rows of many files at once, their lines anywhere (above a file's first chunk, on a
    chunk's first line, past its last, in a file without chunks): each gets its own
    file's chunk, as a search of that file's chunks alone gives it."""
    import bisect
    import random

    import numpy as np

    from memserver.store.graph import _chunk_of_rows

    rng = random.Random(7)
    for _ in range(50):
        files: list[list[tuple[str, int, int]]] = []
        for f in range(rng.randint(1, 6)):
            starts = sorted(rng.sample(range(1, 200), rng.choice([0, 1, 2, 5, 20])))
            files.append([(f"c{f}_{s}", s, s) for s in starts])
        owner = np.array(sorted(rng.randrange(len(files)) for _ in range(rng.randint(0, 80))))
        lines = np.array([rng.randint(1, 220) for _ in owner], np.int32)
        expected = []
        for o, line in zip(owner.tolist(), lines.tolist(), strict=True):
            spans = files[o]
            at = bisect.bisect_right([s for _, s, _ in spans], line) - 1
            expected.append(spans[max(at, 0)][0] if spans else "")
        assert _chunk_of_rows(files, owner, lines).to_pylist() == expected


def test_a_new_graph_version_tags_every_file_again_and_keeps_the_vectors(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Extraction that changed (`GRAPH_VERSION` bumped) makes the next run pass every
    unchanged file again: each gets its graph under the new version, its chunks stay, and
    the run reports what it did (every file cut again), not repairs nor chunks added."""
    from memserver.core import graph as core_graph

    engine = Engine(repo, None, embedder_flag="hashing", env={})
    engine.index()
    before = engine.open_store()
    chunks = {c.id for c in before.chunks.find("valid_to IS NULL")}
    monkeypatch.setattr(core_graph, "GRAPH_VERSION", core_graph.GRAPH_VERSION + 1)
    report = engine.index()
    store = engine.open_store()
    manifest = store.files.read()
    assert _current(store) == {
        path: file_version(path, r.content_hash, r.chunk_ids) for path, r in manifest.items()
    }
    assert {c.id for c in store.chunks.find("valid_to IS NULL")} == chunks
    assert report.chunks_embedded == 0 and report.files_indexed == len(manifest)
    assert (report.recut, report.repaired, report.chunks_added, report.chunks_removed) == (
        True, 0, 0, 0)  # fmt: skip
    assert not store.needs_reconcile() and not any(store.desync().values())
    assert not engine.index().recut  # the index records the new version


class _Killed(BaseException):
    """A run stopped where a kill -9 would stop it (its writes so far stay)."""


def _index_killed(engine: Engine, owner: object, name: str, at: Callable[..., bool]) -> None:
    """`engine.index()` stopped (`_Killed`) at the first call of `owner.name` whose
    arguments `at` holds, as a kill -9 there would stop it."""
    real = getattr(owner, name)

    def killed(*args: Any) -> Any:
        if at(*args):
            raise _Killed
        return real(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(owner, name, killed)
        with pytest.raises(_Killed):
            engine.index()


def _graph_agrees(store: IndexStore) -> None:
    manifest = store.files.read()
    assert _current(store) == {
        path: file_version(path, r.content_hash, r.chunk_ids) for path, r in manifest.items()
    }
    assert not store.needs_reconcile() and not any(store.desync().values())


def test_a_run_cutting_every_file_again_after_one_cut_short_leaves_no_stale_graph(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new graph version's run is killed after it wrote a new file's graph, before its
    manifest entry; the file is gone by the next run (a re-cut run too): its graph must not
    stay current (recall's graph arm would still find its definitions)."""
    from memserver.core import graph as core_graph
    from memserver.store.manifest import FileManifest

    engine = _engine(repo)
    engine.index()
    (repo / "new.py").write_text("def helper():\n    return 1\n")
    monkeypatch.setattr(core_graph, "GRAPH_VERSION", core_graph.GRAPH_VERSION + 1)
    _index_killed(
        engine,
        FileManifest,
        "write",
        lambda self, records, removed: any(r.path == "new.py" for r in records),
    )
    (repo / "new.py").unlink()
    assert engine.index().recut
    store = engine.open_store()
    assert store.graph.named(["helper"]) == []
    _graph_agrees(store)


def test_a_reopening_cut_short_is_finished_by_the_next_run(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Going back to an earlier graph version reopens its stored versions, `symbols` then
    `refs`; a run killed between the two leaves file rows current over closed references,
    and the next run (cutting every file again too) must reopen them."""
    from memserver.core import graph as core_graph
    from memserver.store import lancedb as ldb

    engine = _engine(repo)
    engine.index()
    refs = engine.open_store().graph.count_current()
    version = core_graph.GRAPH_VERSION
    monkeypatch.setattr(core_graph, "GRAPH_VERSION", version + 1)
    engine.index()
    monkeypatch.setattr(core_graph, "GRAPH_VERSION", version)
    _index_killed(
        engine,
        ldb,
        "update_where",
        lambda table, where, values: (
            table.name == "refs" and "valid_to" in values and values["valid_to"] is None
        ),
    )
    assert engine.index().recut
    store = engine.open_store()
    assert store.graph.count_current() == refs
    _graph_agrees(store)


def test_a_partial_run_after_new_chunking_settings_leaves_the_rest_to_a_whole_run(
    repo: Path,
) -> None:
    """New `[chunking]` settings, then a watcher's run over one changed file: the other
    files are still cut the old way, so the next whole run must cut them again (the partial
    run does not record the new settings as the index's)."""
    from memserver.core.types import PathSet

    _engine(repo).index()
    engine = Engine(repo, None, embedder_flag="none",
                    env={"MEMSERVER_CHUNKING_MIN_TOKENS": "1"})  # fmt: skip
    (repo / "pkg/util.py").write_text("def backoff(request):\n    return [request, 1]\n")
    only = PathSet(["pkg/util.py"])
    store = engine.writable_store(False)
    report = IndexReport(root=str(repo), index_dir=str(engine.index_dir))
    partial = engine.run_index(store, engine.walk(only), report, git=("", ""), only=only)
    assert partial.files_indexed == 1 and not partial.recut
    report = engine.index()
    assert report.recut and report.files_indexed == len(engine.open_store().files.read())
    assert not engine.index().recut


def test_a_changed_file_closes_its_version_and_a_reverted_one_reopens_it(repo: Path) -> None:
    engine = _engine(repo)
    engine.index()
    store = engine.open_store()
    first = _current(store)["pkg/util.py"]
    rows_before = store.graph.count_rows()
    (repo / "pkg/util.py").write_text("def backoff(request):\n    return []\n\n\ndef jitter():\n"
                                      "    return 0\n")  # fmt: skip
    engine.index()
    second = _current(store)["pkg/util.py"]
    assert second != first
    states = store.graph.file_rows()
    assert states[first].current is False and states[second].current is True
    names = {d.qualified for f in store.graph.load() for d in f.tags.definitions}
    assert "jitter" in names
    (repo / "pkg/util.py").write_text(FILES["pkg/util.py"])
    engine.index()
    assert _current(store)["pkg/util.py"] == first  # the same version, reopened
    written = store.graph.count_rows()
    assert written[0] > rows_before[0]  # the second version's rows were added once...
    engine.index()
    assert store.graph.count_rows() == written  # ...and the third write added none
    assert "jitter" not in {d.qualified for f in store.graph.load() for d in f.tags.definitions}
    (repo / "pkg/util.py").unlink()
    engine.index()
    assert "pkg/util.py" not in _current(store)
    assert not store.needs_reconcile()


def _indexed(table) -> set[str]:
    return {c for ix in table.list_indices() for c in ix.columns}


@pytest.fixture
def small_tables_indexed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lookup B-trees of a large graph on this small one."""
    from memserver.store import graph

    monkeypatch.setattr(graph, "LOOKUP_MIN_ROWS", (1, 1))


def test_a_small_graph_gets_its_b_trees_once_large_and_reads_the_same_with_them(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memserver.store import graph

    engine = _engine(repo)
    engine.index()
    store = engine.open_store()
    assert not _indexed(store.graph.symbols) and not _indexed(store.graph.refs)
    monkeypatch.setattr(graph, "NAMED_IN_MEMORY_ROWS", 0)  # `named` by filtered scans

    def read() -> tuple[object, object]:
        store.graph._held = None
        return store.graph.load(), store.graph.named(["backoff", "Client", "send"])

    scanned = read()
    symbols, refs = store.graph.symbols.count_rows(), store.graph.refs.count_rows()
    # the thresholds between this graph's rows: only the table past its own gets them
    monkeypatch.setattr(graph, "LOOKUP_MIN_ROWS", (symbols + 1, refs))
    util = repo / "pkg/util.py"
    util.write_text(util.read_text())  # a new mtime, the same content: a run, no change
    engine.index()
    assert not _indexed(store.graph.symbols)
    assert _indexed(store.graph.refs) == {"version"}
    monkeypatch.setattr(graph, "LOOKUP_MIN_ROWS", (symbols, refs))
    util.write_text(util.read_text())
    engine.index()
    assert {"name", "version"} <= _indexed(store.graph.symbols)
    assert read() == scanned and scanned[1]


def test_a_graph_grown_large_under_the_watcher_gets_its_b_trees_from_its_housekeeping(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher's batches run no index run's maintenance; its periodic housekeeping
    builds the trees once the tables need them."""
    from datetime import timedelta

    from memserver.store import graph

    engine = _engine(repo)
    engine.index()
    store = engine.open_store()
    assert not _indexed(store.graph.symbols)
    monkeypatch.setattr(graph, "LOOKUP_MIN_ROWS", (1, 1))
    store.housekeep(timedelta(days=1))
    assert {"name", "version"} <= _indexed(store.graph.symbols)
    assert _indexed(store.graph.refs) == {"version"}


@pytest.mark.usefixtures("small_tables_indexed")
def test_names_and_versions_are_indexed_and_rows_written_after_are_still_found(
    repo: Path,
) -> None:
    engine = _engine(repo)
    engine.index()
    store = engine.open_store()
    assert {"name", "version"} <= _indexed(store.graph.symbols)
    assert "version" in _indexed(store.graph.refs)
    before = {d.path for f in store.graph.named(["backoff"]) for d in f.tags.definitions}
    assert before == {"pkg/util.py"}
    # a new definition of the name and a changed file, written without folding them into
    # the indexes (the watcher's batches): the filtered reads see the new rows and not the
    # closed ones
    (repo / "pkg/retry.py").write_text("def backoff(request):\n    return None\n")
    (repo / "pkg/util.py").write_text("def jitter():\n    return 0\n")
    report = IndexReport(root=str(repo), index_dir=str(engine.index_dir))
    engine.run_index(store, engine.walk(), report, git=("", ""), optimize=False)
    assert report.files_indexed == 2
    found = {(d.path, d.name) for f in store.graph.named(["backoff", "jitter"])
             for d in f.tags.definitions}  # fmt: skip
    assert found == {("pkg/retry.py", "backoff"), ("pkg/util.py", "jitter")}


def test_named_answers_from_memory_as_the_scans_do_and_stays_fresh(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small graph's definitions are held in memory for `named`: it answers what the
    filtered scans answer, also after the table changed under the same store."""
    from memserver.store import graph

    engine = _engine(repo)
    engine.index()
    store = engine.open_store()
    asked = [["backoff"], ["Client", "send", "close"], ["send", "missing"], ["missing"]]

    def both(names: list[str]) -> tuple[object, object]:
        held = store.graph.named(names)
        assert store.graph._held is not None and store.graph._held[1] is not None
        with monkeypatch.context() as m:
            m.setattr(graph, "NAMED_IN_MEMORY_ROWS", 0)
            store.graph._held = None
            scanned = store.graph.named(names)
            assert store.graph._held is not None and store.graph._held[1] is None
        store.graph._held = None
        return held, scanned

    for names in asked:
        held, scanned = both(names)
        assert held == scanned
    assert both(["backoff"])[0]
    store.graph.named(["backoff"])  # held now, at this table version
    (repo / "pkg/retry.py").write_text("def backoff(request):\n    return None\n")
    engine.index()
    paths = {d.path for f in store.graph.named(["backoff"]) for d in f.tags.definitions}
    assert paths == {"pkg/util.py", "pkg/retry.py"}
    held, scanned = both(["backoff", "send"])
    assert held == scanned


@pytest.mark.usefixtures("small_tables_indexed")
def test_an_index_without_the_lookup_indexes_gets_them_from_a_run_that_changes_nothing(
    repo: Path,
) -> None:
    engine = _engine(repo)
    engine.index()
    store = engine.open_store()
    for table in (store.graph.symbols, store.graph.refs):  # as an older release left it
        for ix in table.list_indices():
            table.drop_index(ix.name)
    assert not _indexed(store.graph.symbols) and not _indexed(store.graph.refs)
    util = repo / "pkg/util.py"
    util.write_text(util.read_text())  # a new mtime, the same content: nothing to re-index
    report = engine.index()
    assert report.chunks_added == 0 and report.chunks_removed == 0
    assert {"name", "version"} <= _indexed(store.graph.symbols)
    assert "version" in _indexed(store.graph.refs)


def test_reconcile_drops_half_written_versions_and_re_indexes_a_file_whose_graph_is_gone(
    repo: Path,
) -> None:
    engine = _engine(repo)
    engine.index()
    store = engine.open_store()
    util = _current(store)["pkg/util.py"]
    client = _current(store)["pkg/client.py"]
    # a write cut short: references of a version whose file row never went in
    stray = "0" * 24
    from memserver.store import lancedb as ldb

    ldb.add_columns(store.graph.refs, {
        "place": [0], "path": ["pkg/util.py"], "version": [stray],
        "name": ["x"], "kind": ["call"], "line": [1], "column": [0], "enclosing": [""],
        "qualifier": [""], "receiver_type": [""], "chunk_id": [""], "valid_to": [None],
    })  # fmt: skip
    # a damaged table lost the references of a current version
    ldb.delete_where(store.graph.refs, f"version = '{client}'")
    # and a crash left an old version of util.py open beside the current one
    store.graph.set_current([util], current=False)
    assert store.needs_reconcile()
    found = {k: v for k, v in store.desync().items() if v}
    assert found["code graph versions of a write cut short"] == 2  # the stray, the damaged
    assert found["files whose code graph is gone"] == 1
    assert found["code graph versions to reopen"] == 1
    assert store.reconcile() > 0
    assert stray not in store.graph.file_rows()
    assert "pkg/client.py" not in store.files.read()  # indexed again by the next run
    assert _current(store)["pkg/util.py"] == util
    engine.index()
    assert not store.needs_reconcile()
    assert not any(store.desync().values())
    loaded = {f.tags.path: f.tags for f in store.graph.load()}
    text = (repo / "pkg/client.py").read_text()
    assert loaded["pkg/client.py"] == extract_tags("pkg/client.py", text, "python")


def test_a_graph_table_of_an_older_shape_is_made_again_by_the_next_run(repo: Path) -> None:
    """`refs` once had a string id per row: an index written then opens, and a writer drops
    both graph tables (the file rows vouch for the references) and indexes the graph again."""
    import pyarrow as pa

    from memserver.store import lancedb as ldb

    engine = _engine(repo)
    engine.index()
    store = engine.open_store()
    extracted = {f.tags.path: f.tags.references for f in store.graph.load()}
    db = ldb.connect(engine.index_dir / "lance")
    old = db.open_table("refs").to_arrow()
    versions, places = (old.column(c).to_pylist() for c in ("version", "place"))
    ids = pa.array([f"r_{v}{p:08x}" for v, p in zip(versions, places, strict=True)])
    db.drop_table("refs")
    db.create_table("refs", old.drop(["place"]).add_column(0, "id", ids))
    store.drop_stat_cache()  # the older layout's stat cache does not vouch for this one
    with pytest.raises(StoreError, match="unexpected schema") as refused:
        engine.open_store()  # a reader does not rewrite the index: it says what will
    assert "`memserver index`" in refused.value.hint and "--rebuild" not in refused.value.hint
    with pytest.raises(StoreError, match="unexpected schema"):
        engine.writable_store()  # nor a writer that is not an index run (remember, the UI)
    assert "id" in ldb.connect(engine.index_dir / "lance").open_table("refs").schema.names
    report = engine.index()
    assert report.files_indexed == len(FILES)  # every file's graph made again
    store = engine.open_store()
    assert "place" in store.graph.refs.schema.names
    assert {f.tags.path: f.tags.references for f in store.graph.load()} == extracted
    assert not store.needs_reconcile()


def test_forget_closes_a_files_graph_and_erase_deletes_it(repo: Path) -> None:
    engine = _engine(repo)
    engine.index()
    service = engine.memory_service()
    service.forget((), ("pkg/util.py",), reason="test")
    store = engine.open_store()
    assert "pkg/util.py" not in _current(store)
    assert any(r.path == "pkg/util.py" for r in store.graph.file_rows().values())
    service.forget((), ("pkg/client.py",), reason="secret", erase=True)
    assert not any(r.path == "pkg/client.py" for r in store.graph.file_rows().values())
    assert not any(f.tags.path == "pkg/client.py" for f in store.graph.load())
    assert not store.needs_reconcile()


def test_doctor_checks_and_repairs_the_graph(repo: Path) -> None:
    engine = _engine(repo)
    engine.index()
    report = engine.doctor()
    assert report.healthy
    tables = next(c for c in report.checks if c.check == "tables")
    assert "symbols" in tables.detail and "refs" in tables.detail
    store = engine.open_store()
    store.graph.set_current([_current(store)["pkg/util.py"]], current=False)
    report = engine.doctor()
    assert not report.healthy
    sync = next(c for c in report.checks if c.check == "sync")
    assert "code graph versions to reopen: 1" in sync.detail
    assert engine.doctor(repair=True).healthy
    assert engine.doctor().healthy


def test_a_reading_between_a_files_two_graph_commits_takes_one_version(repo: Path) -> None:
    """A batch writes a changed file's new graph version, then closes the old one: a
    reader between the two (or after a run killed there) finds both current. It reads the
    version the manifest names (written last), never a mix of the two: a name found in one
    version and looked up in the other raised KeyError."""
    from memserver.store.graph import GraphRows

    engine = _engine(repo)
    engine.index()
    live = _engine(repo)  # a server's reader: it read the graph before, and updates it
    live_reader = live.navigator(live.open_store())
    assert [s.path for s in live_reader.symbols("backoff")] == ["pkg/util.py"]
    util = repo / "pkg" / "util.py"
    util.write_text(util.read_text().replace("def backoff(", "def backoff_v2("))
    real = GraphRows.set_current

    def killed(self: GraphRows, versions: Any, current: bool) -> None:
        if not current and versions:
            raise _Killed
        real(self, versions, current)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GraphRows, "set_current", killed)
        with pytest.raises(_Killed):
            engine.index()
    store = Engine(repo, None, embedder_flag="none", env={}).open_store()
    rows = store.graph.file_rows(["pkg/util.py"])
    assert sum(r.current for r in rows.values()) == 2  # the state the reader meets
    reader = _engine(repo).navigator(store)
    found = reader.symbols("backoff")  # what the manifest still says the file holds
    assert [(s.path, s.stale) for s in found] == [("pkg/util.py", True)]
    assert reader.symbols("backoff_v2") == []
    assert "pkg/client.py" in {r.path for r in reader.references_of("backoff")[1]}
    assert [(s.path, s.stale) for s in live_reader.symbols("backoff")] == [("pkg/util.py", True)]
    assert live_reader.symbols("backoff_v2") == []
    engine.index()  # repaired: the new version alone
    reader = _engine(repo).navigator(store)
    assert reader.symbols("backoff") == []
    assert [(s.path, s.stale) for s in reader.symbols("backoff_v2")] == [("pkg/util.py", False)]


def _graph_rows(store: IndexStore) -> tuple[int, int]:
    """(current, closed) rows of the code graph, both tables."""
    defs, refs = store.graph.version_states()
    files = store.graph.file_rows().values()
    current = sum(r.current for r in files) + sum(c for c, _ in (*defs.values(), *refs.values()))
    closed = sum(not r.current for r in files) + sum(c for _, c in (*defs.values(),
                                                                     *refs.values()))  # fmt: skip
    return current, closed


def _saved(repo: Path, saves: int, after: Callable[[IndexStore], None] = lambda _: None
           ) -> tuple[Engine, Path, str]:  # fmt: skip
    """`pkg/client.py` saved `saves` times, each save indexed (`after` each run): the
    engine, the file and its first text."""
    engine = _engine(repo)
    engine.index()
    client = repo / "pkg" / "client.py"
    first = client.read_text()
    for n in range(saves):
        client.write_text(f"# save {n}\n{first}")
        engine.index()
        after(engine.open_store())
    return engine, client, first


def test_a_file_saved_again_and_again_leaves_closed_graph_versions_within_bounds(
    repo: Path,
) -> None:
    """Each save closes a version of the file's whole graph: past the current rows, the
    longest closed go, never one the manifest names; a version gone is written again when
    its file comes back."""

    def bounded(store: IndexStore) -> None:
        current, closed = _graph_rows(store)
        assert closed <= current
        _graph_agrees(store)

    engine, client, first = _saved(repo, 12, bounded)
    client.write_text(first)  # back to a version long deleted: written again
    engine.index()
    store = engine.open_store()
    _graph_agrees(store)
    reader = _engine(repo).navigator(store)
    assert [s.path for s in reader.symbols("Client.send")] == ["pkg/client.py"]
    assert "pkg/client.py" in {r.path for r in reader.references_of("backoff")[1]}


def test_a_prune_killed_midway_is_repaired_by_the_next_run(repo: Path) -> None:
    from memserver.store.graph import GraphRows

    engine, client, first = _saved(repo, 3)
    client.write_text(f"# save again\n{first}")
    real = GraphRows.delete_versions

    def refs_only(self: GraphRows, versions: Any) -> None:
        versions = sorted(set(versions))
        for v in versions:
            self.refs.delete(f"version = '{v}'")
        raise _Killed  # before their symbols rows

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GraphRows, "delete_versions", refs_only)
        with pytest.raises(_Killed):
            engine.index()
    store = engine.open_store()
    assert store.needs_reconcile()
    engine.index()
    store = engine.open_store()
    _graph_agrees(store)
    assert real is GraphRows.delete_versions


def test_a_writing_session_on_an_empty_graph_finds_its_own_rows_without_a_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index: each batch asks which versions of its files are stored. The session
    that found the table empty answers from the rows it wrote, as a scan would (after
    closing, reopening and deleting too), without the scan; after a write that failed,
    and once the session ends, a scan answers."""
    from memserver.core.writes import FileGraph
    from memserver.store import lancedb as ldb
    from memserver.store.graph import GraphRows
    from memserver.store.graphpart import graph_part

    store = _engine(tmp_path).writable_store()
    scans: list[object] = []
    real_scan = ldb.scan

    def counted(table: Any, *args: Any, **kwargs: Any) -> Any:
        scans.append(table)
        return real_scan(table, *args, **kwargs)

    monkeypatch.setattr(ldb, "scan", counted)

    def made(path: str, text: str) -> FileGraph:
        tags = extract_tags(path, text, "python")
        return FileGraph(path, file_version(path, text, ()), (), graph_part(tags))

    graphs = [made(f"m{i}.py", f"def f{i}():\n    return g({i})\n") for i in range(3)]
    paths = [g.path for g in graphs]
    graph = store.graph

    def agrees(wanted: list[str]) -> dict[str, Any]:
        before = len(scans)
        found = graph.file_rows(wanted)
        assert len(scans) == before  # from the session's rows
        assert found == GraphRows(graph.symbols, graph.refs).file_rows(wanted)  # a scan
        return found

    with store.writing():
        assert graph.file_rows(paths) == {} and not scans  # empty: counted, not scanned
        graph.insert(graphs[:2])
        assert set(agrees(paths)) == {graphs[0].version, graphs[1].version}
        assert agrees(["elsewhere.py"]) == {}
        graph.set_current([graphs[0].version], current=False)
        assert agrees(paths[:1])[graphs[0].version].current is False
        graph.set_current([graphs[0].version], current=True)
        assert agrees(paths)[graphs[0].version].current is True
        graph.delete_versions([graphs[1].version])
        assert set(agrees(paths)) == {graphs[0].version}
        with monkeypatch.context() as patch:
            patch.setattr(graph.symbols, "add", lambda *a, **k: (_ for _ in ()).throw(OSError))
            with pytest.raises(StoreError):
                graph.insert(graphs[2:])
        before = len(scans)
        assert set(graph.file_rows(paths)) == {graphs[0].version}  # its refs rows were written
        assert len(scans) > before
    before = len(scans)
    graph.insert(graphs[2:])
    assert set(graph.file_rows(paths)) == {graphs[0].version, graphs[2].version}
    assert len(scans) > before
