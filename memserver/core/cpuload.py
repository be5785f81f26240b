"""How much of the machine's CPU is free of other work, for choosing whether a run starts a
worker process: measured over a window of the recent past, not the minute's load average
(which still said two cores were busy a minute after a test suite ended).

A `Sample` is taken at a moment: the idle and total CPU seconds of the cores this process
may use since boot (Linux's /proc/stat) and this process's own CPU seconds, its reaped
children's included, and those of the children still alive that do its work (a tags
worker tagging ahead is not other work). Between two samples, the cores this process did
not use and left idle are what other work left it (`spare_cores`). Where there is no
/proc/stat, there is no sample, and the caller falls back to the load average.

Every sample is kept in a short process-wide history (`history`), the first taken when
this module is first imported (the CLI and the engine import it at their start): even the
first run of a short-lived process has a window, and a run finds the samples of the runs
before it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "Sample", "allowed_cpus", "cores", "count_as_own", "cpu_quota", "cpu_seconds", "history",
    "min_window_s", "reaping", "sample", "spare_cores",
]  # fmt: skip

try:
    _TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    _TICK_S = 0.01
# A window shorter than this says too little: each core's counts, and this process's own
# time, move in ticks of 10 ms (`min_window_s` asks two ticks a core, 0.2 s at least).
MIN_WINDOW_S = 0.2


class Sample(NamedTuple):
    at: float  # time.monotonic()
    idle: float  # idle CPU seconds of this process's cores since boot (waiting for disk too)
    total: float  # all their CPU seconds since boot
    own: float  # this process's CPU seconds, its reaped children's included


def allowed_cpus() -> set[int] | None:
    """The cores this process may run on, where the OS says."""
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return None


def cores() -> int:
    """How many cores this process may run on: those its affinity allows, fewer when its
    cgroup's CPU quota allows less (a container started with `--cpus 1`)."""
    quota = cpu_quota()
    return _counted() if quota is None else max(1, min(_counted(), int(quota)))


def _counted() -> int:
    """The cores whose times `sample` reads: those the affinity allows."""
    return len(allowed_cpus() or ()) or os.cpu_count() or 1


def cpu_quota(proc: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")
              ) -> float | None:  # fmt: skip
    """The CPUs this process's cgroup may use (quota over period: cgroup v2's `cpu.max`,
    v1's `cpu.cfs_quota_us`), None where no quota limits it or none can be read."""
    try:
        lines = proc.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)  # hierarchy : controllers : path
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        where = path.strip().lstrip("/")
        if controllers == "":  # v2: one hierarchy
            found = _quota(root / where / "cpu.max", root / "cpu.max")
        elif "cpu" in controllers.split(","):
            found = _quota_v1(root / controllers / where, root / controllers)
        else:
            continue
        if found is not None:
            return found
    return None


def _quota(*files: Path) -> float | None:
    for file in files:  # the cgroup's own file; in a container, its view of the root
        try:
            quota, period = file.read_text().split()[:2]
        except (OSError, ValueError):
            continue
        if quota == "max":
            return None
        try:
            return int(quota) / int(period) if int(period) > 0 else None
        except ValueError:
            return None
    return None


def _quota_v1(*folders: Path) -> float | None:
    for folder in folders:
        try:
            quota = int((folder / "cpu.cfs_quota_us").read_text())
            period = int((folder / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        return quota / period if quota > 0 and period > 0 else None
    return None


def cpu_seconds(cpus: set[int] | None = None, stat: Path = Path("/proc/stat")
                ) -> tuple[float, float] | None:  # fmt: skip
    """(idle, all) CPU seconds of these cores (every core: None) since boot, from Linux's
    /proc/stat; None where there is no such file or it cannot be read as one."""
    idle = total = 0
    try:
        for line in stat.read_bytes().splitlines():
            fields = line.split()
            name = fields[0] if fields else b""
            if not name.startswith(b"cpu"):
                continue
            which = name[3:]
            if (cpus is None) != (which == b"") or (cpus is not None and int(which) not in cpus):
                continue
            ticks = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
            idle += sum(ticks[3:5])
            total += sum(ticks)
    except (OSError, ValueError):
        return None
    return (idle * _TICK_S, total * _TICK_S) if total else None


# Child processes alive whose CPU is this process's own work (a tags worker): once reaped,
# their times are in `os.times`'s children's, until then only in their /proc/<pid>/stat.
# A sample and a helper's reaping (`reaping`) hold the lock: no sample counts a helper twice
# (in both) or not at all.
_HELPERS: set[int] = set()
_COUNTING = threading.RLock()  # reentrant: a run's end may stop a worker inside a sample


def count_as_own(pid: int) -> None:
    """Count this child's CPU as this process's own (not other work) while it lives."""
    with _COUNTING:
        _HELPERS.add(pid)


@contextmanager
def reaping(pid: int) -> Iterator[None]:
    """Around reaping a helper (`Popen.wait`): its times move to the children's at once.
    Where the system can, its end is waited for first without reaping it (`os.waitid`'s
    WNOWAIT), so that no sample waits for a helper slow to die."""
    waitid = getattr(os, "waitid", None)
    if waitid is not None and hasattr(os, "WNOWAIT"):
        with suppress(OSError):  # reaped already (Popen.poll), or not our child
            waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    with _COUNTING:
        yield
        _HELPERS.discard(pid)


def _helpers_seconds() -> float:
    """The CPU seconds of the children counted as own (`count_as_own`), those still there;
    one gone (reaped elsewhere) or whose number is no longer our child's is forgotten."""
    ticks, me = 0, os.getpid()
    for pid in list(_HELPERS):
        try:  # after the command's name (which may hold spaces): state, ppid, …
            fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
            if int(fields[1]) != me:
                raise ValueError("another's")
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            _HELPERS.discard(pid)
    return ticks * _TICK_S


def sample() -> Sample | None:
    """Now (kept in `history`), or None where the cores' times cannot be read."""
    found = cpu_seconds(allowed_cpus())
    if found is None:
        return None
    with _COUNTING:
        t = os.times()
        own = t.user + t.system + t.children_user + t.children_system + _helpers_seconds()
    taken = Sample(time.monotonic(), *found, own)
    _HISTORY.append(taken)
    return taken


def history() -> list[Sample]:
    """This process's latest samples, oldest first."""
    return list(_HISTORY)


def min_window_s() -> float:
    """The shortest window whose counts say enough: two ticks of every core counted."""
    return max(MIN_WINDOW_S, 2 * _counted() * _TICK_S)


def spare_cores(then: Sample, now: Sample) -> float | None:
    """Cores other work left this process between the two samples, beyond the one its own
    run keeps busy: idle cores plus the cores it used itself (no more than its quota
    allows, `cores`), minus one. None when the window is shorter than `min_window_s` (its
    counts' rounding would decide)."""
    wall = now.at - then.at
    if wall < min_window_s() or now.total <= then.total:
        return None
    idle = (now.idle - then.idle) / wall
    own = max(0.0, now.own - then.own) / wall
    return min(idle + own, float(cores())) - 1.0


def _forked() -> None:
    """In a forked child: the lock anew (another thread may have held it), none of the
    parent's helpers (not this process's children), none of its samples (its own time)."""
    global _COUNTING
    _COUNTING = threading.RLock()
    _HELPERS.clear()
    _HISTORY.clear()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_forked)

_HISTORY: deque[Sample] = deque(maxlen=16)
sample()  # the process's start
