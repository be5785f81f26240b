"""What the code graph costs `memserver index`: keyword-phase time and disk, with the graph
against without it.

Usage: python benchmarks/graph_overhead.py TREE [TREE ...] [--repeat 3] [--embedder none]
                                           [--json] [--split] [--floor] [--cli]

For each tree, cold index runs into fresh temporary index folders (the tree is only read),
in-process, in turn: with the code graph as `memserver index` builds it (by default tags
are made in a worker process beside the chunker when the cores' recent times leave one
free, else in-process; the runs that used a worker are counted), with a worker whatever the
load and however little code, with the graph made in-process (`graph_workers = 0`), and
without it (no tags made and no graph rows written: what indexing cost before the graph),
each repetition starting with the next kind.
Each run's report gives
`seconds_to_search` (walk, chunk and tag, LanceDB rows, tantivy, manifest: the keyword
phase, wall-clock); the median of --repeat runs of each is kept, and this process's CPU
seconds of the same runs beside it (the machine's other work moves wall-clock times more
than CPU times; a worker's CPU is not this process's, so the graph's CPU cost is read from
the in-process runs). The graph's share is (with - without) / without. A first run of
each kind before the timings loads grammars and queries (as a long-lived process has
them). Disk: the `symbols` and `refs` tables against the rest of the index folder, after
the run compacted it (with --embedder, vectors included, as a real index holds them).

The machine's other work moves a run's time by more than the graph costs (two medians of 12
runs of the same code differed by up to 10 points on a shared 2-core machine), so the share
is also given paired: each repetition's run with the graph against its own run without it
(adjacent in time, they meet the same load), their median, and a 95 % interval for that
median (2,000 bootstrap resamples of the repetitions, seeded): a target is met when the
interval's upper end is under it, and cannot be told when the interval straddles it.
The same is given for the whole run (`seconds`: after the keyword phase the run compacts
the tables, the graph's two among them, and builds the graph's lookup B-trees once they
are large enough), its extra time taken as a share of the keyword phase without the graph.

A run with the graph takes the worker an earlier run of this process kept (as a long-lived
process does: `tagging._KEPT`), or starts one as every `Engine.index` does, before it
opens the stores (`tagging.early_worker`, with enough code); in a fresh `memserver index`
that opening is most of a half second (LanceDB's import), here, where imports are done, a
few hundredths.

--cli times `memserver index` itself instead, as a user runs it: each run a process of its
own (PATH and HOME, the model cache's variables and PYTHONPATH passed on), with the graph
or without it (the same patches, applied as `Engine.index` begins), in turn; the keyword
phase is the `seconds_to_search` of its JSON summary. Such a run is longer than one here
(its first grammars and queries are in it), and its share of the graph smaller. Only the
paired share is given, for the keyword phase, the whole run, and the command (its process's
start to its end, timed here): on a first index the worker tags files while the command
opens its stores, before the run begins (`tagworker._tag_ahead`), which the command's time
counts and the run's does not. The command's time also holds the interpreter's start and
the imports before `Engine.index`, the same code with the graph or without it, whose
variation is as large as the graph's cost; so the index work is given too: from
`Engine.index` (where the worker starts) to the process's end, each variant's patches
applied only there, so the two windows hold the same work but the graph's. Each run says
whether a worker made its tags.

--floor also times runs without the graph beside a process in the idle scheduling class (as
the tags worker runs) that only spins: what a second busy process costs the keyword phase
on this machine whatever it does, paired with the runs without the graph as the graph's
share is. On 2 shared cores it was +6.9 % (click), +7.1 % (cobra) and +7.5 % (mongoose),
against +6.4 %, +5.6 % and +9.6 % for the graph (medians of 10, one run).

--split also times the two halves of the graph's cost, in turn with the rest: its write
("tags ready": each file's tags made before the run, no worker, the rows written as
usual) and its making ("no write": a worker tags beside the run, the batch waits for its
answers and writes no graph row). On cobra and click the write alone came to +4.9 % and
+4.8 %, the making alone to +8.1 % each, against +7.1 % and +12.1 % for both (medians of
12, one run): neither half alone explains the share, and they overlap.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@contextmanager
def _without_graph() -> Iterator[None]:
    """No tags made and no graph rows written (what indexing cost before the graph): a
    batch gives the store no file graphs (nor their keys: each file's version). What this
    imports (the pipeline, the store's modules, pyarrow; LanceDB itself only once a store
    opens) the command imports too, in `Engine.index`."""
    from memserver.ingest import tagging
    from memserver.ingest.pipeline import Indexer
    from memserver.ingest.tagging import Tagger

    tags, prepare, graphs = Tagger.tags, Tagger.prepare, Indexer._graphs
    early = tagging.start_early
    Tagger.tags = lambda self, files: iter(())  # type: ignore[method-assign]
    Tagger.prepare = lambda self, languages=(): None  # type: ignore[method-assign]
    Indexer._graphs = lambda self, cut, tags: lambda: []  # type: ignore[method-assign]
    tagging.start_early = lambda loadavg=None, ahead=None, languages=(): None
    try:
        yield
    finally:
        Tagger.tags, Tagger.prepare = tags, prepare  # type: ignore[method-assign]
        Indexer._graphs = graphs  # type: ignore[method-assign]
        tagging.start_early = early


_VARIANTS = ("without", "default", "worker", "in-process")
_SPLIT = ("tags-ready", "no-write")
_FLOOR = "idle-spinner"  # without the graph, beside a process that only spins (--floor)


@contextmanager
def _spinner() -> Iterator[None]:
    """A process that does nothing but spin, in the idle scheduling class where the system
    has one (as the tags worker runs), for as long as the block runs."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        idle = getattr(os, "SCHED_IDLE", None)
        if idle is not None:
            os.sched_setscheduler(proc.pid, idle, os.sched_param(0))
        time.sleep(0.05)  # running before the run starts
        yield
    finally:
        proc.kill()
        proc.wait()


SPAWNED: list[int] = []  # runs whose tags a worker made (counted for "default" runs)


@contextmanager
def _forced_worker(forced: bool) -> Iterator[None]:
    """A worker whatever the cores' load (or, unforced, as the product decides)."""
    from memserver.ingest import tagging

    worth, expect, tags = tagging.Tagger._worth_a_worker, tagging.Tagger.expect, (
        tagging.Tagger.tags)  # fmt: skip

    def counted(self: Any, files: Any) -> Any:
        made = tags(self, files)
        if made is not None:  # from a worker
            SPAWNED.append(1)
        return made

    def any_size(self: Any, size: int, languages: Any = ()) -> int:
        self.min_chars = 1  # a worker however little code the run has
        return expect(self, size, languages)

    tagging.Tagger.tags = counted  # type: ignore[method-assign]
    if forced:
        tagging.Tagger._worth_a_worker = lambda self: self.workers > 0  # type: ignore[method-assign]
        tagging.Tagger.expect = any_size  # type: ignore[method-assign]
    try:
        yield
    finally:
        tagging.Tagger._worth_a_worker = worth  # type: ignore[method-assign]
        tagging.Tagger.expect = expect  # type: ignore[method-assign]
        tagging.Tagger.tags = tags  # type: ignore[method-assign]


_READY: dict[tuple[str, ...], list[object]] = {}  # a run's files -> their tags, made once


@contextmanager
def _split(variant: str) -> Iterator[None]:
    """The graph's cost in halves. With "tags-ready" the tags are made before the run (the
    first run of a tree makes them, untimed) and no worker starts; with "no-write" they
    are waited for and never written."""
    from memserver.ingest import tagging
    from memserver.ingest.tagworker import rows
    from memserver.store.index import IndexStore

    tags, prepare, open_graphs = tagging.Tagger.tags, tagging.Tagger.prepare, (
        IndexStore._open_graphs)  # fmt: skip

    def ready(self: Any, files: Any) -> Iterator[object]:
        key = tuple(f[0] for f in files)
        if key not in _READY:
            _READY[key] = [rows(f, self.options.max_parse_bytes) for f in files]
        return iter(_READY[key])

    def waited(self: Any, c: Any) -> list[str]:
        list(c.graphs() if callable(c.graphs) else c.graphs)
        return []

    if variant == "tags-ready":
        tagging.Tagger.tags = ready  # type: ignore[method-assign]
        tagging.Tagger.prepare = lambda self, languages=(): None  # type: ignore[method-assign]
    elif variant == "no-write":
        IndexStore._open_graphs = waited  # type: ignore[method-assign]
    try:
        yield
    finally:
        tagging.Tagger.tags, tagging.Tagger.prepare = tags, prepare  # type: ignore[method-assign]
        IndexStore._open_graphs = open_graphs  # type: ignore[method-assign]


def _run(tree: Path, embedder: str, variant: str) -> tuple[float, float, dict[str, int], float]:
    from memserver.engine import Engine

    workers = {"index": {"graph_workers": 0}} if variant == "in-process" else None
    with tempfile.TemporaryDirectory(prefix="graph-overhead-") as index_dir:
        engine = Engine(tree, index_dir, embedder_flag=embedder, env={}, overrides=workers)
        cpu = time.process_time()
        if variant == "without":
            with _without_graph():
                report = engine.index(ci=True)
        elif variant == _FLOOR:
            with _spinner(), _without_graph():
                cpu = time.process_time()  # the spinner's start is not the run's
                report = engine.index(ci=True)
        elif variant in _SPLIT:
            with _forced_worker(True), _split(variant):
                report = engine.index(ci=True)
        else:
            with _forced_worker(variant == "worker"):
                report = engine.index(ci=True)
        cpu = time.process_time() - cpu
        lance = Path(index_dir) / "lance"
        disk = {
            "graph": _size(lance / "symbols.lance") + _size(lance / "refs.lance"),
            "index": _size(Path(index_dir)),
        }
    return report.seconds_to_search, cpu, disk, report.seconds


def paired(with_: list[float], without: list[float], seed: int = 0,
           of: list[float] | None = None) -> tuple[float, float, float]:  # fmt: skip
    """The median of the repetitions' shares ((with - without) / without, run by run; or
    of `of`'s run, the keyword phase of a whole run's time) and a 95 % bootstrap interval
    for it."""
    base = without if of is None else of
    shares = [(w - b) / d for w, b, d in zip(with_, without, base, strict=True)]
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(shares, k=len(shares))) for _ in range(2000))
    return statistics.median(shares), medians[49], medians[1949]


def measure(tree: Path, repeat: int, embedder: str, split: bool = False, floor: bool = False
            ) -> dict[str, Any]:  # fmt: skip
    variants = _VARIANTS + (_SPLIT if split else ()) + ((_FLOOR,) if floor else ())
    for variant in variants:  # imports, grammars, queries, a first worker: outside timings
        _run(tree, "none", variant)
    runs: dict[str, list[tuple[float, float, dict[str, int], float]]] = {v: [] for v in variants}
    default_workers = 0
    for turn in range(repeat):  # each repetition starts with the next kind: no kind always
        shift = turn % len(variants)  # follows the same one (whose leftovers it would meet)
        for variant in variants[shift:] + variants[:shift]:
            before = len(SPAWNED)
            runs[variant].append(_run(tree, "none", variant))
            default_workers += len(SPAWNED) - before if variant == "default" else 0
    wall = {v: statistics.median(r[0] for r in runs[v]) for v in runs}
    cpu = {v: statistics.median(r[1] for r in runs[v]) for v in runs}
    sized = _run(tree, embedder, "worker")[2] if embedder != "none" else runs["worker"][0][2]
    rest = sized["index"] - sized["graph"]
    base = wall["without"]
    halves: dict[str, Any] = {f"{v.replace('-', '_')}_share": round((wall[v] - base) / base, 4)
                              for v in _SPLIT if v in wall}  # fmt: skip
    share, low, high = paired([r[0] for r in runs["default"]], [r[0] for r in runs["without"]])
    whole = paired([r[3] for r in runs["default"]], [r[3] for r in runs["without"]],
                   of=[r[0] for r in runs["without"]])  # fmt: skip
    if floor:
        spun = paired([r[0] for r in runs[_FLOOR]], [r[0] for r in runs["without"]])
        halves["floor_paired_share"] = round(spun[0], 4)
        halves["floor_paired_interval"] = [round(spun[1], 4), round(spun[2], 4)]
    return {
        "tree": tree.name,
        "keyword_phase_s": round(base, 3),
        "with_graph_s": round(wall["default"], 3),
        "share": round((wall["default"] - base) / base, 4),
        "paired_share": round(share, 4),
        "paired_interval": [round(low, 4), round(high, 4)],
        "whole_run_paired_share": round(whole[0], 4),
        "whole_run_paired_interval": [round(whole[1], 4), round(whole[2], 4)],
        "default_runs_with_a_worker": f"{default_workers}/{repeat}",
        "worker_s": round(wall["worker"], 3),
        "worker_share": round((wall["worker"] - base) / base, 4),
        "in_process_s": round(wall["in-process"], 3),
        "in_process_share": round((wall["in-process"] - base) / base, 4),
        "cpu_without_s": round(cpu["without"], 3),
        "cpu_with_s": round(cpu["default"], 3),  # this process only: a worker's is not here
        "cpu_worker_s": round(cpu["worker"], 3),
        "cpu_in_process_s": round(cpu["in-process"], 3),
        "cpu_share": round((cpu["in-process"] - cpu["without"]) / cpu["without"], 4),
        "graph_bytes": sized["graph"],
        "rest_bytes": rest,
        "disk_share": round(sized["graph"] / rest, 4),
        "embedder": embedder,
        "repeat": repeat,
        **halves,
    }


def _cli_run(tree: Path, variant: str) -> tuple[float, float, bool, float, float]:
    """One `memserver index` in a process of its own, as a user runs it ("default": the
    graph as the command makes it; "without": no graph): its keyword phase and the whole
    run in seconds, whether a worker made its tags, the command's own seconds (the
    process's start to its end: what it did before the run too), and its index work's
    (from `Engine.index`, where the worker starts, to the process's end: the command
    without the interpreter's start and the imports before it, the same with the graph or
    without it)."""
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "PYTHONPATH", "FASTEMBED_CACHE_PATH", "HF_HUB_OFFLINE")
           }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="graph-overhead-") as index_dir:
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, __file__, "--child", variant, str(tree.resolve()), index_dir],
            env=env, cwd=index_dir, capture_output=True, text=True, check=True,
        )  # fmt: skip
        ended = time.perf_counter()  # not the index's deletion
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    worker = _WORKER_USED in done.stderr
    [indexing] = [float(line.removeprefix(_INDEXING)) for line in done.stderr.splitlines()
                  if line.startswith(_INDEXING)]  # fmt: skip
    return (float(summary["seconds_to_search"]), float(summary["seconds"]), worker,
            ended - began, ended - indexing)  # fmt: skip


_WORKER_USED = "graph-overhead: tags from a worker"
# when the child's `Engine.index` began, on the clock `time.perf_counter` reads here too
# (Linux: CLOCK_MONOTONIC, one for every process)
_INDEXING = "graph-overhead: index began at "


def _timed_index(variant: str) -> None:
    """`Engine.index` says when it began, then runs with the variant's patches, applied
    only then: whatever they import (the pipeline, the tagger) is inside the index work's
    window with the graph or without it, as the command imports them there."""
    from memserver.engine import Engine

    index = Engine.index

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        print(f"{_INDEXING}{time.perf_counter()!r}", file=sys.stderr, flush=True)
        with _without_graph() if variant == "without" else _forced_worker(False):
            return index(self, *args, **kwargs)  # counted, not forced

    Engine.index = timed  # type: ignore[method-assign]


def _child(variant: str, tree: str, index_dir: str) -> None:
    """What `_cli_run` runs: the command line's `index` as the `memserver` command runs it
    (`cli.run`: it ends as soon as its work is done), without the graph if asked."""
    import atexit

    from memserver.cli import run

    sys.argv = ["memserver", "index", tree, "--index-dir", index_dir, "--embedder", "none",
                "--json"]  # fmt: skip
    _timed_index(variant)
    # said before the command ends (its exit handlers run, the output is flushed)
    atexit.register(lambda: SPAWNED and print(_WORKER_USED, file=sys.stderr))
    run()


def measure_cli(tree: Path, repeat: int) -> dict[str, Any]:
    """The share as `memserver index` gives it: a fresh process per run (its imports, its
    grammars and queries, a tags worker started while it opens the stores), with the
    graph and without it in turn, paired run by run."""
    for variant in ("default", "without"):  # the files in the page cache
        _cli_run(tree, variant)
    runs: dict[str, list[tuple[float, float, bool, float, float]]] = {
        "default": [], "without": []}  # fmt: skip
    for turn in range(repeat):
        for variant in ("default", "without") if turn % 2 else ("without", "default"):
            runs[variant].append(_cli_run(tree, variant))
    with_, without = runs["default"], runs["without"]
    share, low, high = paired([r[0] for r in with_], [r[0] for r in without])
    whole = paired([r[1] for r in with_], [r[1] for r in without], of=[r[0] for r in without])
    command = paired([r[3] for r in with_], [r[3] for r in without], of=[r[0] for r in without])
    work = paired([r[4] for r in with_], [r[4] for r in without], of=[r[0] for r in without])
    return {"tree": tree.name,
            "keyword_phase_s": round(statistics.median(r[0] for r in without), 3),
            "with_graph_s": round(statistics.median(r[0] for r in with_), 3),
            "paired_share": round(share, 4), "paired_interval": [round(low, 4), round(high, 4)],
            "whole_run_paired_share": round(whole[0], 4),
            "whole_run_paired_interval": [round(whole[1], 4), round(whole[2], 4)],
            "command_paired_share": round(command[0], 4),
            "command_paired_interval": [round(command[1], 4), round(command[2], 4)],
            "index_work_paired_share": round(work[0], 4),
            "index_work_paired_interval": [round(work[1], 4), round(work[2], 4)],
            "workers": sum(r[2] for r in with_), "repeat": repeat}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(*argv[1:4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--cli", action="store_true",
                        help="time `memserver index`, each run a process of its own")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--embedder", default="none",
                        help="the embedder of the index whose disk is measured")  # fmt: skip
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--split", action="store_true",
                        help="also time the graph's write and its making apart")  # fmt: skip
    parser.add_argument("--floor", action="store_true",
                        help="also time runs beside an idle process that only spins")  # fmt: skip
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.cli:
        found = [measure_cli(t, max(1, args.repeat)) for t in args.trees]
        if args.json:
            print(json.dumps(found, indent=2))
            return 0
        for r in found:
            low, high = r["paired_interval"]
            print(f"{r['tree']:<12} memserver index: keyword phase {r['keyword_phase_s']:.3f} s, "
                  f"with the graph {r['with_graph_s']:.3f} s; paired share "
                  f"{r['paired_share']:+.1%}, 95 % interval {low:+.1%} .. {high:+.1%} "
                  f"({r['repeat']} repetitions, {r['workers']} with a tags worker)")  # fmt: skip
        _print_extra(found, "whole_run", "the whole run's (after the keyword phase too)")
        _print_extra(found, "command", "the command's (process start to end)")
        _print_extra(found, "index_work", "the index work's (Engine.index to the end)")
        return 0
    results = [measure(t, max(1, args.repeat), args.embedder, args.split, args.floor)
               for t in args.trees]  # fmt: skip
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'tree':<12}{'keyword s':>10}{'+graph s':>10}{'share':>8}{'workers':>8}"
          f"{'worker s':>9}{'share':>8}{'in-proc s':>10}"
          f"{'share':>8}{'cpu':>8}{'cpu in-p':>9}{'share':>8}{'graph MB':>10}{'rest MB':>9}"
          f"{'disk':>7}")  # fmt: skip
    for r in results:
        print(f"{r['tree']:<12}{r['keyword_phase_s']:>10.3f}{r['with_graph_s']:>10.3f}"
              f"{r['share']:>8.1%}{r['default_runs_with_a_worker']:>8}{r['worker_s']:>9.3f}"
              f"{r['worker_share']:>8.1%}"
              f"{r['in_process_s']:>10.3f}{r['in_process_share']:>8.1%}"
              f"{r['cpu_without_s']:>8.2f}{r['cpu_in_process_s']:>9.2f}{r['cpu_share']:>8.1%}"
              f"{r['graph_bytes'] / 1e6:>10.2f}{r['rest_bytes'] / 1e6:>9.2f}"
              f"{r['disk_share']:>7.1%}")  # fmt: skip
    for r in results:
        low, high = r["paired_interval"]
        print(f"{r['tree']:<12}paired share (run by run) {r['paired_share']:+.1%}, 95 % interval "
              f"{low:+.1%} .. {high:+.1%} ({r['repeat']} repetitions)")  # fmt: skip
    _print_extra(results, "whole_run", "the whole run's (after the keyword phase too)")
    for r in results:
        if "floor_paired_share" in r:
            low, high = r["floor_paired_interval"]
            print(f"{r['tree']:<12}beside an idle-class process that only spins, without the "
                  f"graph: paired share {r['floor_paired_share']:+.1%}, 95 % interval "
                  f"{low:+.1%} .. {high:+.1%}")  # fmt: skip
    for r in results:
        if "tags_ready_share" in r:
            print(f"{r['tree']:<12}the write alone (tags ready) {r['tags_ready_share']:+.1%}, "
                  f"the making alone (no write) {r['no_write_share']:+.1%}")  # fmt: skip
    return 0


def _print_extra(results: list[dict[str, Any]], column: str, whose: str) -> None:
    """A column's extra time, of the keyword phase: `whose` "the whole run's (...)"."""
    name, _, window = whose.partition(" (")
    for r in results:
        share, (low, high) = r[f"{column}_paired_share"], r[f"{column}_paired_interval"]
        print(f"{r['tree']:<12} {name} extra time ({window}, of the keyword phase: paired "
              f"{share:+.1%}, 95 % interval {low:+.1%} .. {high:+.1%}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
