"""The CLI end to end with click's CliRunner, on real stores."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memserver.cli import main
from memserver.core.errors import IndexMismatch
from memserver.engine import Engine

INDEX_KEYS = {
    "files_indexed",
    "files_unchanged",
    "files_skipped",
    "skipped",
    "chunks_added",
    "chunks_removed",
    "chunks_total",
    "tokens",
    "seconds",
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env={"MEMSERVER_INDEX_DIR": None})
    return result.exit_code, result.stdout, result.stderr


def test_index_json_then_status_then_recall(sample_repo: Path) -> None:
    root = str(sample_repo)
    code, out, _ = run("index", root, "--embedder", "hashing", "--json")
    assert code == 0
    report = json.loads(out)
    assert set(report) >= INDEX_KEYS and report["files_indexed"] == 4
    assert report["skipped"][".env"].startswith("may contain secrets")

    code, out, _ = run("status", "--root", root, "--json")
    status = json.loads(out)
    assert code == 0 and status["files"] == 4 and status["stale_files"] == []
    assert status["embedder"] == "hashing-256" and status["up_to_date"]

    (sample_repo / "src/config.py").write_text("def changed():\n    return 2\n")
    status = json.loads(run("status", "--root", root, "--json")[1])
    assert status["stale_files"] == ["src/config.py"] and not status["up_to_date"]

    code, out, _ = run("recall", "retry failed requests", "--root", root, "--json")
    result = json.loads(out)
    assert code == 0
    assert {"found", "confidence", "tokens", "truncated", "evidence"} <= set(result)
    top = result["evidence"][0]
    assert {
        "id",
        "path",
        "start_line",
        "end_line",
        "symbol",
        "kind",
        "text",
    } <= set(top)
    assert result["tokens"] <= 4096 and "score" not in top  # scores only with --explain


def test_recall_batch_mode(sample_repo: Path, tmp_path: Path) -> None:
    run("index", str(sample_repo), "--embedder", "hashing", "--json")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "a", "query": "load settings"}\n{"qid": "b", "query": "routes"}\n')
    code, out, _ = run("recall", "--queries", str(queries), "--root", str(sample_repo), "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [x["qid"] for x in lines] == ["a", "b"]
    assert all(x["evidence"] for x in lines)


def test_dry_run_lists_files_and_reasons_without_an_index(sample_repo: Path) -> None:
    code, out, _ = run("index", str(sample_repo), "--dry-run", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["totals"]["files"] == 4
    assert {f["path"] for f in summary["files"]} >= {"src/config.py", "docs/guide.md"}
    assert ".env" in summary["skipped"]
    assert not (sample_repo / ".memserver").exists()


def test_errors_have_messages_hints_and_exit_codes(sample_repo: Path, tmp_path: Path) -> None:
    code, _, err = run("index", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err
    code, _, err = run("recall", "anything", "--root", str(sample_repo))
    assert code == 3 and "memserver index" in err
    run("index", str(sample_repo), "--embedder", "none", "--json")
    code, _, err = run("index", str(sample_repo), "--embedder", "hashing")
    assert code == 4 and "--rebuild" in err


def test_human_output_is_readable(sample_repo: Path) -> None:
    code, out, _ = run("index", str(sample_repo), "--embedder", "hashing")
    assert code == 0 and "4 indexed" in out and "skipped" in out
    code, out, _ = run("recall", "RetryPolicy", "--root", str(sample_repo))
    assert code == 0 and "src/http_client.py:" in out
    code, out, _ = run("status", "--root", str(sample_repo))
    assert code == 0 and "matches the working tree" in out


def test_an_index_named_alone_is_of_the_project_it_holds(
    sample_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--index-dir` without a root, from another folder: the commands read (and `index`
    refreshes) the project the index was built from, not the current folder."""
    index = str(tmp_path / "idx")
    assert run("index", str(sample_repo), "--index-dir", index, "--embedder", "hashing")[0] == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.py").write_text("def unrelated():\n    return 1\n")
    monkeypatch.chdir(elsewhere)

    code, out, _ = run("status", "--index-dir", index, "--json")
    status = json.loads(out)
    assert code == 0 and status["root"] == str(sample_repo.resolve())
    assert status["files"] == 4 and status["stale_files"] == []
    code, out, _ = run("symbol", "RetryPolicy", "--index-dir", index)
    assert code == 0 and "src/http_client.py" in out and "changed since indexed" not in out

    code, out, _ = run("index", "--index-dir", index, "--json")
    report = json.loads(out)
    assert code == 0 and report["root"] == str(sample_repo.resolve())
    assert report["files_indexed"] == 0 and report["chunks_removed"] == 0

    monkeypatch.chdir(tmp_path)  # a relative --index-dir is named from here, read from here
    status = json.loads(run("status", "--index-dir", "idx", "--json")[1])
    assert status["index_dir"] == index and status["files"] == 4
    assert run("index", "--index-dir", "idx", "--json")[0] == 0
    assert not (sample_repo / "idx").exists()


def test_another_tree_is_not_indexed_into_an_index_of_a_project(
    sample_repo: Path, tmp_path: Path
) -> None:
    """Indexing a second tree into an index would close every file of the first: refused,
    with the ways out, and the index is left as it was; --rebuild makes it the second's."""
    index = str(tmp_path / "idx")
    run("index", str(sample_repo), "--index-dir", index, "--embedder", "hashing")
    other = tmp_path / "other"
    other.mkdir()
    (other / "main.py").write_text("def main():\n    return 0\n")

    code, _, err = run("index", str(other), "--index-dir", index, "--embedder", "hashing")
    assert code == 4 and str(sample_repo.resolve()) in err and "--rebuild" in err
    status = json.loads(run("status", "--root", str(sample_repo), "--index-dir", index,
                            "--json")[1])  # fmt: skip
    assert status["files"] == 4 and status["stale_files"] == []

    code, out, _ = run("index", str(other), "--index-dir", index, "--embedder", "hashing",
                       "--rebuild", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["files_indexed"] == 1
    status = json.loads(run("status", "--index-dir", index, "--json")[1])
    assert status["root"] == str(other.resolve()) and status["files"] == 1


def test_a_moved_or_copied_project_keeps_its_index(
    sample_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project whose folder moved (the index elsewhere), named where it is now, or a copy
    of it with its index inside: indexed there, nothing lost, and the index records the new
    place. Not named, the folder a command runs in is not taken for it."""
    index = str(tmp_path / "idx")
    run("index", str(sample_repo), "--index-dir", index, "--embedder", "hashing")
    assert run("remember", "retries back off exponentially", "--root", str(sample_repo),
               "--index-dir", index)[0] == 0  # fmt: skip
    before = json.loads(run("status", "--index-dir", index, "--json")[1])
    moved = sample_repo.rename(tmp_path / "moved")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.py").write_text("def unrelated():\n    return 1\n")
    for here in (elsewhere, tmp_path):  # the folder above the index is not taken either
        monkeypatch.chdir(here)
        code, _, err = run("index", "--index-dir", index, "--json")
        assert code == 4 and "which is gone" in err and "NEW-PLACE" in err
        code, _, err = run("index", "--index-dir", index, "--dry-run")
        assert code == 4 and "which is gone" in err
        code, _, err = run("status", "--index-dir", index)
        assert code == 0 and f"{sample_repo.resolve()}, is gone; reading {here}" in err
    assert json.loads(run("status", "--root", str(moved), "--index-dir", index,
                          "--json")[1])["files"] == 4  # fmt: skip

    code, out, _ = run("index", str(moved), "--index-dir", index, "--json")
    report = json.loads(out)
    assert code == 0 and report["chunks_removed"] == 0 and report["files_indexed"] == 0
    after = json.loads(run("status", "--index-dir", index, "--json")[1])
    assert after["root"] == str(moved.resolve()) and after["files"] == 4
    assert after["memories"] == before["memories"] and after["notes"] == before["notes"]

    run("index", str(moved), "--embedder", "hashing")  # its own index, inside it
    copy = tmp_path / "copy"
    shutil.copytree(moved, copy)
    code, out, _ = run("index", str(copy), "--json")
    assert code == 0 and json.loads(out)["chunks_removed"] == 0
    status = json.loads(run("status", "--root", str(copy), "--json")[1])
    assert status["root"] == str(copy.resolve()) and status["stale_files"] == []


def test_an_index_inside_a_project_is_not_taken_by_the_folder_around_it(
    sample_repo: Path, tmp_path: Path
) -> None:
    """The index of `repo/src` lives inside `repo` too: indexing `repo` with it would close
    every file of `src` to open them again under other paths. Refused; and a copy of a
    project, its index elsewhere, is refused even when every file is as the index saw it
    (the run's shortcut for a tree that did not change is not taken for another tree)."""
    inner = sample_repo / "src"
    run("index", str(inner), "--embedder", "hashing")
    code, _, err = run("index", str(sample_repo), "--index-dir", str(inner / ".memserver"))
    assert code == 4 and f"holds {inner.resolve()}" in err
    with pytest.raises(IndexMismatch):  # nor watched into it (before any file event)
        Engine(sample_repo, inner / ".memserver", env={}).watch()
    code, _, err = run("serve", "--root", str(sample_repo), "--index-dir",
                       str(inner / ".memserver"), "--watch")  # fmt: skip
    assert code == 4 and f"holds {inner.resolve()}" in err

    index = str(tmp_path / "idx")
    run("index", str(sample_repo), "--index-dir", index, "--embedder", "hashing")
    copy = tmp_path / "copy"
    shutil.copytree(
        sample_repo, copy, copy_function=shutil.copy2, ignore=shutil.ignore_patterns(".memserver")
    )
    code, _, err = run("index", str(copy), "--index-dir", index)
    assert code == 4 and f"holds {sample_repo.resolve()}" in err


def test_an_index_that_records_no_project_is_taken_only_by_a_named_one(
    sample_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index from before projects were recorded says nowhere: a tree named is taken for
    it, the folder a command runs in is not."""
    index = tmp_path / "idx"
    run("index", str(sample_repo), "--index-dir", str(index), "--embedder", "hashing")
    meta = json.loads((index / "meta.json").read_text())
    (index / "meta.json").write_text(json.dumps({**meta, "root": ""}))
    monkeypatch.chdir(tmp_path)
    code, _, err = run("index", "--index-dir", str(index))
    assert code == 4 and "records no project folder" in err
    code, out, _ = run("index", str(sample_repo), "--index-dir", str(index), "--json")
    assert code == 0 and json.loads(out)["chunks_removed"] == 0
    assert json.loads((index / "meta.json").read_text())["root"] == str(sample_repo.resolve())


def test_an_index_set_for_every_command_is_this_folders(
    sample_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$MEMSERVER_INDEX_DIR (a CI cache, say) names the index of the folder a command runs
    in: a new checkout somewhere else takes it once the old one is gone, and is refused
    while the old one is still there."""
    index = str(tmp_path / "cache")
    run("index", str(sample_repo), "--index-dir", index, "--embedder", "hashing")
    checkout = tmp_path / "checkout2"
    shutil.copytree(sample_repo, checkout)
    monkeypatch.chdir(checkout)

    def from_env(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(main, list(args), env={"MEMSERVER_INDEX_DIR": index})
        return result.exit_code, result.stdout, result.stderr

    code, _, err = from_env("index", "--json")
    assert code == 4 and f"holds {sample_repo.resolve()}" in err
    shutil.rmtree(sample_repo)
    code, out, _ = from_env("index", "--json")
    assert code == 0 and json.loads(out)["root"] == str(checkout.resolve())
    assert json.loads(out)["chunks_removed"] == 0
