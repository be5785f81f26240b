"""The recall pipeline over real stores: arms, filters, memories, merging, packing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memserver.core import render
from memserver.core.errors import BadRequest
from memserver.core.requests import LIMITS, Filters
from memserver.core.types import Evidence
from memserver.retrieve import arms
from memserver.retrieve.plan import plan_query
from tests.conftest import write_tree


@pytest.fixture
def indexed(sample_repo: Path, make_engine):
    make_engine(sample_repo).index()
    return make_engine(sample_repo)


def test_plan_has_original_canonical_and_expansion_routes() -> None:
    plan = plan_query("Remove the config file when parseHTTPResponse fails")
    names = [r.name for r in plan.routes]
    assert names[:2] == ["original", "canonical"]
    assert any(n.startswith("expansion:") for n in names) and len(names) <= 5
    canonical = plan.routes[1]
    assert "parse" in canonical.terms and "http" in canonical.terms and "the" not in canonical.terms
    assert [r.weight for r in plan.routes][:2] == [1.0, 1.0]
    assert all(r.weight == 0.5 for r in plan.routes[2:])
    assert "parseHTTPResponse" in plan.identifiers


def test_a_question_is_searched_for_its_content_not_its_framing() -> None:
    """Pronouns, auxiliaries and modals frame a question; the canonical route and the
    content words leave them out, the original route keeps the wording as asked."""
    plan = plan_query("What would Caroline's political leaning likely be? Did she vote?")
    assert plan.content_words == ("caroline", "political", "leaning", "vote")
    assert {"would", "likely", "did", "she"} <= set(plan.routes[0].terms)


def test_exact_symbol_and_path_arm(indexed) -> None:
    recaller = indexed.recaller()
    top = recaller.recall("RetryPolicy.delays").evidence[0]
    assert "def delays" in top.text and "exact" in top.routes
    assert any(e.path == "web/app.js" for e in recaller.recall("app.js").evidence[:3])


def test_a_one_word_query_looks_the_name_up(tmp_path: Path, make_engine) -> None:
    assert plan_query("reconcile").identifiers == ("reconcile",)
    assert plan_query("why reconcile").identifiers == ()  # words in a sentence are not names
    files = {"ledger.py": "def reconcile(entries):\n    return sorted(entries)\n"}
    for i in range(8):  # text about the word outnumbers the one definition
        files[f"notes/n{i}.md"] = f"# Note {i}\n\nWe reconcile the books, then again.\n"
    root = write_tree(tmp_path / "r", files)
    engine = make_engine(root)
    engine.index()
    top = engine.recaller(rerank=False).recall("reconcile", k=3).evidence[0]
    assert top.path == "ledger.py" and "exact" in top.routes


def test_memories_cite_their_chunk_and_explain_hits(indexed) -> None:
    store = indexed.open_store()
    states = store.memories.states()
    assert states and all(origin.startswith("c_") for _, origin in states.values())
    memories = store.memories.get(list(states))
    assert all(m.source_ids for m in memories.values())
    hits = indexed.recaller().recall("send with retry policy").evidence
    assert any(e.memory_ids for e in hits)
    assert any(any(r.endswith("memory") for r in e.routes) for e in hits)


def test_changed_chunk_turns_its_memories_stale(indexed, sample_repo: Path, make_engine) -> None:
    before = {m for m, (s, _) in indexed.open_store().memories.states().items() if s == "active"}
    cfg = sample_repo / "src/config.py"
    cfg.write_text(cfg.read_text().replace("fill in defaults", "apply overrides"))
    make_engine(sample_repo).index()
    after = make_engine(sample_repo).open_store().memories.states()
    stale = {m for m, (s, _) in after.items() if s == "stale"}
    assert stale and stale <= before
    store = make_engine(sample_repo).open_store()
    assert store.keyword.all_ids("memory").isdisjoint(stale)


def test_filters_are_hard_constraints_and_fail_closed(indexed) -> None:
    recaller = indexed.recaller()
    only_js = recaller.recall("retry request settings", filters=Filters(languages=("javascript",)))
    assert only_js.evidence and {e.language for e in only_js.evidence} == {"javascript"}
    in_src = recaller.recall("routes users", filters=Filters(paths=("src/",)))
    assert all(e.path.startswith("src/") for e in in_src.evidence)
    nothing = recaller.recall("retry", filters=Filters(paths=("no/such/dir/",)))
    assert nothing.evidence == () and nothing.found is False
    kinds = recaller.recall("retry", filters=Filters(kinds=("class",)))
    assert all(e.kind == "class" for e in kinds.evidence)


def test_empty_query_is_an_error(indexed) -> None:
    with pytest.raises(BadRequest, match="empty"):
        indexed.recaller().recall("   ")


class ReverseAlphabet:
    """A `Reranker` for tests: prefers passages whose path sorts last."""

    name = "reverse-alphabet"

    def score(self, query: str, passages: list[str]) -> list[float]:
        return [float(sum(map(ord, p.split(" ", 1)[0]))) for p in passages]


def test_reranker_stage_reorders_and_can_be_switched_off(indexed) -> None:
    recaller = indexed.recaller()
    plain = recaller.recall(
        "settings retry routes", k=20, budget_tokens=LIMITS.budget_max, max_files=10
    )
    recaller.reranker = ReverseAlphabet()
    reranked = recaller.recall(
        "settings retry routes", k=20, budget_tokens=LIMITS.budget_max, max_files=10
    )
    paths = [e.path for e in reranked.evidence]
    assert paths == sorted(paths, key=lambda p: -sum(map(ord, p)))
    off = recaller.recall("settings retry routes", k=20, budget_tokens=LIMITS.budget_max,
                          max_files=10, rerank=False)  # fmt: skip
    assert [e.id for e in off.evidence] == [e.id for e in plain.evidence]


def test_adjacent_chunks_of_one_file_merge_into_one_span(indexed) -> None:
    from memserver.retrieve.merge import merge_adjacent

    recaller = indexed.recaller()
    snap = recaller.snapshots()
    rows = [i for i in range(snap.size()) if snap.next_in_file(i) == i + 1]
    assert rows, "the sample repo has neighbouring chunks"
    first, second = snap.fetch([rows[0], rows[0] + 1])

    def evidence(c, score: float) -> Evidence:
        return Evidence(c.id, c.path, c.start_line, c.end_line, c.symbol, c.kind, c.language,
                        c.text, score, c.tokens, routes=("original/bm25",))  # fmt: skip

    merged = merge_adjacent(snap, [evidence(second, 0.9), evidence(first, 0.5)], recaller.tokens)
    assert len(merged) == 1
    m = merged[0]
    assert m.score == 0.9 and m.id == first.id
    assert (m.start_line, m.end_line) == (first.start_line, second.end_line)
    lines = (indexed.root / first.path).read_text().split("\n")
    assert m.text == "\n".join(lines[m.start_line - 1 : m.end_line])
    assert m.tokens == recaller.tokens.count(m.text)


_QUERIES = st.sampled_from(
    ["retry", "settings", "routes users", "parse http response", "RetryPolicy", "guide",
     "the", "load settings file defaults", "createUser", "exponential backoff"]
)  # fmt: skip


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(query=_QUERIES, budget=st.integers(LIMITS.budget_min, 3000), files=st.integers(1, 6),
       k=st.integers(1, 30))  # fmt: skip
def test_pack_is_never_over_budget(indexed, query: str, budget: int, files: int, k: int) -> None:
    result = indexed.recaller().recall(query, k=k, budget_tokens=budget, max_files=files)
    read = [render.dumps(render.recall_dict(result)), render.recall_text(result)]
    assert result.tokens == max(indexed.tokens.count(t) for t in read) <= budget
    assert len({e.path for e in result.evidence}) <= files and len(result.evidence) <= k
    counter = indexed.tokens
    assert all(counter.count(e.text) == e.tokens for e in result.evidence)


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(query=_QUERIES, budget=st.integers(LIMITS.budget_min, LIMITS.budget_max),
       k=st.integers(1, LIMITS.k_max), explain=st.booleans(),
       form=st.sampled_from(["chunks", "map"]))  # fmt: skip
def test_every_rendering_of_a_recall_fits_its_budget(
    indexed, query: str, budget: int, k: int, explain: bool, form: str
) -> None:
    """Over the whole budget range, with explain's scores and routes and in the map form,
    the text and the JSON an agent reads each stay within the budget."""
    result = indexed.recaller().recall(query, k=k, budget_tokens=budget, max_files=1000,
                                       explain=explain, format=form)  # fmt: skip
    read = [render.dumps(render.recall_dict(result, explain)), render.recall_text(result, explain)]
    assert result.tokens == max(indexed.tokens.count(t) for t in read) <= budget


def test_the_cli_prints_each_answer_within_its_budget(sample_repo: Path, make_engine) -> None:
    """What `memserver recall` prints, as JSON and as text, is what the budget measured."""
    from click.testing import CliRunner

    from memserver.cli import main

    make_engine(sample_repo).index()
    count = make_engine(sample_repo).tokens.count
    truncated = []
    for query in ("retry", "settings", "parse http response", "routes users"):
        for budget in (256, 300, 400, 512, 700):
            args = ["recall", query, "--root", str(sample_repo), "--budget-tokens", str(budget)]
            printed = {}
            for form, extra in (("json", ["--json"]), ("text", [])):
                out = CliRunner().invoke(main, [*args, *extra],
                                         env={"MEMSERVER_EMBEDDING_MODEL": "hashing"})  # fmt: skip
                assert out.exit_code == 0, out.output
                printed[form] = out.stdout
                assert count(out.stdout) <= budget, (query, budget, form, count(out.stdout))
            truncated.append(json.loads(printed["json"])["truncated"])
    assert any(truncated), "no budget was binding: the check would pass on any output"


def test_evidence_from_a_file_changed_since_indexing_is_marked_stale(
    sample_repo: Path, make_engine
) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    recaller = engine.recaller()
    query = "RetryPolicy delays backoff"
    first = recaller.recall(query).evidence
    assert first and first[0].path == "src/http_client.py" and not first[0].stale
    target = sample_repo / "src/http_client.py"
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 10**9))
    assert not recaller.recall(query).evidence[0].stale  # touched, same content
    target.write_text(target.read_text() + "\n# edited after indexing\n")
    hits = recaller.recall(query).evidence
    assert all(e.stale == (e.path == "src/http_client.py") for e in hits)
    engine.index()
    assert not any(e.stale for e in recaller.recall(query).evidence)


def test_the_dense_arm_carries_the_weight_of_the_routes_it_stands_for(indexed) -> None:
    """Each route has a keyword arm, but only the first `dense_routes` are embedded: the last
    dense arm weighs its route plus every route left unembedded, so keyword arms do not
    outvote meaning 3.5 to 1 on a query with expansions."""
    recaller = indexed.recaller(rerank=False)
    s = recaller.settings
    snap = recaller.snapshots()
    plan = plan_query("remove the config file when the request fails", expansions=s.expansions)
    assert len(plan.routes) >= 3 and s.dense_routes == 1
    specs = arms.plan_arms(plan, s, dense_count=1, include_memories=True, large=snap.large)
    weights = {sp.name: sp.weight for sp in specs}
    total = sum(r.weight for r in plan.routes)
    assert weights["original/dense"] == pytest.approx(total)
    assert weights["original/dense-memory"] == pytest.approx(total * s.memory_weight)
    for route in plan.routes:
        assert weights[f"{route.name}/bm25"] == pytest.approx(route.weight)
        assert f"{route.name}/dense" not in weights or route.name == "original"
