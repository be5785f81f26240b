"""What an agent reads of a navigation answer: one compact text and one compact JSON form,
each within `budget_tokens` as the real tokenizer counts it (as recall's, see
`core.render`). Items are cut from the end of their order (rank, or file and line order)
until both forms fit; `truncated` says so."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memserver.core.render import dumps, one_line
from memserver.navigate.items import FileOutline, Neighbour, OutlineEntry, RefItem, SymbolItem

__all__ = [
    "ITEM_TOKENS", "NAMED", "Head", "Navigation", "answer_items", "echo", "fit",
    "neighbours_form", "outline_form", "outline_size", "references_form", "symbols_form",
]  # fmt: skip

STALE = " [changed since indexed: re-read the file]"
TRUNCATED = "; more were left out to fit the budget: raise budget_tokens or narrow"
Form = tuple[str, dict[str, Any]]
_STEERED = 4  # probes guided by the tokens per item; then halving or doubling (see `fit`)


@dataclass(frozen=True, slots=True)
class Navigation:
    """A navigation answer: the text an agent reads and the same as data."""

    text: str
    data: dict[str, Any]
    tokens: int
    truncated: bool


def fit(total: int, render: Callable[[int, bool], Form], budget: int,
        count: Callable[[str], int], sizes: Sequence[int] | None = None) -> Navigation:  # fmt: skip
    """The answer with the most of its `total` items (in their order) whose text and JSON
    each fit `budget` tokens; `render(n, truncated)` makes both forms of the first n.
    `sizes`, about how many tokens each item adds, lets a long answer start near its cut
    instead of rendering every item first (every probe is measured all the same)."""

    def size(n: int) -> tuple[int, Form]:
        text, data = render(n, n < total)
        data = {**data, "tokens": budget, "truncated": n < total}  # as it will be shown
        return max(count(text), count(dumps(data))), (text, data)

    low, high = 0, total + 1  # size(low) fits (or nothing does); size(high) does not
    fits: dict[int, tuple[int, Form]] = {}
    guess = total
    if sizes is not None and sum(sizes) > 2 * budget:  # far too long: start near the cut
        guess, used = 0, 0
        while guess < total and used + sizes[guess] <= budget:
            used += sizes[guess]
            guess += 1
    probes = 0
    while high - low > 1:  # the guess, then by the tokens per item, then halving what is left
        mid = min(high - 1, max(low + 1, guess)) if guess > 0 else low + 1
        measured = size(mid)
        probes += 1
        if measured[0] <= budget:
            low, fits[mid] = mid, measured
            if mid == total:
                break
            guess = mid + max(1, (mid * (budget - measured[0])) // max(1, measured[0]))
        else:  # as many as fit at the tokens per item this one took: most often the cut
            high = mid
            guess = (mid * budget) // max(1, measured[0])
        if probes >= _STEERED or guess >= high or guess <= low:
            # halving what is left; with no render too long yet, doubling what fits (halving
            # up to `total` would render thousands of entries to cut a map at sixty)
            guess = low + (high - low) // 2 if high <= total else min(total, 2 * low + 1)
    if low == 0:
        fits[0] = size(0)
    used, form = fits[low]
    return _done(form, used, low < total)


def _done(form: Form, used: int, truncated: bool) -> Navigation:
    """`used` was measured with the budget in `tokens`: the count shown is no longer."""
    text, data = form
    data = {**data, "tokens": used, "truncated": truncated}
    return Navigation(text, data, used, truncated)


def _lines(item: SymbolItem) -> str:
    return f"{item.start_line}-{item.end_line}"


def item_dict(item: SymbolItem, *, doc: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": item.id, "path": item.path, "start_line": item.start_line,
        "end_line": item.end_line, "symbol": item.symbol, "kind": item.kind,
        "signature": item.signature, "chunk_id": item.chunk_id,
    }  # fmt: skip
    if doc and item.doc:
        out["doc"] = item.doc
    if item.stale:
        out["stale"] = True
    return out


_ECHO_CHARS = 120  # of what was asked, the most an answer's first line repeats


def echo(asked: str) -> str:
    """What was asked, on one line and cut short: a name of 10,000 characters is not
    repeated in its answer."""
    shown = one_line(asked)
    return shown if len(shown) <= _ECHO_CHARS else shown[: _ECHO_CHARS - 1] + "…"


def _head(item: SymbolItem) -> str:
    label = one_line(f"{item.path}:{_lines(item)} {item.kind} {item.symbol}").rstrip()
    return label + f" {item.chunk_id}" + (STALE if item.stale else "")


# -- symbol ------------------------------------------------------------------------------


def symbols_form(name: str, items: Sequence[SymbolItem], modules: Sequence[str] = (),
                 see: str = "") -> Callable[[int, bool], Form]:  # fmt: skip
    """`modules`: when nothing is defined by that name, the files it names as a module
    (`see`: what `outline` takes for the first)."""

    def render(n: int, truncated: bool) -> Form:
        shown = items[:n]
        status = f"symbol {echo(name)}: {len(items)} definition{'s' * (len(items) != 1)}"
        if modules:
            status += (f"; it names the module {', '.join(one_line(m) for m in modules)}: "
                       f"`outline {one_line(see or modules[0])}` lists what it defines"
                       )  # fmt: skip
        elif not items:
            status += "; none in the index: try the bare name, or recall"
        parts = [status + (TRUNCATED if truncated else "")]
        for item in shown:
            block = f"## {_head(item)} id {item.id}\n{item.signature}"
            parts.append(block + (f"\n  {item.doc}" if item.doc else ""))
        data: dict[str, Any] = {"name": echo(name), "total": len(items),
                                "definitions": [item_dict(i, doc=True) for i in shown]}  # fmt: skip
        if modules:
            data["modules"] = list(modules)
        return "\n".join(parts), data

    return render


# -- references --------------------------------------------------------------------------


def _written(r: RefItem) -> str:
    if r.qualifier.endswith("/"):  # a module imported by its path: `../cast/` boolean
        return f"{r.qualifier}{r.name}"
    return f"{r.qualifier}.{r.name}" if r.qualifier else r.name


def _in(r: RefItem) -> str:
    e = r.enclosing
    return f"in {e.kind} {e.symbol} ({_lines(e)})" if e is not None else "at top level"


# An answer about a name (references, neighbours) is about its best definitions, at most
# this many (the rest counted: an id asks about one of them): it lists them first, then
# their references or neighbours (`answer_items`), so `fit` keeps it within the budget
# however many definitions a name has (a bare `get` names 54 in Django, `__init__` 845).
NAMED = 5


# About the tokens a definition or a reference adds to an answer's JSON form (the longer
# one): an id, a path or a chunk id, lines, the expression and the definition around it.
ITEM_TOKENS = 60


def answer_items(about: Sequence[SymbolItem], found: Sequence[object]) -> int:
    """How many items `fit` cuts an answer about `about` listing `found` at."""
    return _heads(about) + len(found)


def _heads(about: Sequence[SymbolItem]) -> int:
    """How many of the definitions an answer is about it lists (its first items)."""
    return min(len(about), NAMED)


def _named(about: Sequence[SymbolItem], n: int) -> Sequence[SymbolItem]:
    return about[: min(n, _heads(about))]


def _more(about: Sequence[SymbolItem], asked: str) -> str:
    if len(about) <= NAMED:
        return ""
    return (f"; the best {NAMED} of the {len(about)} definitions of {echo(asked)}: "
            "pass an id s_… for another")  # fmt: skip


def references_form(
    asked: str, targets: Sequence[SymbolItem], refs: Sequence[RefItem], uncertain: int,
    maybe: Sequence[RefItem] = (),
) -> Callable[[int, bool], Form]:  # fmt: skip
    """`maybe`: the first of the `uncertain` uses of the names, tied to no definition for
    sure, listed after the references (any of them may be one)."""
    files = len({r.path for r in refs})

    def render(n: int, truncated: bool) -> Form:
        named = _named(targets, n)
        shown = refs[: max(0, n - _heads(targets))]
        unsure = maybe[: max(0, n - _heads(targets) - len(refs))]
        about = one_line(
            ", ".join(f"{t.kind} {t.symbol} ({t.path}:{t.start_line})" for t in targets[:5])
        )
        status = (f"references to {about or echo(asked)}: {len(refs)} in "
                  f"{_counted(files, 'file')}")  # fmt: skip
        if not targets:
            status = f"references to {echo(asked)}: no definition of that name in the index"
        status += _more(targets, asked)
        if uncertain and not targets:
            status += f"; {_uses(uncertain)} of the name, listed below"
        elif uncertain:
            status += f"; {_untied(uncertain)}, listed after them (any may be one)"
        parts = [status + (TRUNCATED if truncated else "")]
        groups = _ref_groups(shown, parts)
        data = {
            "name": echo(asked), "targets": [item_dict(t) for t in named], "total": len(refs),
            "files": groups, "uncertain": uncertain,
        }  # fmt: skip
        if unsure:
            parts.append(f"# uses of the name tied to no definition ({len(unsure)} of "
                         f"{uncertain} shown)")  # fmt: skip
            data["maybe"] = _ref_groups(unsure, parts)
        if len(named) < len(targets):
            data["targets_total"] = len(targets)
        return "\n".join(parts), data

    return render


def _counted(n: int, noun: str) -> str:
    """`n` and the noun, plural unless `n` is one: "1 caller", "2 callers"."""
    return f"{n} {noun}{'s' * (n != 1)}"


def _uses(n: int, more: str = "") -> str:
    return _counted(n, more + "use")


def _untied(n: int) -> str:
    """How many more uses of the name resolve to no definition for sure."""
    verb = "resolve" if n != 1 else "resolves"
    return f"{_uses(n, 'more ')} of the name {verb} to no definition for sure"


def _ref_groups(refs: Sequence[RefItem], parts: list[str]) -> list[dict[str, Any]]:
    """References grouped by file, as data; their lines appended to `parts`."""
    groups: list[dict[str, Any]] = []
    for r in refs:
        if not groups or groups[-1]["path"] != r.path:
            groups.append({"path": r.path, "references": []})
            if r.stale:
                groups[-1]["stale"] = True
            parts.append(f"## {one_line(r.path)}" + (STALE if r.stale else ""))
        parts.append(f"  {r.line} {r.kind} {_written(r)} {_in(r)} {r.chunk_id}"
                     + (f" -> {r.target}" if r.target else ""))  # fmt: skip
        entry: dict[str, Any] = {"line": r.line, "kind": r.kind, "text": _written(r),
                                 "chunk_id": r.chunk_id}  # fmt: skip
        if r.enclosing is not None:
            e = r.enclosing
            entry["enclosing"] = {
                "id": e.id, "symbol": e.symbol, "kind": e.kind,
                "start_line": e.start_line, "end_line": e.end_line,
            }  # fmt: skip
        if r.target:
            entry["target"] = r.target
        groups[-1]["references"].append(entry)
    return groups


# -- neighbours --------------------------------------------------------------------------


def neighbours_form(asked: str, of: Sequence[SymbolItem], found: Sequence[Neighbour],
                    depth: int = 1, frontier: int = 0, uncertain: int = 0,
                    ) -> Callable[[int, bool], Form]:  # fmt: skip
    """`frontier`: how many direct neighbours depth 2 goes on from, at most; `uncertain`:
    how many uses of the names the graph ties to no definition (callers it cannot tell)."""
    callers = sum(1 for x in found if x.direction == "caller")
    direct = sum(1 for x in found if x.depth == 1)
    cut = (f"; depth 2 of the first {frontier} of the {direct} direct ones"
           if depth > 1 and frontier and direct > frontier else "")  # fmt: skip

    def render(n: int, truncated: bool) -> Form:
        named, shown = _named(of, n), found[: max(0, n - _heads(of))]
        about = "; ".join(_head(i) for i in of[:3]) or echo(asked)
        status = (f"neighbours of {about}: {_counted(callers, 'caller')}, "
                  f"{_counted(len(found) - callers, 'callee')}" + cut)  # fmt: skip
        if not of:
            status = f"neighbours of {echo(asked)}: nothing by that id or name in the index"
        status += _more(of, asked)
        if uncertain:
            status += (f"; {_untied(uncertain)} (any may be one of its callers: `references` "
                       "lists them)")  # fmt: skip
        parts = [status + (TRUNCATED if truncated else "")]
        data: dict[str, Any] = {"of": [item_dict(i) for i in named], "callers": [],
                                "callees": [], "uncertain": uncertain}  # fmt: skip
        if len(named) < len(of):
            data["of_total"] = len(of)
        if cut:
            data["depth_2_from"] = frontier
        for direction in ("caller", "callee"):
            mine = [x for x in shown if x.direction == direction]
            if mine:
                parts.append(f"## {direction}s")
            for x in mine:
                at = ",".join(str(line) for line in x.lines[:8])
                deep = " (depth 2)" if x.depth > 1 else ""
                parts.append(f"  {_head(x.item)} {'/'.join(x.kinds)} at {at}{deep}")
                entry = {**item_dict(x.item), "depth": x.depth, "lines": list(x.lines),
                         "kinds": list(x.kinds)}  # fmt: skip
                data[direction + "s"].append(entry)
        return "\n".join(parts), data

    return render


# -- outline -----------------------------------------------------------------------------


def _entry_dict(e: OutlineEntry, keep: set[int]) -> dict[str, Any]:
    item = e.item
    out: dict[str, Any] = {
        "symbol": item.symbol, "kind": item.kind, "start_line": item.start_line,
        "end_line": item.end_line, "signature": item.signature, "chunk_id": item.chunk_id,
    }  # fmt: skip
    kids = [_entry_dict(k, keep) for k in e.children if id(k) in keep]
    if kids:
        out["children"] = kids
    return out


def _entry_lines(e: OutlineEntry, keep: set[int], depth: int) -> list[str]:
    item = e.item
    rows = [f"{'  ' * depth}{item.start_line}-{item.end_line} {item.signature} {item.chunk_id}"]
    for k in e.children:
        if id(k) in keep:
            rows += _entry_lines(k, keep, depth + 1)
    return rows


def outline_size(signature: str, symbol: str) -> int:
    """About the tokens an entry adds to the JSON form (the longer one)."""
    return (len(signature) + 2 * len(symbol) + 120) // 3


# the first n entries of an outline in the order it is cut, and the files they are in
Head = Callable[[int], tuple[Sequence[FileOutline], Sequence[OutlineEntry]]]


def outline_form(head: Head, total: int, title: str, stale: Callable[[str], bool]
                 ) -> Callable[[int, bool], Form]:  # fmt: skip
    """An outline of `total` entries cut after its first n (`head(n)`: kept entries keep
    their place, with their parents); `stale` tells the files that changed on disk since
    indexing. The files come in the order `head` gives them."""
    parent: dict[int, OutlineEntry | None] = {}  # id(entry) -> its parent (None: a root)
    home: dict[int, str] = {}  # id(root entry) -> its file's path
    learnt: set[str] = set()

    def learn(f: FileOutline) -> None:
        learnt.add(f.path)
        stack = list(f.entries)
        for e in f.entries:
            parent[id(e)], home[id(e)] = None, f.path
        while stack:
            e = stack.pop()
            for k in e.children:
                parent[id(k)] = e
                stack.append(k)

    def render(n: int, truncated: bool) -> Form:
        files, first = head(n)
        for f in files:
            if f.path not in learnt:
                learn(f)
        keep: set[int] = set()
        shown: set[str] = set()
        for e in first:
            while id(e) not in keep:  # a kept entry keeps its parents
                keep.add(id(e))
                up = parent[id(e)]
                if up is None:
                    shown.add(home[id(e)])
                    break
                e = up
        parts = [f"{title}: {len(keep)} of {total} definitions in "
                 f"{_counted(len(shown), 'file')}"
                 + (TRUNCATED if truncated else "")]  # fmt: skip
        groups = []
        for f in (f for f in files if f.path in shown):
            changed = stale(f.path)
            parts.append(f"## {one_line(f.path)}" + (STALE if changed else ""))
            group: dict[str, Any] = {"path": f.path}
            if changed:
                group["stale"] = True
            group["definitions"] = [_entry_dict(e, keep) for e in f.entries if id(e) in keep]
            groups.append(group)
            for e in f.entries:
                if id(e) in keep:
                    parts += _entry_lines(e, keep, 0)
        return "\n".join(parts), {"total": total, "files": groups}

    return render
