"""The answerability gate: calibration maths, and the real model on a real index."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memserver.config import DEFAULT_MODEL, FP32_MODEL, IndexSettings, RecallSettings
from memserver.engine import Engine
from memserver.eval.calibrate import calibrate, pick_threshold
from memserver.eval.code import Outcome
from memserver.retrieve.gate import (
    FITTED_GATES,
    GateSignals,
    confidence,
    coverage,
    gate_for,
    missing,
)
from tests.conftest import requires_model, write_tree


def outcome(qid: str, answerable: bool, dense: float) -> Outcome:
    signals = {"dense": dense, "memory": dense, "coverage": 0.5, "agree": 0.5, "margin": 0.1}
    return Outcome(qid, answerable, True, None, None, 1.0, 10, signals)


def test_calibration_separates_and_bounds_false_abstention() -> None:
    rng = random.Random(3)
    by_pkg = {
        pkg: [outcome(f"{pkg}{i}", i % 5 != 0, rng.gauss(0.6 if i % 5 else 0.3, 0.08))
              for i in range(200)]
        for pkg in ("a", "b", "c")
    }  # fmt: skip
    report = calibrate(by_pkg, max_false_abstain=0.02)
    assert report["in_sample"]["false_abstain"] <= 0.02
    assert report["in_sample"]["abstain"] > 0.8
    assert set(report["leave_one_package_out"]) == {"a", "b", "c"}
    assert report["gate_weights"][0] > 0  # a higher dense score means more likely answerable


def test_threshold_keeps_the_allowed_share_of_answerable_above_it() -> None:
    import numpy as np

    p = np.array([0.1, 0.2, 0.3, 0.9, 0.8, 0.7, 0.6])
    y = np.array([0, 0, 0, 1, 1, 1, 1])
    assert pick_threshold(p, y, 0.0) <= 0.6
    assert pick_threshold(p, y, 0.25) <= 0.7


def test_coverage_and_confidence() -> None:
    assert coverage(["parse", "config"], "def parse_config(path): ...") == 1.0
    assert coverage(["parse", "network"], "def parse_config(path): ...") == 0.5
    low = confidence(GateSignals(dense=0.1), [10, 0, 0, 0, 0], -5)
    high = confidence(GateSignals(dense=0.9), [10, 0, 0, 0, 0], -5)
    assert 0.0 <= low < 0.5 < high <= 1.0


def test_missing_is_the_rarity_of_the_rarest_word_the_evidence_lacks() -> None:
    text = "def parse_config(path): ..."
    assert missing(["parse", "config"], text, 1000, [50, 200]) == 0.0  # nothing lacked
    # two lacked words: the rarer one counts; one document holds it: close to 1
    rare = missing(["parse", "zone", "signer"], text, 1000, [50, 400, 1])
    assert rare == missing(["signer"], text, 1000, [1]) and 0.85 < rare < 1.0
    assert missing(["zone"], text, 1000, [400]) < 0.2  # a common word lacked: little
    assert missing(["zeppelin"], text, 1000, [0]) > 1.0  # a word the index has nowhere
    assert missing(["zone"], text, 0, [0]) == 0.0  # an empty index says nothing


def test_a_gate_of_five_weights_fitted_before_missing_still_scores() -> None:
    signals = GateSignals(dense=0.5, missing=1.0)
    assert confidence(signals, [10, 0, 0, 0, 0], -5) == confidence(signals, [10, 0, 0, 0, 0, 0], -5)
    assert confidence(signals, [10, 0, 0, 0, 0, -3], -5) < confidence(signals, [10, 0, 0, 0, 0], -5)
    with pytest.raises(ValueError, match="7 gate weights"):
        confidence(signals, [1, 0, 0, 0, 0, 0, 0], 0)


def gate_of(s: RecallSettings) -> tuple[tuple[float, ...], float, float]:
    return s.gate_weights, s.gate_bias, s.gate_threshold


def test_each_model_and_memory_setting_gets_the_gate_fitted_for_it_unless_the_config_sets_one(
) -> None:  # fmt: skip
    default = RecallSettings()
    assert gate_for(default, DEFAULT_MODEL, IndexSettings().memory_vectors) == default
    own = gate_for(default, DEFAULT_MODEL, "own")
    assert gate_of(own) == FITTED_GATES[(DEFAULT_MODEL, "own")] != gate_of(default)
    fp32 = gate_for(default, FP32_MODEL, "own")
    assert gate_of(fp32) == FITTED_GATES[(FP32_MODEL, "own")] != gate_of(default)
    # a setting not fitted for the model: the model's "own" gate
    assert gate_for(default, FP32_MODEL, "definitions") == fp32
    # without memory vectors the "own" gate would count a memory signal that is never there
    assert gate_for(default, FP32_MODEL, "none") == default
    assert gate_for(default, "hashing", "own") == default  # no fitted gate: the config's
    mine = RecallSettings(gate_threshold=0.8)
    assert gate_for(mine, FP32_MODEL, "own") == mine


def test_an_engine_on_the_fp32_model_uses_its_gate_and_a_configured_gate_wins(
    tmp_path: Path,
) -> None:
    root = write_tree(tmp_path / "repo", {"a.py": "def f():\n    return 1\n"})
    own = {"MEMSERVER_INDEX_MEMORY_VECTORS": "own"}
    engine = Engine(root, tmp_path / "idx", embedder_flag=FP32_MODEL, env=own)
    assert engine.settings.recall.gate_threshold == FITTED_GATES[(FP32_MODEL, "own")][2]
    env = {"MEMSERVER_RECALL_GATE_THRESHOLD": "0.75"}
    assert Engine(root, tmp_path / "idx", embedder_flag=FP32_MODEL,
                  env=env).settings.recall.gate_threshold == 0.75  # fmt: skip


@requires_model
def test_real_model_answers_what_is_there_and_abstains_on_what_is_not(
    sample_repo: Path, make_engine
) -> None:
    engine = make_engine(sample_repo, embedder="sentence-transformers/all-MiniLM-L6-v2")
    engine.index()
    recaller = make_engine(sample_repo, embedder=None).recaller()
    there = recaller.recall("Send a request again when the server fails, waiting longer each time")
    assert there.found is True and there.evidence[0].path == "src/http_client.py"
    absent = recaller.recall("Compute the lattice QCD propagator on a GPU cluster")
    assert absent.found is False and 0.0 <= absent.confidence < there.confidence
    # words the repository has nowhere: the top evidence lacks them
    assert absent.signals["missing"] > 1.0 > there.signals["missing"]
