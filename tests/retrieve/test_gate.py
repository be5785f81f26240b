"""The answerability gate: calibration maths, and the real model on a real index."""

from __future__ import annotations

import random
from pathlib import Path

from memserver.eval.calibrate import calibrate, pick_threshold
from memserver.eval.code import Outcome
from memserver.retrieve.gate import GateSignals, confidence, coverage
from tests.conftest import requires_model


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
