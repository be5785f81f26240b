"""The whole-file keyword index follows the manifest: one document per indexed file, kept in
step by every write (edit, delete, forget, erase), rebuilt for an index made before it
existed, and repaired by doctor."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memserver.store.index import FILE_KEYWORD_DIR
from tests.conftest import write_tree
from tests.store import scanner

TREE = {
    "pkg/parser.py": (
        "def parse_header(line):\n    return line.split(':', 1)\n\n\n"
        "def quokkamarker_helper():\n    return 'QUOKKAMARKER7 lives here'\n"
    ),
    "pkg/writer.py": "def write_header(key, value):\n    return f'{key}: {value}'\n",
    "docs/guide.md": "# Guide\n\nParsing headers with the parser module.\n",
}


def _file_docs(engine) -> set[str]:
    return engine.open_store().file_keyword.all_ids("file")


def _files_with(engine, word: str) -> list[str]:
    return [p for p, _ in engine.open_store().file_keyword.search([word], 10, view="file")]


@pytest.fixture
def repo(tmp_path: Path, make_engine):
    root = write_tree(tmp_path / "repo", TREE)
    engine = make_engine(root)
    engine.index()
    return root, engine


def test_one_document_per_indexed_file(repo) -> None:
    _, engine = repo
    assert _file_docs(engine) == set(TREE)
    assert set(_files_with(engine, "header")) == {"pkg/parser.py", "pkg/writer.py", "docs/guide.md"}
    assert set(_files_with(engine, "quokkamarker7")) == {"pkg/parser.py"}


def test_an_edit_replaces_the_document_and_a_deletion_drops_it(repo, make_engine) -> None:
    root, engine = repo
    (root / "pkg/writer.py").write_text("def write_footer():\n    return 'wombatword'\n")
    (root / "docs/guide.md").unlink()
    make_engine(root).index()
    assert _file_docs(engine) == {"pkg/parser.py", "pkg/writer.py"}
    assert _files_with(engine, "wombatword") == ["pkg/writer.py"]
    assert "pkg/writer.py" not in _files_with(engine, "header")


def test_forgetting_a_path_drops_its_document(repo) -> None:
    _, engine = repo
    engine.memory_service().forget(paths=["pkg/writer.py"], reason="test")
    assert _file_docs(engine) == {"pkg/parser.py", "docs/guide.md"}


def test_erasing_a_file_leaves_no_word_of_it_in_any_keyword_index(repo) -> None:
    _, engine = repo
    assert scanner.in_keyword_index(engine.index_dir, ["quokkamarker7"])
    engine.memory_service().forget(paths=["pkg/parser.py"], reason="leaked", erase=True)
    assert scanner.in_keyword_index(engine.index_dir, ["quokkamarker7"]) == []
    assert scanner.in_files(engine.index_dir, "QUOKKAMARKER7") == []
    assert scanner.in_table_versions(engine.index_dir, "QUOKKAMARKER7") == []
    assert set(_files_with(engine, "header")) == {"docs/guide.md", "pkg/writer.py"}


def test_an_index_without_the_file_index_gets_it_on_the_next_run(repo, make_engine) -> None:
    root, engine = repo
    shutil.rmtree(engine.index_dir / FILE_KEYWORD_DIR)
    (engine.index_dir / "state.json").unlink(missing_ok=True)  # as after an upgrade
    report = make_engine(root).index()
    assert report.repaired == len(TREE)
    assert _file_docs(engine) == set(TREE)


def test_doctor_rebuilds_a_damaged_file_index(repo, make_engine) -> None:
    root, engine = repo
    for f in (engine.index_dir / FILE_KEYWORD_DIR).iterdir():
        if f.name.endswith(".idx") or f.name.endswith(".term"):
            f.write_bytes(b"garbage")
    report = make_engine(root).doctor(repair=True)
    checks = {c.check: c for c in report.checks}
    assert not checks["file-keyword-index"].ok and checks["file-keyword-index"].fixed
    assert report.healthy
    assert _file_docs(engine) == set(TREE)
