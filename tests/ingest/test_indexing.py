"""Incremental indexing through the real stores (LanceDB, tantivy) with the hashing embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from memserver.core.errors import IndexLocked, IndexMismatch, IndexMissing, PathError, StoreError
from memserver.store import lancedb as ldb
from memserver.store.lock import WriterLock


def current_state(engine) -> dict:
    store = engine.open_store()
    states = store.chunks.states()
    manifest = store.files.read()
    return {
        "current": sorted(c for c, cur in states.items() if cur),
        "bm25": sorted(store.keyword.all_ids()),
        "manifest": {p: sorted(r.chunk_ids) for p, r in manifest.items()},
        "unembedded": store.chunks.count_unembedded(),
    }


def test_cold_index_reports_and_skips(sample_repo: Path, make_engine) -> None:
    report = make_engine(sample_repo).index()
    assert report.files_indexed == 4
    assert report.skipped[".env"].startswith("may contain secrets")
    assert "node_modules/" in report.skipped
    assert report.chunks_total == report.chunks_added > 0
    assert report.chunks_embedded == report.chunks_total and report.chunks_unembedded == 0
    assert report.tokens > 0
    state = current_state(make_engine(sample_repo))
    assert state["current"] == state["bm25"]
    assert sorted(c for ids in state["manifest"].values() for c in ids) == state["current"]


def test_rerun_with_nothing_changed_does_nothing(sample_repo: Path, make_engine) -> None:
    make_engine(sample_repo).index()
    before = current_state(make_engine(sample_repo))
    report = make_engine(sample_repo).index()
    assert (report.files_indexed, report.files_unchanged) == (0, 4)
    assert (report.chunks_added, report.chunks_removed, report.chunks_embedded) == (0, 0, 0)
    assert current_state(make_engine(sample_repo)) == before


def test_edit_delete_and_move(sample_repo: Path, make_engine) -> None:
    make_engine(sample_repo).index()
    cfg = sample_repo / "src/config.py"
    cfg.write_text(cfg.read_text().replace("timeout", "deadline_seconds"))
    (sample_repo / "web/app.js").unlink()
    client = sample_repo / "src/http_client.py"
    client.write_text("# a new first line\n\n" + client.read_text())
    report = make_engine(sample_repo).index()
    assert report.files_indexed == 2 and report.files_removed == 1
    assert report.chunks_removed >= 1
    recaller = make_engine(sample_repo).recaller()
    hits = recaller.recall("deadline_seconds settings").evidence
    assert any("deadline_seconds" in e.text for e in hits)
    assert not any("timeout" in e.text and e.path == "src/config.py" for e in hits)
    assert not any(e.path == "web/app.js" for e in recaller.recall("createUser routes").evidence)
    # an unchanged function that moved down keeps its id and reports its new lines
    ev = next(
        e for e in recaller.recall("send_with_retry").evidence if "def send_with_retry" in e.text
    )
    lines = client.read_text().split("\n")
    assert lines[ev.start_line - 1 : ev.end_line] == ev.text.split("\n")
    state = current_state(make_engine(sample_repo))
    assert state["current"] == state["bm25"]


def test_revert_reopens_closed_chunks_without_reembedding(sample_repo: Path, make_engine) -> None:
    make_engine(sample_repo).index()
    cfg = sample_repo / "src/config.py"
    original = cfg.read_text()
    cfg.write_text(original + "\n\ndef extra():\n    return 1\n")
    make_engine(sample_repo).index()
    cfg.write_text(original)
    report = make_engine(sample_repo).index()
    assert report.chunks_embedded == 0  # the old chunks come back with their vectors


def test_no_embed_leaves_bm25_searchable_and_resumes(sample_repo: Path, make_engine) -> None:
    report = make_engine(sample_repo).index(embed=False)
    assert report.chunks_unembedded == report.chunks_total > 0
    result = make_engine(sample_repo).recaller().recall("RetryPolicy backoff")
    assert result.evidence and not result.evidence[0].embedded and result.unembedded > 0
    report = make_engine(sample_repo).index()
    assert report.chunks_embedded == report.chunks_total and report.chunks_unembedded == 0


def test_recall_before_index_is_a_clear_error(sample_repo: Path, make_engine) -> None:
    with pytest.raises(IndexMissing, match="no index") as info:
        make_engine(sample_repo).recaller()
    assert "memserver index" in info.value.hint


def test_embedder_mismatch_names_the_fix(sample_repo: Path, make_engine) -> None:
    make_engine(sample_repo, embedder="none").index()
    with pytest.raises(IndexMismatch) as info:
        make_engine(sample_repo, embedder="hashing").index()
    assert "--rebuild" in info.value.hint
    # without a flag the index's own embedder is used
    assert make_engine(sample_repo, embedder=None).recaller().embedder is None
    report = make_engine(sample_repo, embedder="hashing").index(rebuild=True)
    assert report.embedder == "hashing-256" and report.chunks_embedded > 0


def test_second_writer_waits_then_names_the_holder(sample_repo: Path, make_engine) -> None:
    engine = make_engine(sample_repo, overrides={"index": {"lock_timeout_seconds": 0.2}})
    engine.index()
    (sample_repo / "src" / "new.py").write_text("def new():\n    return 1\n")
    with (
        WriterLock(engine.index_dir, timeout=1, purpose="memserver watch"),
        pytest.raises(IndexLocked, match="memserver watch") as info,
    ):
        engine.index()
    assert "pid" in info.value.message
    assert engine.index().files_indexed == 1  # released: the next writer gets in


def test_missing_root_and_empty_root(tmp_path: Path, make_engine) -> None:
    with pytest.raises(PathError, match="does not exist"):
        make_engine(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "image.png").write_bytes(b"\x89PNG\0\0")
    with pytest.raises(PathError, match="nothing to index"):
        make_engine(tmp_path / "empty").index()


def test_read_only_index_dir_is_a_clear_error(
    sample_repo: Path, tmp_path: Path, make_engine
) -> None:
    import os

    if os.geteuid() == 0:
        # root ignores permission bits; a file where the index dir should be is just as read-only
        blocker = tmp_path / "blocked"
        blocker.write_text("not a directory")
        with pytest.raises(StoreError) as info:
            make_engine(sample_repo, index_dir=blocker / "index").index()
    else:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(StoreError) as info:
            make_engine(sample_repo, index_dir=ro / "index").index()
    assert "--index-dir" in info.value.hint


def test_changed_chunking_settings_rechunk_every_file(sample_repo: Path, make_engine) -> None:
    make_engine(sample_repo).index()
    before = set(current_state(make_engine(sample_repo))["current"])
    small = make_engine(sample_repo, overrides={"chunking": {"max_tokens": 40, "min_tokens": 0}})
    report = small.index()
    assert report.files_indexed == 4
    after = set(current_state(small)["current"])
    assert after != before and len(after) > len(before)
    assert small.index().files_unchanged == 4


def test_another_release_of_the_grammars_cuts_every_file_again(
    sample_repo: Path, make_engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grammar release may parse the same text otherwise: chunks and tags made by the
    last one must not stay beside the new one's, unchanged files included."""
    from indexers.treesitter import registry

    make_engine(sample_repo).index()
    installed = registry.grammars_version()
    monkeypatch.setattr(registry, "grammars_version", lambda: installed + ".post1")
    report = make_engine(sample_repo).index()
    assert report.recut and report.files_indexed == 4 and report.chunks_embedded == 0
    assert make_engine(sample_repo).index().files_unchanged == 4
    monkeypatch.setattr(registry, "grammars_version", lambda: installed)
    assert make_engine(sample_repo).index().recut


def test_no_op_shortcut_is_dropped_when_a_store_changed_behind_it(
    sample_repo: Path, make_engine
) -> None:
    from memserver.core.types import Chunk

    make_engine(sample_repo).index()
    store = make_engine(sample_repo).open_store()
    stray = Chunk(
        "c_" + "0" * 32,
        "repo",
        "file",
        "src/stray.py",
        "python",
        "function",
        "stray",
        1,
        2,
        "def stray():\n    pass",
        "",
        5,
        "x",
    )
    store.chunks.insert([stray])  # a write the manifest knows nothing about
    report = make_engine(sample_repo).index()
    assert report.repaired == 1 and report.files_unchanged == 4
    assert "c_" + "0" * 32 not in current_state(make_engine(sample_repo))["current"]


def test_a_changing_run_drops_table_versions_older_than_the_margin(
    sample_repo: Path, make_engine
) -> None:
    """`memserver index` compacts a table once changes made it worth it
    (`ldb.worth_compacting`) and drops its versions older than `[watch]
    keep_versions_minutes`; with no margin only the newest few survive, however many
    commits the runs made, and the index still answers (no clock in the test: every older
    version is older than a zero margin)."""
    versions = lambda: len(list((engine.index_dir / "lance/chunks.lance/_versions").iterdir()))  # noqa: E731
    engine = make_engine(sample_repo, overrides={"watch": {"keep_versions_minutes": 0}})
    kept = make_engine(sample_repo)
    kept.index()
    before = versions()
    for i in range(3):
        cfg = sample_repo / "src/config.py"
        cfg.write_text(cfg.read_text() + f"\nEXTRA_{i} = {i}\n")
        kept.index()
    assert versions() > before + 3  # with the default 10-minute margin they all stay
    for i in range(ldb._SMALL_FRAGMENTS):  # each changing run adds fragments: one compacts
        cfg.write_text(cfg.read_text() + f"\nLAST_{i} = 1\n")
        engine.index()
        if versions() <= 3:
            break
    assert versions() <= 3
    assert any(
        "LAST_" in e.text for e in make_engine(sample_repo).recaller().recall("LAST_0").evidence
    )
