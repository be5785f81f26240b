"""Deleted keyword documents do not pile up: once half of an index's documents are dead,
the run that got it there writes it again, and its scores are those of a fresh index."""

from __future__ import annotations

from pathlib import Path

import pytest

from memserver.engine import Engine
from memserver.store.index import KEYWORD_DEAD_SHARE, IndexStore

_WORDS = ("parse", "render", "cache", "route", "token", "stream", "retry", "encode")


def _write(root: Path, modules: int) -> None:
    """`modules` modules of six functions each; the ones beyond it are deleted."""
    for m in range(10):
        path = root / f"mod{m}.py"
        if m >= modules:
            path.unlink(missing_ok=True)
            continue
        body = "".join(
            f"def {_WORDS[(m + f) % 8]}_{m}_{f}(value):\n"
            f"    return value.{_WORDS[(m * f) % 8]}({m})\n\n"
            for f in range(6)
        )
        path.write_text(f'"""Module {m}."""\n\n{body}', "utf-8")


def _engine(root: Path, index_dir: Path) -> Engine:
    return Engine(root, index_dir, embedder_flag="none", env={})


def _scores(engine: Engine, terms: list[tuple[str, float]]) -> tuple[dict[str, float], ...]:
    store = engine.open_store()
    return tuple(
        {i: round(s, 4) for i, s in index.search_weighted(terms, 500, view=view)}
        for index, view in ((store.keyword, "chunk"), (store.keyword, "memory"),
                            (store.file_keyword, "file"))
    )  # fmt: skip


def _churned(root: Path, index_dir: Path) -> tuple[Engine, list[float], list[list[str]]]:
    """An index of ten modules moved to a branch that keeps four of them (most documents
    of the keyword index's one segment die, and the segment stays): the dead share after
    each run."""
    engine = _engine(root, index_dir)
    shares, rewritten = [], []
    for modules in (10, 4):
        _write(root, modules)
        rewritten.append(engine.index().keyword_rewritten)
        shares.append(engine.open_store().keyword.dead_share())
    return engine, shares, rewritten


def test_a_churned_keyword_index_is_written_again_and_scores_as_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    engine, shares, rewritten = _churned(root, tmp_path / "index")
    assert max(shares) < KEYWORD_DEAD_SHARE, shares
    assert rewritten == [[], ["keyword", "file keyword"]]
    fresh = _engine(root, tmp_path / "fresh")
    fresh.index()
    terms = [(w, 1.0) for w in _WORDS] + [("module", 2.0)]
    assert _scores(engine, terms) == _scores(fresh, terms) and all(_scores(fresh, terms))

    # without the rewrite the dead documents stay, and move the scores of the same tree
    monkeypatch.setattr(IndexStore, "rewrite_keyword", lambda self, dead_share=0.5: [])
    kept, shares, _ = _churned(root, tmp_path / "kept")
    assert shares[-1] >= KEYWORD_DEAD_SHARE, shares
    assert _scores(kept, terms) != _scores(fresh, terms)


def test_the_rewrite_keeps_exactly_what_the_index_held(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _write(root, 10)
    engine = _engine(root, tmp_path / "index")
    engine.index()
    store = engine.open_store()
    before = {v: store.keyword.all_ids(v) for v in ("chunk", "memory")}
    files = store.file_keyword.all_ids("file")
    hidden = sorted(before["memory"])[0]  # as if forgotten: gone from the keyword index
    store = engine.writable_store()
    store.keyword.delete([hidden])
    store.keyword.commit()

    assert store.rewrite_keyword(dead_share=0.0) == ["keyword", "file keyword"]
    assert store.keyword.dead_share() == 0.0
    assert store.keyword.all_ids("chunk") == before["chunk"]
    assert store.keyword.all_ids("memory") == before["memory"] - {hidden}
    assert store.file_keyword.all_ids("file") == files
