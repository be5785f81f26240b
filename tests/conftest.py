"""Shared fixtures: small real repositories on tmp_path and engines over them."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

MODEL_CACHE = os.environ.get("FASTEMBED_CACHE_PATH", "")


def has_model_cache() -> bool:
    return bool(MODEL_CACHE) and Path(MODEL_CACHE).is_dir()


requires_model = pytest.mark.skipif(
    not has_model_cache(), reason="needs FASTEMBED_CACHE_PATH pointing at the offline model cache"
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

    def make(root: Path, embedder: str = "hashing", **kw: object) -> Engine:
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
