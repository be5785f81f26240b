"""The graph arms of recall over real stores: definitions the query names, and the callers
and callees of the best hits, in fusion with their own weight and inside the filters."""

from __future__ import annotations

from pathlib import Path

from memserver.core.requests import Filters
from memserver.engine import Engine
from memserver.navigate import find
from memserver.navigate.arm import _VALUES as VALUES
from memserver.navigate.arm import GraphArm
from memserver.navigate.view import GraphIndex
from memserver.retrieve.arms import plan_arms
from memserver.retrieve.plan import plan_query

GRAPH_FIXTURES = Path(__file__).parents[1] / "fixtures" / "graph"
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


def _whole_graph_definitions(
    g: GraphIndex, names: list[str], limit: int
) -> list[tuple[str, float]]:
    """The definitions arm as the whole graph answers it (every name looked up in it)."""
    out: dict[str, float] = {}
    for rank, name in enumerate(names):
        found = [d for d in find.symbols(g, name) if d.kind not in VALUES][:3]
        for n, d in enumerate(found):
            out.setdefault(g.def_chunk(d), 1.0 / (1 + rank + n))
    return sorted(out.items(), key=lambda kv: -kv[1])[:limit]


def test_the_definitions_arm_reads_only_the_names_and_answers_as_the_whole_graph(
    tmp_path: Path,
) -> None:
    """Every name defined in the multi-language graph fixtures, bare and qualified (and a
    few that name nothing): the arm's chunks and scores equal the whole graph's."""
    engine = Engine(GRAPH_FIXTURES, tmp_path / "index", embedder_flag="none", env={})
    engine.index(ci=True)
    store = engine.open_store()
    arm = engine.code_graph(store)
    assert isinstance(arm, GraphArm)
    whole = engine.graph_view(store).get()
    defs = [d for entry in whole.files.values() for d in entry.tags.definitions]
    asked = sorted({d.name for d in defs} | {d.qualified for d in defs})
    asked += ["no_such_name", "Nothing.here", "utils.py:nothing", ""]
    asked += [whole.def_id(d) for d in defs[::40]]  # symbol ids, as the tools show them
    assert len(asked) > 100
    for at in range(0, len(asked), 3):
        names = asked[at : at + 3]
        assert arm.defining(names, 12) == _whole_graph_definitions(whole, names, 12), names
