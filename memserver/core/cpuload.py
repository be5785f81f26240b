"""How much of the machine's CPU is free of other work, for choosing whether a run starts a
worker process: measured over a window of the recent past, not the minute's load average
(which still said two cores were busy a minute after a test suite ended).

A `Sample` is taken at a moment: the idle and total CPU seconds of the cores this process
may use since boot (Linux's /proc/stat) and this process's own CPU seconds, its reaped
children's included. Between two samples, the cores this process did not use and left
idle are what other work left it (`spare_cores`). Where there is no /proc/stat, there is
no sample, and the caller falls back to the load average.

Every sample is kept in a short process-wide history (`history`), the first taken when
this module is first imported (the CLI and the engine import it at their start): even the
first run of a short-lived process has a window, and a run finds the samples of the runs
before it.
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "Sample", "allowed_cpus", "cores", "cpu_seconds", "history", "min_window_s", "sample",
    "spare_cores",
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
    """How many cores this process may run on (a container's share, where the OS says)."""
    return len(allowed_cpus() or ()) or os.cpu_count() or 1


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


def sample() -> Sample | None:
    """Now (kept in `history`), or None where the cores' times cannot be read."""
    found = cpu_seconds(allowed_cpus())
    if found is None:
        return None
    t = os.times()
    own = t.user + t.system + t.children_user + t.children_system
    taken = Sample(time.monotonic(), *found, own)
    _HISTORY.append(taken)
    return taken


def history() -> list[Sample]:
    """This process's latest samples, oldest first."""
    return list(_HISTORY)


def min_window_s() -> float:
    """The shortest window whose counts say enough: two ticks of every core."""
    return max(MIN_WINDOW_S, 2 * cores() * _TICK_S)


def spare_cores(then: Sample, now: Sample) -> float | None:
    """Cores other work left this process between the two samples, beyond the one its own
    run keeps busy: idle cores plus the cores it used itself, minus one. None when the
    window is shorter than `min_window_s` (its counts' rounding would decide)."""
    wall = now.at - then.at
    if wall < min_window_s() or now.total <= then.total:
        return None
    idle = (now.idle - then.idle) / wall
    own = max(0.0, now.own - then.own) / wall
    return idle + own - 1.0


_HISTORY: deque[Sample] = deque(maxlen=16)
sample()  # the process's start
