"""Cross-encoder reranker: finding it in fastembed's cache, and failing clearly without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memserver.core.errors import ModelUnavailable
from memserver.embed.rerank import (
    DEFAULT_MODEL,
    FastEmbedReranker,
    cross_encoder_available,
    make_reranker,
)
from tests.conftest import MODEL_CACHE, requires_model

REVISION = "0123456789abcdef0123456789abcdef01234567"


def fake_cache(root: Path, folder: str, files: list[str], revision: str = REVISION) -> Path:
    """Empty files laid out as huggingface_hub caches them; the weights are never loaded."""
    repo = root / folder
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    for name in files:
        path = repo / "snapshots" / revision / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    return repo


MINILM = ["onnx/model.onnx", "tokenizer.json", "tokenizer_config.json", "config.json"]


@requires_model
def test_default_cross_encoder_is_not_in_the_offline_cache() -> None:
    assert not cross_encoder_available(DEFAULT_MODEL, None)
    assert not cross_encoder_available(DEFAULT_MODEL, MODEL_CACHE)
    reranker, status = make_reranker(DEFAULT_MODEL, MODEL_CACHE, True)
    assert reranker is None
    assert status == (
        f"unavailable: {DEFAULT_MODEL} is not in the model cache ({MODEL_CACHE}); "
        "reranking is skipped"
    )


def test_empty_cache_has_no_cross_encoder(tmp_path: Path) -> None:
    assert not cross_encoder_available(DEFAULT_MODEL, str(tmp_path))
    assert not cross_encoder_available(DEFAULT_MODEL, str(tmp_path / "missing"))


@pytest.mark.parametrize("org", ["Xenova", "xenova"])  # fastembed 0.9 also reads other casings
def test_fake_cache_layout_is_found(tmp_path: Path, org: str) -> None:
    fake_cache(tmp_path, f"models--{org}--ms-marco-MiniLM-L-6-v2", MINILM)
    assert cross_encoder_available(DEFAULT_MODEL, str(tmp_path))
    assert cross_encoder_available(DEFAULT_MODEL.lower(), str(tmp_path))
    assert not cross_encoder_available("Xenova/ms-marco-MiniLM-L-12-v2", str(tmp_path))
    reranker, status = make_reranker(DEFAULT_MODEL, str(tmp_path), True)
    assert isinstance(reranker, FastEmbedReranker) and status == DEFAULT_MODEL


def test_cache_dir_defaults_to_fastembed_cache_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cache(tmp_path, "models--Xenova--ms-marco-MiniLM-L-6-v2", MINILM)
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))
    assert cross_encoder_available(DEFAULT_MODEL, None)
    assert cross_encoder_available(DEFAULT_MODEL, "")


def test_source_repo_and_additional_files_come_from_fastembed(tmp_path: Path) -> None:
    """bge-reranker-v2-m3 is served from another repo and keeps its weights in two files."""
    folder = "models--onnx-community--bge-reranker-v2-m3-ONNX"
    repo = fake_cache(tmp_path, folder, MINILM)
    assert not cross_encoder_available("BAAI/bge-reranker-v2-m3", str(tmp_path))
    (repo / "snapshots" / REVISION / "onnx" / "model.onnx_data").touch()
    assert cross_encoder_available("BAAI/bge-reranker-v2-m3", str(tmp_path))


@pytest.mark.parametrize(
    "damage",
    ["no ref", "no weights", "no tokenizer", "unknown revision", "short weights"],
)
def test_incomplete_cache_is_not_available(tmp_path: Path, damage: str) -> None:
    repo = fake_cache(tmp_path, "models--Xenova--ms-marco-MiniLM-L-6-v2", MINILM)
    snapshot = repo / "snapshots" / REVISION
    if damage == "no ref":
        (repo / "refs" / "main").unlink()
    elif damage == "no weights":
        (snapshot / "onnx" / "model.onnx").unlink()
    elif damage == "no tokenizer":
        (snapshot / "tokenizer_config.json").unlink()
    elif damage == "unknown revision":
        (repo / "refs" / "main").write_text("f" * 40)
    else:
        meta = {f"snapshots/{REVISION}/onnx/model.onnx": {"size": 1234, "blob_id": "x"}}
        (repo / "files_metadata.json").write_text(json.dumps(meta))
    assert not cross_encoder_available(DEFAULT_MODEL, str(tmp_path))


def test_disabled_reranker_is_off(tmp_path: Path) -> None:
    assert make_reranker(DEFAULT_MODEL, str(tmp_path), False) == (None, "off (disabled in config)")


def test_unknown_model_is_a_clear_error(tmp_path: Path) -> None:
    assert not cross_encoder_available("no/such-reranker", str(tmp_path))
    # nothing in the cache names it: reported as unavailable without importing fastembed
    assert make_reranker("no/such-reranker", str(tmp_path), True)[1].startswith(
        "unavailable: no/such-reranker"
    )
    (tmp_path / "models--no--such-reranker").mkdir()  # something named like it: validated
    with pytest.raises(ModelUnavailable, match="unknown cross-encoder") as info:
        make_reranker("no/such-reranker", str(tmp_path), True)
    assert DEFAULT_MODEL in info.value.hint and "enabled = false" in info.value.hint
    reranker = FastEmbedReranker("no/such-reranker", str(tmp_path))
    assert reranker.score("q", []) == []  # nothing to score: the model is never loaded
    with pytest.raises(ModelUnavailable, match="cannot load cross-encoder"):
        reranker.score("q", ["p"])


def test_missing_model_offline_fails_fast_with_the_fix(tmp_path: Path) -> None:
    """In a fresh process with an empty cache and no network: an error, not a hang."""
    code = (
        "import sys\n"
        "from memserver.embed.rerank import FastEmbedReranker\n"
        "from memserver.core.errors import ModelUnavailable\n"
        "reranker = FastEmbedReranker(cache_dir=sys.argv[1])\n"
        "for _ in range(2):\n"
        "    try:\n"
        "        reranker.score('retry http', ['def send_with_retry(): ...'])\n"
        "    except ModelUnavailable as e:\n"
        "        print('HINT', e.hint)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("FASTEMBED_CACHE_PATH", None)
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    hints = [line for line in out.stdout.splitlines() if line.startswith("HINT")]
    assert len(hints) == 2, out.stderr[-2000:]
    assert "FASTEMBED_CACHE_PATH" in hints[0] and "[rerank] enabled = false" in hints[0]
    assert DEFAULT_MODEL in hints[0]
