"""`memserver eval scrub`: on a small planted corpus, nothing planted is recoverable from
the index and the harmless tokens survive; the notes run, kind by kind."""

from __future__ import annotations

from pathlib import Path

from memserver.eval.scrub import run, run_code


def test_planted_code_secrets_never_leave_the_index(
    sample_repo: Path, make_engine, tmp_path: Path
) -> None:
    report = run_code(
        sample_repo, tmp_path / "work", lambda root, index_dir: make_engine(
            root, index_dir=index_dir), n_secrets=90, n_harmless=90, seed=3,
    ).to_dict()  # fmt: skip
    assert report["secrets"] == 90 + 1 and report["kinds"] >= 10  # and one private key file
    assert report["leaked"] == 0, report["leaked_examples"]
    assert report["harmless_tokens"] == 90
    assert report["harmless_masked_rate"] <= 0.01, report["masked_examples"]
    assert set(report["skipped_by_walk"].values()) == {"may contain secrets (private key block)"}
    assert report["masked_values"] >= 85
    checks = report["checks"]
    assert checks["recalls"] == 91 and checks["chunks_read"] > 0 and checks["index_files"] > 0
    # the same searches do find what is stored: the checks are not blind
    assert report["controls"]["harmless_found_by_chunk"] == 90
    assert report["controls"]["harmless_found_by_file"] > 0


def test_planted_note_secrets_are_redacted_kind_by_kind() -> None:
    report = run(n_secrets=300, n_harmless=300, seed=4).to_dict()
    assert report["leaked"] == 0, report["leaked_examples"]
    assert report["kinds"] >= 10
    assert all(n["leaked"] == 0 and n["planted"] > 0 for n in report["per_kind"].values())
    assert report["harmless_redacted_rate"] <= 0.01, report["redacted_examples"]


def test_the_cli_reports_notes_and_code(sample_repo: Path) -> None:
    import json

    from click.testing import CliRunner

    from memserver.cli import main

    args = ["eval", "scrub", "--code", "--repo", str(sample_repo), "--secrets", "15",
            "--harmless", "15", "--seed", "2"]  # fmt: skip
    done = CliRunner().invoke(main, [*args, "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output.splitlines()[-1])
    assert report["notes"]["secrets"] == 15 and report["code"]["secrets"] == 16
    assert report["notes"]["leaked"] == report["code"]["leaked"] == 0
    text = CliRunner().invoke(main, args).output
    assert "code: 0 of 16 planted secrets (15 kinds) recoverable; 0 of 15 harmless" in text
