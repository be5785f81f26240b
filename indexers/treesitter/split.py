"""Cutting a file's definition tree into pieces.

A definition within the token cap is one piece. A class over the cap becomes a region: its
methods are definitions again, its other lines (signature, fields, gaps) are class pieces. A
function over the cap is cut at its child statements: each child node is an atom of lines, an
atom over the cap is cut again, a leaf is cut into line windows, and consecutive atoms are packed
back into pieces within the cap (so the first piece keeps the signature). Nested definitions met
on the way keep their own symbol. Every step covers exactly the lines it was given.

Recursion is bounded by MAX_DEPTH; deeper code is cut into line windows and noted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from indexers.text import Lines, Piece, windows
from indexers.treesitter.definitions import Definition, end_line
from memserver.core.types import ChunkOptions

MAX_DEPTH = 64  # oversized levels followed; ~3 stack frames each, far below the limit

Node = Any  # tree_sitter.Node
Item = tuple[int, int] | list[Piece]  # a span of lines still to pack, or finished pieces


@dataclass(frozen=True, slots=True)
class Scope:
    """Where we are: the enclosing symbol, headers, merge group and what its gaps are."""

    symbol: str = ""
    header: tuple[str, ...] = ()
    group: str = ""
    owner: str = "module"  # module | namespace | class | function | method
    gap_kind: str = "module"
    depth: int = 0


class Emitter:
    def __init__(self, lines: Lines, options: ChunkOptions, top: list[Definition]) -> None:
        self.lines = lines
        self.max_tokens = max(1, options.max_tokens)
        self.window_lines = max(1, options.window_lines)
        self.notes: list[str] = []
        self.by_alias: dict[int, Definition] = {}  # a node that is (or wraps) a definition
        self.anchored: dict[int, int] = {}  # a node that opens with a definition -> its start
        pending = list(top)
        while pending:
            definition = pending.pop()
            pending.extend(definition.children)
            for alias in definition.aliases:
                self.by_alias[alias] = definition
            for anchor in definition.anchors:
                self.anchored[anchor] = min(definition.start, self.anchored.get(anchor, 1 << 62))

    def region(
        self, start: int, end: int, defs: tuple[Definition, ...] | list[Definition], scope: Scope
    ) -> list[Piece]:
        """Pieces for lines start..end: the definitions, and gap code between them."""
        out: list[Piece] = []
        pos = start
        for definition in defs:
            first, last = max(definition.start, pos), min(definition.end, end)
            if last < first:
                continue
            if first > pos:
                out += self._gap(pos, first - 1, scope)
            out += self.definition(replace(definition, start=first, end=last), scope)
            pos = last + 1
        if pos <= end:
            out += self._gap(pos, end, scope)
        return out

    def definition(self, definition: Definition, scope: Scope) -> list[Piece]:
        captured = definition.kind
        kind = "class" if captured == "namespace" else captured
        if captured == "function" and scope.owner == "class":
            kind = "method"
        symbol = f"{scope.symbol}.{definition.name}" if scope.symbol else definition.name
        span = self.lines.trim(definition.start, definition.end)
        if span is None:
            return []
        start, end = span
        if self.lines.tokens(start, end) <= self.max_tokens or start == end:
            return [Piece(start, end, kind, symbol, "\n".join(scope.header), scope.group)]
        if scope.depth >= MAX_DEPTH:
            like = Piece(start, end, kind, symbol, "\n".join(scope.header), scope.group)
            return self._too_deep(start, end, like)
        signature = self.lines.line(definition.signature).strip()[:200]
        inner = Scope(
            symbol=symbol,
            header=(*scope.header, signature),
            group=f"{symbol}@{start}",
            owner=captured if captured == "namespace" else kind,
            gap_kind=kind,
            depth=scope.depth + 1,
        )
        if kind == "class":
            return self.region(start, end, definition.children, inner)
        items = self._items(definition.node, start, end, inner)
        return self._pack(
            items, Piece(start, end, kind, symbol, "\n".join(inner.header), inner.group)
        )

    def _gap(self, start: int, end: int, scope: Scope) -> list[Piece]:
        symbol = scope.symbol if scope.gap_kind != "module" else ""
        header = "\n".join(scope.header)
        spans = windows(self.lines, start, end, self.window_lines, self.max_tokens)
        return [Piece(s, e, scope.gap_kind, symbol, header, scope.group) for s, e in spans]

    def _too_deep(self, start: int, end: int, like: Piece) -> list[Piece]:
        self.notes.append(f"nesting deeper than {MAX_DEPTH} levels at lines {start}-{end}")
        spans = windows(self.lines, start, end, self.window_lines, self.max_tokens)
        return [replace(like, start=s, end=e) for s, e in spans]

    def _items(self, node: Node, start: int, end: int, scope: Scope) -> list[Item]:
        """Atoms of a function's lines, cut down until each fits (or is one line)."""
        if scope.depth >= MAX_DEPTH:
            self.notes.append(f"nesting deeper than {MAX_DEPTH} levels at lines {start}-{end}")
            return list(windows(self.lines, start, end, self.window_lines, self.max_tokens))
        spans = self._child_spans(node, start, end)
        while len(spans) < 2:  # one atom: descend into its biggest child (a loop, not recursion)
            node = _biggest(spans[0][2]) if spans else None
            if node is None:
                return list(windows(self.lines, start, end, self.window_lines, self.max_tokens))
            spans = self._child_spans(node, start, end)
        items: list[Item] = []
        deeper = replace(scope, depth=scope.depth + 1)
        for first, last, nodes in spans:
            found = [self.by_alias[n.id] for n in nodes if n.id in self.by_alias]
            if found:
                definition = max(found, key=lambda d: d.end - d.start)
                items += self._definition_items(definition, first, last, scope)
            elif first == last or self.lines.tokens(first, last) <= self.max_tokens:
                items.append((first, last))
            else:
                child = _biggest(nodes)
                items += self._items(child, first, last, deeper) if child else [(first, last)]
        return items

    def _definition_items(
        self, definition: Definition, first: int, last: int, scope: Scope
    ) -> list[Item]:
        start, end = max(definition.start, first), min(definition.end, last)
        items: list[Item] = []
        if start > first:
            items.append((first, start - 1))
        if start <= end:
            items.append(self.definition(replace(definition, start=start, end=end), scope))
        if max(end, start - 1) < last:
            items.append((max(end, start - 1) + 1, last))
        return items

    def _child_spans(self, node: Node, start: int, end: int) -> list[tuple[int, int, list[Node]]]:
        """The node's children grouped into atoms that share no line, tiling start..end."""
        spans: list[tuple[int, int, list[Node]]] = []
        for child in node.children:
            first = child.start_point[0] + 1
            last = max(first, end_line(child))
            definition = self.by_alias.get(child.id)
            if definition is not None:
                first = min(first, definition.start)
            first = min(first, self.anchored.get(child.id, first))  # its comments come along
            nodes = [child]
            while spans and spans[-1][1] >= first:  # shares a line: one atom
                popped = spans.pop()
                first, last = min(first, popped[0]), max(last, popped[1])
                nodes = popped[2] + nodes
            spans.append((first, last, nodes))
        clipped = [
            (max(f, start), min(la, end), n) for f, la, n in spans if la >= start and f <= end
        ]
        tiled = []
        for index, (_first, _last, nodes) in enumerate(clipped):
            first = start if index == 0 else clipped[index][0]
            last = end if index == len(clipped) - 1 else clipped[index + 1][0] - 1
            tiled.append((first, last, nodes))
        return tiled

    def _pack(self, items: list[Item], like: Piece) -> list[Piece]:
        """Pack consecutive line spans into pieces within the cap; finished pieces pass through."""
        out: list[Piece] = []
        current: tuple[int, int] | None = None
        for item in items:
            if isinstance(item, list):
                if current:
                    out.append(replace(like, start=current[0], end=current[1]))
                    current = None
                out += item
                continue
            span = self.lines.trim(*item)
            if span is None:
                continue
            if current and self.lines.tokens(current[0], span[1]) <= self.max_tokens:
                current = (current[0], span[1])
                continue
            if current:
                out.append(replace(like, start=current[0], end=current[1]))
            parts = [span]
            if span[0] < span[1] and self.lines.tokens(*span) > self.max_tokens:
                parts = windows(self.lines, *span, self.window_lines, self.max_tokens)
            out += [replace(like, start=s, end=e) for s, e in parts[:-1]]
            current = parts[-1] if parts else None
        if current:
            out.append(replace(like, start=current[0], end=current[1]))
        return out


def _biggest(nodes: list[Node]) -> Node | None:
    """The child spanning the most lines, if any spans more than one."""
    best = max(nodes, key=lambda n: end_line(n) - n.start_point[0], default=None)
    if best is None or end_line(best) - 1 <= best.start_point[0]:
        return None
    return best


__all__ = ["MAX_DEPTH", "Emitter", "Scope"]
