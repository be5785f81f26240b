"""The code graph's types: what a file defines, what it refers to, and what it imports.

Extraction (`indexers.treesitter.tags`) produces one `FileTags` per file; resolution
(`memserver.graph`) turns a `Reference` into ranked `Definition`s. Standard library only.
Lines are 1-based; columns are 0-based character offsets into the line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Definition kinds. Class-like kinds nest methods; "module" is a namespace whose functions
# stay functions.
DEFINITION_KINDS = frozenset(
    {
        "function",
        "method",
        "class",
        "interface",
        "struct",
        "enum",
        "trait",
        "module",
        "constant",
        "variable",
        "field",
        "type",
        "macro",
    }
)
CLASS_KINDS = frozenset({"class", "interface", "struct", "enum", "trait"})
# Bump when extraction (`indexers.treesitter.tags`) gives other tags for the same text: every
# file's graph rows belong to another version then, and indexing passes every file again
# (the version is part of `Engine.chunker_id`). 2: docstrings keep a leading backtick or quote.
# 3: names in files that start with blank lines (they were read from the wrong bytes);
# closure arguments' types, Lua's and JavaScript prototypes' classes. 4: C and C++ files are
# tagged from the parse they are chunked from, which `indexers.languages.choose_parse` picks
# (a `.h` header whose lines show C++: C++ first), not from a C++ parse made beside a C one.
# 5: Python's bare names are references only where an expression is: a target assigned in
# a module-level `if` or `try`, or a `*args: T` parameter, is no longer a use of itself.
# 6: …but the name in `*name.attr`, which tree-sitter parses without an expression, is.
# 7: JavaScript's likewise: `const x = require(…)`'s x, a function expression's own name.
# 8: C and C++ calls, fields and qualified names are read as members (their qualifier the
# text before the name: a few differ where C++'s parse recovers from errors), and a
# member's qualifier loses the spaces of a chain broken over lines (`promise\n  .then`).
# 9: every name a pattern binds in a function is a local, not a use: destructurings
# (renamed, defaulted, rest, nested; in parameters and loops too), a match arm's, a type
# test's, a catch's (JavaScript, TypeScript, Python, Rust, Go, Kotlin, Swift, Java, C#,
# Ruby, Scala, C++, Zig); a JavaScript or TypeScript field or variable without a declared
# type is of what its value makes (`store = new Store()`, `c = build()`), a method's last
# `return` guesses its type as a function's did, a call's result is the receiver of the
# member called on it (`build().save()`; Java's `Store.create().save()` too); a typed
# local heading a chain of calls or indexes types the whole chain (`s.first()`: "(Store).first()",
# `$s->first()` and `p->items[0]` alike). 10: a JavaScript or TypeScript module's exports
# of its own bindings are imports of module "" (`export default X`, `module.exports = X`,
# `exports.y = x`, `export { x as y }`), a default import binds the module's `default`,
# `exports.y = <a value>` is a variable, and `module.exports` is no reference. C and C++
# are tagged from a parse with attribute-like macros blanked (each a reference still).
# 11: `module.exports = function build() {…}` (or `= class Store {…}`) defines `build`, the
# module's value, no longer a function named `module.exports`; a module required by its path
# is an import reference by its file's name, in its folder (`require("../x/y.js")`: y in
# "../x/", not js in ".x.y"); C++'s namespace macros open their namespaces
# (`PYBIND11_NAMESPACE_BEGIN(detail)`: detail.f), and a C or C++ definition whose name the
# parse's recovery made a whole declaration is named by its last word.
# 12: `from .fence import fence` (and Rust's `use a::b::b`) keeps its module (it was the
# file's own binding); a JavaScript or TypeScript `for (k in …)` key is no element; Python
# locals and fields are typed by `Ruler[T]()`, `x or Default()`, either call of a
# conditional, and (where nothing else types them) by the attribute or the element they copy;
# `x = x.m()` types x from its binding before; `tokens[i].f()` is an element's.
# 13: a lambda's or comprehension's variable heading a plain chain (`e.manager.name()`,
# PHP's `fn(Shop $o) => $o->owner->price()`) gives its own type, resolution walking the
# chain from it; a conditional choosing between two different calls types nothing.
# 14: `global x` / `nonlocal x` hold in their own function only (a `nonlocal` anywhere made
# every function's x a reference); a closure's free name is typed by the enclosing
# function's binding, wherever in it.
# 15: `with make() as x` types x as what entering make()'s value gives ("enter(make)");
# `list(x)`, `sorted(x)`… are collections of x's elements.
# 16: `async with` enters by __aenter__ ("aenter(make)"); `sorted(x, key=…)` is a copy too;
# a `nonlocal` / `global` name is typed by its own function's bindings before the outer's.
# 17: indexing is "item(x)" (a Python mapping's value, a sequence's element), and `x =
# d[k].attr` is typed; an annotation types a module variable or field a constructor makes.
GRAPH_VERSION = 17
REFERENCE_KINDS = frozenset({"call", "import", "inherit", "type", "other"})
# how languages join a receiver and its member, beside "." (C++ and Rust `a::b`, `x?.y`,
# C and PHP `p->q`, PHP `A\\B`)
_QUALIFIER_SEPARATORS = ("::", "?.", "->", "\\")


def dotted(qualifier: str) -> str:
    """A qualifier as written, its separators made dots: `$s->first()` gives "$s.first()"."""
    text = qualifier.strip()
    for separator in _QUALIFIER_SEPARATORS:
        text = text.replace(separator, ".")
    return text


def file_stem(path: str) -> str:
    """A file's name without its extensions: `lib/parse.js` -> parse."""
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


def module_stem(module: str, language: str) -> str:
    """A module's last segment, the name an import of it whole is a reference by:
    `./lib/parse` -> parse, `../x/y.js` -> y, `pkg.mod` -> mod, `crate::a` -> a. A path's
    last part is a file's name without its extensions, but in Go, where it is a package's
    path, its last dotted part (`github.com/satori/go.uuid` -> uuid)."""
    spec = module.replace("\\", "/").rstrip("/")
    if "/" in spec and language != "go":
        return file_stem(spec)
    return dotted(spec.rsplit("/", 1)[-1]).rsplit(".", 1)[-1]


@dataclass(frozen=True, slots=True)
class Definition:
    """A named definition: function, method, class-like type, module, constant…"""

    path: str  # POSIX, relative to the project root
    language: str
    name: str  # as written: "send"
    qualified: str  # by nesting, as the chunker names it: "Client.send", Go "Store.Add"
    kind: str  # one of DEFINITION_KINDS
    signature: str  # the source from the definition's first line to its name's, one line
    start_line: int  # 1-based, inclusive (decorators excluded: the definition itself)
    end_line: int  # 1-based, inclusive
    parent: str = ""  # qualified name of the enclosing definition, or ""
    doc: str = ""  # first line of its docstring or doc comment, or ""
    name_line: int = 0  # the line holding the name (differs from start_line for C, Java…)
    declared_type: str = ""  # as written: a function's return type, a field's or variable's
    # type (or the class its value is constructed from), or ""
    declaration: bool = False  # declared without a body: a prototype, an abstract or
    # interface method (ranked below a definition of the same name)


@dataclass(frozen=True, slots=True)
class Reference:
    """A use of a name: a call, an import, a base class, a type annotation…"""

    path: str
    name: str  # the last identifier: "send" in self.client.send(...)
    kind: str  # one of REFERENCE_KINDS
    line: int  # 1-based
    column: int = 0  # 0-based, where the name starts
    enclosing: str = ""  # qualified name of the innermost enclosing definition, or ""
    qualifier: str = ""  # the receiver or module expression as written: "self", "os.path", ""
    receiver_type: str = ""  # the declared type of the qualifier's first name, as written:
    # `def f(c: Client): c.pool.get()` and `c = Client(); c.pool.get()` give "Client" for
    # `get`; `Client(...).send()` gives "Client"


@dataclass(frozen=True, slots=True)
class Import:
    """One imported binding: `from pkg.mod import name as alias` is one Import."""

    path: str
    module: str  # as written: "pkg.mod", ".utils", "./utils", "github.com/x/y", "crate::a"
    name: str = ""  # the imported name, "" when the module itself is bound
    alias: str = ""  # the local name when renamed, else ""
    line: int = 0
    star: bool = False  # a wildcard: from m import *, import a.b.*, using A.B, use a::*
    enclosing: str = ""  # qualified name of the definition it sits in ("" at module level)

    @property
    def bound(self) -> str:
        """The local name this import binds ("" for a wildcard)."""
        if self.star:
            return ""
        if self.alias:
            return self.alias
        if self.name:
            return self.name
        return self.module


@dataclass(frozen=True, slots=True)
class FileTags:
    """Everything the graph knows about one file."""

    path: str
    language: str
    definitions: tuple[Definition, ...] = ()
    references: tuple[Reference, ...] = ()
    imports: tuple[Import, ...] = ()
    package: str = ""  # declared package/namespace (Java, Kotlin, Scala, Go, C#, PHP), or ""


# Fast constructors for the two types made by the hundred thousand (extraction, loading the
# stored graph): a frozen dataclass's __init__ sets each field through object.__setattr__,
# three times slower than the slot descriptors set here (2.5 -> 0.8 us per Reference).
_new = object.__new__
_rs = tuple(getattr(Reference, f).__set__ for f in Reference.__slots__)
_ds = tuple(getattr(Definition, f).__set__ for f in Definition.__slots__)
assert Reference.__slots__ == ("path", "name", "kind", "line", "column", "enclosing",
                               "qualifier", "receiver_type")  # fmt: skip


def make_reference(
    path: str, name: str, kind: str, line: int, column: int, enclosing: str, qualifier: str,
    receiver_type: str,
) -> Reference:  # fmt: skip
    """`Reference(...)` with every field given, cheaper (see above)."""
    r = _new(Reference)
    s0, s1, s2, s3, s4, s5, s6, s7 = _rs
    s0(r, path), s1(r, name), s2(r, kind), s3(r, line), s4(r, column), s5(r, enclosing)
    s6(r, qualifier), s7(r, receiver_type)
    return r


def make_definition(*values: object) -> Definition:
    """`Definition(...)` with every field given positionally, cheaper (see above)."""
    d = _new(Definition)
    for setter, value in zip(_ds, values, strict=True):
        setter(d, value)
    return d


@dataclass(frozen=True, slots=True)
class RefColumns:
    """A file's references column by column, in file order (reading a large graph makes no
    `Reference` until one is asked for). A string column may be coded: its `codes` (a
    NumPy array) index its `values`, which the files read together share."""

    name: Sequence[str]
    kind: Sequence[str]
    line: Sequence[int]
    column: Sequence[int]
    enclosing: Sequence[str]
    qualifier: Sequence[str]
    receiver_type: Sequence[str]
    chunk_id: Sequence[str]

    def references(self, path: str) -> list[Reference]:
        rows = zip(self.name, self.kind, self.line, self.column, self.enclosing,
                   self.qualifier, self.receiver_type, strict=True)  # fmt: skip
        return [make_reference(path, *row) for row in rows]

    def rows_named(self, name: str) -> list[int]:
        """The rows of the references that use `name`, without making any."""
        return [at for at, n in enumerate(self.name) if n == name]

    def at_rows(self, path: str, rows: Sequence[int]) -> list[Reference]:
        """The references of these rows."""
        return [
            make_reference(path, self.name[at], self.kind[at], self.line[at], self.column[at],
                           self.enclosing[at], self.qualifier[at], self.receiver_type[at])
            for at in rows
        ]  # fmt: skip

    def of_kind(self, path: str, kind: str) -> list[Reference]:
        """The references of one kind, made only for their rows (a reading keeps a file's
        bases this way: Django's 320k references made to keep 1.6k took 0.6 s)."""
        return self.at_rows(path, [at for at, k in enumerate(self.kind) if k == kind])


@dataclass(frozen=True, slots=True)
class StoredFile:
    """One file's graph as the index holds it: its tags, the version they belong to, the
    row ids of its definitions and, per definition and per reference (in the tags' order),
    the id of the chunk it sits in. Read by columns (`columns` set), `tags.references`
    holds only the bases (`inherit`, what resolution reads of a file) and `columns` every
    reference."""

    tags: FileTags
    version: str
    definition_ids: tuple[str, ...] = ()
    definition_chunks: tuple[str, ...] = ()
    reference_chunks: tuple[str, ...] = ()
    columns: RefColumns | None = None


_STUB_SUFFIXES = (".pyi", ".d.ts")  # files of declarations only: type stubs


def only_declares(definition: Definition) -> bool:
    """Whether a definition declares what is defined elsewhere: no body (a prototype, an
    abstract method), or in a stub file. Resolution and `symbol` rank it below what it
    declares."""
    return definition.declaration or definition.path.endswith(_STUB_SUFFIXES)


def file_version(path: str, content_hash: str, chunk_ids: Sequence[str]) -> str:
    """The key of one indexed version of a file's graph: 24 hex of sha256 over the graph
    version, the path, the file's content hash and the ids of the chunks it was cut into
    (the rows name their chunk, and lines move when only blank lines do). The files
    manifest holds all three, so the stored rows of the current version can always be
    told from those of another one."""
    import hashlib  # here: the tags worker imports this module, never makes a key

    h = hashlib.sha256()
    for part in (str(GRAPH_VERSION), path, content_hash, *chunk_ids):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:24]


__all__ = [
    "CLASS_KINDS",
    "DEFINITION_KINDS",
    "GRAPH_VERSION",
    "REFERENCE_KINDS",
    "Definition",
    "FileTags",
    "Import",
    "RefColumns",
    "Reference",
    "StoredFile",
    "dotted",
    "file_stem",
    "file_version",
    "make_definition",
    "make_reference",
    "module_stem",
    "only_declares",
]
