"""The review scenario (tests/ui/reviewkit.py), built once and copied for each test that
changes it, and the review page over a copy through Starlette's test client."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.reviewkit import Scenario, build

BASE_URL = "http://127.0.0.1:8766"


@pytest.fixture(scope="session")
def review_template(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return build(tmp_path_factory.mktemp("review-template"))


@pytest.fixture
def scenario(review_template: Scenario, tmp_path: Path) -> Scenario:
    root, index_dir = tmp_path / "shop", tmp_path / "index"
    shutil.copytree(review_template.root, root)
    shutil.copytree(review_template.index_dir, index_dir)
    return dataclasses.replace(review_template, root=root, index_dir=index_dir)


@pytest.fixture
def engine(scenario: Scenario):  # type: ignore[no-untyped-def]
    from memserver.engine import Engine

    return Engine(scenario.root, scenario.index_dir, env={})


@pytest.fixture
def client(engine) -> Iterator[object]:  # type: ignore[no-untyped-def]
    from starlette.testclient import TestClient

    from memserver.ui.app import build_app
    from memserver.ui.state import UiState

    app = build_app(UiState(engine), host="127.0.0.1", port=8766)
    with TestClient(app, base_url=BASE_URL, follow_redirects=False) as c:
        c.form_token = app.form_token  # type: ignore[attr-defined]
        yield c
