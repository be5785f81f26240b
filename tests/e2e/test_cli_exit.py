"""How the `memserver` command ends (`cli.run`): once its work is done, at once (no teardown
of the interpreter's modules), with its output, its status and the exit handlers, after
the work of its other threads; with Python's own end under a profiler (it writes its
stats then)."""

from __future__ import annotations

import json
import os
import pstats
import subprocess
import sys
from pathlib import Path

# Run as a script in a process of its own: `sys.argv[1:]` is the command's arguments. A
# global whose deletion prints "torn down" shows whether the interpreter tore its modules
# down (Python's own end) or not (the quick end); an exit handler prints "exit handler ran".
_SCRIPT = """
import atexit, sys, threading, time
from pathlib import Path
import memserver.cli as cli

class Teardown:
    def __del__(self):
        sys.stderr.write("torn down\\n")

held = Teardown()
atexit.register(lambda: sys.stderr.write("exit handler ran\\n"))
if sys.argv[1] == "--busy-thread":  # a thread that writes a file once the command is done
    target, done = Path(sys.argv[2]), threading.Event()
    def work():
        done.wait()
        time.sleep(0.3)
        target.write_text("done")
    threading.Thread(target=work).start()
    said = lambda: sys.stderr.write(f"written before the exit handlers: {target.exists()}\\n")
    atexit.register(said)
    command = cli.main
    def main():
        try:
            command()
        finally:
            done.set()
    cli.main = main
    del sys.argv[1:3]
sys.argv[0] = "memserver"
if sys.argv[1] == "--own-end":  # click's standalone end, then Python's own
    del sys.argv[1]
    cli.main()
cli.run()
"""


def _memserver(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, *args], cwd=cwd, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def test_a_command_ends_at_once_with_its_output_status_and_exit_handlers(
    sample_repo: Path, tmp_path: Path
) -> None:
    index_dir = tmp_path / "index"
    done = _memserver(str(sample_repo), "--index-dir", str(index_dir), "--embedder", "none",
                      "--json", cwd=tmp_path)  # fmt: skip
    # `memserver PATH` is not a command: the usage error's status and message
    assert done.returncode == 2 and "No such command" in done.stderr
    done = _memserver("index", str(sample_repo), "--index-dir", str(index_dir), "--embedder",
                      "none", "--json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # the whole summary, flushed
    assert report["files_indexed"] > 0 and report["chunks_total"] > 0
    assert "exit handler ran" in done.stderr
    assert "torn down" not in done.stderr  # ended before Python's teardown
    status = _memserver("status", "--index-dir", str(index_dir), "--json", cwd=tmp_path)
    assert status.returncode == 0 and json.loads(status.stdout)["chunks"] == report["chunks_total"]
    # recall's searches leave idle pool threads (not daemons): told to end, then the quick end
    found = _memserver("recall", "def", "--index-dir", str(index_dir), "--json", cwd=tmp_path)
    assert found.returncode == 0 and json.loads(found.stdout)["evidence"]
    assert "exit handler ran" in found.stderr and "torn down" not in found.stderr
    stats = tmp_path / "status.prof"  # a profiler writes what it saw at Python's own end
    profiled = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "memserver", "status",
         "--index-dir", str(index_dir)], cwd=tmp_path, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert profiled.returncode == 0 and "chunks" in profiled.stdout
    assert pstats.Stats(str(stats)).total_calls > 0


def test_an_error_keeps_its_message_hint_and_status(tmp_path: Path) -> None:
    done = _memserver("status", "--index-dir", str(tmp_path / "none"), cwd=tmp_path)
    assert done.returncode == 3
    assert "error: no index at" in done.stderr and "hint:" in done.stderr
    assert "exit handler ran" in done.stderr and "torn down" not in done.stderr
    own = _memserver("--own-end", "status", "--index-dir", str(tmp_path / "none"), cwd=tmp_path)
    assert own.returncode == 3 and own.stderr.startswith(done.stderr.split("exit handler")[0])
    assert "torn down" in own.stderr  # the marker the quick end leaves out, at Python's end


def test_a_thread_still_working_is_waited_for(tmp_path: Path) -> None:
    target = tmp_path / "written-after"
    done = _memserver("--busy-thread", str(target), "status", "--index-dir",
                      str(tmp_path / "none"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 3 and "error: no index at" in done.stderr
    assert target.read_text() == "done"  # its work was not cut short
    assert "written before the exit handlers: True" in done.stderr  # as Python's end orders them
    assert "exit handler ran" in done.stderr and "torn down" not in done.stderr


def test_the_module_runs_the_command(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "memserver", "--version"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "version" in done.stdout


def test_a_message_status_and_an_output_that_cannot_be_flushed(tmp_path: Path) -> None:
    said = subprocess.run(
        [sys.executable, "-c", "from memserver.cli import _quick_exit; _quick_exit('gone')"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert said.returncode == 1 and said.stderr.strip() == "gone"
    wrapped = subprocess.run(
        [sys.executable, "-c", "from memserver.cli import _quick_exit; _quick_exit(256 + 7)"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert wrapped.returncode == 7  # as the system keeps a status
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    unflushed = subprocess.run(
        [sys.executable, "-c", "import os; from memserver.cli import _quick_exit; "
         "print('held', end=''); os.close(1); _quick_exit(0)"],
        capture_output=True, text=True, timeout=60, env=buffered,
    )  # fmt: skip
    assert unflushed.returncode == 120 and unflushed.stdout == ""
