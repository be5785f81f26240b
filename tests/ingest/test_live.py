"""The watcher's writer (LiveIndex) without file events: batches given by hand, real stores."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from indexers.watcher import Batch
from memserver.ingest.live import LiveIndex
from memserver.ingest.pipeline import _STEP
from memserver.store import lancedb as ldb
from tests.e2e.crashkit import snapshot


def _batch(*paths: str) -> Batch:
    return Batch(frozenset(paths), False, False, len(paths), time.monotonic())


def _module(n: int) -> str:
    """One small chunk: a step of `_STEP` of them stays under the step's characters."""
    return "\n\n".join(f"def step_{n}_{j}(value):\n    return value * {j + 2}\n" for j in range(3))


def test_embedding_gives_way_to_waiting_changes_and_finishes_when_quiet(
    sample_repo: Path, make_engine
) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    waiting = [True]
    live = LiveIndex(engine, should_yield=lambda: waiting[0])
    paths = [f"src/mod_{n}.py" for n in range(_STEP + 4)]
    for n, path in enumerate(paths):
        (sample_repo / path).write_text(_module(n))
    report = live.apply(_batch(*paths))
    # the keyword phase is whole; the embedding stopped after its first step, and kept it
    assert report.files_indexed == len(paths) and report.chunks_embedded == _STEP
    assert report.chunks_unembedded == 4 and live.embedding_left
    assert engine.open_store().chunks.count_unembedded() == 4
    assert "def step_19_2" in engine.recaller(rerank=False).recall("step_19_2").evidence[0].text

    waiting[0] = False
    live.tick()  # what the watcher calls once the tree is quiet
    assert not live.embedding_left
    got = snapshot(sample_repo, engine.index_dir)
    assert got["unembedded"] == 0 and not got["dirty"]
    clean = make_engine(sample_repo, index_dir=sample_repo.parent / "clean")
    clean.index()
    assert got == snapshot(sample_repo, clean.index_dir)


def test_a_steady_stream_is_compacted_without_waiting_for_quiet(
    sample_repo: Path, make_engine
) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    live = LiveIndex(engine, housekeep_after=2, should_yield=lambda: False)
    target = sample_repo / "src/config.py"
    held: list[int] = []  # the chunks table's fragments after each housekeeping
    for n in range(2 * ldb._SMALL_FRAGMENTS):
        target.write_text(target.read_text() + f"\n\ndef added_{n}(v):\n    return v\n")
        live.apply(_batch("src/config.py"))
        # housekept after every second changing batch, counting again from the next
        assert live.commits_since_housekeeping == (n + 1) % 2
        if n % 2:
            stats = engine.open_store().table("chunks").stats()["fragment_stats"]
            held.append(stats["num_fragments"])
    # fragments pile up until compacting is worth it, then the table is compacted: never
    # as many as that after a housekeeping
    assert max(held) < ldb._SMALL_FRAGMENTS
    assert any(later < earlier for earlier, later in itertools.pairwise(held))


def test_a_saved_files_new_definition_is_found_by_symbol_in_the_same_batch(
    sample_repo: Path, make_engine
) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    navigator = engine.navigator()  # a long-lived reader, as the server's
    assert navigator.symbols("retry_budget") == []
    live = LiveIndex(engine, should_yield=lambda: False)
    target = sample_repo / "src/http_client.py"
    target.write_text(target.read_text() + "\n\ndef retry_budget(policy: RetryPolicy):\n"
                      "    return sum(policy.delays())\n")  # fmt: skip
    live.apply(_batch("src/http_client.py"))
    [found] = navigator.symbols("retry_budget")
    assert (found.path, found.start_line, found.stale) == ("src/http_client.py", 27, False)
    text = engine.recaller(rerank=False).recall("retry_budget").evidence[0].text
    assert "def retry_budget" in text  # findable as its text is
    callees = {n.item.symbol for n in navigator.neighbours_of(found.id)[1]}
    assert "RetryPolicy.delays" in callees
    target.unlink()
    live.apply(_batch("src/http_client.py"))
    assert navigator.symbols("retry_budget") == []
    assert navigator.symbols("RetryPolicy") == []


def test_housekeeping_writes_a_half_dead_keyword_index_again(
    sample_repo: Path, make_engine
) -> None:
    paths = [f"src/mod_{n}.py" for n in range(12)]
    for n, path in enumerate(paths):
        (sample_repo / path).write_text(_module(n))
    engine = make_engine(sample_repo)
    engine.index()
    live = LiveIndex(engine, should_yield=lambda: False)
    for path in paths:  # most of the keyword index's one segment goes
        (sample_repo / path).unlink()
    live.apply(_batch(*paths))
    assert engine.open_store().keyword.dead_share() >= 0.5
    live.housekeep()
    assert engine.open_store().keyword.dead_share() == 0.0
    clean = make_engine(sample_repo, index_dir=sample_repo.parent / "clean")
    clean.index()
    assert snapshot(sample_repo, engine.index_dir) == snapshot(sample_repo, clean.index_dir)
