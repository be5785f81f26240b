"""The large-index path: an ANN index built by `index`, recall through the lean view.

A tiny `ann_min_rows` turns it on for a small hashing-embedded repository; the
in-memory path over the same index is the reference. `ANN` also keeps the chunk vectors
out of the view, so its dense arm searches the vector index; with them (the default for
vectors that fit `exact_dense_mb`) it scores every row.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from memserver.core.requests import Filters
from memserver.store import lancedb as ldb
from memserver.store import leanview
from memserver.store.leanview import LeanSnapshot

FIXTURES = Path(__file__).parent.parent / "fixtures" / "polyglot"
TOPICS = [
    ("invoice", "tax", "ledger"), ("socket", "timeout", "retry"), ("pixel", "shader", "canvas"),
    ("queue", "worker", "backoff"), ("token", "session", "expiry"), ("parser", "grammar", "ast"),
    ("cache", "eviction", "ttl"), ("cipher", "nonce", "digest"), ("schedule", "cron", "jitter"),
    ("upload", "chunked", "resume"),
]  # fmt: skip
QUERIES = [
    "compute the invoice tax for a ledger entry", "retry a socket after a timeout",
    "evict expired cache entries by ttl", "parse the grammar into an ast",
    "resume a chunked upload", "RetryPolicy.delays",
]  # fmt: skip


ANN = {"ann_min_rows": 50, "exact_dense_mb": 0}  # the lean view, dense search by the ANN index

WORDS = ["amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo",
         "juniper", "kestrel", "lumen", "mosaic"]  # fmt: skip


def _module(topic: tuple[str, str, str], n: int, copy: int) -> str:
    """Three functions on one topic. Words and lengths that differ from function to
    function keep their scores from tying: the two paths may order exact ties differently."""
    a, b, c = topic
    return "\n\n".join(
        f"def {a}_{b}_{WORDS[(3 * copy + i) % 13]}(value):\n"
        f'    """Handle the {a} {b} with {c}, {WORDS[(n + 5 * i + copy) % 13]} way'
        f'{" again" * ((3 * copy + i + n) % 7)}."""\n'
        f"    {c}_{WORDS[(n + copy) % 13]} = value * {i + n}\n"
        f"    return {c}_{WORDS[(n + copy) % 13]} + len('{a} {b} {c}')\n"
        for i in range(3)
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import SAMPLE, write_tree

    root = write_tree(tmp_path_factory.mktemp("large"), SAMPLE)
    shutil.copytree(FIXTURES, root / "polyglot")
    for n, topic in enumerate(TOPICS):
        for copy in range(4):
            (root / f"pkg{copy}" / f"{topic[0]}.py").parent.mkdir(exist_ok=True)
            (root / f"pkg{copy}" / f"{topic[0]}.py").write_text(_module(topic, n, copy))
    return root


@pytest.fixture(scope="module")
def engines(repo: Path):
    from memserver.engine import Engine

    large = Engine(repo, None, embedder_flag="hashing", env={},
                   overrides={"recall": ANN})  # fmt: skip
    large.index()
    small = Engine(repo, None, embedder_flag="hashing", env={})
    return small, large


def test_index_run_builds_the_vector_index(engines) -> None:
    _, large = engines
    store = large.open_store()
    assert store.chunks.count_current() >= 50
    assert store.vector_index("chunks")[0] >= 50
    # memories searched by keyword alone (the default) have no vector to train on
    assert store.memories.count_unembedded() >= 50 and store.vector_index("memories") == (0, "")
    assert isinstance(large.recaller().snapshots(), LeanSnapshot)
    assert not isinstance(engines[0].recaller().snapshots(), LeanSnapshot)


def _overlap(got, want, n: int) -> float:
    return len({e.id for e in got[:n]} & {e.id for e in want[:n]}) / max(1, len(want[:n]))


def test_lean_recall_matches_the_in_memory_path(engines, repo: Path) -> None:
    """Same evidence. The hashing embedder gives equal scores to same-shaped functions and
    memories; both dense searches order such ties by id, so only a row the vector index
    misses (it is approximate) can move a fused rank."""
    small, large = (e.recaller(rerank=False) for e in engines)
    for query in QUERIES:
        want = small.recall(query, rerank=False)
        got = large.recall(query, rerank=False)
        assert got.evidence[0].score == pytest.approx(want.evidence[0].score, rel=0.02), query
        assert _overlap(got.evidence, want.evidence, 5) >= 0.8, query
        assert _overlap(got.evidence, want.evidence, 10) >= 0.8, query
        assert got.found == want.found and got.confidence == pytest.approx(want.confidence, 0.05)
        # a rank moved by a tie can merge neighbours on one path only: the same span reads
        # the same text, and every span reads its file's lines
        texts = {(e.id, e.start_line, e.end_line): e.text for e in want.evidence}
        for e in got.evidence:
            assert texts.get((e.id, e.start_line, e.end_line), e.text) == e.text
            if (repo / e.path).is_file():
                lines = (repo / e.path).read_text().split("\n")
                assert e.text == "\n".join(lines[e.start_line - 1 : e.end_line]), e.path


def test_lean_dense_arm_agrees_with_exact_search(engines) -> None:
    import numpy as np

    from memserver.retrieve import arms

    small, large = (e.recaller(rerank=False) for e in engines)
    for query in QUERIES:
        qv = np.asarray(small.embedder.embed_documents([query])[0], dtype=np.float32)
        exact = arms.dense_chunks(small.snapshots(), qv, None, 10)
        ann = arms.dense_chunks(large.snapshots(), qv, None, 10)
        assert [s for _, s in ann] == pytest.approx([s for _, s in exact], abs=1e-5)
        tenth = exact[-1][1]  # everything above the last score is the same set; ties at it vary
        above = {c for c, s in exact if s > tenth + 1e-5}
        assert above <= {c for c, _ in ann}


def _ann_searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables LanceDB's vector search is asked about from now on, in order."""
    from memserver.store.index import IndexStore

    searched: list[str] = []
    real = IndexStore.ann_search

    def counted(self, name, *args, **kw):
        searched.append(name)
        return real(self, name, *args, **kw)

    monkeypatch.setattr(IndexStore, "ann_search", counted)
    return searched


def test_lean_view_holding_vectors_ranks_as_the_in_memory_view(
    engines, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors that fit `exact_dense_mb` are held by the lean view: its dense arm scores
    every row as the in-memory view does (same rows, same scores, with and without a
    filter), LanceDB's vector index is not asked, and recall gives the same evidence."""
    import numpy as np

    from memserver.engine import Engine
    from memserver.retrieve import arms

    small = engines[0].recaller(rerank=False)
    exact = Engine(repo, tmp_path / "index", embedder_flag="hashing", env={},
                   overrides={"recall": {"ann_min_rows": 50}})  # fmt: skip
    exact.index()
    searched = _ann_searches(monkeypatch)
    lean = exact.recaller(rerank=False)
    snap = lean.snapshots()
    assert isinstance(snap, LeanSnapshot) and snap.vectors is not None
    assert snap.vectors.shape == (snap.size(), exact.open_store().meta.dim)
    go = snap.mask_by("language", lambda v: v == "go")
    small_go = small.snapshots().mask_by("language", lambda v: v == "go")
    for query in QUERIES:
        qv = np.asarray(small.embedder.embed_documents([query])[0], dtype=np.float32)
        assert arms.dense_chunks(snap, qv, None, 10) == arms.dense_chunks(
            small.snapshots(), qv, None, 10
        )
        assert arms.dense_chunks(snap, qv, go, 10) == arms.dense_chunks(
            small.snapshots(), qv, small_go, 10
        )
        want = small.recall(query, rerank=False)
        got = lean.recall(query, rerank=False)
        # the keyword arm of a large index drops stop words: a tail rank can move
        assert got.evidence[0].id == want.evidence[0].id, query
        assert _overlap(got.evidence, want.evidence, 10) >= 0.8, query
        assert got.confidence == pytest.approx(want.confidence), query
    assert "chunks" not in searched


def test_lean_view_leaves_vectors_that_do_not_fit_to_the_ann_index(engines) -> None:
    """The vectors are held up to the bytes given, and not one row past them."""
    from memserver.store.leanview import Ann, load_lean

    store = engines[1].open_store()
    need = store.chunks.count_current() * store.meta.dim * 4
    ann = Ann(store, nprobes=20, refine=2, memory_refine=1)
    assert load_lean(store, True, ann, exact_bytes=need - 1).vectors is None
    held = load_lean(store, True, ann, exact_bytes=need).vectors
    assert held is not None and held.nbytes == need
    assert load_lean(store, True, ann).vectors is None  # none asked for


def _lines(evidence) -> set[tuple[str, int]]:
    return {(e.path, n) for e in evidence for n in range(e.start_line, e.end_line + 1)}


def test_lean_filters_and_merging(engines) -> None:
    """Filters hold on the lean path too (its dense arm filters the ANN's hits, asking for
    ten times as many); the evidence is the same file first and mostly the same lines."""
    small, large = (e.recaller(rerank=False) for e in engines)
    cases = [("report store items by units", Filters(languages=("go",)),
              lambda e: e.path.endswith(".go")),
             ("socket timeout retry", Filters(paths=("pkg1/",)),
              lambda e: e.path.startswith("pkg1/")),
             ("socket timeout retry", Filters(kinds=("function",)),
              lambda e: e.kind == "function")]  # fmt: skip
    for query, filters, ok in cases:
        want = small.recall(query, filters=filters, rerank=False).evidence
        got = large.recall(query, filters=filters, rerank=False).evidence
        assert got and all(ok(e) for e in got)
        assert got[0].path == want[0].path, query
        # the tail is weak, near-tied dense matches: a fused rank moves by one now and then
        assert len(_lines(got) & _lines(want)) >= 0.5 * len(_lines(want)), query


def test_vector_index_of_another_kind_is_rebuilt(repo: Path, tmp_path: Path) -> None:
    """An index built by an older release (another kind) is replaced on the next run, and
    the probes a search visits follow the rows the index covers."""
    from lancedb.index import IvfHnswSq

    from memserver.engine import Engine
    from memserver.store.lancedb import vector_index_kind

    engine = Engine(
        repo,
        tmp_path / "index",
        embedder_flag="hashing",
        env={},
        overrides={"recall": {**ANN, "ann_nprobes": 1, "ann_probe_factor": 2.0}},
    )
    engine.index()
    store = engine.open_store()
    rows, kind = store.vector_index("chunks")
    assert kind == vector_index_kind(rows)
    assert store.ensure_vector_index(50) == []  # up to date: nothing to do
    older = IvfHnswSq(distance_type="dot", num_partitions=2)
    store.table("chunks").create_index("vector", replace=True, config=older)
    assert store.vector_index("chunks")[1] == "IVF_HNSW_SQ"
    assert "chunks" in store.ensure_vector_index(50)
    assert store.vector_index("chunks") == (rows, vector_index_kind(rows))
    snap = engine.recaller(rerank=False).snapshots()
    assert snap.ann is not None
    assert snap.ann.probes[False] == math.ceil(2.0 * rows**0.25)


def test_a_vector_index_rewritten_by_compaction_is_trained_again(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction after a change writes the vector index anew (searches on it were 1.3-1.6x
    slower); the run trains the rewritten index again, and leaves an untouched one be."""
    from memserver.engine import Engine
    from memserver.store.index import IndexStore

    tree = tmp_path / "tree"
    shutil.copytree(repo, tree)
    own = {"MEMSERVER_INDEX_MEMORY_VECTORS": "own"}  # memories with vectors: both indexed
    engine = Engine(tree, tmp_path / "index", embedder_flag="hashing", env=own,
                    overrides={"recall": ANN})  # fmt: skip
    engine.index()
    compacted: list[dict[str, str]] = []
    housekeep = IndexStore.housekeep

    def spy(self: IndexStore, *args: object, **kwargs: object) -> None:
        housekeep(self, *args, **kwargs)  # type: ignore[arg-type]
        compacted.append(self.vector_index_ids())

    monkeypatch.setattr(IndexStore, "housekeep", spy)
    monkeypatch.setattr(ldb, "_SMALL_FRAGMENTS", 1)  # every table worth compacting
    before = engine.open_store().vector_index_ids()
    (tree / "pkg0" / "extra.py").write_text("def extra_helper(x):\n    return x + 1\n")
    engine.index()
    after = engine.open_store().vector_index_ids()
    assert len(compacted) == 1 and set(after) == set(before) == {"chunks", "memories"}
    for name in after:
        if compacted[0][name] != before[name]:  # rewritten by the compaction: trained again
            assert after[name] not in (before[name], compacted[0][name])
        else:
            assert after[name] == before[name]
    assert any(compacted[0][n] != before[n] for n in before)  # the case this is about
    store = engine.open_store()
    assert store.vector_index("chunks")[0] == store.chunks.count_rows()


def test_lean_fetch_survives_rows_moving(repo: Path, tmp_path: Path) -> None:
    """Evidence is read by row id; once an update and a compaction have moved rows under a
    snapshot, the same rows still come back (read by id instead)."""
    from memserver.engine import Engine

    engine = Engine(repo, tmp_path / "index", embedder_flag="hashing", env={},
                    overrides={"recall": ANN})  # fmt: skip
    engine.index()
    snap = engine.recaller(rerank=False).snapshots()
    rows = list(range(0, snap.size(), 7))
    fetched = snap.fetch(rows)
    before = [(c.id, c.text) for c in fetched]
    assert [i for i, _ in before] == [snap.id_at(r) for r in rows]
    store = engine.open_store()
    stored = store.chunks.get([i for i, _ in before])
    shown = (
        "id",
        "project",
        "origin",
        "path",
        "language",
        "kind",
        "symbol",
        "start_line",
        "end_line",
        "text",
        "tokens",
    )  # what evidence shows: the view's columns + text
    for c in fetched:
        full = stored[c.id][0]
        assert [getattr(c, f) for f in shown] == [getattr(full, f) for f in shown]
    assert store.chunks.texts_at(snap.row_ids[rows].tolist(), [i for i, _ in before]) is not None
    table = store.table("chunks")
    table.update(where="start_line >= 1", values={"embedded": True})  # rewrites rows
    table.optimize()
    assert store.chunks.texts_at(snap.row_ids[rows].tolist(), [i for i, _ in before]) is None
    assert [(c.id, c.text) for c in snap.fetch(rows)] == before


def test_memories_without_vectors_are_not_searched_by_vector(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memories kept for keyword search alone have no vectors: the lean view skips their
    vector search (a flat scan over every row otherwise) until one of them has a vector."""
    import numpy as np

    from memserver.core.requests import Note
    from memserver.engine import Engine

    engine = Engine(repo, tmp_path / "index", embedder_flag="hashing", env={},
                    overrides={"recall": ANN})  # fmt: skip
    engine.index()
    searched = _ann_searches(monkeypatch)
    recaller = engine.recaller(rerank=False)
    snap = recaller.snapshots()
    assert isinstance(snap, LeanSnapshot) and snap.memory_vectors == 0
    note = "The frobnication queue drains on shutdown after the ledger is flushed."
    qv = np.asarray(recaller.embedder.embed_documents([note])[0], dtype=np.float32)
    assert snap.dense_memories(qv, 10, None) == [] and "memories" not in searched
    assert recaller.recall("compute the invoice tax for a ledger entry").evidence
    assert "memories" not in searched and "chunks" in searched

    remembered = engine.memory_service().remember(Note(note))
    snap = engine.recaller(rerank=False).snapshots()
    assert isinstance(snap, LeanSnapshot) and snap.memory_vectors >= 1
    # a few vectors among many memories: searched exactly in memory, not by LanceDB
    hits = snap.dense_memories(qv, 10, None)
    assert "memories" not in searched
    assert {snap.memory_id_at(m) for m, _ in hits} & set(remembered.memory_ids)
    assert snap.dense_memories(qv, 10, np.zeros(len(snap.memory_ids), dtype=bool)) == []

    # more than a few: LanceDB's search, and the same best memories
    monkeypatch.setattr(leanview, "_FEW_MEMORY_VECTORS", 0)
    many = engine.recaller(rerank=False).snapshots()
    assert isinstance(many, LeanSnapshot) and many.few_memory_vectors is None
    by_ann = many.dense_memories(qv, 10, None)
    assert "memories" in searched
    assert [m for m, _ in by_ann][: len(hits)] == [m for m, _ in hits]
    assert [s for _, s in by_ann][: len(hits)] == pytest.approx([s for _, s in hits], abs=1e-4)


def test_lean_view_holding_vectors_before_they_are_made(repo: Path, tmp_path: Path) -> None:
    """A keyword-searchable index not embedded yet: the view holds zero rows for the
    missing vectors and its dense arm finds nothing; once embedded it finds what the
    in-memory view finds."""
    import numpy as np

    from memserver.engine import Engine
    from memserver.retrieve import arms

    engine = Engine(repo, tmp_path / "index", embedder_flag="hashing", env={},
                    overrides={"recall": {"ann_min_rows": 50}})  # fmt: skip
    engine.index(embed=False)
    recaller = engine.recaller(rerank=False)
    snap = recaller.snapshots()
    assert isinstance(snap, LeanSnapshot) and snap.vectors is not None
    assert snap.unembedded() == snap.size() and not snap.vectors.any()
    qv = np.asarray(recaller.embedder.embed_documents([QUERIES[0]])[0], dtype=np.float32)
    assert arms.dense_chunks(snap, qv, None, 10) == []
    result = recaller.recall(QUERIES[0], rerank=False)
    assert result.evidence and result.unembedded == snap.size()

    engine.index()
    snap = engine.recaller(rerank=False).snapshots()
    assert isinstance(snap, LeanSnapshot) and snap.unembedded() == 0
    small = Engine(repo, tmp_path / "index", embedder_flag="hashing", env={})
    want = arms.dense_chunks(small.recaller(rerank=False).snapshots(), qv, None, 10)
    assert want and arms.dense_chunks(snap, qv, None, 10) == want
