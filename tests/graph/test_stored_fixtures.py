"""The fixture repositories through the stored graph: indexed into real stores, read back
by navigation, resolved there, and scored against the same `@ref` annotations; the score
is the extraction's to the reference (the tables lose nothing resolution needs)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from memserver.engine import Engine
from memserver.navigate.view import GraphIndex
from tests.graph.graphkit import FIXTURES, Key, Repo, Score, load, score
from tests.graph.test_fixtures import FAMILIES, PRECISION_FLOOR, RECALL_FLOOR, report


class Stored(Repo):
    """A fixture repository whose references are resolved on the stored graph."""

    graph: GraphIndex

    def resolved(self) -> dict[Key, set[str]]:
        out: dict[Key, set[str]] = {}
        for path in self.graph.files:
            for ref in (at.ref for at in self.graph.refs_of(path)):
                targets = {f"{d.path}:{d.qualified}" for d in self.graph.targets(ref)}
                if targets:
                    out.setdefault((ref.path, ref.line, ref.name), set()).update(targets)
        return out


_STORED: dict[str, Stored] = {}  # family -> its stored graph, indexed once for the module


@pytest.fixture(scope="module")
def stored_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stored-fixtures")


def stored(family: str, tmp: Path) -> Stored:
    if family not in _STORED:
        _STORED[family] = _index(family, tmp)
    return _STORED[family]


def _index(family: str, tmp: Path) -> Stored:
    root = shutil.copytree(FIXTURES / family, tmp / family)
    engine = Engine(root, tmp / f"{family}-index", embedder_flag="none", env={})
    engine.index()
    extracted = load(family)
    repo = Stored(extracted.root, extracted.tags, extracted.table, extracted.expected)
    repo.graph = engine.graph_view(engine.open_store()).get()
    return repo


@pytest.mark.parametrize("family", FAMILIES)
def test_the_stored_graph_resolves_as_the_extracted_one(family: str, stored_tmp: Path) -> None:
    repo = stored(family, stored_tmp)
    # every file the index holds (the walk leaves out empty ones, like a bare __init__.py)
    g = repo.graph
    held = {p: replace(e.tags, references=tuple(at.ref for at in g.refs_of(p)))
            for p, e in g.files.items()}  # fmt: skip
    assert held == {p: t for p, t in repo.tags.items() if p in g.files}
    result, reference = score(repo), score(load(family))
    print(report({family: result}))
    assert result == reference
    assert result.precision >= PRECISION_FLOOR and result.recall >= RECALL_FLOOR


def test_per_language_table_on_the_stored_graph(stored_tmp: Path) -> None:
    scores = {family: score(stored(family, stored_tmp)) for family in FAMILIES}
    table = report(scores)
    print(table)
    total = Score(*(sum(getattr(s, k) for s in scores.values())
                    for k in ("true_pos", "false_pos", "false_neg")), ())  # fmt: skip
    assert total.precision >= PRECISION_FLOOR and total.recall >= RECALL_FLOOR, table
