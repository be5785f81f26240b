"""FileChunker: the coverage contract, named units per language, splitting, merging, fallbacks."""

from __future__ import annotations

import itertools
import re
import time
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import indexers.chunking
import indexers.treesitter
from indexers.chunking import FileChunker
from indexers.treesitter import LANGUAGES, grammar
from indexers.treesitter.registry import query_text
from memserver.core.types import ChunkOptions, ChunkResult

POLYGLOT = Path(__file__).resolve().parent.parent / "fixtures" / "polyglot"

FIXTURES = {
    "client.py": "python",
    "server.js": "javascript",
    "service.ts": "typescript",
    "Widget.tsx": "tsx",
    "main.go": "go",
    "lib.rs": "rust",
    "Ledger.java": "java",
    "buffer.c": "c",
    "shapes.cpp": "cpp",
    "Billing.cs": "csharp",
    "store.rb": "ruby",
    "Repository.php": "php",
    "deploy.sh": "bash",
    "README.md": "markdown",
    "package.json": "json",
    "config.yaml": "yaml",
    "settings.toml": "toml",
    "NOTES": "text",
}
CODE_FIXTURES = {name: lang for name, lang in FIXTURES.items() if lang in LANGUAGES}
KINDS = {"function", "method", "class", "module", "section", "text"}
UNITS = ChunkOptions(max_tokens=80, min_tokens=0)  # small cap, no merging: every unit shows


class RegexTokens:
    """A real-ish token counter: words and single punctuation marks."""

    _pattern = re.compile(r"\w+|[^\w\s]")

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(self._pattern.findall(text))


def read(name: str) -> str:
    return (POLYGLOT / name).read_text(encoding="utf-8")


def chunk(text: str, language: str, options: ChunkOptions = UNITS, path: str = "f") -> ChunkResult:
    return FileChunker(options, RegexTokens()).chunk(path, text, language)


def assert_contract(result: ChunkResult, text: str, options: ChunkOptions, path: str = "f") -> None:
    lines = text.split("\n")
    counter = RegexTokens()
    previous_end = 0
    covered: set[int] = set()
    for c in result.chunks:
        assert c.path == path
        assert c.kind in KINDS
        assert previous_end < c.start_line <= c.end_line <= len(lines), (c.start_line, c.end_line)
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert lines[c.start_line - 1].strip() and lines[c.end_line - 1].strip()
        assert c.tokens == counter.count(c.text)
        # The counter splits on whitespace, so line counts add up exactly: only a single line
        # (never cut mid-line) may exceed the cap.
        assert c.tokens <= options.max_tokens or c.start_line == c.end_line
        covered.update(range(c.start_line, c.end_line + 1))
        previous_end = c.end_line
    nonblank = {i for i, line in enumerate(lines, start=1) if line.strip()}
    assert nonblank <= covered


def first_of(result: ChunkResult, symbol: str):
    found = [c for c in result.chunks if c.symbol == symbol]
    assert found, f"no chunk for {symbol!r}: {sorted({c.symbol for c in result.chunks})}"
    return found[0]


# --- (a) coverage over every fixture file --------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIXTURES))
@pytest.mark.parametrize(
    "options",
    [ChunkOptions(), UNITS, ChunkOptions(max_tokens=30, min_tokens=20, window_lines=5)],
    ids=["defaults", "units", "tiny"],
)
def test_every_fixture_keeps_the_contract(name: str, options: ChunkOptions) -> None:
    text = read(name)
    result = FileChunker(options, RegexTokens()).chunk(name, text, FIXTURES[name])
    assert result.fallback_reason is None
    assert result.chunks
    assert all(c.language == FIXTURES[name] for c in result.chunks)
    assert_contract(result, text, options, path=name)


@st.composite
def chunk_options(draw: st.DrawFn) -> ChunkOptions:
    max_tokens = draw(st.integers(30, 2000))
    min_tokens = draw(st.integers(0, max_tokens))
    return ChunkOptions(
        max_tokens=max_tokens,
        min_tokens=min_tokens,
        merge_target_tokens=draw(st.integers(min_tokens, 2 * max_tokens)),
        window_lines=draw(st.integers(1, 120)),
    )


@settings(max_examples=25, deadline=None, database=None)
@given(options=chunk_options())
def test_contract_holds_for_random_options(options: ChunkOptions) -> None:
    for name, language in FIXTURES.items():
        text = read(name)
        result = FileChunker(options, RegexTokens()).chunk(name, text, language)
        assert result.fallback_reason is None
        assert_contract(result, text, options, path=name)


TOO_SLOW = HealthCheck.too_slow
_CODEISH = st.text(alphabet="abc xyz(){}[]<>;:=.,#/*\"'\\@\t\r\n-+def class fn", max_size=400)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[TOO_SLOW])
@given(text=_CODEISH, language=st.sampled_from([*sorted(LANGUAGES), "markdown", "yaml", "text"]))
def test_never_raises_and_keeps_the_contract_on_arbitrary_text(text: str, language: str) -> None:
    options = ChunkOptions(max_tokens=30, min_tokens=10, merge_target_tokens=40, window_lines=7)
    assert_contract(chunk(text, language, options), text, options)


def test_empty_and_blank_files_give_no_chunks() -> None:
    for language in ("python", "markdown", "json", "text"):
        assert chunk("", language).chunks == ()
        assert chunk("\n  \n\t\n\n", language).chunks == ()


def test_crlf_lines_are_kept_raw() -> None:
    text = "def a():\r\n    return 1\r\n\r\n\r\nclass B:\r\n    x = 1\r\n"
    result = chunk(text, "python")
    assert [c.symbol for c in result.chunks] == ["a", "B"]
    assert result.chunks[0].text == "def a():\r\n    return 1\r"
    assert_contract(result, text, UNITS)


def test_same_input_gives_same_chunks() -> None:
    for name, language in FIXTURES.items():
        assert chunk(read(name), language) == chunk(read(name), language)


def test_tokens_are_counted_per_line_once_not_per_candidate() -> None:
    for name, language in FIXTURES.items():
        text = read(name)
        counter = RegexTokens()
        result = FileChunker(UNITS, counter).chunk(name, text, language)
        nonblank = sum(1 for line in text.split("\n") if line.strip())
        assert counter.calls <= nonblank + len(result.chunks)


# --- (b) named units per language ----------------------------------------------------------

# (file, symbol, kind, header prefix, first line of its first chunk) with UNITS options
EXPECTED_UNITS = [
    ("client.py", "Client.send", "method", "class Client(BaseClient):", "# Send one request"),
    ("client.py", "Client.get", "method", "class Client(BaseClient):", "def get("),
    ("client.py", "Response", "class", "", "@dataclass(frozen=True)"),
    ("client.py", "retry.decorator", "function", "def retry(", "def decorator(func):"),
    ("client.py", "parse_config", "function", "def parse_config(", "def parse_config("),
    ("server.js", "Router.add", "method", "class Router extends EventEmitter {", "/**"),
    ("server.js", "Router.dispatch", "method", "class Router", "// Dispatch one request"),
    ("server.js", "Router.fromTable", "method", "class Router", "static fromTable(table) {"),
    ("server.js", "parseQuery", "function", "function parseQuery(", "/**"),
    ("server.js", "makeCounter", "function", "", "function makeCounter(start) {"),
    ("server.js", "identity", "function", "", "const identity = (x) => x;"),
    ("service.ts", "ItemStore", "class", "export class ItemStore", "/**"),
    ("service.ts", "ItemStore.search", "method", "export class ItemStore", "// Search by name"),
    ("service.ts", "ItemStore.put", "method", "export class ItemStore", "/** Add or replace"),
    ("service.ts", "Item", "class", "", "/** A stored item. */"),
    ("service.ts", "Level", "class", "", "export enum Level {"),
    ("service.ts", "isEmpty", "function", "", "export const isEmpty"),
    ("Widget.tsx", "Widget", "function", "export function Widget(", "/**"),
    ("Widget.tsx", "Widget.choose", "function", "export function Widget(", "function choose("),
    ("Widget.tsx", "Counter.increment", "method", "export class Counter", "// Increase the count"),
    ("Widget.tsx", "Counter.render", "method", "export class Counter", "render() {"),
    ("main.go", "Store.Add", "method", "func (s *Store) Add(", "// Add puts units"),
    ("main.go", "Store.Len", "method", "", "func (s Store) Len() int"),
    ("main.go", "Store", "class", "", "// Store holds items by SKU."),
    ("main.go", "NewStore", "function", "", "// NewStore returns an empty store."),
    ("lib.rs", "Polygon.new", "method", "impl Polygon {", "/// Build a polygon"),
    ("lib.rs", "Polygon.perimeter", "method", "impl Polygon {", "// Perimeter by summing"),
    ("lib.rs", "Polygon.area", "method", "impl Shape for Polygon {", "/// Shoelace formula."),
    ("lib.rs", "Point", "class", "", "/// A point in the plane."),
    ("lib.rs", "centroid.mean", "function", "pub fn centroid(", "fn mean("),
    ("lib.rs", "tests.square_area", "function", "mod tests {", "#[test]"),
    ("Ledger.java", "Ledger.post", "method", "public class Ledger {", "/**"),
    ("Ledger.java", "Ledger.toString", "method", "public class Ledger {", "@Override"),
    ("Ledger.java", "Ledger.Kind", "class", "public class Ledger {", "/** Kinds of posting. */"),
    ("Ledger.java", "Ledger.Audit", "class", "public class Ledger {", "static class Audit {"),
    ("buffer.c", "buffer_reserve", "function", "static int buffer_reserve(", "/* Grow the buffer"),
    ("buffer.c", "buffer", "class", "", "/** A growable buffer of bytes. */"),
    ("buffer.c", "main", "function", "", "int main(int argc, char **argv)"),
    ("shapes.cpp", "geometry.Circle.describe", "method", "namespace geometry {", "// Describe"),
    ("shapes.cpp", "geometry.Circle.area", "method", "namespace geometry {", "double area()"),
    ("shapes.cpp", "geometry.clamp", "function", "namespace geometry {", "template <typename T>"),
    ("shapes.cpp", "geometry.total_area", "function", "namespace geometry {", "/**"),
    ("shapes.cpp", "geometry_demo", "function", "", "double geometry_demo() {"),
    ("Billing.cs", "Acme.Billing.InvoiceBuilder", "class", "namespace Acme", "/// <summary>"),
    ("Billing.cs", "Acme.Billing.InvoiceBuilder.Render", "method", "namespace Acme.Billing", "///"),
    ("Billing.cs", "Acme.Billing.InvoiceBuilder.Add", "method", "namespace Acme.Billing", "public"),
    ("Billing.cs", "Acme.Billing.Money", "class", "namespace Acme.Billing", "public static class"),
    ("store.rb", "Cache.Store.fetch", "method", "module Cache", "# Fetch a value"),
    ("store.rb", "Cache.Store.build", "method", "module Cache", "def self.build(ttl)"),
    ("store.rb", "Cache.Store", "class", "module Cache", "# A tiny in-memory store"),
    ("store.rb", "with_logging", "function", "", "def with_logging(name)"),
    ("Repository.php", "Repository.page", "method", "final class Repository", "/**"),
    ("Repository.php", "Repository.add", "method", "final class Repository", "public function"),
    ("Repository.php", "Entity", "class", "", "/**"),
    ("Repository.php", "slugify", "function", "", "function slugify(string $text): string"),
    ("deploy.sh", "deploy", "function", "deploy() {", "# Build, upload and activate"),
    ("deploy.sh", "log", "function", "", "# Print a message to stderr"),
    ("deploy.sh", "upload", "function", "", "upload() {"),
]


@pytest.mark.parametrize(("name", "symbol", "kind", "header", "first_line"), EXPECTED_UNITS)
def test_named_units(name: str, symbol: str, kind: str, header: str, first_line: str) -> None:
    result = chunk(read(name), FIXTURES[name])
    found = first_of(result, symbol)
    assert found.kind == kind
    assert found.header.startswith(header) and (header or not found.header)
    assert found.text.split("\n")[0].strip().startswith(first_line)


def test_every_code_fixture_has_a_class_split_into_methods() -> None:
    for name, language in CODE_FIXTURES.items():
        result = chunk(read(name), language)
        kinds = {c.kind for c in result.chunks}
        assert kinds & {"function", "method"}, name
        if language in ("bash", "c"):
            continue  # no classes there
        assert "class" in kinds, name
        assert [c for c in result.chunks if c.kind == "method" and c.header], name


def test_a_unit_within_the_cap_is_one_chunk_with_its_methods() -> None:
    result = chunk(read("client.py"), "python", ChunkOptions(max_tokens=2000, min_tokens=0))
    client = first_of(result, "Client")
    assert client.kind == "class" and client.header == ""
    assert "def send(" in client.text and "def post(" in client.text
    assert not [c for c in result.chunks if c.symbol.startswith("Client.")]


def test_methods_of_a_split_class_carry_the_class_signature_and_its_decorators() -> None:
    text = read("client.py")
    result = chunk(text, "python", ChunkOptions(max_tokens=350, min_tokens=0))
    assert [c.symbol for c in result.chunks].count("Client.send") == 1
    send = first_of(result, "Client.send")
    assert send.kind == "method" and send.header == "class Client(BaseClient):"
    lines = text.split("\n")
    assert lines[send.start_line].strip() == "@retry(times=3)"  # the line after the comment
    rest = [c for c in result.chunks if c.symbol == "Client" and c.kind == "class"]
    assert rest and rest[0].text.startswith("class Client(BaseClient):")


# --- (c) oversize function split ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "symbol"),
    [("client.py", "parse_config"), ("main.go", "Store.Report"), ("lib.rs", "parse_points"),
     ("Ledger.java", "Ledger.post"), ("buffer.c", "buffer_append_escaped")],
)  # fmt: skip
def test_an_oversize_function_is_split_at_statements(name: str, symbol: str) -> None:
    text = read(name)
    lines = text.split("\n")
    options = ChunkOptions(max_tokens=60, min_tokens=0)
    pieces = [c for c in chunk(text, FIXTURES[name], options).chunks if c.symbol == symbol]
    assert len(pieces) >= 3
    for before, after in itertools.pairwise(pieces):  # contiguous but for blanks
        assert not any(line.strip() for line in lines[before.end_line : after.start_line - 1])
    assert len({c.kind for c in pieces}) == 1 and pieces[0].kind in ("function", "method")
    assert len({c.header for c in pieces}) == 1
    signature = pieces[0].header.split("\n")[-1]
    assert signature in pieces[0].text and not any(signature in c.text for c in pieces[1:])
    assert all(c.tokens <= 60 for c in pieces)


def test_an_unsplittable_leaf_is_cut_into_line_windows() -> None:
    body = "\n".join(f"    'entry number {i} with some words'," for i in range(120))
    text = f"def table():\n    return [\n{body}\n    ]\n"
    options = ChunkOptions(max_tokens=50, min_tokens=0, window_lines=10)
    result = chunk(text, "python", options)
    assert {c.symbol for c in result.chunks} == {"table"}
    assert len(result.chunks) >= 12
    assert_contract(result, text, options)


# --- (d) tiny siblings merge ------------------------------------------------------------------


def test_tiny_functions_merge_with_joined_symbols() -> None:
    merged = chunk(read("client.py"), "python", ChunkOptions())
    cluster = first_of(merged, "add, sub, mul")
    assert cluster.kind == "function"
    separate = chunk(read("client.py"), "python", ChunkOptions(min_tokens=0))
    assert {"add", "sub", "mul"} <= {c.symbol for c in separate.chunks}


def test_merging_stays_within_the_target_and_never_crosses_classes() -> None:
    methods = "\n\n".join(f"    def m{i}(self):\n        return {i}" for i in range(6))
    big = "\n".join(f"        value_{i} = compute(value_{i - 1}, {i})" for i in range(1, 25))
    text = (
        f"class A:\n    def work(self):\n{big}\n\n{methods}\n\n\n"
        f"class B:\n{methods}\n\n    def work(self):\n{big}\n"
    )
    options = ChunkOptions(max_tokens=150, min_tokens=30, merge_target_tokens=60)
    result = chunk(text, "python", options)
    assert_contract(result, text, options)
    for c in result.chunks:
        owners = {s.split(".")[0] for s in c.symbol.split(", ") if s}
        assert len(owners) <= 1, c.symbol
        if ", " in c.symbol:
            assert c.tokens <= 60
    assert any(", " in c.symbol for c in result.chunks)


def test_a_merge_takes_the_first_definitions_kind() -> None:
    text = "import os\n\n\ndef tiny():\n    return os.sep\n"
    result = chunk(text, "python", ChunkOptions())
    assert [(c.kind, c.symbol) for c in result.chunks] == [("function", "tiny")]


# --- (e) markdown -------------------------------------------------------------------------------


def test_markdown_sections_follow_headings_not_fenced_hashes() -> None:
    text = read("README.md")
    result = chunk(text, "markdown", ChunkOptions(min_tokens=0))
    assert [c.symbol for c in result.chunks] == [
        "",
        "Install",
        "Install > Linux",
        "Install > macOS",
        "Usage",
        "Usage > Configuration",
        "Advanced options",
    ]
    assert {c.kind for c in result.chunks} == {"section"}
    install = result.chunks[1]
    assert "# this is a shell comment, not a heading" in install.text
    assert "## neither is this" in install.text
    assert "# still inside a tilde fence" in result.chunks[2].text
    assert "# an indented code line" in result.chunks[4].text
    assert result.chunks[0].text.startswith("---\ntitle: Polyglot fixture")


def test_markdown_merges_tiny_sections_only_under_one_top_heading() -> None:
    result = chunk(read("README.md"), "markdown", ChunkOptions())
    symbols = [c.symbol for c in result.chunks]
    assert "Install, Install > Linux, Install > macOS" in symbols
    assert "Usage, Usage > Configuration" in symbols
    assert "Advanced options" in symbols  # a setext H1 starts a new top-level group


def test_a_long_markdown_section_is_windowed_outside_fences() -> None:
    paragraphs = "\n\n".join(f"Paragraph {i} has a few words in it." for i in range(40))
    text = f"# Guide\n\n{paragraphs}\n\n```\n# code\n\nmore code\n```\n"
    options = ChunkOptions(max_tokens=60, min_tokens=0, window_lines=30)
    result = chunk(text, "markdown", options)
    assert len(result.chunks) > 3
    assert {c.symbol for c in result.chunks} == {"Guide"}
    assert all(c.header == "# Guide" for c in result.chunks[1:])
    assert_contract(result, text, options)


# --- (f) deep nesting, (g) garbage, (h) huge lines ---------------------------------------------


def test_deeply_nested_code_falls_back_to_windows_without_crashing() -> None:
    text = "function f() {\n" + "if (a) {\n" * 5000 + "x();\n" + "}\n" * 5000 + "}\n"
    options = ChunkOptions(max_tokens=200)
    result = chunk(text, "javascript", options)
    assert result.fallback_reason and "nesting deeper than" in result.fallback_reason
    assert_contract(result, text, options)


def test_deeply_nested_brackets_and_definitions_do_not_crash() -> None:
    brackets = "x = " + "[" * 5000 + "]" * 5000 + "\n"
    assert_contract(chunk(brackets, "python"), brackets, UNITS)
    nested = "".join("  " * i + f"def f{i}():\n" for i in range(400)) + "  " * 400 + "pass\n"
    result = chunk(nested, "python", ChunkOptions(max_tokens=50))
    assert result.fallback_reason and "nesting deeper than" in result.fallback_reason
    assert_contract(result, nested, ChunkOptions(max_tokens=50))


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_garbage_in_a_code_language_falls_back_with_a_reason(language: str) -> None:
    text = "\n".join(
        f"Zq ]] ${i} )) {{ '' unterminated \" <<< :: end end }} ?? @@ ]] ))" for i in range(40)
    )
    if language == "php":
        text = "<?php\n" + text  # without the tag, PHP text is inline HTML: nothing to parse
    result = chunk(text, language)
    first = "as C: " if language == "c" else ""  # C, then C++: each named (see below)
    assert result.fallback_reason
    assert result.fallback_reason.startswith(f"{first}too many syntax errors")
    assert {c.kind for c in result.chunks} == {"text"}
    assert_contract(result, text, UNITS)


def test_a_file_that_c_and_cpp_both_refuse_says_why_for_each() -> None:
    """The reason names each grammar with its own error share: one share, unnamed, read as
    if only C had been tried."""
    garbage = "\n".join(f"Zq ]] ${i} )) {{ '' <<< :: end }} ?? @@ ]] ))" for i in range(40))
    for path in ("f.c", "f.h"):
        reason = chunk(garbage, "c", path=path).fallback_reason
        assert reason and reason.endswith("; used line windows")
        named = re.findall(r"as (C\+\+|C): too many syntax errors \((\d+)% of the file\)", reason)
        assert sorted(name for name, _ in named) == ["C", "C++"], reason
        assert all(0 < int(share) <= 100 for _, share in named)
    reason = chunk(garbage, "python").fallback_reason  # one grammar: its reason as it is
    assert reason and reason.startswith("too many syntax errors (") and " as " not in reason


def test_a_few_syntax_errors_still_give_definitions() -> None:
    lines = read("client.py").split("\n")
    text = "\n".join([*lines[:20], "x = = 1", *lines[20:100], "def broken(:", *lines[100:]])
    result = chunk(text, "python")
    assert result.fallback_reason is None
    assert {"Client", "parse_config"} <= {c.symbol for c in result.chunks}
    assert_contract(result, text, ChunkOptions())


def test_a_huge_single_line_json_is_one_chunk_quickly() -> None:
    text = '{"values": [' + ",".join(str(i) for i in range(330_000)) + "]}\n"
    assert len(text) > 2_000_000
    started = time.monotonic()
    result = chunk(text, "json", ChunkOptions())
    assert time.monotonic() - started < 20  # generous: it takes well under a second
    assert len(result.chunks) == 1 and result.chunks[0].text == text[:-1]
    assert result.chunks[0].tokens > ChunkOptions().max_tokens


def test_minified_code_and_files_over_the_parse_cap_are_windowed_with_a_reason() -> None:
    minified = "var a=[" + ",".join(str(i) for i in range(40_000)) + "];\n"
    result = chunk(minified, "javascript", ChunkOptions())
    assert result.fallback_reason and "minified" in result.fallback_reason
    assert len(result.chunks) == 1
    text = read("client.py")
    capped = chunk(text, "python", ChunkOptions(max_parse_bytes=100))
    assert capped.fallback_reason and "max_parse_bytes" in capped.fallback_reason
    assert {c.kind for c in capped.chunks} == {"text"}
    assert_contract(capped, text, ChunkOptions())


def test_data_files_are_windows_that_prefer_top_level_keys() -> None:
    text = read("config.yaml")
    options = ChunkOptions(max_tokens=40, min_tokens=0, window_lines=12)
    result = chunk(text, "yaml", options)
    assert {c.kind for c in result.chunks} == {"text"}
    assert {c.symbol for c in result.chunks} == {""}
    starts = [text.split("\n")[c.start_line - 1] for c in result.chunks]
    assert all(not s.startswith(" ") for s in starts), starts
    assert_contract(result, text, options)


def test_a_failing_token_counter_still_returns_windows() -> None:
    class Fussy(RegexTokens):
        def count(self, text: str) -> int:
            if "forbidden" in text:
                raise ValueError("special token")
            return super().count(text)

    text = "def a():\n    return 'forbidden'\n"
    result = FileChunker(UNITS, Fussy()).chunk("f", text, "python")
    assert result.fallback_reason and "special token" in result.fallback_reason
    assert [c.text for c in result.chunks] == [text[:-1]]


# --- queries ship as data --------------------------------------------------------------------


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_every_language_has_a_compiling_query_file(language: str) -> None:
    assert grammar(language).query is not None
    assert grammar(language) is grammar(language)  # cached


def test_query_files_use_the_capture_convention() -> None:
    allowed = {"@name", "@receiver", "@definition.function", "@definition.method",
               "@definition.class", "@definition.namespace"}  # fmt: skip
    queries = resources.files("indexers.treesitter").joinpath("queries")
    stems = {
        p.name[:-4] for p in queries.iterdir()
        if p.name.endswith(".scm") and not p.name.endswith("-tags.scm")  # the graph's tags
    }  # fmt: skip
    assert stems >= {"python", "javascript", "typescript", "go", "rust", "java", "c", "cpp"}
    for stem in stems:
        code = "\n".join(line.split(";")[0] for line in query_text(stem).split("\n"))
        captures = set(re.findall(r"@[\w.]+", code))
        assert captures - {c for c in captures if c.startswith("@_")} <= allowed, stem


def test_public_surface() -> None:
    assert indexers.chunking.__all__ == [
        "CHUNKER_VERSION", "CODE_LANGUAGES", "MARKDOWN_LANGUAGES", "FileChunker"
    ]  # fmt: skip
    assert set(indexers.treesitter.__all__) == {"ERROR_SHARE_LIMIT", "LANGUAGES", "grammar"}
    languages = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp",
                 "csharp", "ruby", "php", "bash", "kotlin", "swift", "scala", "lua", "zig",
                 "elixir"}  # fmt: skip
    assert sorted(indexers.chunking.CODE_LANGUAGES) == sorted(languages)


def test_a_cpp_header_named_dot_h_is_chunked_as_cpp_when_c_cannot_parse_it() -> None:
    header = (
        "#pragma once\n\nnamespace geo {\n\ntemplate <typename T>\nclass Box : public Shape<T> {\n"
        " public:\n  explicit Box(T w) : w_(w) {}\n  T area() const override { return w_ * w_; }\n"
        " private:\n  T w_;\n};\n\n}  // namespace geo\n"
    )
    result = chunk(header, "c", path="box.h")
    assert result.fallback_reason is None
    assert [(c.kind, c.symbol) for c in result.chunks] == [("module", ""), ("class", "geo")]
    assert_contract(result, header, UNITS, path="box.h")


# C accepts it (a quarter of its lines in error, under ERROR_SHARE_LIMIT): only its text
# tells that it is C++
SHAPE_HEADER = """#pragma once
#include <string>

namespace geo {

/// Something with an area.
class Shape {
 public:
  virtual ~Shape() = default;
  virtual double area() const = 0;
  std::string describe() const;
};

double clamp(double value, double low, double high);

}  // namespace geo
"""


def test_a_header_whose_text_shows_cpp_is_cut_and_tagged_from_one_cpp_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks and tags of a `.h` header come from the same parse, the C++ one, made once
    each: not C (whose error recovery on C++ is most of a C++ project's parsing time), and
    not the C parse for chunks beside a C++ one for tags."""
    import indexers.tagfile
    import indexers.treesitter.chunker
    import indexers.treesitter.tags

    parsed: list[str] = []  # the grammars parsed with, in turn (the chunker's, the tagger's)
    grammar = indexers.treesitter.chunker.grammar
    parse = indexers.treesitter.tags.parse

    def chunker_grammar(language: str) -> Any:
        parsed.append(language)
        return grammar(language)

    def tagger_parse(text: str, language: str, source: bytes | None = None) -> Any:
        parsed.append(language)
        return parse(text, language, source)

    monkeypatch.setattr(indexers.treesitter.chunker, "grammar", chunker_grammar)
    for module in (indexers.tagfile, indexers.treesitter.tags):
        monkeypatch.setattr(module, "parse", tagger_parse)
    made = FileChunker(UNITS, RegexTokens()).chunk("shape.h", SHAPE_HEADER, "c", tags=True)
    assert made.fallback_reason is None
    assert [(c.kind, c.symbol) for c in made.chunks] == [("module", ""), ("class", "geo")]
    assert made.tags is not None and made.tags.language == "cpp"
    assert "geo.Shape.area" in {d.qualified for d in made.tags.definitions}
    assert parsed == ["cpp"]
    alone = indexers.tagfile.tag_file("shape.h", SHAPE_HEADER, "c", UNITS.max_parse_bytes)
    assert alone == made.tags and parsed == ["cpp", "cpp"]


def test_a_header_is_parsed_as_cpp_first_only_when_its_lines_start_as_cpp() -> None:
    from indexers.languages import parse_languages

    plain = ("#include <stdio.h>\n/* a class of its own, as C++'s\n * std::string is */\n"
             "int main(void) { return 0; }\n")  # fmt: skip
    gnu = "/* Each register's\n   class decides nothing here.  */\nint count(void);\n"
    variable = "void f(void)\n{\n  const char *namespace;\n  namespace = name();\n}\n"
    for text in (plain, gnu, variable):
        assert parse_languages("c", text, "a.h") == ("c", "cpp"), text
    for marked in ("template <typename T>\nT id(T x);\n", "namespace a {}\n", "namespace a\n{\n}\n",
                   "class Box {\n public:\n};\n", "class Box;\n", "using namespace std;\n",
                   "struct A {\n  std::string name;\n};\n", "static std::string name();\n",
                   "enum class Color { red };\n", "using Id = int;\n", "#include <string>\n",
                   'extern "C++" {\n}\n'):  # fmt: skip
        assert parse_languages("c", marked, "a.h") == ("cpp", "c"), marked
        assert parse_languages("c", marked, "a.c") == ("c", "cpp"), marked  # a .c file is C
    assert parse_languages("cpp", plain, "a.cpp") == ("cpp",)
    assert parse_languages("python", "class A:\n    pass\n", "a.py") == ("python",)


K_AND_R = """/* Count the set registers.  Each register's
   class decides nothing here.  */
int
count_regs (regs, n)
     int *regs;
     int n;
{
  int i, total = 0;
  for (i = 0; i < n; i++)
    total += regs[i];
  return total;
}
"""


def test_c_that_cpp_would_read_with_errors_stays_c() -> None:
    """K&R C under a GNU-style comment whose second line starts with "class": C++ accepts it
    with errors (11 % of its lines), C without any."""
    from indexers.tagfile import tag_file

    for path in ("regs.c", "regs.h"):
        made = FileChunker(UNITS, RegexTokens()).chunk(path, K_AND_R, "c", tags=True)
        assert [(c.kind, c.symbol) for c in made.chunks] == [("function", "count_regs")], path
        assert made.tags is not None and made.tags.language == "c"
        assert tag_file(path, K_AND_R, "c", UNITS.max_parse_bytes) == made.tags


def test_a_header_that_c_reads_with_errors_is_weighed_against_cpp() -> None:
    """No line of it starts as only C++ does, and C accepts it (14 % of its lines in error):
    its C++ parse, without errors, is the one it is cut and tagged from."""
    from indexers.tagfile import tag_file

    header = (
        "#pragma once\n\nstruct Config {\n  int width;\n  bool vsync;\n};\n\n"
        "bool load_config(const std::string& path, struct Config* out);\n"
        "void save_config(const std::string& path, const struct Config* config);\n"
        "int config_width(const struct Config* config);\n"
        "void reset_config(struct Config* config);\n"
    )
    made = FileChunker(UNITS, RegexTokens()).chunk("config.h", header, "c", tags=True)
    assert made.tags is not None and made.tags.language == "cpp"
    assert {"load_config", "save_config", "config_width"} <= {d.name for d in made.tags.definitions}
    assert tag_file("config.h", header, "c", UNITS.max_parse_bytes) == made.tags
    as_c = FileChunker(UNITS, RegexTokens()).chunk("config.c", header, "c", tags=True)
    assert as_c.tags is not None and as_c.tags.language == "c"  # a .c file is C


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_prototype_and_commonjs_assignments_are_functions(language: str) -> None:
    src = (
        "const util = require('util');\n\n"
        "/** Saves the document. */\n"
        "Model.prototype.save = function (options) {\n  return this.$save(options);\n};\n\n"
        "exports.parse = (text) => {\n  return JSON.parse(text);\n};\n\n"
        "module.exports = {\n  load: function (path) {\n    return read(path);\n  },\n};\n"
    )
    result = chunk(src, language)
    units = {c.symbol: c for c in result.chunks if c.kind == "function"}
    assert {"Model.prototype.save", "exports.parse", "load"} <= set(units)
    assert units["Model.prototype.save"].start_line == 3  # its doc comment comes along
    assert_contract(result, src, UNITS)
