"""Where embedding models live, and whether one is there (without loading it).

The default cache is per user and survives reboots: the platform's cache directory
(`~/.cache/memserver/models` on Linux, `~/Library/Caches/memserver/models` on macOS,
`%LOCALAPPDATA%\\memserver\\Cache\\models` on Windows), not fastembed's folder under the
system temp directory. `[embedding] cache_dir`, then `FASTEMBED_CACHE_PATH`, win over it.
MCP clients start servers with a few environment variables only, so a cache named in a
shell's profile may not reach `memserver serve`: the stable default is what makes a model
fetched once (`memserver model fetch`) found by every later process.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path

from memserver.config import EmbeddingSettings

__all__ = ["ENV", "HUB_HOST", "cache_dir", "default_cache_dir", "fix_hint", "reachable"]

ENV = "FASTEMBED_CACHE_PATH"
HUB_HOST = "huggingface.co"


def default_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("memserver", appauthor=False)) / "models"


def cache_dir(settings: EmbeddingSettings, env: Mapping[str, str] | None = None) -> Path:
    """The model cache this process uses: config, then `FASTEMBED_CACHE_PATH`, then the
    per-user default (relative paths are taken from the current directory)."""
    env = os.environ if env is None else env
    chosen = settings.cache_dir or env.get(ENV) or ""
    return Path(chosen).expanduser().resolve() if chosen else default_cache_dir()


def reachable(host: str = HUB_HOST, timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the model hub opens within `timeout` (no request sent):
    offline, a download fails at once instead of after fastembed's retries (~40 s)."""
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def fix_hint(model: str, where: Path) -> str:
    return (
        f"run `memserver model fetch` once with internet access (it downloads {model} to "
        f"{where}), or point [embedding] cache_dir or {ENV} at a cache that holds it (an MCP "
        "client passes only the environment in its config's `env` block), or index "
        "without vectors: --embedder none"
    )
