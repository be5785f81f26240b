"""`memserver eval swebench` end to end on a two-release fixture, through the real engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memserver.cli import main
from memserver.core.errors import PathError
from memserver.eval.swebench import Instance, load_instances, release_key, tree_for
from tests.eval.reportcheck import check_report_folder

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "swebench"
DATASET, TREES = FIXTURE / "instances.jsonl", FIXTURE / "trees"
FIGURES = {"file_acc", "acc5_per_release", "function_acc", "gate_roc", "latency", "index_time",
           "tests_docs"}  # fmt: skip


def _instance(**fields: str) -> Instance:
    row = {"instance_id": "acme__mini-9", "repo": "acme/mini", "base_commit": "abc123",
           "release": "9.9", "problem_statement": "x", **fields}  # fmt: skip
    return Instance.from_dict(row)


def test_tree_lookup_by_release_instance_id_or_commit(tmp_path: Path) -> None:
    assert tree_for(TREES, _instance(release="1.1")) == TREES / "mini-1.1"
    (tmp_path / "acme__mini-9").mkdir()
    assert tree_for(tmp_path, _instance()) == tmp_path / "acme__mini-9"
    (tmp_path / "abc123").mkdir()
    assert tree_for(tmp_path, _instance(instance_id="other")) == tmp_path / "abc123"
    with pytest.raises(PathError) as err:
        tree_for(tmp_path, _instance(instance_id="other", base_commit="def456"))
    assert "mini-9.9/" in err.value.hint


def test_gold_files_leave_tests_out_and_releases_sort_as_numbers() -> None:
    third = load_instances(DATASET)[2]
    assert third.gold_files == ["mini/strings.py"]  # tests/strings_checks.py is a test
    assert [i.instance_id for i in load_instances(DATASET, releases=["1.1"], limit=1)] == [
        "acme__mini-2"
    ]
    assert sorted(["3.10", "3.9", "10.0"], key=release_key) == ["3.9", "3.10", "10.0"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    tmp = tmp_path_factory.mktemp("swebench")
    result = CliRunner().invoke(main, [
        "eval", "swebench", "--dataset", str(DATASET), "--trees", str(TREES),
        "--work", str(tmp / "work"), "--embedder", "hashing", "--json",
        "--report", str(tmp / "report"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), tmp


def test_one_working_tree_switched_and_indexed_incrementally(run: tuple[dict, Path]) -> None:
    report, tmp = run
    first, second = report["switches"]
    assert (first["tree"], second["tree"]) == ("mini-1.0", "mini-1.1")
    assert first["sync"]["copied"] == 6 and first["index"]["files_indexed"] == 6
    # 1.1 changes __init__ and validators, adds strings and its checks, drops text.py
    assert (second["sync"]["copied"], second["sync"]["deleted"], second["sync"]["unchanged"]) == (
        4, 1, 3
    )  # fmt: skip
    assert second["index"]["files_indexed"] == 4 and second["index"]["chunks_added"] > 0
    work = tmp / "work" / "tree"
    assert not (work / "mini/text.py").exists() and (work / "mini/strings.py").is_file()


def test_report_numbers_agree_with_the_instances(run: tuple[dict, Path]) -> None:
    report, _ = run
    assert report["instances_n"] == 3
    assert list(report["per_release"]) == ["1.0", "1.1"]
    assert {s: b["bm25"]["n"] for s, b in report["per_split"].items()} == {"lite": 2, "verified": 2}
    assert report["gold_functions"] == {"n": 3, "located": 3}
    for system in ("defaults", "wide", "map", "bm25"):
        ranks = [i[system]["file_rank"] for i in report["instances"]]
        for k in (1, 3, 5, 10):
            share = 100 * sum(1 for r in ranks if r is not None and r <= k) / 3
            assert report["pooled"][system][f"file_acc@{k}"] == pytest.approx(share)
    # the obvious file is BM25's first on every instance
    assert [i["bm25"]["file_rank"] for i in report["instances"]] == [1, 1, 1]
    defaults = report["pooled"]["defaults"]
    assert defaults["function_n"] == 3 and 0 <= defaults["function_acc@10"] <= 100
    assert defaults["tokens_mean"] > 0 and defaults["p95_ms"] >= defaults["p50_ms"] > 0
    assert report["configs"]["wide"] == {"k": 50, "max_files": 10, "budget_tokens": 32_768}
    # the map names files and places, no code: far fewer tokens for the same files
    assert report["pooled"]["map"]["tokens_mean"] < defaults["tokens_mean"]
    assert (
        report["instances"][0]["map"]["files"][:1]
        == report["instances"][0]["defaults"]["files"][:1]
    )


def test_report_folder(run: tuple[dict, Path]) -> None:
    _report, tmp = run
    check_report_folder(tmp / "report", FIGURES)
    assert json.loads((tmp / "report/report.json").read_text())["instances_n"] == 3
    page = (tmp / "report/index.html").read_text()
    assert "memserver eval swebench --dataset" in page and "--embedder hashing" in page
