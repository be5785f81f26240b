"""The CLI end to end with click's CliRunner, on real stores."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memserver.cli import main

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
