"""Shared helpers for the crash and fault-injection tests.

- `make_repo`, `mutate_tree`: a small generated Python tree, and random edits to it.
- `snapshot`: what an index holds (current chunk ids, tantivy ids, manifest, memories),
  asserting there are no duplicate rows; two indexes of one tree compare equal.
- `run_and_kill`, `kill_at_random`: start any command as a subprocess and kill -9 it at
  a given / random time (for `memserver index` here, `memserver watch` later).
- `ForkedCli`: runs the real CLI (`memserver.cli.main`) in a fresh process forked from
  a server that has already imported LanceDB, whose import alone takes ~4 s. Each run
  is its own process (kill -9 kills it, its locks and files are its own); only the
  import is shared. It can also inject storage faults (`Faults`) into that process.
"""

from __future__ import annotations

import dataclasses
import errno
import itertools
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV = {**os.environ, "MEMSERVER_INDEX_BATCH_FILES": "8", "MEMSERVER_INDEX_EMBED_BATCH_CHUNKS": "40"}

# -- trees --------------------------------------------------------------------------


def _module(i: int, rng: random.Random, tag: str = "") -> str:
    funcs = "\n\n".join(
        f"def handler_{i}_{j}{tag}(value):\n"
        f"    '''Handle case {j} of module {i}.'''\n"
        f"    total = value * {rng.randint(2, 99)}\n"
        f"    return total + {j}\n"
        for j in range(rng.randint(2, 6))
    )
    return f"import os\n\n\n{funcs}\n"


def make_repo(root: Path, files: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    for i in range(files):
        path = root / f"pkg{i % 7}" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_module(i, rng))
    return root


def mutate_tree(root: Path, rng: random.Random, files: int = 3) -> list[str]:
    """Edit `files` files, delete, add, rename and touch one; say what was done."""
    present = sorted(root.rglob("*.py"))
    done = []
    for path in rng.sample(present, k=min(files, len(present))):  # edits
        path.write_text(_module(rng.randint(0, 10**6), rng, tag=f"_v{rng.randint(0, 99)}"))
        done.append(f"edit {path.name}")
    victim = rng.choice(present)
    if victim.exists():
        victim.unlink()
        done.append(f"delete {victim.name}")
    new = root / f"pkg{rng.randint(0, 6)}" / f"new_{rng.randint(0, 10**6)}.py"
    new.parent.mkdir(parents=True, exist_ok=True)
    new.write_text(_module(rng.randint(0, 10**6), rng))
    done.append(f"add {new.name}")
    moved = rng.choice([f for f in present if f.exists()])
    moved.rename(moved.with_name(f"moved_{rng.randint(0, 10**6)}.py"))
    done.append(f"rename {moved.name}")
    touched = rng.choice([f for f in present if f.exists()])
    os.utime(touched)  # same content, new mtime
    return done


# -- index state ----------------------------------------------------------------------


def snapshot(root: Path, index_dir: Path) -> dict[str, Any]:
    from memserver.engine import Engine

    store = Engine(root, index_dir, env={}).open_store()
    states = store.chunks.states()
    for name, table, key in (
        ("chunks", store.table("chunks"), ("id",)),
        ("memories", store.memories.table, ("id",)),
        ("files", store.table("files"), ("path",)),
        ("symbols", store.table("symbols"), ("id",)),
        ("refs", store.table("refs"), ("version", "place")),
    ):
        rows = table.search().select(list(key)).limit(None).to_arrow()
        ids = list(zip(*(rows.column(k).to_pylist() for k in key), strict=True))
        assert len(ids) == len(set(ids)), f"duplicate rows in LanceDB table {name}"
    return {
        "current": sorted(c for c, cur in states.items() if cur),
        "bm25": sorted(store.keyword.all_ids()),
        "memories": sorted(m for m, (s, _) in store.memories.states().items() if s == "active"),
        "bm25_memories": sorted(store.keyword.all_ids("memory")),
        "manifest": {p: sorted(r.chunk_ids) for p, r in store.files.read().items()},
        "unembedded": store.chunks.count_unembedded(),
        "dirty": store.dirty,
        # the code graph: the current version of each file, and its current rows
        "graph": sorted((r.path, v) for v, r in store.graph.file_rows().items() if r.current),
        "graph_rows": store.graph.count_current(),
    }


def index_cmd(root: Path, index_dir: Path) -> list[str]:
    return [
        sys.executable, "-m", "memserver", "index", str(root), "--index-dir", str(index_dir),
        "--embedder", "hashing", "--json",
    ]  # fmt: skip


def index_args(root: Path, index_dir: Path) -> list[str]:
    """`index_cmd` without the interpreter: arguments for `ForkedCli`."""
    return index_cmd(root, index_dir)[3:]


# -- kill -9 at a chosen time -----------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    killed: bool  # SIGKILL was sent while it ran
    returncode: int | None
    seconds: float  # from start to exit (or kill)
    err: str = ""  # its stderr, where kept


def run_and_kill(
    cmd: Sequence[str], *, delay: float, env: Mapping[str, str] | None = None,
    ready: Callable[[], bool] | None = None, timeout: float = 60.0,
) -> Outcome:  # fmt: skip
    """Run `cmd` as a subprocess; once `ready()` holds (if given), wait `delay` seconds and
    kill -9 it if it is still running. Its output is discarded."""
    started = time.monotonic()
    proc = subprocess.Popen(
        list(cmd), env=dict(env or ENV), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = started + timeout
    while ready is not None and not ready() and proc.poll() is None:
        assert time.monotonic() < deadline, f"{cmd[:4]} never got ready"
        time.sleep(0.01)
    return _kill_after(proc.poll, lambda: proc.send_signal(signal.SIGKILL), proc.wait,
                       delay, started)  # fmt: skip


def kill_at_random(cmd: Sequence[str], rng: random.Random, max_delay: float, **kw: Any
                   ) -> Outcome:  # fmt: skip
    """`run_and_kill` after a delay drawn uniformly from [0, max_delay)."""
    return run_and_kill(cmd, delay=rng.uniform(0.0, max_delay), **kw)


def _kill_after(
    poll: Callable[[], int | None], kill: Callable[[], None], wait: Callable[[], Any],
    delay: float, started: float,
) -> Outcome:  # fmt: skip
    end = time.monotonic() + delay
    while poll() is None and time.monotonic() < end:
        time.sleep(min(0.005, max(0.0, end - time.monotonic())))
    killed = poll() is None
    if killed:
        kill()
    wait()
    return Outcome(killed, poll(), time.monotonic() - started)


# -- injected storage faults ------------------------------------------------------------


@dataclass(frozen=True)
class Faults:
    """Make LanceDB and tantivy writes raise OSError(code) from the `after`+1-th on, as a
    full disk (ENOSPC) or a read-only one (EROFS) would. Reads are untouched."""

    after: int
    code: int = errno.ENOSPC


def install_faults(faults: Faults) -> None:
    """Patch the libraries (not our adapters) in this process."""
    import lancedb.db
    import lancedb.table
    import tantivy

    calls = itertools.count(1)

    def spend(what: str) -> None:
        if next(calls) > faults.after:
            raise OSError(faults.code, f"{os.strerror(faults.code)} (injected: {what})")

    def wrap(cls: Any, name: str) -> None:
        real = getattr(cls, name)

        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            spend(f"lancedb {name}")
            return real(self, *args, **kwargs)

        setattr(cls, name, write)

    for name in ("add", "update", "delete", "_do_merge", "optimize"):
        wrap(lancedb.table.LanceTable, name)
    wrap(lancedb.db.LanceDBConnection, "create_table")
    real_index = tantivy.Index

    class Writer:
        def __init__(self, real: Any) -> None:
            self._real = real

        def commit(self) -> Any:
            spend("tantivy commit")
            return self._real.commit()

        def __getattr__(self, name: str) -> Any:
            return getattr(self._real, name)

    class Index:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._real = real_index(*args, **kwargs)

        def writer(self, *args: Any, **kwargs: Any) -> Writer:
            return Writer(self._real.writer(*args, **kwargs))

        def __getattr__(self, name: str) -> Any:
            return getattr(self._real, name)

    tantivy.Index = Index  # type: ignore[misc]


# -- the CLI in processes forked from a warm server ---------------------------------------

_PRELOAD = ["lancedb", "tantivy", "pyarrow", "numpy", "memserver.cli", "memserver.engine",
            "memserver.store.index", "memserver.ingest.pipeline"]  # fmt: skip


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str
    seconds: float


def _child(argv: list[str], env: dict[str, str], out: str, err: str, faults: Faults | None
           ) -> None:  # fmt: skip
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    sys.argv = ["memserver", *argv]
    code = 0
    try:
        if faults is not None:
            install_faults(faults)
        from memserver.cli import main

        main(argv, prog_name="memserver")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class ForkedCli:
    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        self._n = itertools.count()
        # the server unpickles `_child` by importing this module: the repository root
        # must be on its sys.path (pytest's importlib mode imports tests without it)
        repo = str(Path(__file__).resolve().parents[2])
        if repo not in sys.path:
            sys.path.append(repo)
        self.ctx = multiprocessing.get_context("forkserver")
        self.ctx.set_forkserver_preload([*_PRELOAD, __name__])

    def start(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
              faults: Faults | None = None) -> tuple[Any, Path, Path]:  # fmt: skip
        n = next(self._n)
        out, err = self.scratch / f"{n}.out", self.scratch / f"{n}.err"
        proc = self.ctx.Process(
            target=_child, args=(list(argv), dict(env or ENV), str(out), str(err), faults)
        )
        # the server forks once LanceDB is imported but before it has run anything: safe,
        # so its fork warning is kept off stderr (the variable matters when it starts)
        saved = os.environ.get("PYTHONWARNINGS")
        os.environ["PYTHONWARNINGS"] = "ignore:lancedb fork support:RuntimeWarning"
        try:
            proc.start()
        finally:
            if saved is None:
                del os.environ["PYTHONWARNINGS"]
            else:
                os.environ["PYTHONWARNINGS"] = saved
        return proc, out, err

    def warm(self) -> CliResult:
        """Start the server (it imports LanceDB once) so that timings exclude it."""
        return self.run(["--version"])

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            faults: Faults | None = None, timeout: float = 120.0) -> CliResult:  # fmt: skip
        started = time.monotonic()
        proc, out, err = self.start(argv, env, faults)
        proc.join(timeout)
        assert proc.exitcode is not None, f"memserver {' '.join(argv[:2])} hung"
        return CliResult(proc.exitcode, out.read_text(), err.read_text(),
                         time.monotonic() - started)  # fmt: skip

    def run_and_kill(self, argv: Sequence[str], delay: float,
                     env: Mapping[str, str] | None = None) -> Outcome:  # fmt: skip
        started = time.monotonic()
        proc, _, err = self.start(argv, env)
        outcome = _kill_after(lambda: proc.exitcode, proc.kill, proc.join, delay, started)
        return dataclasses.replace(outcome, err=err.read_text() if err.exists() else "")
