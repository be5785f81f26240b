"""The whole-file BM25 baseline: what it indexes, how it scores, what it ranks first."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memserver.eval.bm25files import K1, B, FileBM25, source_files, terms
from tests.conftest import write_tree

TREE = {
    "pkg/validators.py": "class URLValidator:\n    def check_userinfo(self, userinfo):\n"
    "        user, _, password = userinfo.partition(':')\n",
    "pkg/http.py": "def parseHTTPResponse(raw):\n    return raw.split(b'\\r\\n')\n",
    "pkg/text.py": "def slugify(value):\n    return value.lower()\n",
    "tests/test_validators.py": "URLValidator URLValidator userinfo password userinfo\n",
    "docs/notes.txt": "URLValidator\n",
}


def test_indexes_non_test_python_files_only(tmp_path: Path) -> None:
    root = write_tree(tmp_path, TREE)
    assert source_files(root) == ["pkg/http.py", "pkg/text.py", "pkg/validators.py"]


def test_terms_keep_identifiers_whole_and_split() -> None:
    assert terms("parseHTTPResponse snake_case x") == [
        "parsehttpresponse", "parse", "http", "response", "snakecase", "snake", "case", "x"
    ]  # fmt: skip


def test_the_obvious_file_ranks_first(tmp_path: Path) -> None:
    index = FileBM25.from_tree(write_tree(tmp_path, TREE))
    ranked = [p for p, _ in index.rank("URLValidator accepts an empty password in the userinfo")]
    assert ranked[0] == "pkg/validators.py"
    assert "tests/test_validators.py" not in ranked
    assert next(p for p, _ in index.rank("parse the HTTP response")) == "pkg/http.py"
    assert index.rank("nothing matches zzz") == []


def test_scores_are_okapi_bm25() -> None:
    # a.py: {alpha: 1, beta: 1} + path {a, py}; b.py: {beta: 2, gamma: 1} + path {b, py}
    index = FileBM25(["a.py", "b.py"], ["alpha beta", "beta beta gamma"])
    lengths, avg = [4, 5], 4.5

    def term(tf: int, df: int, dl: int) -> float:
        idf = math.log(1 + (2 - df + 0.5) / (df + 0.5))
        return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avg))

    scores = dict(index.rank("beta beta alpha"))  # beta counts twice
    assert scores["a.py"] == pytest.approx(2 * term(1, 2, lengths[0]) + term(1, 1, lengths[0]))
    assert scores["b.py"] == pytest.approx(2 * term(2, 2, lengths[1]))
