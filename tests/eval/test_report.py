"""Report folders of every eval: figures drawn from report dicts shaped as the evals return
them (`eval code` through the real CLI), checked as a reader would find them."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

from click.testing import CliRunner

from memserver.cli import main
from memserver.eval import figures
from memserver.eval.report import Bars, Page, bar_slots, roc_points, write_report
from tests.conftest import SAMPLE, write_tree
from tests.eval.reportcheck import check_report_folder


def test_roc_points_by_hand() -> None:
    assert roc_points([0.9, 0.8], [0.85, 0.3]) == [
        (0.0, 0.0), (0.0, 0.5), (0.5, 0.5), (0.5, 1.0), (1.0, 1.0)
    ]  # fmt: skip
    assert roc_points([0.5], [0.5]) == [(0.0, 0.0), (1.0, 1.0)]  # a tie moves both


def test_eval_code_report(tmp_path: Path) -> None:
    write_tree(tmp_path / "corpora" / "demo", SAMPLE)
    rows = [
        {"qid": "d1", "package": "demo", "query": "send a request again when the server fails",
         "answerable": True, "gold_path": "src/http_client.py", "gold_start_line": 17,
         "gold_end_line": 24},
        {"qid": "d2", "package": "demo", "query": "quantum chromodynamics lattice solver",
         "answerable": False, "gold_path": None, "gold_start_line": None, "gold_end_line": None},
    ]  # fmt: skip
    (tmp_path / "dev.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = CliRunner().invoke(main, [
        "eval", "code", "--dataset", str(tmp_path / "dev.jsonl"), "--corpora",
        str(tmp_path / "corpora"), "--work", str(tmp_path / "work"), "--embedder", "hashing",
        "--no-ablations", "--json", "--report", str(tmp_path / "report"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    check_report_folder(
        tmp_path / "report", {"recall_at_k", "mrr", "abstention_roc", "latency", "index_time"}
    )
    data = json.loads((tmp_path / "report/report.json").read_text())
    assert [q["answerable"] for q in data["queries"]] == [True, False]
    assert all(0 <= q["confidence"] <= 1 for q in data["queries"])
    demo = data["packages"]["demo"]  # the index-time figure's phases, inside the total
    phases = demo["index_seconds_to_search"] + demo["index_seconds_embedding"]
    assert 0 < phases <= demo["index_seconds"] + 1e-3


LOCOMO = {
    "pooled": {"questions": 4, "recall@5": 0.5, "recall@10": 0.6, "recall@20": 0.7,
               "all@5": 0.4, "all@10": 0.5, "all@20": 0.6},
    "per_category": {c: {"questions": 1, "recall@5": 0.1 * i, "recall@10": 0.2 * i,
                         "recall@20": 0.25 * i, "all@5": 0.1, "all@10": 0.2, "all@20": 0.3}
                     for i, c in enumerate(("1", "2", "3", "4"), 1)},
    "cat5": {"questions": 3, "abstain": 0.33, "false_abstain": 0.1, "auroc": 0.6,
             "trap@5": 0.2, "trap@10": 0.3},
    "recall_p50_ms": 12.0, "recall_p95_ms": 30.0, "conversations": 1, "turns": 20,
}  # fmt: skip

ATTRIBUTION = {
    "weights": [1.0, 2.0], "bias": -1.0, "threshold": 0.5,
    "in_sample": {"precision": 0.9, "recall": 0.8, "cited_mean": 1.2, "loaded_mean": 5.0},
    "leave_one_package_out": {p: {"precision": 0.9, "recall": 0.7, "cited_mean": 1.1,
                                  "loaded_mean": 5.0} for p in ("click", "cobra", "mongoose")},
    "leave_one_package_out_mean": {"precision": 0.9, "recall": 0.7, "cited_mean": 1.1,
                                   "loaded_mean": 5.0},
    "by_style": {s: {"precision": 0.9, "recall": 0.6} for s in ("description", "symbol-led")},
    "shipped_defaults": {"precision": 0.88, "recall": 0.75},
}  # fmt: skip


def _scale_row(tokens: int) -> dict:
    f = tokens / 1e6
    return {"tokens": tokens, "corpus": {"files": int(300 * f)}, "disk_mb": 40 * f,
            "index": {"wall_s": 60 * f, "embed_s": 0.0, "peak_rss_mb": 300 + 10 * f,
                      "chunks": int(5000 * f)},
            "server": {"server_rss_mb": 200 + 5 * f, "recall_p50_ms": 20 + f,
                       "recall_p95_ms": 40 + 2 * f}}  # fmt: skip


def test_locomo_attribution_and_scale_reports(tmp_path: Path) -> None:
    base = figures.load_baselines()
    page = figures.locomo(LOCOMO, base["locomo"])
    write_report(tmp_path / "locomo", page, command="memserver eval locomo", data=LOCOMO)
    check_report_folder(tmp_path / "locomo", {"recall_at_k", "recall10", "abstention", "latency"})
    assert "per-question" in (tmp_path / "locomo/index.html").read_text()  # says what it lacks
    asked = [
        {
            "category": c,
            "found": c != 5 and i % 4 != 0,
            "confidence": (c != 5) * 0.5 + (i % 7) / 20,
            "ms": 10.0 + i,
        }
        for i, c in enumerate([1, 2, 3, 4, 5] * 6)
    ]
    page = figures.locomo({**LOCOMO, "questions": asked}, base["locomo"])
    write_report(tmp_path / "locomo2", page, command="c", data={**LOCOMO, "questions": asked})
    check_report_folder(tmp_path / "locomo2", {"recall_at_k", "recall10", "abstention",
                                              "abstention_roc", "latency"})  # fmt: skip
    assert "per-question" not in (tmp_path / "locomo2/index.html").read_text()
    write_report(tmp_path / "attribution", figures.attribution(ATTRIBUTION), command="c",
                 data=ATTRIBUTION)  # fmt: skip
    check_report_folder(tmp_path / "attribution", {"held_out", "by_style"})
    rows = [_scale_row(t) for t in (1_000_000, 10_000_000, 100_000_000)]
    figures.scale_report(rows, tmp_path / "scale", "python benchmarks/scale.py --tokens 1000000")
    check_report_folder(
        tmp_path / "scale", {"latency_growth", "rss_growth", "disk_growth", "index_growth"}
    )


def test_figure_names_must_be_unique(tmp_path: Path) -> None:
    bars = Bars("same", "t", "c", "y", ["a"], {"s": [1.0]})
    try:
        write_report(tmp_path, Page("p", (bars, bars)), command="c", data={})
    except Exception as err:
        assert "name" in str(err)
    else:
        raise AssertionError("two figures with one name were accepted")


def test_a_series_drawn_in_one_group_leaves_no_gap_in_the_others() -> None:
    """Baselines exist for the macro group only: the other groups are as wide as the bars
    they have, each group's bars centred on its tick and never overlapping."""
    bars = Bars("mrr", "t", "c", "y", ["a", "b", "macro"],
                {"ours": [0.5, 0.6, 0.55], "ablation": [0.4, None, 0.45],
                 "baseline 1": [None, None, 0.3], "baseline 2": [None, None, 0.35]})  # fmt: skip
    width, slots = bar_slots(bars)
    for g in range(len(bars.groups)):
        xs = sorted(x for kept in slots.values() for x, _ in kept if round(x) == g)
        expected = sum(values[g] is not None for values in bars.series.values())
        assert len(xs) == expected
        assert abs(sum(xs) / len(xs) - g) < 1e-9  # centred
        assert all(b - a >= width - 1e-9 for a, b in pairwise(xs))
    assert [v for _, v in slots["ablation"]] == [0.4, 0.45]  # None draws nothing
