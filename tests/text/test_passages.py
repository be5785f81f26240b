"""What the dense model reads of a chunk, and what its vector is kept under."""

from __future__ import annotations

import dataclasses

from memserver.core.types import Chunk
from memserver.ingest.distill import HeuristicDistiller
from memserver.text.passages import chunk_vector_key, embed_text, name_line

CHUNK = Chunk(
    id="c_1", project="p", origin="file", path="net/http_util.py", language="python",
    kind="function", symbol="parseHTTPResponse, HttpClient.send_all", start_line=3,
    end_line=9, text="def parseHTTPResponse(raw):\n    return raw.split(b'\\r\\n')",
    header="class HttpClient:", tokens=20, content_hash="h",
)  # fmt: skip


def test_the_name_line_says_each_name_and_the_path_in_words() -> None:
    text = embed_text(CHUNK)
    first, header, code = text.split("\n", 2)
    assert first == (
        "function parseHTTPResponse, HttpClient.send_all (parse http response, "
        "http client send all) defined in net/http_util.py (net http util)"
    )
    assert header == CHUNK.header and code == CHUNK.text


def test_a_unit_without_a_name_or_a_path() -> None:
    assert name_line("module", "", "a/b_c.py") == "module defined in a/b_c.py (a b c)"
    assert name_line("function", "run", "") == "function run (run)"
    note = dataclasses.replace(CHUNK, origin="note", path="notes/n1")
    assert embed_text(note) == note.text  # a note's words are what a question matches


def test_the_vector_key_ignores_the_path_and_nothing_else() -> None:
    moved = dataclasses.replace(CHUNK, path="lib/other.py")
    assert chunk_vector_key("m", moved) == chunk_vector_key("m", CHUNK)
    assert embed_text(moved) != embed_text(CHUNK)
    for change in ({"symbol": "parse"}, {"header": ""}, {"text": "pass"}, {"kind": "method"}):
        assert chunk_vector_key("m", dataclasses.replace(CHUNK, **change)) != chunk_vector_key(
            "m", CHUNK
        ), change
    assert chunk_vector_key("other", CHUNK) != chunk_vector_key("m", CHUNK)


def test_the_definition_memory_opens_with_the_first_names_line() -> None:
    [definition, *_] = HeuristicDistiller().distill(CHUNK)
    assert definition.text.startswith(name_line("function", "parseHTTPResponse", CHUNK.path) + ": ")
    assert "def parseHTTPResponse(raw):" in definition.text


def test_only_the_code_is_clipped() -> None:
    head, header, code = embed_text(CHUNK, 10).split("\n", 2)
    assert head == name_line(CHUNK.kind, CHUNK.symbol, CHUNK.path) and header == CHUNK.header
    assert code == CHUNK.text[:10]
    assert chunk_vector_key("m", CHUNK, 10) != chunk_vector_key("m", CHUNK)
