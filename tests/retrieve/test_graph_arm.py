"""The graph arms of recall over real stores: definitions the query names, and the callers
and callees of the best hits, in fusion with their own weight and inside the filters."""

from __future__ import annotations

from pathlib import Path

from memserver.core.requests import Filters
from memserver.engine import Engine
from memserver.retrieve.arms import plan_arms
from memserver.retrieve.plan import plan_query

ON = {"recall": {"graph_weight": 1.0, "graph_near_weight": 0.5}}


def test_the_arms_are_planned_only_with_a_graph_and_a_weight() -> None:
    plan = plan_query("where is RetryPolicy.delays used")
    settings = Engine(Path("."), None, env={}, overrides=ON).settings.recall
    names = {s.name for s in plan_arms(plan, settings, dense_count=0, include_memories=False,
                                       large=False, graph=True)}  # fmt: skip
    assert {"graph/defs", "graph/near"} <= names
    off = plan_arms(plan, settings, dense_count=0, include_memories=False, large=False)
    assert not any(s.kind == "graph" for s in off)
    default = Engine(Path("."), None, env={}).settings.recall
    assert default.graph_weight > 0 and default.graph_near_weight == 0  # as measured


def test_graph_arms_find_definitions_and_neighbours_within_the_filters(
    indexed_repo: Path,
) -> None:
    recaller = Engine(indexed_repo, None, env={}, overrides=ON).recaller(rerank=False)
    assert recaller.graph is not None
    found = recaller.recall("RetryPolicy.delays", explain=True)
    routes = {e.path: e.routes for e in found.evidence}
    assert "graph/defs" in routes["src/http_client.py"]
    near = recaller.recall("send a request again when the server fails", explain=True)
    assert any("graph/near" in e.routes for e in near.evidence)
    fenced = recaller.recall("RetryPolicy.delays", filters=Filters(paths=("web/**",)))
    assert {e.path for e in fenced.evidence} <= {"web/app.js"}
    off = {"recall": {"graph_weight": 0.0, "graph_near_weight": 0.0}}
    assert Engine(indexed_repo, None, env={}, overrides=off).recaller(rerank=False).graph is None
