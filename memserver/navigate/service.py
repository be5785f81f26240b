"""Navigation over the stored code graph: outline, symbol, references, neighbours.

Each answer is budgeted like recall's (text and JSON each within `budget_tokens`, counted
with the real tokenizer); every item has its path, lines and chunk id, and `stale` when its
file changed on disk since it was indexed (one stat per file shown; its content is hashed
only when size or mtime moved). Scopes do not apply: code is project-wide.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from indexers.ignore import path_matcher
from indexers.read import changed_on_disk
from memserver.core.errors import BadRequest
from memserver.core.graph import REFERENCE_KINDS
from memserver.core.ids import content_hash
from memserver.core.protocols import TokenCounter
from memserver.core.requests import check_budget, check_path_filter, check_size
from memserver.navigate import find, rank
from memserver.navigate.items import FileOutline, Neighbour, OutlineEntry, RefItem, SymbolItem
from memserver.navigate.render import (
    ITEM_TOKENS,
    NAMED,
    Form,
    Navigation,
    answer_items,
    echo,
    fit,
    neighbours_form,
    outline_form,
    outline_size,
    references_form,
    symbols_form,
)
from memserver.navigate.view import GraphIndex

__all__ = ["Navigator"]

DEFAULT_BUDGET = 4096
_OUTLINES = 32  # outlines of paths kept per reading of the graph


class Navigator:
    def __init__(
        self, graph: Callable[[], GraphIndex], tokens: TokenCounter, *,
        root: Path | None = None, budget_tokens: int = DEFAULT_BUDGET,
    ) -> None:  # fmt: skip
        self.graph = graph  # the current reading (brought up to date by its view)
        self.tokens = tokens
        self.root = root  # the project root, to tell when a file changed since indexing
        self.budget_tokens = budget_tokens

    # -- whole answers (no budget) ------------------------------------------------------------

    def symbols(self, name: str) -> list[SymbolItem]:
        g = self.graph()
        stale = self._stale(g)
        return [find.symbol_item(g, d, stale(d.path)) for d in find.symbols(g, _name(name))]

    def references_of(
        self, name_or_id: str, kinds: Sequence[str] = ()
    ) -> tuple[list[SymbolItem], list[RefItem], int]:
        """(the definitions asked about, every reference to them, how many more uses of
        their names (of `kinds`) resolve to no definition for sure): of a name more than
        `NAMED` definitions share, the references to its best `NAMED`."""
        items, refs, (_, uncertain) = self._references(name_or_id, kinds)
        return items, refs, uncertain

    def _references(
        self, name_or_id: str, kinds: Sequence[str]
    ) -> tuple[list[SymbolItem], list[RefItem], tuple[Sequence[RefItem], int]]:
        """`references_of`, with the first of the uses tied to no definition listed (of a
        name the index defines nothing by, every use of it)."""
        g = self.graph()
        stale = self._stale(g)
        targets = find.definitions_for(g, _name(name_or_id))
        best = targets[:NAMED]  # of a name many share: the best ones' uses (`render.NAMED`)
        wanted = _kinds(kinds)
        refs = find.references(g, best, wanted, stale)
        items = [find.symbol_item(g, d, stale(d.path)) for d in targets]
        asked = "" if targets else _name(name_or_id)
        return items, refs, find.unresolved(g, best, wanted, stale, asked)

    def neighbours_of(self, item_id: str, depth: int = 1
                      ) -> tuple[list[SymbolItem], list[Neighbour]]:  # fmt: skip
        of, found, _ = self._neighbours(item_id, depth)
        return of, found

    def _neighbours(self, item_id: str, depth: int
                    ) -> tuple[list[SymbolItem], list[Neighbour], int]:  # fmt: skip
        """`neighbours_of`, and how many uses of the names tie to no definition."""
        g = self.graph()
        stale = self._stale(g)
        text = _name(item_id)
        start = find.definitions_for(g, text)
        chunk = text if find.CHUNK_ID.match(text) else ""
        found = find.neighbours(g, start[:NAMED], depth, chunk, stale)
        of = [find.symbol_item(g, d, stale(d.path)) for d in start]
        return of, found, len(g.unresolved(start[:NAMED]))

    def outline_of(self, path: str | None = None) -> tuple[list[FileOutline], list[OutlineEntry]]:
        """(files, every entry in the order an answer is cut): the matching files' entries
        in file and line order; without a path, the repository map's best first."""
        g = self.graph()
        if path is None or not path.strip():
            return _RepoMap.of(g).head(g, None)
        return _outline(g, path)

    # -- budgeted answers -----------------------------------------------------------------------

    def symbol(self, name: str, budget_tokens: int | None = None) -> Navigation:
        items = self.symbols(name)
        modules = [] if items else find.modules_named(self.graph().manifest, _name(name))
        see = find.module_outline(modules[0]) if modules else ""
        form = symbols_form(name.strip(), items, modules, see)
        return self._fit(len(items), form, budget_tokens)

    def references(self, name_or_id: str, kinds: Sequence[str] = (),
                   budget_tokens: int | None = None) -> Navigation:  # fmt: skip
        targets, refs, (maybe, uncertain) = self._references(name_or_id, kinds)
        form = references_form(name_or_id.strip(), targets, refs, uncertain, maybe)
        total = answer_items(targets, refs) + len(maybe)
        sizes = [ITEM_TOKENS] * total  # a long answer starts near its cut: few uses made
        return self._fit(total, form, budget_tokens, sizes)

    def neighbors(self, item_id: str, depth: int = 1, budget_tokens: int | None = None
                  ) -> Navigation:  # fmt: skip
        of, found, uncertain = self._neighbours(item_id, depth)
        form = neighbours_form(item_id.strip(), of, found, depth, find.FRONTIER, uncertain)
        return self._fit(answer_items(of, found), form, budget_tokens)

    def outline(self, path: str | None = None, budget_tokens: int | None = None) -> Navigation:
        g = self.graph()
        stale = self._stale(g)
        if path is None or not path.strip():
            whole = _RepoMap.of(g)
            form = outline_form(lambda n: whole.head(g, n), len(whole.keys), "repository map",
                                stale)  # fmt: skip
            return self._fit(len(whole.keys), form, budget_tokens, whole.sizes)
        files, order = _outline(g, path)
        sizes = [outline_size(e.item.signature, e.item.symbol) for e in order]
        form = outline_form(lambda n: (files, order[:n]), len(order),
                            f"outline of {echo(path.strip())}", stale)  # fmt: skip
        return self._fit(len(order), form, budget_tokens, sizes)

    # -- helpers --------------------------------------------------------------------------------

    def _fit(
        self, total: int, render: Callable[[int, bool], Form], budget_tokens: int | None,
        sizes: Sequence[int] | None = None,
    ) -> Navigation:  # fmt: skip
        budget = check_budget(self.budget_tokens if budget_tokens is None else budget_tokens)
        return fit(total, render, budget, self.tokens.count, sizes)

    def _stale(self, g: GraphIndex) -> Callable[[str], bool]:
        """path → whether it changed on disk since indexing (memoised for one answer)."""
        root = self.root
        seen: dict[str, bool] = {}

        def stale(path: str) -> bool:
            if root is None:
                return False
            held = seen.get(path)
            if held is None:
                record = g.manifest.get(path)
                held = seen[path] = record is not None and changed_on_disk(
                    root, path, record.size, record.mtime_ns, content_hash, record.content_hash
                )
            return held

        return stale


def _no_stale(_: str) -> bool:
    return False


class _RepoMap:
    """The repository map of one reading: every entry's place, best first (by `rank`),
    made into entries only for the files an answer shows (a budget shows a few dozen of
    mongoose's 2,976). Built once per reading (`of`), and held by it: it does not hold the
    reading (a cycle would keep a dropped reading until the cyclic GC found it)."""

    def __init__(self, g: GraphIndex) -> None:
        file_rank, def_rank = rank.rank(g)
        self.paths = sorted((p for p, f in g.files.items() if f.tags.definitions),
                            key=lambda p: (-file_rank.get(p, 0.0), p))  # fmt: skip
        keys: list[tuple[str, int]] = []  # (path, place among its definitions)
        for path in self.paths:
            keys += ((path, i) for i in find.preorder(*find.forest(g.files[path].stored)))
        keys.sort(key=lambda k: -def_rank.get(k, 0.0))  # stable: ties keep file and line order
        self.keys = keys
        defs = {p: g.files[p].tags.definitions for p in self.paths}
        self.sizes = [outline_size(d.signature, d.qualified) for d in (defs[p][i] for p, i in keys)]
        self._files: dict[str, FileOutline] = {}
        self._placed: dict[str, dict[int, OutlineEntry]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def of(g: GraphIndex) -> _RepoMap:
        held = g.cache.get("map")
        if held is None:
            held = g.cache["map"] = _RepoMap(g)
        return held

    def head(self, g: GraphIndex, n: int | None) -> tuple[list[FileOutline], list[OutlineEntry]]:
        """(the files of the first n entries, by rank; those entries): all with None. `g`:
        the reading this map is of."""
        first = self.keys[:n]
        with self._lock:
            missing = sorted({p for p, _ in first}.difference(self._files))
            for f in find.outline(g, missing, _no_stale, self._placed):
                self._files[f.path] = f
            files = [self._files[p] for p in self.paths if p in self._files]
            return files, [self._placed[p][i] for p, i in first]


def _outline(g: GraphIndex, path: str) -> tuple[list[FileOutline], list[OutlineEntry]]:
    """The files a path, folder or glob names, and their entries in file and line order
    (the last `_OUTLINES` asked for kept with the reading)."""
    key = f"outline {path.strip()}"
    held = g.cache.get(key)
    if held is None:
        files = find.outline(g, _matching(g, path), _no_stale)
        held = (files, [e for f in files for e in _preorder(f.entries)])
        outlines = [k for k in g.cache if k.startswith("outline ")]
        for old in outlines[: max(0, len(outlines) - _OUTLINES + 1)]:
            del g.cache[old]  # the oldest first (dicts keep their order)
        g.cache[key] = held
    return held


def _preorder(entries: Sequence[OutlineEntry]) -> list[OutlineEntry]:
    out: list[OutlineEntry] = []
    for e in entries:
        out.append(e)
        out += _preorder(e.children)
    return out


def _matching(g: GraphIndex, path: str) -> list[str]:
    """Indexed files a path, folder or glob names, in path order."""
    text = check_path_filter(path.strip())
    body = text.strip("/")
    if body in g.files:
        return [body]
    folder = body + "/"
    under = [p for p in g.files if p.startswith(folder)]
    if under:
        return sorted(under)
    matches = path_matcher([text], "outline path")
    return sorted(p for p in g.files if matches(p))


def _name(text: str) -> str:
    check_size("name", text)
    if not text.strip():
        raise BadRequest(
            "the name is empty",
            hint="give a name (`Client.send`, `send`, `utils.py:send`) or an id from a "
            "previous answer (s_… for a definition, c_… for a chunk)",
        )
    return text


def _kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    out = tuple(k.strip().lower() for k in kinds if k.strip())
    wrong = [k for k in out if k not in REFERENCE_KINDS]
    if wrong:
        raise BadRequest(
            f"unknown reference kind {wrong[0]!r}",
            hint=f"use any of {', '.join(sorted(REFERENCE_KINDS))} ('call' for callers)",
        )
    return out
