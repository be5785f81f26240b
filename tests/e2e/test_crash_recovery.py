"""kill -9 a real `memserver index` at random points; the next run must equal a clean run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memserver.engine import Engine

pytestmark = pytest.mark.slow


def make_repo(root: Path, files: int) -> Path:
    rng = random.Random(7)
    for i in range(files):
        funcs = "\n\n".join(
            f"def handler_{i}_{j}(value):\n"
            f"    '''Handle case {j} of module {i}.'''\n"
            f"    total = value * {rng.randint(2, 99)}\n"
            f"    return total + {j}\n"
            for j in range(rng.randint(2, 6))
        )
        path = root / f"pkg{i % 7}" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"import os\n\n\n{funcs}\n")
    return root


def snapshot(root: Path, index_dir: Path) -> dict:
    store = Engine(root, index_dir, env={}).open_store()
    states = store.lance.chunk_states()
    ids = store.lance.chunks.search().select(["id"]).limit(None).to_arrow().column("id")
    assert len(ids) == len(set(ids.to_pylist())), "duplicate rows in LanceDB"
    return {
        "current": sorted(c for c, cur in states.items() if cur),
        "bm25": sorted(store.bm25.all_ids()),
        "memories": sorted(m for m, (s, _) in store.memories.states().items() if s == "active"),
        "bm25_memories": sorted(store.bm25.all_ids("memory")),
        "manifest": {p: sorted(r.chunk_ids) for p, r in store.lance.manifest().items()},
        "unembedded": store.lance.count_unembedded(),
        "dirty": store.dirty,
    }


def index_cmd(root: Path, index_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "memserver",
        "index",
        str(root),
        "--index-dir",
        str(index_dir),
        "--embedder",
        "hashing",
        "--json",
    ]


ENV = {**os.environ, "MEMSERVER_INDEX_BATCH_FILES": "8", "MEMSERVER_INDEX_EMBED_BATCH_CHUNKS": "40"}


def test_kill_dash_nine_then_rerun_equals_a_clean_run(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", 160)
    clean_dir, crash_dir = tmp_path / "clean", tmp_path / "crashed"
    subprocess.run(index_cmd(root, clean_dir), check=True, env=ENV, capture_output=True)
    expected = snapshot(root, clean_dir)
    rng = random.Random(11)
    kills = 0
    for round_ in range(6):
        if round_ == 3:  # change the tree between crashes: edits, a delete, a new file
            (root / "pkg0" / "mod_0.py").write_text("def replaced():\n    return 0\n")
            (root / "pkg1" / "mod_1.py").unlink()
            (root / "pkg2" / "new_module.py").write_text("def fresh():\n    return 1\n")
            subprocess.run(index_cmd(root, clean_dir), check=True, env=ENV, capture_output=True)
            expected = snapshot(root, clean_dir)
        proc = subprocess.Popen(
            index_cmd(root, crash_dir),
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not (crash_dir / "lance").exists() and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 1.5))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 3, "the runs finished before they could be killed; make the repo larger"
    done = subprocess.run(index_cmd(root, crash_dir), env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert snapshot(root, crash_dir) == expected
