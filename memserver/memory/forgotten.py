"""Path patterns `forget` removed from the index, kept out of later indexing runs.

One gitignore-style pattern per line in `<index dir>/forgotten.txt`. Standard library
only: discovery reads it on every run, including the no-op fast path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

FORGOTTEN_FILE = "forgotten.txt"


def forgotten_patterns(index_dir: Path) -> tuple[str, ...]:
    try:
        lines = (index_dir / FORGOTTEN_FILE).read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return ()
    return tuple(x for x in lines if x.strip() and not x.startswith("#"))


def literal_pattern(path: str) -> str:
    """A gitignore pattern matching exactly this root-relative path (`*`, `\\`, … literal)."""
    escaped = re.sub(r"([\\*?\[\]!#])", r"\\\1", path)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped


def add_forgotten(index_dir: Path, patterns: Sequence[str]) -> None:
    known = set(forgotten_patterns(index_dir))
    new = [p for p in dict.fromkeys(patterns) if p not in known]
    if new:
        with (index_dir / FORGOTTEN_FILE).open("a", encoding="utf-8") as fh:
            fh.writelines(f"{p}\n" for p in new)
