"""attribute: claims scored against loaded sources only, with the shipped (fitted) model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memserver.core.errors import BadRequest
from memserver.retrieve.attribute import FEATURES, Attributor, _source, claim_features
from tests.conftest import requires_model


def _ids(engine, path: str) -> list[str]:
    return list(engine.open_store().files.read()[path].chunk_ids)


def test_identifier_number_and_word_overlap_are_measured() -> None:
    src = [
        _source("a", "def load_settings(path):\n    data.setdefault('timeout', 30)"),
        _source("b", "function registerRoutes(app) { app.get('/health') }"),
    ]
    feats = claim_features("`loadSettings` sets a 30 second timeout.", src, np.array([0.6, 0.2]))
    names = dict(enumerate(FEATURES))
    a, b = ({names[i]: float(v) for i, v in enumerate(row)} for row in feats)
    assert a["idents"] == 1.0 and b["idents"] == 0.0  # loadSettings ≈ load_settings
    assert a["numbers"] == 1.0 and b["numbers"] == 0.0
    assert a["words"] > b["words"]
    assert a["lead"] == pytest.approx(0.4) and b["lead"] == pytest.approx(-0.4)


@requires_model
@pytest.mark.model
def test_claims_cite_the_source_that_supports_them(sample_repo: Path, make_engine) -> None:
    engine = make_engine(sample_repo, embedder="sentence-transformers/all-MiniLM-L6-v2")
    engine.index()
    attributor: Attributor = engine.attributor()
    loaded = _ids(engine, "src/http_client.py") + _ids(engine, "web/app.js")
    answer = (
        "`send_with_retry` sends the request again while the server answers with a 5xx "
        "status, sleeping between attempts. The moon is made of cheese."
    )
    out = attributor.attribute(answer, [*loaded, "c_" + "9" * 32])
    assert out.rejected == ["c_" + "9" * 32]
    assert len(out.claims) == 2
    first, second = out.claims
    cited = {s["id"] for s in first["supported_by"]}
    texts = {cid: c.text for cid, (c, _) in engine.open_store().chunks.get(loaded).items()}
    assert cited and all("send_with_retry" in texts[c] or "RetryPolicy" in texts[c] for c in cited)
    assert second["supported_by"] == [] and out.unsupported == [second["text"]]
    assert set(out.cited) <= set(loaded)
    assert all(c["text"] in answer for c in out.claims)  # claims quote, never rewrite


def test_bad_calls_are_explained(indexed_repo: Path, make_engine) -> None:
    attributor = make_engine(indexed_repo).attributor()
    with pytest.raises(BadRequest, match="empty"):
        attributor.attribute("  ", ["c_" + "0" * 32])
    with pytest.raises(BadRequest, match="no evidence"):
        attributor.attribute("It retries.", [])
    with pytest.raises(BadRequest, match="at most"):
        attributor.attribute("It retries.", [f"c_{i:032x}" for i in range(101)])
