"""Fixture repositories for the code graph, and how well resolution matches what they say.

Each folder under tests/fixtures/graph/<family>/ is a small hand-written repository. A
comment on a line says what the references on that line resolve to:

    user.save()  // @ref save=src/models/entity.ts:Entity.save, user=-

`name=path:qualified` is the expected top candidate of the references named `name` on that
line; `name=-` says they resolve to nothing in the project; `name=*` leaves them out of the
count (a C++ namespace reopened in many files has no one right answer). Annotations are
complete: a
reference we resolve (top candidate at or above MIN_CONFIDENCE) on a line without its
annotation counts as a false positive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from indexers.languages import detect_language
from indexers.treesitter import LANGUAGES
from indexers.treesitter.tags import extract_tags
from memserver.core.graph import Definition, FileTags, Reference
from memserver.graph import MIN_CONFIDENCE, SymbolTable, resolve

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "graph"
_ANNOTATION = re.compile(r"@ref\s+(.*?)\s*(?:\*/|-->|$)")

Key = tuple[str, int, str]  # (path, line, name)


@dataclass
class Repo:
    root: Path
    tags: dict[str, FileTags]
    table: SymbolTable
    expected: dict[Key, str] = field(default_factory=dict)  # -> "path:qualified" or "-"

    def definitions(self) -> set[str]:
        return {
            f"{d.path}:{d.qualified}:{d.kind}" for t in self.tags.values() for d in t.definitions
        }

    def top(self, ref: Reference) -> list[Definition]:
        found = resolve(ref, self.tags[ref.path], self.table)
        if not found or found[0][1] < MIN_CONFIDENCE:
            return []
        return [d for d, s in found if s >= found[0][1] - 1e-9]

    def resolved(self) -> dict[Key, set[str]]:
        """Per (path, line, name): the targets our top candidates name."""
        out: dict[Key, set[str]] = {}
        for tags in self.tags.values():
            for ref in tags.references:
                targets = {f"{d.path}:{d.qualified}" for d in self.top(ref)}
                if targets:
                    out.setdefault((ref.path, ref.line, ref.name), set()).update(targets)
        return out


def load(family: str) -> Repo:
    root = FIXTURES / family
    tags: dict[str, FileTags] = {}
    expected: dict[Key, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        language = detect_language(rel)
        if not path.is_file() or language not in LANGUAGES:
            continue
        text = path.read_text(encoding="utf-8")
        tags[rel] = extract_tags(rel, text, language)
        for number, line in enumerate(text.split("\n"), start=1):
            match = _ANNOTATION.search(line)
            if match is None:
                continue
            for item in match.group(1).split(","):
                name, _, target = item.strip().partition("=")
                expected[(rel, number, name.strip())] = target.strip()
    return Repo(root, tags, SymbolTable(tags.values()), expected)


@dataclass(frozen=True)
class Score:
    true_pos: int
    false_pos: int
    false_neg: int
    wrong: tuple[str, ...]  # every disagreement, readable

    @property
    def precision(self) -> float:
        return self.true_pos / max(1, self.true_pos + self.false_pos)

    @property
    def recall(self) -> float:
        return self.true_pos / max(1, self.true_pos + self.false_neg)


def score(repo: Repo) -> Score:
    """Precision and recall of resolved references against the annotations."""
    resolved = repo.resolved()
    true_pos = false_pos = false_neg = 0
    wrong: list[str] = []
    for key, targets in sorted(resolved.items()):
        expected = repo.expected.get(key)
        if expected == "*":
            continue
        if expected is not None and targets == {expected}:
            true_pos += 1
            continue
        false_pos += 1
        wrong.append(f"{key[0]}:{key[1]} {key[2]}: got {sorted(targets)}, expected {expected}")
    for key, expected in sorted(repo.expected.items()):
        if expected in ("-", "*"):
            continue
        if resolved.get(key) != {expected}:
            false_neg += 1
            if key not in resolved:
                wrong.append(f"{key[0]}:{key[1]} {key[2]}: unresolved, expected {expected}")
    return Score(true_pos, false_pos, false_neg, tuple(wrong))
