"""The recall view brought up to date by reading only what changed equals a fresh load."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from indexers.watcher import Batch
from memserver.core.requests import Note
from memserver.ingest.live import LiveIndex
from memserver.memory.consolidate import Consolidator
from memserver.store.leanview import LeanSnapshot
from memserver.store.readview import MemorySnapshot as Snapshot
from memserver.store.readview import _memories_of, load_snapshot, top_rows

QUERIES = ["retry with backoff", "load_settings timeout", "registerRoutes", "deploy script"]


def _same(got: Snapshot, want: Snapshot) -> None:
    assert got.chunks == want.chunks
    assert got.row == want.row and got.addresses == want.addresses
    assert np.array_equal(got.embedded, want.embedded)
    assert (got.vectors is None) == (want.vectors is None)
    if want.vectors is not None:
        assert np.array_equal(got.vectors, want.vectors)
    assert got.by_symbol == want.by_symbol and got.by_path == want.by_path
    assert got.following == want.following and got.files == want.files
    assert got.turns == want.turns
    assert got.memory_ids == want.memory_ids and got.memory_row == want.memory_row
    assert got.memory_source == want.memory_source
    assert got.memory_source_ids == want.memory_source_ids
    assert got.memory_status == want.memory_status and got.memory_scope == want.memory_scope
    assert got.stale_rows == want.stale_rows
    assert (got.memory_vectors is None) == (want.memory_vectors is None)
    if want.memory_vectors is not None:
        assert np.array_equal(got.memory_vectors, want.memory_vectors)
        assert np.array_equal(got.memory_vector_rows, want.memory_vector_rows)


def _check(engine, recaller) -> Snapshot:
    """The long-lived recaller's view equals a fresh load, and recalls the same."""
    snap = recaller.snapshots()
    _same(snap, load_snapshot(engine.open_store(), with_memories=True))
    fresh = engine.recaller(rerank=False)
    for query in QUERIES:
        got, want = recaller.recall(query, rerank=False), fresh.recall(query, rerank=False)
        assert [(e.id, e.score, e.stale) for e in got.evidence] == [
            (e.id, e.score, e.stale) for e in want.evidence
        ], query
    return snap


def _reindex(live: LiveIndex, *paths: str) -> None:
    """What the watcher does for changed paths (no compaction, unlike `memserver index`)."""
    live.apply(Batch(frozenset(paths), False, False, len(paths), time.monotonic()))


def test_refresh_reads_only_what_changed_and_equals_a_fresh_load(
    sample_repo: Path, make_engine
) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    live = LiveIndex(engine)
    recaller = engine.recaller(rerank=False)
    first = recaller.snapshots()
    assert recaller.snapshots() is first  # nothing changed: nothing read

    # an edit: one function changes, one is added above another (which moves down)
    cfg = sample_repo / "src/config.py"
    text = cfg.read_text().replace("30)", "60)")
    cfg.write_text("def added_first(x):\n    return x\n\n\n" + text)
    (sample_repo / "src/extra.py").write_text("def brand_new(v):\n    return v * 2\n")
    _reindex(live, "src/config.py", "src/extra.py")
    snap = _check(engine, recaller)
    assert any(c.path == "src/extra.py" for c in snap.chunks)
    untouched = [c for c in snap.chunks if c.path == "web/app.js"]
    assert untouched and all(c is first.chunks[first.row[c.id]] for c in untouched)

    # notes, a note about code going stale, forgetting with erasure, a deleted file
    svc = engine.memory_service()
    svc.remember(Note("The deploy script lives in ops/deploy.sh. We run it weekly."))
    svc.remember(Note("The deploy script lives in ops/deploy.sh. Ask Dana first."))
    cited = svc.remember(Note("load_settings fills in a 60 second timeout.",
                              paths=("src/config.py",)))  # fmt: skip
    noted = _check(engine, recaller)
    kept = [m for m in snap.memory_ids if m in noted.memory_row]
    assert kept and all(
        noted.memory_source_ids[noted.memory_row[m]] is snap.memory_source_ids[snap.memory_row[m]]
        for m in kept
    )
    cfg.write_text(cfg.read_text().replace("60)", "90)"))
    (sample_repo / "web/app.js").unlink()
    _reindex(live, "src/config.py", "web/app.js")
    snap = _check(engine, recaller)
    assert snap.stale_rows == {snap.row[cited.note_id]}
    svc.forget([cited.note_id], reason="wrong", erase=True)
    _check(engine, recaller)
    Consolidator(engine.open_store()).run()
    _check(engine, recaller)

    # `memserver index` compacts: every row is written anew, and the view still agrees
    (sample_repo / "docs/guide.md").write_text("# Guide\n\nShorter now.\n")
    engine.index()
    _check(engine, recaller)


def test_growing_past_ann_min_rows_switches_to_the_lean_view(
    sample_repo: Path, make_engine
) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    count = engine.open_store().chunks.count_current()
    big = make_engine(sample_repo, overrides={"recall": {"ann_min_rows": count + 1}})
    recaller = big.recaller(rerank=False)
    assert not isinstance(recaller.snapshots(), LeanSnapshot)
    (sample_repo / "src/extra.py").write_text("def brand_new(v):\n    return v * 2\n")
    engine.index()
    assert isinstance(recaller.snapshots(), LeanSnapshot)


def test_dense_ties_are_ordered_by_id_not_by_row() -> None:
    """Equal scores come back in id order whatever the rows' order, so the exact search and
    the vector index (which orders exact ties its own way) rank tied rows the same way."""
    import numpy as np

    from memserver.store.readview import TIE, settle_ties, top_rows

    scores = np.array([0.5, 0.9, 0.5, 0.5 + TIE / 2, 0.2, 0.5], dtype=np.float64)
    ids = ["d", "z", "b", "c", "y", "a"]
    allowed = np.ones(len(ids), dtype=bool)
    top = top_rows(scores, allowed, 3, ids.__getitem__)
    assert [ids[r] for r, _ in top] == ["z", "a", "b"]  # the tie at the third place: by id
    reordered = settle_ties([(ids[r], float(scores[r])) for r in (3, 0, 5, 1, 2)], str)
    assert [h for h, _ in reordered] == ["z", "a", "b", "c", "d"]
    assert top_rows(scores, allowed & (scores < 0.3), 3, ids.__getitem__) == [(4, 0.2)]


def test_only_the_memories_with_a_vector_hold_one_in_the_view(
    sample_repo: Path, make_engine
) -> None:
    """Distilled memories are searched by keyword alone (`[index] memory_vectors`), notes
    have vectors: the view keeps the notes' vectors only, and finds what a search over a
    zero-padded row per memory finds."""
    engine = make_engine(sample_repo)
    engine.index()
    engine.memory_service().remember(Note("The deploy script lives in ops/deploy.sh."))
    store = engine.open_store()
    snap = load_snapshot(store, with_memories=True)
    padded = _memories_of(snap, store.meta.dim).vectors
    assert padded is not None and snap.memory_vectors is not None
    with_vector = np.flatnonzero(np.any(padded != 0, axis=1))
    assert 0 < len(with_vector) < len(snap.memory_ids)
    assert np.array_equal(snap.memory_vector_rows, with_vector)
    assert len(snap.memory_vectors) == len(with_vector)
    everyone = np.ones(len(snap.memory_ids), dtype=bool)

    def same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
        # the same rows; scores from a product over fewer rows may differ in the last bit
        assert [r for r, _ in got] == [r for r, _ in want]
        assert np.allclose([v for _, v in got], [v for _, v in want], rtol=1e-5, atol=1e-6)

    for query in ["where is the deploy script", "load_settings timeout"]:
        qv = np.asarray(engine.query_embedder.embed_query(query), dtype=np.float32)
        same(
            snap.dense_memories(qv, 5, None), top_rows(padded @ qv, everyone, 5, snap.memory_id_at)
        )
        some = everyone.copy()
        some[with_vector[:1]] = False
        same(snap.dense_memories(qv, 5, some), top_rows(padded @ qv, some, 5, snap.memory_id_at))


def test_memory_vectors_are_read_only_when_a_memory_has_one(sample_repo: Path, make_engine
                                                            ) -> None:  # fmt: skip
    """Distilled memories have no vector by default: the view then does not read the
    memories' vector column at all (a zero row per memory was most of a small index's
    view). Once a note has a vector, it is read, and the note is the one row kept."""
    engine = make_engine(sample_repo)
    engine.index()
    store = engine.open_store()
    asked: list[bool] = []
    read = store.memories.active_table

    def recorded(with_vectors: bool, *args: object, **kwargs: object) -> object:
        asked.append(with_vectors)
        return read(with_vectors, *args, **kwargs)

    store.memories.active_table = recorded  # type: ignore[method-assign]
    snap = load_snapshot(store, with_memories=True)
    assert asked == [False] and len(snap.memory_ids) > 0
    assert snap.memory_vectors is None or len(snap.memory_vectors) == 0
    engine.memory_service().remember(Note("The deploy script lives in ops/deploy.sh."))
    asked.clear()
    snap = load_snapshot(store, with_memories=True)
    assert asked == [False, True]
    assert snap.memory_vectors is not None and len(snap.memory_vectors) == 1
    note = snap.memory_ids[int(snap.memory_vector_rows[0])]
    assert "ops/deploy.sh" in store.memories.get([note])[note].text
