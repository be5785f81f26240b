"""`memserver doctor` on real damage: lost data files, broken manifests and keyword
indexes, crash markers, desync, locks; then the next index run converges."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from memserver.cli import main
from memserver.core.errors import IndexLocked, IndexMissing
from memserver.engine import Engine
from memserver.store.doctor import Check, Doctor, DoctorReport
from memserver.store.lock import WriterLock
from memserver.store.statecache import DIRTY
from tests.conftest import SAMPLE, write_tree


def _engine(root: Path, index_dir: Path | None = None) -> Engine:
    return Engine(root, index_dir, embedder_flag="hashing", env={})


def _state(engine: Engine) -> dict[str, object]:
    store = engine.open_store()
    return {
        "current": sorted(c for c, cur in store.chunks.states().items() if cur),
        "bm25": sorted(store.keyword.all_ids()),
        "memories": sorted(store.keyword.all_ids("memory")),
        "manifest": {p: sorted(r.chunk_ids) for p, r in store.files.read().items()},
        "unembedded": store.chunks.count_unembedded(),
    }


def _checks(report: DoctorReport) -> dict[str, dict[str, object]]:
    return {c.check: {"ok": c.ok, "fixed": c.fixed, "detail": c.detail} for c in report.checks}


def _problems(report: DoctorReport) -> set[str]:
    return {c.check for c in report.checks if not c.ok and not c.fixed}


def _check(report: DoctorReport, name: str) -> Check:
    return next(c for c in report.checks if c.check == name)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "repo", SAMPLE)
    _engine(root).index()
    return root


def _clean(tmp_path: Path, root: Path) -> dict[str, object]:
    engine = _engine(root, tmp_path / "clean-index")
    engine.index()
    return _state(engine)


def _data_files(engine: Engine, table: str) -> set[Path]:
    return set((engine.index_dir / "lance" / f"{table}.lance" / "data").glob("*.lance"))


def test_a_healthy_index_passes_every_check(repo: Path) -> None:
    report = _engine(repo).doctor()
    assert report.healthy and report.exit_code == 0
    assert all(c.ok and not c.fixed for c in report.checks)
    assert [c.check for c in report.checks] == [
        "meta", "writer-lock", "tables", "keyword-index", "file-keyword-index", "tantivy-locks",
        "unique-ids", "sync", "crash-marker", "notes", "pending", "model",
    ]  # fmt: skip


def test_a_lost_data_file_is_restored_from_the_last_readable_version(
    repo: Path, tmp_path: Path
) -> None:
    engine = _engine(repo)
    before = _data_files(engine, "chunks")
    (repo / "src" / "extra.py").write_text("def extra_helper():\n    return 42\n")
    _engine(repo).index()
    for lost in _data_files(engine, "chunks") - before:  # the newest fragments
        lost.unlink()
    report = _engine(repo).doctor()
    assert report.exit_code == 6 and _problems(report) == {"tables"}
    assert "Not found" in _checks(report)["tables"]["detail"]

    repaired = _engine(repo).doctor(repair=True)
    assert repaired.healthy and _checks(repaired)["tables"]["fixed"]
    assert "restored version" in str(_checks(repaired)["tables"]["detail"])
    assert _engine(repo).doctor().healthy
    _engine(repo).index()  # re-indexes what the lost rows held
    assert _state(_engine(repo)) == _clean(tmp_path, repo)


def test_a_table_that_does_not_open_is_moved_aside_and_rebuilt(repo: Path, tmp_path: Path) -> None:
    engine = _engine(repo)
    versions = engine.index_dir / "lance" / "files.lance" / "_versions"
    newest = min(versions.glob("*.manifest"))  # v2 names count down from u64::MAX
    newest.write_bytes(b"")
    report = _engine(repo).doctor()
    assert _problems(report) == {"tables"} and "does not open" in report.checks[2].detail

    repaired = _engine(repo).doctor(repair=True)
    assert repaired.healthy, repaired.to_dict()
    kept = list(engine.index_dir.glob("broken-files-*.lance"))
    assert len(kept) == 1 and str(kept[0]) in repaired.checks[2].detail
    assert "indexed again: run `memserver index`" in str(_checks(repaired)["pending"]["detail"])
    _engine(repo).index()
    assert _state(_engine(repo)) == _clean(tmp_path, repo)


def test_a_damaged_keyword_index_is_rebuilt_from_lancedb(repo: Path, tmp_path: Path) -> None:
    engine = _engine(repo)
    before = _state(engine)
    for segment_file in (engine.index_dir / "bm25").glob("*.term"):
        segment_file.unlink()
    report = _engine(repo).doctor()
    assert _problems(report) == {"keyword-index"}
    repaired = _engine(repo).doctor(repair=True)
    assert repaired.healthy and _checks(repaired)["keyword-index"]["fixed"]
    assert _checks(repaired)["sync"]["fixed"]
    assert _state(_engine(repo)) == before
    hits = _engine(repo).recaller().recall("RetryPolicy backoff").evidence
    assert hits and hits[0].path == "src/http_client.py"


def test_desync_and_a_dead_writers_crash_marker_are_reconciled(repo: Path) -> None:
    engine = _engine(repo)
    before = _state(engine)
    store = engine.open_store()
    store.keyword.delete(before["bm25"][:2])  # type: ignore[index]
    store.keyword.commit()
    (engine.index_dir / DIRTY).write_text("999999999")  # a pid that cannot be running
    report = _engine(repo).doctor()
    assert _problems(report) == {"sync", "crash-marker"}
    assert "keyword documents to add: 2" in _check(report, "sync").detail
    assert "gone" in _checks(report)["crash-marker"]["detail"]  # type: ignore[operator]

    repaired = _engine(repo).doctor(repair=True)
    assert repaired.healthy
    assert _checks(repaired)["sync"]["fixed"] and _checks(repaired)["crash-marker"]["fixed"]
    assert not (engine.index_dir / DIRTY).exists() and _state(_engine(repo)) == before


def test_a_running_writer_is_reported_and_blocks_repair(repo: Path) -> None:
    engine = _engine(repo)
    (engine.index_dir / DIRTY).write_text(str(os.getpid()))  # its write in progress
    with WriterLock(engine.index_dir, timeout=1, purpose="memserver index"):
        report = Doctor(engine.index_dir, "hashing-256", 256, lock_timeout=0.2).run()
        checks = _checks(report)
        assert report.healthy and "held by pid" in str(checks["writer-lock"]["detail"])
        assert "not compared" in str(checks["sync"]["detail"])
        with pytest.raises(IndexLocked):
            Doctor(engine.index_dir, "hashing-256", 256, lock_timeout=0.2).run(repair=True)
    report = _engine(repo).doctor()  # the writer is gone: its marker is now a problem
    assert "crash-marker" in _problems(report)
    assert "last held by pid" in _checks(report)["writer-lock"]["detail"]  # type: ignore[operator]


def test_an_embedder_mismatch_is_reported_not_repaired(repo: Path) -> None:
    index_dir = _engine(repo).index_dir
    report = Doctor(index_dir, "sentence-transformers/all-MiniLM-L6-v2", 384).run(repair=True)
    assert _problems(report) == {"meta"} and report.exit_code == 6
    assert "--rebuild" in report.checks[0].detail
    # the settings may name another model: the index keeps its own, which is fine
    configured = ("sentence-transformers/all-MiniLM-L6-v2", 384)
    report = Doctor(index_dir, "hashing-256", 256, configured=configured).run()
    assert report.healthy and "the settings name" in report.checks[0].detail
    with pytest.raises(IndexMissing):
        Doctor(index_dir.parent / "nowhere", "hashing-256", 256).run()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can open any file: nothing to repair")
def test_a_tantivy_lock_file_this_user_cannot_open_is_removed(repo: Path) -> None:
    lock = _engine(repo).index_dir / "bm25" / ".tantivy-writer.lock"
    lock.chmod(0o000)
    assert "tantivy-locks" in _problems(_engine(repo).doctor())
    assert _engine(repo).doctor(repair=True).healthy and not lock.exists()
    (repo / "src" / "extra.py").write_text("def extra_helper():\n    return 42\n")
    assert _engine(repo).index().files_indexed == 1  # tantivy can write again


def test_cli_doctor_json_and_exit_codes(repo: Path) -> None:
    runner = CliRunner()
    args = ["doctor", "--root", str(repo), "--json"]
    result = runner.invoke(main, args, env={"MEMSERVER_INDEX_DIR": None})
    assert result.exit_code == 0 and json.loads(result.stdout)["healthy"]
    (_engine(repo).index_dir / DIRTY).write_text("999999999")
    result = runner.invoke(main, args[:3], env={"MEMSERVER_INDEX_DIR": None})
    assert result.exit_code == 6 and "crash-marker" in result.stdout
    assert "doctor --repair" in result.stderr
    result = runner.invoke(main, [*args, "--repair"], env={"MEMSERVER_INDEX_DIR": None})
    assert result.exit_code == 0
    assert {c["check"] for c in json.loads(result.stdout)["checks"] if c["fixed"]} == {
        "crash-marker"
    }


def test_doctor_begun_before_the_first_index_checks_the_index_as_built(repo: Path) -> None:
    """`doctor` started while the first `index` had not yet written the index's metadata
    (so its engine saw no index, and the configured model) checks against the embedder
    the index was then built with: no mismatch, no advice to rebuild."""
    early = Engine(repo, repo.parent / "index", env={})  # configured: the default model
    assert early.embedder_identity()[0] != "none"
    Engine(repo, repo.parent / "index", embedder_flag="none", env={}).index()
    report = early.doctor()
    assert "meta" not in _problems(report), _check(report, "meta").detail
    assert "none" in _check(report, "meta").detail
