"""An index run keeps Python's cycle collector off what the process held before it
(`core.heap.frozen_heap`), and gives it back when the run ends."""

from __future__ import annotations

import gc
import threading
import weakref
from pathlib import Path

from memserver.core.heap import frozen_heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    """A pair of objects that only refer to each other: only the collector frees them."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_a_cycle_from_before_the_block_waits_for_its_end_one_made_in_it_does_not() -> None:
    gc.collect()
    before = _cycle()
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        during = _cycle()
        gc.collect()
        assert before() is not None  # frozen: left alone, though unreachable
        assert during() is None  # made in the block: collected as ever
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert before() is None


def test_nested_and_concurrent_blocks_unfreeze_when_the_last_one_ends() -> None:
    inner_done, outer_may_end = threading.Event(), threading.Event()
    seen: list[int] = []

    def other_run() -> None:
        with frozen_heap():
            inner_done.set()
            outer_may_end.wait(10)

    with frozen_heap():
        with frozen_heap():
            pass
        seen.append(gc.get_freeze_count())  # the inner block ended: still frozen
        thread = threading.Thread(target=other_run)
        thread.start()
        assert inner_done.wait(10)
    seen.append(gc.get_freeze_count())  # this block ended, the thread's has not
    outer_may_end.set()
    thread.join(10)
    assert seen[0] > 0 and seen[1] > 0
    assert gc.get_freeze_count() == 0


class _FreezeProbe:
    """A progress display that notes, at each phase, how many objects are frozen."""

    def __init__(self) -> None:
        self.frozen: dict[str, int] = {}

    def start(self, phase: str, total: int) -> None:
        self.frozen[phase] = gc.get_freeze_count()

    def advance(self, n: int = 1) -> None:
        pass

    def finish(self) -> None:
        pass


def test_an_index_run_freezes_the_heap_while_it_runs(sample_repo: Path, make_engine) -> None:
    probe = _FreezeProbe()
    report = make_engine(sample_repo).index(progress=probe)
    assert report.files_indexed == 4
    assert {"scanning", "chunking"} <= probe.frozen.keys()
    assert all(count > 0 for count in probe.frozen.values()), probe.frozen
    assert gc.get_freeze_count() == 0
