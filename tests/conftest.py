"""Shared fixtures: small real repositories on tmp_path and engines over them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

MODEL_CACHE = os.environ.get("FASTEMBED_CACHE_PATH", "")
# what a developer's own shell may hold that would change results: their config, an index
# location, an API key that turns the LLM on
_CLEARED_PREFIXES = ("MEMSERVER_",)
_CLEARED = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")
_HOMES = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


@pytest.fixture(autouse=True, scope="session")
def isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test (and module fixture) runs with a fresh home and config folders and none
    of the caller's MEMSERVER_* or Anthropic variables; the model cache variables stay,
    and the int8 copy of the model is made in one folder for the run."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        for name in _HOMES:
            mp.setenv(name, str(home if name == "HOME" else home / name.lower()))
        for name in list(os.environ):
            if name.startswith(_CLEARED_PREFIXES) or name in _CLEARED:
                mp.delenv(name)
        # the default model's int8 copy, made once for the whole run (all workers) from
        # the fp32 model in the cache, not once per fresh home
        run = tmp_path_factory.getbasetemp()
        run = run.parent if os.environ.get("PYTEST_XDIST_WORKER") else run  # the workers' run
        mp.setenv("MEMSERVER_MODEL_CACHE", str(run / "copies"))
        yield


@pytest.fixture(autouse=True)
def no_kept_tags_worker() -> Iterator[None]:
    """A tags worker an index run keeps for the process's next run (`ingest.tagging`) is
    not left to the next test: each test starts and ends without one."""
    _stop_kept()
    yield
    _stop_kept()


def _stop_kept() -> None:
    tagging = sys.modules.get("memserver.ingest.tagging")  # loaded: a run may have kept one
    if tagging is not None:
        tagging.stop_kept()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """End-to-end tests (real subprocesses, transports, kill -9) run in the slow lane."""
    for item in items:
        if "e2e" in Path(str(item.fspath)).parts:
            item.add_marker(pytest.mark.slow)


def has_model_cache() -> bool:
    return bool(MODEL_CACHE) and Path(MODEL_CACHE).is_dir()


requires_model = pytest.mark.skipif(
    not has_model_cache(),
    reason="the embedding model is not available: set FASTEMBED_CACHE_PATH to a fastembed "
    "cache that holds it (and HF_HUB_OFFLINE=1)",
)

SAMPLE = {
    "src/http_client.py": '''"""A small HTTP client."""

import time


class RetryPolicy:
    """How often and how long to wait between attempts."""

    def __init__(self, attempts: int = 3, backoff: float = 0.5) -> None:
        self.attempts = attempts
        self.backoff = backoff

    def delays(self):
        return [self.backoff * 2**i for i in range(self.attempts)]


def send_with_retry(session, request, policy: RetryPolicy):
    """Send a request again when the server fails, waiting longer each time."""
    for delay in policy.delays():
        response = session.send(request)
        if response.status_code < 500:
            return response
        time.sleep(delay)
    raise RuntimeError("request failed after retries")
''',
    "src/config.py": '''import json
from pathlib import Path


def load_settings(path: Path) -> dict:
    """Read the JSON settings file and fill in defaults."""
    data = json.loads(path.read_text())
    data.setdefault("timeout", 30)
    return data


def parseHTTPResponse(raw_bytes: bytes) -> dict:
    head, _, body = raw_bytes.partition(b"\\r\\n\\r\\n")
    return {"head": head, "body": body}
''',
    "web/app.js": """// Express-like routing for the demo app.
function registerRoutes(app) {
  app.get("/health", (req, res) => res.send("ok"));
  app.post("/users", createUser);
}

async function createUser(req, res) {
  const user = await db.insert("users", req.body);
  res.status(201).json(user);
}

module.exports = { registerRoutes };
""",
    "docs/guide.md": """# Guide

Intro text.

## Retries

The client retries failed requests with exponential backoff.

```python
# not a heading
send_with_retry(session, request, RetryPolicy())
```
""",
    ".env": "API_KEY=sk-live-secret\n",
    "node_modules/dep/index.js": "module.exports = 1;\n",
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", SAMPLE)


@pytest.fixture
def make_engine() -> Callable[..., object]:
    from memserver.engine import Engine

    def make(root: Path, embedder: str = "hashing", **kw: Any) -> Engine:
        return Engine(root, kw.pop("index_dir", None), embedder_flag=embedder, env={}, **kw)

    return make


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def indexed_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample repository, indexed once per module with the hashing embedder."""
    from memserver.engine import Engine

    root = write_tree(tmp_path_factory.mktemp("indexed") / "repo", SAMPLE)
    Engine(root, None, embedder_flag="hashing", env={}).index()
    return root
