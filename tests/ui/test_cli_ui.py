"""`memserver ui`: the command's options, its bind rules, and a missing index."""

from __future__ import annotations

import sys

from click.testing import CliRunner

from memserver.cli import main


def test_help_names_the_options_and_loads_no_web_stack() -> None:
    before = set(sys.modules)
    result = CliRunner().invoke(main, ["ui", "--help"])
    assert result.exit_code == 0
    for option in ("--root", "--index-dir", "--port", "--no-open", "--host"):
        assert option in result.output
    assert not {"starlette", "uvicorn", "jinja2"} & (set(sys.modules) - before)


def test_a_remote_bind_needs_consent_and_a_token(review_template) -> None:
    args = ["ui", "--root", str(review_template.root), "--index-dir",
            str(review_template.index_dir), "--host", "0.0.0.0", "--no-open"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and "--allow-remote" in result.output
    result = CliRunner().invoke(main, [*args, "--allow-remote"], env={"MEMSERVER_TOKEN": ""})
    assert result.exit_code != 0 and "MEMSERVER_TOKEN" in result.output


def test_no_index_says_how_to_make_one(tmp_path) -> None:
    result = CliRunner().invoke(main, ["ui", "--root", str(tmp_path), "--no-open"])
    assert result.exit_code != 0 and "memserver index" in result.output
