"""Bad input and damaged state end in a specific error, and nothing else is lost."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from memserver.core.errors import StoreError
from memserver.core.requests import LIMITS
from memserver.core.types import IndexReport, SourceFile
from memserver.ingest.pipeline import Indexer
from tests.conftest import write_tree

POLYGLOT = Path(__file__).parents[1] / "fixtures" / "polyglot"


def test_corrupt_metadata_names_the_fix(sample_repo: Path, make_engine) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    (engine.index_dir / "meta.json").write_text("{not json")
    with pytest.raises(StoreError, match="corrupt") as info:
        make_engine(sample_repo).recaller()
    assert "--rebuild" in info.value.hint
    report = make_engine(sample_repo).index(rebuild=True)
    assert report.files_indexed == 4


def test_damaged_table_is_a_store_error_and_rebuild_recovers(sample_repo: Path, make_engine):
    engine = make_engine(sample_repo)
    engine.index()
    for data in (engine.index_dir / "lance" / "chunks.lance" / "data").iterdir():
        data.unlink()
    with pytest.raises(StoreError) as info:
        make_engine(sample_repo).recaller().recall("retry")
    assert "--rebuild" in info.value.hint
    assert make_engine(sample_repo).index(rebuild=True).chunks_total > 0


def test_a_file_deleted_between_walk_and_read_is_skipped_with_a_reason(
    sample_repo: Path, make_engine
) -> None:
    engine = make_engine(sample_repo)
    files = list(engine.walk().files)
    ghost = sample_repo / "src" / "ghost.py"
    files.append(SourceFile("src/ghost.py", str(ghost), 10, 1, "python"))
    store = engine.writable_store(False)
    report = IndexReport(root=str(sample_repo), index_dir=str(engine.index_dir))
    Indexer(store, engine.chunker(), engine.embedder).run(files, report)
    assert report.skipped["src/ghost.py"].startswith("unreadable")
    assert report.files_indexed == 4


def test_invalid_utf8_huge_and_nested_files_do_not_stop_the_run(
    tmp_path: Path, make_engine
) -> None:
    root = write_tree(tmp_path / "r", {"ok.py": "def fine():\n    return 1\n"})
    (root / "latin1.py").write_bytes(b"name = '\xe9t\xe9'\n")
    with (root / "huge.json").open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # sparse: a 50 MB file that costs nothing to create
    nested = "".join(f"if (a{i}) {{\n" for i in range(3000))
    nested += "}\n" * 3000
    (root / "deep.js").write_text(f"function deep() {{\n{nested}}}\n\nfunction after() {{}}\n")
    report = make_engine(root).index()
    assert report.skipped["latin1.py"] == "not valid UTF-8 text"
    assert report.skipped["huge.json"].startswith("larger than")
    assert "deep.js" in report.parse_fallbacks
    assert report.files_indexed == 2


def test_every_language_of_the_fixture_repo_is_indexed_and_found(
    tmp_path: Path, make_engine
) -> None:
    root = tmp_path / "polyglot"
    shutil.copytree(POLYGLOT, root)
    report = make_engine(root).index()
    assert report.parse_fallbacks == {}
    recaller = make_engine(root).recaller()
    languages = {
        e.language
        for e in recaller.recall(
            "class", k=200, budget_tokens=LIMITS.budget_max, max_files=100
        ).evidence
    }
    assert {
        "python",
        "go",
        "rust",
        "java",
        "csharp",
        "cpp",
        "c",
        "ruby",
        "php",
        "bash",
        "javascript",
        "typescript",
        "tsx",
        "markdown",
    } <= languages


def test_index_dir_is_added_to_git_exclude(sample_repo: Path, make_engine) -> None:
    subprocess.run(["git", "init", "-q", str(sample_repo)], check=True)
    make_engine(sample_repo).index()
    make_engine(sample_repo).index()
    exclude = (sample_repo / ".git" / "info" / "exclude").read_text().split("\n")
    assert exclude.count("/.memserver/") == 1
    status = subprocess.run(
        ["git", "-C", str(sample_repo), "status", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".memserver" not in status
