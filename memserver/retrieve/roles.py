"""What a file is for: first-party code, or tests, docs, examples, vendored, generated, data.

Ranking puts implementation code first: an issue about a bug names the behaviour, and the
test module of the buggy module shares all its words (on the DEV issues, 16 % of answers had
a test file first before this). The role comes from the path (the usual layouts of Python,
JavaScript/TypeScript, Go, Rust, Java, Ruby and docs sites) and, for tests, from the code
itself (`def test_…`, `class Test…`, `describe(`/`it(` blocks) where the path says nothing.
Projects add their own globs (`[recall] test_paths`, `doc_paths`, `vendored_paths`) and mark
first-party code the rules would demote (`code_paths`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["CODE", "Roles", "content_is_test", "path_role"]

CODE, TEST, DOC, EXAMPLE, VENDORED, GENERATED, DATA = (
    "code", "test", "doc", "example", "vendored", "generated", "data",
)  # fmt: skip

_TEST_DIR = re.compile(r"(?:.+[_-])?tests?|__tests__|testing|specs?|testdata|fixtures?|e2e")
_TEST_FILE = re.compile(
    r"test_.+|.+_tests?\.\w+|.+[._-](?:test|spec)\.\w+|conftest\.py|tests?\.py|.+_spec\.rb"
)
_DOC_DIR = frozenset({"docs", "doc", "documentation", "man", "website", "site"})
_DOC_EXT = (".md", ".rst", ".txt", ".adoc", ".asciidoc", ".mdx", ".rdoc", ".tex", ".ipynb")
_EXAMPLE_DIR = frozenset({"examples", "example", "samples", "sample", "demo", "demos",
                          "tutorial", "tutorials", "benchmarks", "bench"})  # fmt: skip
_VENDORED_DIR = frozenset(
    {"vendor", "vendored", "_vendor", "third_party", "thirdparty", "third-party", "extern",
     "external", "node_modules", "deps"}
)  # fmt: skip
_GENERATED = re.compile(r".+_pb2(?:_grpc)?\.pyi?|.+\.pb\.go|.+\.min\.(?:js|css)|.+\.map"
                        r"|.+\.lock|package-lock\.json|.+\.generated\.\w+")  # fmt: skip
_DATA_EXT = (".svg", ".json", ".xml", ".csv", ".tsv", ".po", ".pot", ".yaml", ".yml", ".ini",
             ".html", ".htm", ".css", ".scss", ".less", ".txt-tpl", ".cfg")  # fmt: skip
_MIGRATION = re.compile(r"\d{3,}_\w+\.\w+")  # `migrations/0001_initial.py`: generated schema
_TEST_CODE = re.compile(
    r"^\s*(?:async\s+)?def test_?\w*\(|^\s*class Test\w*|^\s*(?:describe|it|test)\(['\"`]"
    r"|^\s*func Test[A-Z_]\w*\(t \*testing\.T\)|^\s*#\[test\]|^\s*@Test\b",
    re.MULTILINE,
)


def path_role(path: str) -> str:
    """The role the path alone gives (lower-cased parts; the last is the file name)."""
    return _path_role(path)


@lru_cache(maxsize=65536)
def _path_role(path: str) -> str:
    parts = path.lower().split("/")
    name, dirs = parts[-1], parts[:-1]
    if any(_TEST_DIR.fullmatch(d) for d in dirs) or _TEST_FILE.fullmatch(name):
        return TEST
    if any(d in _VENDORED_DIR for d in dirs):
        return VENDORED
    if any(d in _DOC_DIR for d in dirs) or name.endswith(_DOC_EXT) or name in ("readme",):
        return DOC
    if any(d in _EXAMPLE_DIR for d in dirs):
        return EXAMPLE
    if _GENERATED.fullmatch(name) or ("migrations" in dirs and _MIGRATION.fullmatch(name)):
        return GENERATED
    if name.endswith(_DATA_EXT):
        return DATA
    return CODE


def content_is_test(text: str) -> bool:
    """Whether code reads as tests: test functions or classes, a spec's `describe`/`it`."""
    return len(_TEST_CODE.findall(text)) >= 2 or bool(re.search(r"^\s*class Test\w*", text, re.M))


@dataclass(frozen=True)
class Roles:
    """The built-in rules with a project's globs on top (the globs win, `code_paths` last)."""

    test_paths: Sequence[str] = ()
    doc_paths: Sequence[str] = ()
    vendored_paths: Sequence[str] = ()
    code_paths: Sequence[str] = ()

    def __post_init__(self) -> None:
        rules = [(CODE, self.code_paths), (TEST, self.test_paths), (DOC, self.doc_paths),
                 (VENDORED, self.vendored_paths)]  # fmt: skip
        matchers: list[tuple[str, Callable[[str], bool]]] = []
        if any(globs for _, globs in rules):
            from indexers.ignore import path_matcher  # pathspec: 1 MB, for globs alone

            matchers = [(role, path_matcher(list(globs), f"[recall] {role}_paths"))
                        for role, globs in rules if globs]  # fmt: skip
        object.__setattr__(self, "_matchers", matchers)

    def of(self, path: str) -> str:
        for role, matches in self._matchers:  # type: ignore[attr-defined]
            if matches(path):
                return str(role)
        return path_role(path)
