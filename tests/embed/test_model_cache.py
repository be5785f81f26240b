"""A first run without the model: where it is looked for, a fast failure remembered once,
an index that is searchable by keyword, recall that says it is degraded, and the fix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memserver.cli import main
from memserver.config import EmbeddingSettings
from memserver.core.errors import ModelUnavailable
from memserver.embed import fastembed
from memserver.embed.fastembed import FastEmbedder
from memserver.embed.models import cache_dir
from memserver.engine import Engine
from tests.conftest import MODEL_CACHE, SAMPLE, requires_model, write_tree


@pytest.fixture(autouse=True)
def fresh_memory() -> Iterator[None]:
    """Each test starts with no remembered load failure (and leaves none behind)."""
    fastembed._FAILED.clear()
    yield
    fastembed._FAILED.clear()


@pytest.fixture
def no_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty model cache and no hub: what a new machine offline looks like."""
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(empty))
    monkeypatch.setenv("MEMSERVER_MODEL_CACHE", str(tmp_path / "no-copies"))  # nor its int8 copy
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return empty


def test_the_cache_is_config_then_environment_then_a_per_user_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir(EmbeddingSettings(), env={}) == tmp_path / "xdg" / "memserver" / "models"
    env = {"FASTEMBED_CACHE_PATH": str(tmp_path / "env")}
    assert cache_dir(EmbeddingSettings(), env=env) == tmp_path / "env"
    chosen = EmbeddingSettings(cache_dir=str(tmp_path / "cfg"))
    assert cache_dir(chosen, env=env) == tmp_path / "cfg"


def test_a_missing_model_fails_at_once_with_the_fix_and_is_not_tried_again(
    no_model: Path,
) -> None:
    reader = FastEmbedder(EmbeddingSettings())
    with pytest.raises(ModelUnavailable) as first:
        reader.embed_query("retry the request")
    assert str(no_model) in first.value.message
    assert "memserver model fetch" in first.value.hint and "--embedder none" in first.value.hint
    with pytest.raises(ModelUnavailable) as again:  # another embedder of the process
        FastEmbedder(EmbeddingSettings()).embed_documents(["x"])
    assert again.value is first.value
    assert not reader.cached()
    # an embedder that may download is not held back by the reader's failure: it says why
    # it cannot download instead (offline here), without waiting on the network
    with pytest.raises(ModelUnavailable, match="HF_HUB_OFFLINE is set") as fetching:
        FastEmbedder(EmbeddingSettings(), download=True).embed_query("x")
    assert fetching.value is not first.value


@requires_model
def test_the_real_cache_is_found_without_loading_the_model() -> None:
    embedder = FastEmbedder(EmbeddingSettings())
    assert embedder.cached() and embedder.cache == Path(MODEL_CACHE).resolve()
    assert embedder._model is None


def test_an_index_without_the_model_is_searchable_by_keyword_and_says_why(
    tmp_path: Path, no_model: Path
) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    engine = Engine(root, None, env={})
    report = engine.index()
    assert report.chunks_total > 0 and report.chunks_unembedded == report.chunks_total
    assert "memserver model fetch" in report.vectors_pending
    assert json.loads(json.dumps(report.to_dict()))["vectors_pending"] == report.vectors_pending
    result = engine.recaller().recall("RetryPolicy delays backoff")
    assert result.evidence and result.evidence[0].path == "src/http_client.py"
    check = next(c for c in engine.doctor().checks if c.check == "model")
    assert not check.ok and str(no_model) in check.detail and "keyword-only" in check.detail


@requires_model
def test_recall_degrades_to_keywords_when_the_model_goes_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    Engine(root, None, env={}).index()  # with the model: the index has vectors
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(empty))
    monkeypatch.setenv("MEMSERVER_MODEL_CACHE", str(tmp_path / "no-copies"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = Engine(root, None, env={}).recaller().recall("RetryPolicy delays backoff")
    assert result.degraded.startswith("keyword search only") and str(empty) in result.degraded
    assert result.evidence and result.evidence[0].path == "src/http_client.py"
    assert result.to_dict()["degraded"] == result.degraded


def test_model_where_and_fetch_exit_with_the_fix_when_the_model_cannot_be_had(
    tmp_path: Path, no_model: Path
) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    runner = CliRunner()
    where = runner.invoke(main, ["model", "where", "--root", str(root), "--json"])
    assert where.exit_code == 7
    assert json.loads(where.output)["ok"] is False and str(no_model) in where.output
    fetch = runner.invoke(main, ["model", "fetch", "--root", str(root)])
    assert fetch.exit_code != 0 and "HF_HUB_OFFLINE" in fetch.output
    assert "memserver model fetch" in fetch.output
    assert not any(no_model.iterdir())  # nothing half-downloaded left behind
