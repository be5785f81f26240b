"""`memserver recall` prints what a hostile file holds without letting it drive the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memserver import cli_format
from memserver.cli import main

HOSTILE = "\x1b[2J\x1b]0;pwned\x07"


@pytest.mark.parametrize(
    "text, shown",
    [
        (HOSTILE, "\\x1b[2J\\x1b]0;pwned\\x07"),
        ("a\x9b31mb", "a\\x9b31mb"),  # the one-byte C1 CSI
        ("del\x7f nul\x00 bs\x08 cr\r", "del\\x7f nul\\x00 bs\\x08 cr\\x0d"),
        ("keep\ttabs\nand lines\r\n", "keep\ttabs\nand lines\n"),
        ("unicode é ✓ stays", "unicode é ✓ stays"),
    ],
)
def test_visible_shows_controls_as_escapes(text: str, shown: str) -> None:
    assert cli_format.visible(text) == shown


def test_safe_also_escapes_rich_markup() -> None:
    assert cli_format.safe("[link=http://evil.example]x[/link]\x1b") == (
        "\\[link=http://evil.example]x\\[/link]\\x1b"
    )


def test_recall_prints_control_characters_of_indexed_files_visibly(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "banner.py").write_text(
        f'def show_banner_title():\n    return "{HOSTILE}"  # clears the screen, retitles\n'
    )
    runner = CliRunner()
    indexed = runner.invoke(main, ["index", str(root), "--embedder", "hashing"])
    assert indexed.exit_code == 0, indexed.output
    result = runner.invoke(main, ["recall", "show_banner_title", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "show_banner_title" in result.stdout
    assert "\\x1b[2J\\x1b]0;pwned\\x07" in result.stdout
    assert not any(c in result.stdout for c in "\x1b\x07\x9b")


def test_an_index_run_that_cut_every_file_again_says_which_settings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The section's name is printed as written, not read as console markup."""
    from memserver.core.types import IndexReport

    cli_format.print_index_report(IndexReport(root="r", index_dir="i", recut=True))
    assert "its [chunking] settings" in capsys.readouterr().out
