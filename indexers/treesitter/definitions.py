"""Definitions found by a language's query, as a nested tree of line spans.

Query captures: `@definition.function`, `@definition.method`, `@definition.namespace` (or
`.module`: a container whose functions stay functions), `@definition.<anything else>` (a
class-like container: class, struct, interface, enum, trait, impl), `@name`
(required) and, optionally, `@receiver` (Go: "Receiver.Method"). When several patterns capture one
`@name` node the widest definition wins, so a query may capture a wrapper (C++ `template<...>`).

A definition's span also takes in what sits directly above it with no blank line between:
comments, doc comments, decorators, attributes and annotations, climbing out of wrappers that
start on the definition's line (`export`, Go's `type`, Python's decorated_definition).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Node = Any  # tree_sitter.Node; kept loose so this module imports without tree-sitter

_ATTACHED = ("comment", "decorator", "attribute", "annotation")
# tree-sitter recovers from errors, so a few ERROR nodes still leave good definitions; past
# this share of non-blank lines inside ERROR nodes (`error_share`) the file is not really
# this language.
ERROR_SHARE_LIMIT = 0.3


@dataclass(frozen=True, slots=True)
class Definition:
    node: Node
    kind: str  # function | method | class | namespace (as captured; nesting refines function)
    name: str
    start: int  # 1-based first line, including attached comments/decorators
    end: int  # 1-based last line
    signature: int  # the line holding the name (used as header text)
    aliases: tuple[int, ...]  # ids of this node and of wrappers around it alone
    anchors: tuple[int, ...] = ()  # ids of enclosing nodes that begin with it (a block)
    children: tuple[Definition, ...] = ()


def end_line(node: Node) -> int:
    """1-based last line of a node (a node ending at column 0 ends on the previous line)."""
    row, column = node.end_point
    if column == 0 and row > node.start_point[0]:
        row -= 1
    return int(row) + 1


def find_definitions(root: Node, query: Any) -> list[Definition]:
    """Top-level definitions (each with nested children), in source order."""
    from tree_sitter import QueryCursor

    chosen: dict[tuple[int, int], tuple[Node, str, str, int]] = {}
    for _pattern, captures in QueryCursor(query).matches(root):
        found = _from_match(captures)
        if found is None:
            continue
        node, kind, name, name_node = found
        key = (name_node.start_byte, name_node.end_byte)
        held = chosen.get(key)
        if held is None or _width(node) > _width(held[0]):
            chosen[key] = (node, kind, name, name_node.start_point[0] + 1)
    by_range: dict[tuple[int, int], tuple[Node, str, str, int]] = {}
    for entry in chosen.values():
        by_range.setdefault((entry[0].start_byte, entry[0].end_byte), entry)
    entries = sorted(by_range.values(), key=lambda e: (e[0].start_byte, -e[0].end_byte))
    captured = {entry[0].id for entry in entries}
    flat = [_flat(node, kind, name, sig, captured) for node, kind, name, sig in entries]
    return _nest(flat)


def _from_match(captures: dict[str, list[Node]]) -> tuple[Node, str, str, Node] | None:
    names = captures.get("name")
    definition = next((k for k in captures if k.startswith("definition.")), None)
    if not names or definition is None:
        return None
    kind = definition.split(".", 1)[1]
    if kind == "module":
        kind = "namespace"
    elif kind not in ("function", "method", "namespace"):
        kind = "class"
    name = _clean(names[0])
    receivers = captures.get("receiver")
    if receivers:
        name = f"{_clean(receivers[0])}.{name}"
    return captures[definition][0], kind, name, names[0]


def _clean(node: Node) -> str:
    text = node.text.decode("utf-8", "replace") if node.text is not None else ""
    text = " ".join(text.split()).replace("::", ".").replace("\\", ".").strip(".")
    return text[:200]


def _width(node: Node) -> int:
    return int(node.end_byte - node.start_byte)


def _flat(node: Node, kind: str, name: str, signature: int, captured: set[int]) -> Definition:
    start, aliases, anchors = _attached_start(node, captured)
    return Definition(node, kind, name, start, end_line(node), signature, aliases, anchors)


def _attached_start(node: Node, captured: set[int]) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """First line including comments/decorators directly above; wrappers and anchors climbed.

    When nothing precedes the node in its parent and the parent starts on the same row, the
    search goes on above the parent: a wrapper (ending with the node) or a block it opens.
    """
    start, last = node.start_point[0], end_line(node)
    aliases: list[int] = [node.id]
    anchors: list[int] = []
    current = node
    while True:
        sibling = current.prev_sibling
        while sibling is not None and not sibling.is_named and sibling.start_point[0] == start:
            sibling = sibling.prev_sibling  # keywords on the definition's line: export, pub, type
        if sibling is None:
            parent = current.parent
            if parent is None or parent.parent is None or parent.id in captured:
                break
            if parent.start_point[0] != start:
                break
            (aliases if end_line(parent) == last else anchors).append(parent.id)
            current = parent
            continue
        if not _attaches(sibling, start):
            break
        start = sibling.start_point[0]
        current = sibling
    return start + 1, tuple(aliases), tuple(anchors)


def _attaches(sibling: Node, start_row: int) -> bool:
    """A comment/decorator/attribute on its own line(s) right above the row."""
    if not any(word in sibling.type for word in _ATTACHED):
        return False
    if end_line(sibling) - 1 < start_row - 1:
        return False  # a blank line (or more) between
    before = sibling.prev_sibling
    # A trailing comment shares its first line with the code before it.
    return before is None or end_line(before) - 1 < sibling.start_point[0]


def _nest(flat: list[Definition]) -> list[Definition]:
    """Build the containment tree iteratively (no recursion, whatever the depth)."""
    parents: list[int] = []
    stack: list[int] = []
    for index, item in enumerate(flat):
        while stack and not _contains(flat[stack[-1]].node, item.node):
            stack.pop()
        parents.append(stack[-1] if stack else -1)
        stack.append(index)
    children: dict[int, list[Definition]] = {}
    built: list[Definition | None] = [None] * len(flat)
    for index in range(len(flat) - 1, -1, -1):
        kids = children.pop(index, [])
        kids.reverse()
        item = flat[index]
        built[index] = Definition(
            item.node, item.kind, item.name, item.start, item.end, item.signature,
            item.aliases, item.anchors, tuple(kids),
        )  # fmt: skip
        children.setdefault(parents[index], []).append(built[index])  # type: ignore[arg-type]
    top = children.get(-1, [])
    top.reverse()
    return top


def _contains(outer: Node, inner: Node) -> bool:
    return bool(outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte)


def blank_rows(rows: Sequence[str]) -> tuple[bool, ...]:
    """Which of these rows (a text split on "\\n") are blank: the one rule of the chunker's
    `Lines.blank` and the tagger's, whose error shares must agree for both to pick the
    same parse."""
    return tuple(not row.strip() for row in rows)


def error_share(root: Node, blank: tuple[bool, ...]) -> float:
    """Share of the non-blank lines holding tokens the parser could not fit into any rule.

    ERROR nodes often wrap large stretches of well-formed code, so only the loose tokens
    directly inside an ERROR (and MISSING nodes) count, not the valid subtrees it contains.
    """
    if not root.has_error:
        return 0.0
    rows: set[int] = set()
    stack = [(root, root.is_error)]
    while stack:
        node, in_error = stack.pop()
        if node.is_missing or ((in_error or node.is_error) and node.child_count == 0):
            first = node.start_point[0]
            rows.update(range(first, max(first, end_line(node) - 1) + 1))
        elif node.has_error or node.is_error:
            stack.extend((child, node.is_error) for child in node.children)
    total = sum(1 for b in blank if not b)
    hit = sum(1 for r in rows if r < len(blank) and not blank[r])
    return hit / total if total else 0.0


__all__ = ["Definition", "blank_rows", "end_line", "error_share", "find_definitions"]
