"""The questions navigation answers, over one `GraphIndex`: definitions of a name, the
references to definitions, callers and callees, and outlines. No budget here (see
`navigate.service`): these are the whole answers, which benchmarks compare with jedi."""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import overload

from memserver.core.errors import BadRequest
from memserver.core.graph import CLASS_KINDS, Definition, StoredFile, only_declares
from memserver.navigate.items import FileOutline, Neighbour, OutlineEntry, RefItem, SymbolItem
from memserver.navigate.view import GraphIndex, RefAt, ref_place

__all__ = [
    "SYMBOL_ID", "best_first", "definitions_for", "forest", "neighbours", "outline",
    "preorder", "references", "symbol_item", "symbols",
]  # fmt: skip

SYMBOL_ID = re.compile(r"^s_[0-9a-f]{32}$")
CHUNK_ID = re.compile(r"^c_[0-9a-f]{32}$")
_CALLS = frozenset({"call", "inherit", "type", "other"})  # what neighbours follow (not imports)
_VALUES = frozenset({"field", "variable", "constant"})  # used, not called: no callees
_DEEPEST = 4  # how deep an outline nests


def symbol_item(g: GraphIndex, d: Definition, stale: bool = False) -> SymbolItem:
    entry = g.stored[d.path]
    return _item(entry.stored, entry.place(d), stale)


def _item(s: StoredFile, place: int, stale: bool) -> SymbolItem:
    """The item of a file's definition at `place` among its definitions."""
    d = s.tags.definitions[place]
    return SymbolItem(
        id=s.definition_ids[place], path=d.path, start_line=d.start_line,
        end_line=d.end_line, symbol=d.qualified, kind=d.kind, signature=d.signature,
        chunk_id=s.definition_chunks[place], language=d.language, doc=d.doc, stale=stale,
    )  # fmt: skip


def _rank(d: Definition) -> tuple[int | str, ...]:
    """Definitions before declarations (a stub file's too: `only_declares`); source before
    tests; shorter paths first; then by path and line, so that the order never depends on
    the order the graph was stored in (`pkg/mod.py` and `pkg/mod.pyi` came either way)."""
    test = any(p in ("tests", "test", "testing") for p in d.path.split("/")[:-1])
    return (only_declares(d), test, d.path.count("/"), d.path, d.start_line)


def symbols(g: GraphIndex, name: str) -> list[Definition]:
    """Definitions of a name: a symbol id (s_…), qualified or bare (`Client.send`, `send`),
    module-qualified (`pkg.utils.send`) or in a file (`utils.py:send`); best first."""
    text = name.strip()
    if SYMBOL_ID.match(text):
        found = g.by_id(text)
        return [found] if found is not None else []
    return best_first(g.lookup(text), text)


# a folder's own module file (Python's package, a JS/TS folder's index, Rust's mod.rs): the
# folder is the module (`pkg`, `./lib`, `a::b`)
_PACKAGE_FILES = frozenset(
    {"__init__.py", "__init__.pyi", "mod.rs", "index.js", "index.jsx", "index.mjs", "index.cjs",
     "index.ts", "index.tsx"}
)  # fmt: skip


def modules_named(paths: Iterable[str], name: str, most: int = 3) -> list[str]:
    """Files that `name` names as a module or a path (`pkg.mod`, `mod`, `lib/mod.js`,
    `mod.py`, a package `pkg` by its `__init__.py`): what a name that defines nothing may be.
    Exact ones first, then by length; at most `most`."""
    text = name.strip().strip("/")
    dotted = text.replace("/", ".").replace("::", ".")
    if not text or not dotted.replace(".", "").replace("_", "").replace("-", "").isalnum():
        return []
    found: list[tuple[int, int, str]] = []
    for path in paths:
        stem = posixpath.splitext(path)[0].replace("/", ".")
        head = stem.rpartition(".")[0]
        package = head and posixpath.basename(path) in _PACKAGE_FILES
        modules = (stem, head) if package else (stem,)
        if path == text or dotted in modules:
            found.append((0, len(path), path))
        elif path.endswith("/" + text) or any(m.endswith("." + dotted) for m in modules):
            found.append((1, len(path), path))
    return [path for *_, path in sorted(found)[:most]]


def module_outline(path: str) -> str:
    """What `outline` takes for the module a file is: a package's folder (`pkg/` for
    `pkg/__init__.py`), else the file."""
    folder, base = posixpath.split(path)
    if base in _PACKAGE_FILES and folder:
        return folder + "/"
    return path


def best_first(hits: Sequence[Definition], text: str) -> list[Definition]:
    """A lookup's definitions of `text`, those it names exactly first (else all of them),
    best first."""
    exact = [d for d in hits if d.qualified == text or d.name == text.rsplit(".", 1)[-1]]
    ordered = exact or hits
    return sorted(ordered, key=lambda d: (_tier(d, text), *_rank(d)))


def _tier(d: Definition, text: str) -> int:
    if d.qualified == text or text.endswith(":" + d.qualified):
        return 0
    if text.endswith("." + d.qualified) or d.qualified.endswith("." + text):
        return 1
    return 2


def definitions_for(g: GraphIndex, name_or_id: str) -> list[Definition]:
    """What a references/neighbours question is about: a symbol id, the definitions of a
    chunk id (those that start in it; else the innermost around it), or a name."""
    text = name_or_id.strip()
    if CHUNK_ID.match(text):
        inside = g.defs_in_chunk(text)
        return [d for d in inside if d.kind != "field"] or inside
    return symbols(g, text)


def references(
    g: GraphIndex, targets: Sequence[Definition], kinds: Sequence[str] = (),
    stale: Callable[[str], bool] = lambda _: False,
) -> list[RefItem]:  # fmt: skip
    """Every reference resolved to one of `targets` (of `kinds`, when given), with the
    definition it is written in; in file and line order."""
    wanted = set(kinds)
    several = len({(d.path, d.qualified) for d in targets}) > 1  # (overloads are one)
    out = []
    for at in g.references_to(targets):
        r = at.ref
        if wanted and r.kind not in wanted:
            continue
        target = ""
        if several:
            hit = [d for d in g.targets(r) if d in targets]
            target = g.def_id(hit[0]) if hit else ""
        out.append(_ref_item(g, at, target, stale(r.path)))
    return out


# Of the uses of a name the graph cannot tie to a definition, an answer lists at most this
# many (after those it can tie; the rest counted): Django's `get` has thousands, more than
# the largest budget shows.
MAYBE_SHOWN = 500


def unresolved(
    g: GraphIndex, targets: Sequence[Definition], kinds: Sequence[str] = (),
    stale: Callable[[str], bool] = lambda _: False, name: str = "",
) -> tuple[Sequence[RefItem], int]:  # fmt: skip
    """The uses of the names of `targets` (of `kinds`, when given) that resolve to no
    definition for sure, or without targets the uses of `name` (what is defined outside
    the index, `_written_as`): the first `MAYBE_SHOWN` of them, made as they are read, and
    how many."""
    wanted = set(kinds)
    uses = g.unresolved(targets) if targets else _written_as(g, name)
    found = [at for at in uses if not wanted or at.ref.kind in wanted]
    made = _Made(found[:MAYBE_SHOWN], lambda at: _ref_item(g, at, "", stale(at.ref.path)))
    return made, len(found)


_FILE_PART = re.compile(r"(?<!:):(?!:)")  # a single colon: after a file's name


def _written_as(g: GraphIndex, name: str) -> list[RefAt]:
    """The uses of a name the index defines nothing by (`subprocess.run`, `requests.get`):
    of its last part, written on that qualifier (`subprocess.run(…)`,
    `from subprocess import run`) when it has one; in file and line order."""
    text = _FILE_PART.split(name.strip())[-1]  # `utils.py:send`, not `std::fs::read`
    dotted = text.replace("::", ".").replace("->", ".")
    prefix, _, bare = dotted.rpartition(".")
    uses = g.refs_named(bare)
    if prefix:
        last = prefix.rpartition(".")[2]
        uses = [at for at in uses if at.ref.qualifier in (prefix, last)
                or at.ref.qualifier.endswith("." + last)]  # fmt: skip
    return sorted(uses, key=ref_place)


class _Made(Sequence[RefItem]):
    """References made into items only when read: an answer cut to its budget shows a few
    of hundreds (each item may read its file to tell whether it changed on disk)."""

    def __init__(self, found: Sequence[RefAt], make: Callable[[RefAt], RefItem]) -> None:
        self._found, self._make = found, make
        self._made: list[RefItem] = []

    def __len__(self) -> int:
        return len(self._found)

    @overload
    def __getitem__(self, at: int) -> RefItem: ...
    @overload
    def __getitem__(self, at: slice) -> Sequence[RefItem]: ...
    def __getitem__(self, at: int | slice) -> RefItem | Sequence[RefItem]:
        wanted = range(len(self._found))[at]  # the places asked for, as non-negative ones
        last = max(wanted, default=-1) if isinstance(wanted, range) else wanted
        while len(self._made) <= last:
            self._made.append(self._make(self._found[len(self._made)]))
        if isinstance(wanted, range):
            return [self._made[i] for i in wanted]
        return self._made[wanted]


def _ref_item(g: GraphIndex, at: RefAt, target: str, stale: bool) -> RefItem:
    r = at.ref
    owner = g.enclosing(r.path, r.enclosing, r.line)
    return RefItem(
        path=r.path, line=r.line, column=r.column, name=r.name, kind=r.kind,
        qualifier=r.qualifier, chunk_id=at.chunk_id,
        enclosing=symbol_item(g, owner, stale) if owner is not None else None,
        target=target, stale=stale,
    )  # fmt: skip


# Depth 2 goes on from the first this many direct neighbours, in the answer's order: a hub's
# (Django's Model: 2,000 direct, 9,600 more at depth 2) took 10 s for what no budget shows.
FRONTIER = 200


def neighbours(
    g: GraphIndex, start: Sequence[Definition], depth: int = 1, chunk: str = "",
    stale: Callable[[str], bool] = lambda _: False,
) -> list[Neighbour]:  # fmt: skip
    """Callers and callees of `start` (of what `chunk` holds, when given), breadth first up
    to `depth` (1 or 2). A caller is the definition a reference to it is written in, or the
    file's top level; a callee is what a reference in it resolves to. At each depth callers
    and callees alternate, callers first, so an answer cut to a budget keeps some of both;
    depth 2 is of the first `FRONTIER` direct ones."""
    if not 1 <= depth <= 2:
        raise BadRequest(f"depth must be 1 or 2, got {depth}", hint="use depth 1 (direct) or 2")
    seen: set[tuple[str, str]] = set()
    out: list[Neighbour] = []
    frontier = list(start)
    for level in range(1, depth + 1):
        refs_out = g.refs_in_chunk(chunk) if chunk and level == 1 else None
        sides: list[list[tuple[Neighbour, Definition | None]]] = [[], []]
        for side, found, direction in (
            (sides[1], _callees(g, frontier, refs_out), "callee"),
            (sides[0], _callers(g, frontier), "caller"),
        ):
            for key, (item, d, lines, kinds) in found.items():
                if (direction, key) in seen or d in start:
                    continue
                seen.add((direction, key))
                side.append((Neighbour(_fresh(item, stale), direction, level,  # type: ignore[arg-type]
                                       tuple(sorted(lines)), tuple(sorted(kinds))), d))  # fmt: skip
        callers, callees = sides
        level_out = [
            pair for at in range(max(len(callers), len(callees)))
            for pair in callers[at : at + 1] + callees[at : at + 1]
        ]  # fmt: skip
        out += [n for n, _ in level_out]
        frontier = [d for _, d in level_out if d is not None][:FRONTIER]
    return out


_Found = dict[str, tuple[SymbolItem, Definition | None, set[int], set[str]]]


def _fresh(item: SymbolItem, stale: Callable[[str], bool]) -> SymbolItem:
    from dataclasses import replace

    return replace(item, stale=True) if stale(item.path) else item


def _callees(g: GraphIndex, frontier: Sequence[Definition], refs: Sequence[RefAt] | None
             ) -> _Found:  # fmt: skip
    out: _Found = {}
    written = refs if refs is not None else [at for d in frontier for at in g.inside(d)]
    for at in written:
        if at.ref.kind not in _CALLS:
            continue
        for target in g.targets(at.ref):
            if target in frontier or target.kind in _VALUES:
                continue
            held = out.get(g.def_id(target))
            if held is None:
                held = out[g.def_id(target)] = (symbol_item(g, target), target, set(), set())
            held[2].add(at.ref.line)
            held[3].add(at.ref.kind)
    return out


def _callers(g: GraphIndex, frontier: Sequence[Definition]) -> _Found:
    out: _Found = {}
    for at in g.references_to(frontier):
        r = at.ref
        if r.kind not in _CALLS:
            continue
        owner = g.enclosing(r.path, r.enclosing, r.line)
        if owner is not None and owner.kind == "field":
            owner = g.enclosing(r.path, owner.parent, r.line)
        if owner is not None:
            key, item = g.def_id(owner), symbol_item(g, owner)
        else:  # the file's top level: the chunk is what to read
            key = f"{r.path}:{at.chunk_id}"
            item = SymbolItem("", r.path, r.line, r.line, "", "module", "", at.chunk_id)
        held = out.get(key)
        if held is None:
            held = out[key] = (item, owner, set(), set())
        held[2].add(r.line)
        held[3].add(r.kind)
    return out


def outline(
    g: GraphIndex, paths: Sequence[str], stale: Callable[[str], bool],
    placed: dict[str, dict[int, OutlineEntry]] | None = None,
) -> list[FileOutline]:  # fmt: skip
    """The definitions of these files, nested (methods under their class), in line order.
    Fields are left out (their class shows them in its body). `placed`, when given, gets
    per path each entry by its definition's place among the file's definitions."""
    out = []
    for path in paths:
        f = g.files.get(path)
        if f is None:
            continue
        mine: dict[int, OutlineEntry] = {}
        out.append(_file_outline(f.stored, stale(path), mine))
        if placed is not None:
            placed[path] = mine
    return out


def _file_outline(s: StoredFile, stale: bool, placed: dict[int, OutlineEntry]) -> FileOutline:
    roots, children = forest(s)

    def entry(i: int) -> OutlineEntry:
        kids = tuple(entry(k) for k in children.get(i, ()))
        made = placed[i] = OutlineEntry(_item(s, i, stale), kids)
        return made

    return FileOutline(s.tags.path, s.tags.language, tuple(entry(i) for i in roots), stale)


def forest(s: StoredFile) -> tuple[list[int], dict[int, list[int]]]:
    """A file's outline as places among its definitions: (roots, place → children), in
    line order. A definition nests under its `parent` (a parent not outlined: a root), at
    most `_DEEPEST` deep; under a function only classes (its helpers are left out)."""
    defs = s.tags.definitions
    places = [i for i, d in enumerate(defs) if d.kind != "field"]
    ordered = sorted(places, key=lambda i: (defs[i].start_line, -defs[i].end_line))
    named: dict[str, list[int]] = {}  # qualified name -> its definitions, by first line
    for i in ordered:
        named.setdefault(defs[i].qualified, []).append(i)
    starts = {q: [defs[u].start_line for u in ups] for q, ups in named.items() if len(ups) > 1}
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    depth: dict[int, int] = {}
    for i in ordered:
        d = defs[i]
        ups = named.get(d.parent) if d.parent else None
        if not ups:
            roots.append(i)
            depth[i] = 0
            continue
        up = ups[0]
        if len(ups) > 1:  # namesakes (a getter and its setter, overloads): the one around it
            at = bisect.bisect_right(starts[d.parent], d.start_line) - 1
            while at >= 0 and (defs[ups[at]].end_line < d.start_line or ups[at] == i):
                at -= 1
            up = ups[at] if at >= 0 else up
        d_up = defs[up]
        if depth.get(up, _DEEPEST) >= _DEEPEST or (
            d_up.kind not in CLASS_KINDS and d_up.kind != "module" and d.kind not in CLASS_KINDS
        ):
            continue
        children.setdefault(up, []).append(i)
        depth[i] = depth[up] + 1
    return roots, children


def preorder(roots: Sequence[int], children: Mapping[int, Sequence[int]]) -> list[int]:
    out: list[int] = []
    stack = list(reversed(roots))
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(reversed(children.get(i, ())))
    return out
