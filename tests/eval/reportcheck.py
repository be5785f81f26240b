"""Checks a report folder as a reader would find it: figures present, valid, referenced."""

from __future__ import annotations

import re
import struct
from pathlib import Path

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; fails on anything that is not a PNG."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_MAGIC, f"{path.name} is not a PNG"
    assert head[12:16] == b"IHDR", f"{path.name} has no IHDR chunk first"
    return struct.unpack(">II", head[16:24])


def check_report_folder(folder: Path, expected: set[str] | None = None) -> list[str]:
    """Every file index.html references exists in `folder` (no outside links), every PNG
    is valid, of non-trivial size and referenced; returns the figure names."""
    page = (folder / "index.html").read_text("utf-8")
    refs = re.findall(r'(?:src|href)="?([^"\s>]+)', page)
    assert refs, "the page references nothing"
    for ref in refs:
        assert "/" not in ref and ":" not in ref and not ref.startswith("."), ref
        assert (folder / ref).is_file(), f"index.html references a missing {ref}"
    figures = sorted(p.name for p in folder.glob("*.png"))
    assert figures, "no figures"
    for name in figures:
        path = folder / name
        width, height = png_size(path)
        assert width >= 400 and height >= 200, (name, width, height)
        assert path.stat().st_size > 5_000, f"{name} is suspiciously small"
        assert name in refs, f"{name} is not on the page"
    assert "report.json" in refs
    stems = [f.removesuffix(".png") for f in figures]
    if expected is not None:
        assert set(stems) == expected, stems
    return stems
