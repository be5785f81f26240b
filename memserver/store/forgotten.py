"""Paths `forget` removed from the index, kept out of later indexing runs, as records.

`<index dir>/forgotten.json` holds one record per forgotten path or glob: what was given,
whether it is an exact path or a glob, when and why. Records are data, never lines of an
ignore file, so no pattern can add a negation, a second line or a comment. The walk drops
the files they match and lists each with the reason "forgotten". Standard library only:
the no-op fast path of `memserver index` reads it before any store is opened.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from memserver.core.requests import is_glob
from memserver.core.types import ForgetRule

__all__ = ["FORGOTTEN_FILE", "add_rules", "load_rules"]

FORGOTTEN_FILE = "forgotten.json"
_LEGACY = "forgotten.txt"  # gitignore lines from before records: read once, then renamed


def load_rules(index_dir: Path) -> tuple[ForgetRule, ...]:
    path = index_dir / FORGOTTEN_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return _legacy(index_dir)
    except (OSError, ValueError):
        return ()
    rules = []
    for item in raw.get("rules", []) if isinstance(raw, dict) else []:
        if isinstance(item, dict) and isinstance(item.get("pattern"), str):
            rules.append(
                ForgetRule(
                    item["pattern"],
                    bool(item.get("glob")),
                    str(item.get("added_at", "")),
                    str(item.get("reason", "")),
                )
            )
    return tuple(rules)


def _legacy(index_dir: Path) -> tuple[ForgetRule, ...]:
    """The lines of an older index's forgotten.txt that are one plain path or glob. A line
    of wildcards alone (`*`, `**/*`) is dropped: no forget of a real path wrote one, and the
    old line-injection bug did (a path `x\n*` forgot every file)."""
    try:
        lines = (index_dir / _LEGACY).read_text(encoding="utf-8").splitlines()
    except OSError:
        return ()
    keep = [ln.strip().lstrip("/") for ln in lines
            if ln.strip() and not ln.startswith(("#", "!")) and "\\" not in ln]  # fmt: skip
    return tuple(ForgetRule(p, is_glob(p)) for p in keep
                 if p and ".." not in p.split("/") and not _ANYTHING.fullmatch(p)
                 and p.isprintable())  # fmt: skip


_ANYTHING = re.compile(r"[*?/]+")


def add_rules(index_dir: Path, rules: Sequence[ForgetRule]) -> list[ForgetRule]:
    """Record rules of checked patterns (see `core.requests.check_forget_path`); returns the
    new ones. Written atomically: a crash leaves the old records or the new, never half."""
    known = load_rules(index_dir)
    have = {(r.pattern, r.glob) for r in known}
    now = datetime.now(UTC).isoformat(timespec="seconds")
    new = [ForgetRule(r.pattern, r.glob, r.added_at or now, r.reason) for r in rules
           if (r.pattern, r.glob) not in have]  # fmt: skip
    if new or (index_dir / _LEGACY).exists():
        body = json.dumps({"rules": [asdict(r) for r in (*known, *new)]}, indent=1)
        tmp = index_dir / (FORGOTTEN_FILE + ".tmp")
        tmp.write_text(body, encoding="utf-8")
        os.replace(tmp, index_dir / FORGOTTEN_FILE)
        if (index_dir / _LEGACY).exists():
            os.replace(index_dir / _LEGACY, index_dir / (_LEGACY + ".migrated"))
    return new
