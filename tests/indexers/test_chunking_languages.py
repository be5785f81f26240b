"""Chunking for Kotlin, Swift, Scala, Lua, Zig and Elixir: the coverage contract, and their
functions, methods and classes as their own chunks with the right symbols."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexers.chunking import FileChunker
from indexers.languages import detect_language
from indexers.treesitter.tags import extract_tags
from memserver.core.types import ChunkOptions, ChunkResult
from tests.indexers.test_chunking import UNITS, RegexTokens, assert_contract, first_of

MORE = Path(__file__).resolve().parent.parent / "fixtures" / "polyglot-more"
FILES = {
    "Ledger.kt": "kotlin",
    "Shapes.swift": "swift",
    "Billing.scala": "scala",
    "store.lua": "lua",
    "point.zig": "zig",
    "cart.ex": "elixir",
}
SMALL = ChunkOptions(max_tokens=25, min_tokens=0)  # small enough to split the classes


def read(name: str) -> str:
    return (MORE / name).read_text(encoding="utf-8")


def chunk(name: str, options: ChunkOptions = UNITS) -> ChunkResult:
    return FileChunker(options, RegexTokens()).chunk(name, read(name), FILES[name])


@pytest.mark.parametrize("name", sorted(FILES))
def test_extensions_name_the_languages(name: str) -> None:
    assert detect_language(f"src/{name}") == FILES[name]


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize(
    "options",
    [ChunkOptions(), UNITS, SMALL, ChunkOptions(max_tokens=30, min_tokens=20, window_lines=5)],
    ids=["defaults", "units", "small", "tiny"],
)
def test_every_file_keeps_the_contract(name: str, options: ChunkOptions) -> None:
    result = FileChunker(options, RegexTokens()).chunk(name, read(name), FILES[name])
    assert result.fallback_reason is None
    assert {c.language for c in result.chunks} == {FILES[name]}
    assert_contract(result, read(name), options, path=name)


# (file, symbol, kind, header prefix, first line of its first chunk) with SMALL options: a
# split function's own signature becomes the header of its pieces
EXPECTED_UNITS = [
    ("Ledger.kt", "Ledger.post", "method", "class Ledger(", "/** Post one amount"),
    ("Ledger.kt", "Ledger.total", "method", "class Ledger(", "fun total(): Money"),
    ("Ledger.kt", "Ledger.create", "method", "class Ledger(", "fun create(name: String)"),
    ("Ledger.kt", "Registry.register", "method", "object Registry {", "fun register("),
    ("Ledger.kt", "Audited", "class", "", "interface Audited {"),
    ("Ledger.kt", "String.shout", "function", "", "fun String.shout()"),
    ("Ledger.kt", "main", "function", "fun main() {", "fun main() {"),
    ("Shapes.swift", "Circle.init", "method", "class Circle: Shape {", "init(radius: Double)"),
    ("Shapes.swift", "Circle.area", "method", "class Circle: Shape {", "/// The area"),
    ("Shapes.swift", "Shape", "class", "", "/// Something with an area."),
    ("Shapes.swift", "Square", "class", "", "struct Square: Shape {"),
    ("Shapes.swift", "totalArea", "function", "func totalArea(", "func totalArea("),
    ("Billing.scala", "Invoice.add", "method", "class Invoice(", "/** Add one line. */"),
    ("Billing.scala", "Invoice.total", "method", "class Invoice(", "def total: Money"),
    ("Billing.scala", "Invoice.audit", "method", "class Invoice(", "def audit(): String"),
    ("Billing.scala", "Auditable", "class", "", "/** Something that can be audited. */"),
    ("Billing.scala", "Line", "class", "", "case class Line("),
    ("Billing.scala", "render", "function", "", "def render("),
    ("store.lua", "Store.new", "function", "function Store.new(", "--- Make an empty store."),
    ("store.lua", "Store.add", "method", "", "function Store:add("),
    ("store.lua", "Store.total", "method", "function Store:total()", "function Store:total()"),
    ("store.lua", "describe", "function", "", "local function describe("),
    ("store.lua", "Store.describe", "function", "", "Store.describe = function"),
    ("point.zig", "Point.init", "method", "pub const Point = struct {", "pub fn init("),
    ("point.zig", "Point.length", "method", "pub const Point = struct {", "/// Distance"),
    ("point.zig", "square", "function", "", "fn square("),
    ("point.zig", "main", "function", "pub fn main() void {", "pub fn main() void {"),
    ("cart.ex", "Shop.Cart.add", "function", "defmodule Shop.Cart do", "def add("),
    ("cart.ex", "Shop.Cart.total", "function", "defmodule Shop.Cart do", "def total(cart)"),
    ("cart.ex", "Shop.Cart.with_cart", "function", "defmodule Shop.Cart do", "defmacro"),
    ("cart.ex", "Shop.Item.price", "function", "defmodule Shop.Item do", "def price("),
]


@pytest.mark.parametrize(("name", "symbol", "kind", "header", "first_line"), EXPECTED_UNITS)
def test_named_units(name: str, symbol: str, kind: str, header: str, first_line: str) -> None:
    found = first_of(chunk(name, SMALL), symbol)
    assert found.kind == kind
    assert found.header.startswith(header) and (header or not found.header)
    assert found.text.split("\n")[0].strip().startswith(first_line)


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_file_has_functions_and_containers(name: str) -> None:
    kinds = {c.kind for c in chunk(name, SMALL).chunks}
    assert kinds & {"function", "method"}, name
    if FILES[name] != "lua":  # Lua has tables, not classes
        assert "class" in kinds, name


@pytest.mark.parametrize("name", sorted(FILES))
def test_chunk_symbols_are_the_graphs_qualified_names(name: str) -> None:
    """A function's chunk and its definition in the code graph carry one name."""
    qualified = {d.qualified for d in extract_tags(name, read(name), FILES[name]).definitions}
    for c in chunk(name, SMALL).chunks:
        if c.kind in ("function", "method") and ", " not in c.symbol:
            assert c.symbol.strip('"') in qualified, (c.symbol, sorted(qualified))
