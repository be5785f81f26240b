"""`memserver eval scale`: corpora replicated to a token count, indexed in a subprocess and
probed by a fresh process, with growth figures (slow: real subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memserver.cli import main
from memserver.eval.scale import build_pool
from tests.eval.reportcheck import check_report_folder

pytestmark = pytest.mark.slow
POLYGLOT = Path(__file__).resolve().parents[1] / "fixtures" / "polyglot"


def test_two_sizes_are_measured_and_drawn(tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    asked = ("parse the ledger amount", "http retry", "config loading")
    queries.write_text("".join(json.dumps({"query": q}) + "\n" for q in asked))
    pool = sum(tokens for *_, tokens in build_pool([POLYGLOT], []))
    sizes = [pool // 2, pool * 2]  # half a copy, and two copies
    args = ["eval", "scale", "--source", str(POLYGLOT), "--queries", str(queries),
            "--work", str(tmp_path / "work"), "--embedder", "hashing", "--json",
            "--report", str(tmp_path / "report"), *[f"--tokens={n}" for n in sizes]]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["corpus"]["target_tokens"] for r in rows] == sizes
    small, large = rows
    assert large["corpus"]["copies"] == 2 and small["corpus"]["copies"] == 1
    assert 0 < small["index"]["chunks"] < large["index"]["chunks"]
    for row in rows:
        assert row["tokens"] >= row["corpus"]["target_tokens"]
        assert row["index"]["peak_rss_mb"] > 0 and row["disk_mb"] > 0
        server = row["server"]
        assert server["queries"] == 3 and server["with_evidence"] >= 1
        assert server["recall_p95_ms"] >= server["recall_p50_ms"] > 0
    check_report_folder(tmp_path / "report", {"latency_growth", "rss_growth", "disk_growth",
                                              "index_growth"})  # fmt: skip
