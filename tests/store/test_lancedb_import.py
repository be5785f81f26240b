"""LanceDB opens without running the REST namespace client's API modules nor importing its
embedding providers, and each is whole when something asks for it; its own log says only
errors unless the environment asks for more (a fresh interpreter each: other tests import
them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import sys
from pathlib import Path
import pyarrow as pa
from memserver.store.lancedb import connect
db = connect(Path(sys.argv[1]))
db.create_table("t", pa.table({"id": ["a", "b"]}))
assert db.open_table("t").count_rows() == 2
api = [m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api")]
assert not api, api
import lance_namespace_urllib3_client as client
from lance_namespace_urllib3_client import ApiClient
assert client.__version__ and client.ApiClient is ApiClient
assert any(m.startswith("lance_namespace_urllib3_client.api") for m in sys.modules)
try:
    client.no_such_name
except AttributeError:
    print("ok")
providers = [m for m in sys.modules if m.startswith("lancedb.embeddings.")]
assert sorted(providers) == ["lancedb.embeddings.base", "lancedb.embeddings.registry",
                             "lancedb.embeddings.utils"], providers
assert "tqdm" not in sys.modules
import lancedb.embeddings as embeddings
from lancedb.embeddings import EmbeddingFunctionRegistry, OpenAIEmbeddings
assert embeddings.get_registry().get("openai") is OpenAIEmbeddings
assert EmbeddingFunctionRegistry.get_instance() is embeddings.get_registry()
try:
    embeddings.no_such_name
except AttributeError:
    print("ok")
"""


def test_the_rest_client_is_loaded_only_when_used(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "db")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ok", "ok"]


# a vector index trained on 700 equal vectors: k-means leaves most clusters empty
TRAIN = """
import sys
from pathlib import Path
import numpy as np
import pyarrow as pa
from memserver.store.lancedb import connect, create_vector_index
vectors = np.zeros((700, 8), dtype=np.float32)
vectors[:, 0] = 1.0
table = connect(Path(sys.argv[1])).create_table("t", pa.table({
    "id": [str(i) for i in range(700)], "embedded": [True] * 700,
    "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8),
}))
create_vector_index(table)
print(sorted(ix.index_type for ix in table.list_indices()))
"""


@pytest.mark.parametrize("level", [None, "warn"])
def test_lancedb_logs_only_errors_unless_the_environment_asks(tmp_path: Path, level: str | None
                                                              ) -> None:  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    if level is not None:
        env["LANCEDB_LOG"] = level
    done = subprocess.run([sys.executable, "-c", TRAIN, str(tmp_path / "db")], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["['BTree',", "'IvfFlat']"]
    warned = [line for line in done.stderr.splitlines() if " WARN " in line]
    if level is None:
        assert warned == [], done.stderr[-2000:]
    else:  # the user's setting wins: what LanceDB says of that index shows
        assert any("kmeans" in line for line in warned), done.stderr[-2000:]
