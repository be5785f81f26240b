"""`memserver eval code` end to end on a tiny labelled set over the sample repository."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memserver.cli import main
from memserver.eval.calibrate import FITTED
from memserver.retrieve.gate import FEATURES
from tests.conftest import SAMPLE, write_tree

KEYS = {"recall@1", "recall@5", "recall@10", "mrr@10", "abstain", "false_abstain",
        "p50_ms", "p95_ms", "index_seconds"}  # fmt: skip


def test_eval_code_reports_per_package_macro_and_ablations(tmp_path: Path) -> None:
    write_tree(tmp_path / "corpora" / "demo", SAMPLE)
    lines = (tmp_path / "corpora/demo/src/http_client.py").read_text().split("\n")
    start = next(i for i, ln in enumerate(lines, 1) if ln.startswith("def send_with_retry"))
    rows = [
        {"qid": "d1", "package": "demo", "query": "send_with_retry", "answerable": True,
         "gold_path": "src/http_client.py", "gold_start_line": start,
         "gold_end_line": start + 7},
        {"qid": "d2", "package": "demo", "query": "quantum chromodynamics lattice solver",
         "answerable": False, "gold_path": None, "gold_start_line": None,
         "gold_end_line": None},
    ]  # fmt: skip
    dataset = tmp_path / "dev.jsonl"
    dataset.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = CliRunner().invoke(main, [
        "eval", "code", "--dataset", str(dataset), "--corpora", str(tmp_path / "corpora"),
        "--work", str(tmp_path / "work"), "--embedder", "hashing", "--calibrate", "--json",
    ])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report["packages"]["demo"]) >= KEYS and set(report["macro"]) >= KEYS - {
        "index_seconds"
    }
    assert set(report["ablations"]) == {"no-memories", "no-rerank"}
    assert all(0.0 <= report["macro"][k] <= 1.0 for k in ("recall@10", "abstain", "mrr@10"))
    assert report["packages"]["demo"]["answerable"] == 1
    calibration = report["calibration"]
    assert len(calibration["gate_weights"]) == len(FEATURES)
    # only the fitted signals carry weight
    unfitted = [w for f, w in zip(FEATURES, calibration["gate_weights"], strict=True)
                if f not in calibration["fitted"]]  # fmt: skip
    assert calibration["fitted"] == list(FITTED) and unfitted == [0.0] * len(unfitted)
