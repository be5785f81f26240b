"""kill -9 a real `memserver index` at random points; the next run must equal a clean run."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.crashkit import ENV, index_cmd, make_repo, snapshot

pytestmark = pytest.mark.slow


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
