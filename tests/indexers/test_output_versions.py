"""A change to what the chunker cuts or the tags extractor finds, for the same text, comes
with a new `CHUNKER_VERSION` or `GRAPH_VERSION`: the versions are part of every index's
chunker id, so indexes are cut again and nothing made the old way stays beside the new.
Forgetting a bump leaves old chunks or graph rows for every unchanged file, silently (it
happened once: a release changed the tags of Lua, Swift, Kotlin and JavaScript without one).

The chunks and tags of each fixture file are digested and compared with the digests
recorded for the current versions in `tests/fixtures/output_digests.json`, which also
names the grammars' release they were made with (another release may parse otherwise:
indexes record it too, see `Engine.chunker_id`). A file's own digest: a fixture file
added, removed or edited is recorded again, with no new version (its text is new)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from indexers.chunking import CHUNKER_VERSION, FileChunker
from indexers.languages import detect_language
from indexers.tagfile import tag_file
from indexers.treesitter import LANGUAGES
from indexers.treesitter.registry import grammars_version
from memserver.core.graph import GRAPH_VERSION
from memserver.core.types import ChunkOptions
from memserver.tokens import default_counter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED = FIXTURES / "output_digests.json"


def _files() -> list[tuple[str, str, str]]:
    """(name, text, language) of every fixture file the chunker reads, in a stable order."""
    out = []
    for folder in ("polyglot", "polyglot-more", "graph"):
        for path in sorted((FIXTURES / folder).rglob("*")):
            language = detect_language(path.name)
            if path.is_file() and language:
                out.append((path.relative_to(FIXTURES).as_posix(),
                            path.read_text(encoding="utf-8"), language))  # fmt: skip
    return out


# fixture file -> "<its text's digest>-<the digest of what was made of it>" (8 and 16 hex)
Digests = dict[str, str]


def _digest(files: list[tuple[str, str, str]], made: Callable[[str, str, str], Any]
            ) -> Digests:  # fmt: skip
    out: Digests = {}
    for name, text, language in files:
        value = json.dumps(dataclasses.asdict(made(name, text, language)), sort_keys=True)
        text_digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        out[name] = f"{text_digest}-{hashlib.sha256(value.encode()).hexdigest()[:16]}"
    return out


def _chunks(name: str, text: str, language: str) -> Any:
    return FileChunker(ChunkOptions(), default_counter()).chunk(name, text, language)


def _tags(name: str, text: str, language: str) -> Any:
    return tag_file(name, text, language, ChunkOptions().max_parse_bytes)


def _check(kind: str, version: int, digests: Digests, constant: str, module: str) -> None:
    """What was made of each fixture file is what was recorded for this version; a file
    whose text changed (or that is new, or gone) is recorded again, with no new version."""
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    if recorded["grammars"] != grammars_version():
        pytest.skip(f"digests recorded with tree-sitter-language-pack {recorded['grammars']}, "
                    f"{grammars_version()} is installed: set \"grammars\" to it in "
                    f"{RECORDED.name}, and this test names the digests to record")  # fmt: skip
    was, held = recorded[kind]["version"], recorded[kind]["files"]
    files = json.dumps(digests, sort_keys=True)

    def record(v: int) -> str:
        return f'set "{kind}" in {RECORDED.name} to {{"version": {v}, "files": {files}}}'

    assert version >= was, f"{constant} went back from {was} to {version}"
    # the same text made otherwise (a file edited, added or removed is only recorded again)
    changed = sorted(
        name for name, digest in held.items()
        if name in digests and digest != digests[name]
        and digest.split("-")[0] == digests[name].split("-")[0]
    )  # fmt: skip
    assert version > was or not changed, (
        f"the {kind} of {changed} changed: if on purpose, bump {constant} to {was + 1} in "
        f"{module} (indexes are then cut again), and {record(was + 1)}"
    )
    assert version == was, f"{constant} was bumped: {record(version)}"
    assert held == digests, f"fixture files were added, removed or edited: {record(version)}"


@pytest.fixture(scope="module")
def files() -> list[tuple[str, str, str]]:
    found = _files()
    assert {language for _, _, language in found} >= set(LANGUAGES)  # every parsed language
    return found


def test_changed_chunks_come_with_a_new_chunker_version(files: list[tuple[str, str, str]]
                                                        ) -> None:  # fmt: skip
    _check("chunks", CHUNKER_VERSION, _digest(files, _chunks), "CHUNKER_VERSION",
           "indexers/chunking.py")  # fmt: skip


def test_changed_tags_come_with_a_new_graph_version(files: list[tuple[str, str, str]]) -> None:
    _check("tags", GRAPH_VERSION, _digest(files, _tags), "GRAPH_VERSION",
           "memserver/core/graph.py")  # fmt: skip
