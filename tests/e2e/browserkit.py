"""What the browser tests share: Debian's Chromium, how it is started, a free port."""

from __future__ import annotations

import os
import socket
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
# read at import: the suite's isolated environment drops MEMSERVER_* before tests run
KEEP_SCREENSHOTS = os.environ.get("MEMSERVER_SCREENSHOTS", "")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
