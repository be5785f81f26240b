"""Embedders: the real fastembed model from the offline cache, and the failure path."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memserver.config import DEFAULT_MODEL, FP32_MODEL, EmbeddingSettings
from memserver.core.errors import ModelUnavailable
from memserver.embed import QUERY_CHARS, embedder_identity, make_embedder
from memserver.embed.hashing import HashingEmbedder
from tests.conftest import requires_model


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@requires_model
def test_fastembed_model_embeds_documents_in_input_order() -> None:
    emb = make_embedder(EmbeddingSettings())
    texts = ["def parse_config(path): ...", "x" * 5000, "retry the http request on failure"]
    vecs = emb.embed_documents(texts)
    assert [len(v) for v in vecs] == [384] * 3
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-3) for v in vecs)
    alone = emb.embed_documents([texts[2]])[0]
    assert cosine(alone, vecs[2]) > 0.999  # sorting by length did not shuffle results
    q = emb.embed_query("retry failed HTTP requests")
    assert cosine(q, vecs[2]) > cosine(q, vecs[0])


@requires_model
def test_a_document_is_clipped_at_max_chars_and_a_query_is_not() -> None:
    """A chunk's text (text.passages) is its name line and header, then its first
    max_chars of code: the embedder reads that much and no more."""
    from memserver.embed.fastembed import LABEL_CHARS

    emb = make_embedder(EmbeddingSettings(max_chars=64))
    head = "def parse_config(path):\n    return load(path)  # read the settings\n" * 6
    head = head[: 64 + LABEL_CHARS]
    tail = " then retry every failed HTTP request with exponential backoff and jitter"
    whole, clipped = emb.embed_documents([head + tail, head])
    assert cosine(whole, clipped) > 0.9999  # the model never saw past the clip
    assert cosine(emb.embed_query(head + tail), emb.embed_query(head)) < 0.99
    assert len(head + tail) < QUERY_CHARS


@requires_model
def test_two_sessions_give_the_vectors_of_one_in_input_order() -> None:
    texts = [f"def handler_{n}(request):\n    return {'x' * (n * 37 % 900)}" for n in range(60)]
    one = make_embedder(EmbeddingSettings(sessions=1, batch_tokens=256)).embed_documents(texts)
    two_embedder = make_embedder(EmbeddingSettings(sessions=2, batch_tokens=256))
    told: list[int] = []
    two = two_embedder.embed_documents(texts, told.append)
    assert min(cosine(a, b) for a, b in zip(one, two, strict=True)) > 0.9999
    assert sum(told) == len(texts) and len(told) > 2  # progress came group by group
    assert two_embedder._spare is not None and two_embedder._spare.qsize() == 2  # both ran


def test_identity_needs_no_model() -> None:
    assert embedder_identity(EmbeddingSettings()) == (DEFAULT_MODEL, 384)
    assert embedder_identity(EmbeddingSettings(model=FP32_MODEL)) == (FP32_MODEL, 384)
    assert embedder_identity(EmbeddingSettings(model="none")) == ("none", 0)
    assert make_embedder(EmbeddingSettings(model="none")) is None


def test_unknown_model_is_a_clear_error() -> None:
    with pytest.raises(ModelUnavailable, match="unknown embedding model") as info:
        make_embedder(EmbeddingSettings(model="no/such-model"))
    assert "--embedder" not in info.value.message and "'none'" in info.value.hint


def test_missing_model_offline_fails_fast_with_the_fix(tmp_path: Path) -> None:
    """In a fresh process with an empty cache and no network: an error, not a hang."""
    code = (
        "from memserver.config import EmbeddingSettings\n"
        "from memserver.embed import make_embedder\n"
        "from memserver.core.errors import ModelUnavailable\n"
        "try:\n"
        "    make_embedder(EmbeddingSettings()).embed_query('x')\n"
        "except ModelUnavailable as e:\n"
        "    print('HINT', e.hint)\n"
    )
    env = {**os.environ, "FASTEMBED_CACHE_PATH": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "MEMSERVER_MODEL_CACHE": str(tmp_path / "copies")}  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert "HINT" in out.stdout, out.stderr[-2000:]
    assert "--embedder none" in out.stdout and "FASTEMBED_CACHE_PATH" in out.stdout


def test_hashing_embedder_is_deterministic_and_lexical() -> None:
    emb = HashingEmbedder()
    a, b, c = emb.embed_documents(["parse http response", "parseHTTPResponse", "open file"])
    assert a == emb.embed_query("parse http response")
    assert cosine(a, b) > 0.99 and cosine(a, c) < 0.5
