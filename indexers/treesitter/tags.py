"""Tags for the code graph: the definitions, references and imports of one file.

The language's `queries/<stem>-tags.scm` says what is what (its capture convention is at
the top of python-tags.scm); this module only turns captures into `FileTags`: it nests
definitions (qualified names as the chunker gives them: "Client.send", Go "Store.Add"),
finds each reference's enclosing definition, drops bare names bound locally in a function
(parameters, assignments), and reads imports and the declared package.

`extract_tags` never raises: a file that cannot be parsed has empty tags. It takes an
already-parsed tree so the chunker's parse can be reused (`parse` makes one).
"""

from __future__ import annotations

import bisect
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from indexers.languages import choose_parse
from indexers.treesitter.definitions import blank_rows, end_line, error_share
from indexers.treesitter.macros import macro_uses, namespaces, parsed_source
from indexers.treesitter.registry import LANGUAGES, tags_queries
from indexers.treesitter.registry import language as _language
from memserver.core.graph import (
    CLASS_KINDS,
    Definition,
    FileTags,
    Import,
    Reference,
    dotted,
    make_reference,
    module_stem,
)

Node = Any  # tree_sitter.Node
Tree = Any  # tree_sitter.Tree

_REFERENCE_KINDS = {
    "call": "call",
    "inherit": "inherit",
    "implementation": "inherit",
    "class": "type",
    "type": "type",
    "import": "import",
}
# When several patterns capture one name, the most telling kind wins.
_REFERENCE_ORDER = {"call": 0, "inherit": 1, "import": 2, "type": 3, "other": 4}
_CONTAINERS = CLASS_KINDS | {"scope"}  # a function directly inside one of these is a method
_FUNCTIONS = frozenset({"function", "method"})
_QUOTES = "\"'`<>"
_COMMENT_MARKS = ("/**", "/*!", "///", "//!", "//", "/*", "*/", "#", "--[[", "--", ";;", "*", "%")
_MAX_QUALIFIER = 120
# single-capture roles that may also come with a pattern's other captures
_FLAT_EXTRAS = frozenset(
    {"ignore", "ignore.inside", "local.scope", "local.global", "local.nonlocal",
     "local.constructor", "returned", "package"}
)  # fmt: skip


_LINE_AND_COLUMN = operator.attrgetter("line", "column")
# what `exports.Y = …` makes a variable of (not a function: a definition of its own kind;
# not a name: an export of that binding)
_EXPORTED_VALUES = frozenset(
    {"call_expression", "new_expression", "object", "array", "string", "number",
     "template_string", "member_expression", "binary_expression", "ternary_expression", "true",
     "false", "null", "regex"}
)  # fmt: skip
# languages whose definitions are named by declarators: a C++ parse recovering from an error
# may take a whole declaration for one (pybind11's numpy.h: 110 names began "template <…")
_DECLARATORS = frozenset({"c", "cpp"})
# values that name themselves (`function build() {…}`, `class Store {…}`)
_NAMED_VALUES = frozenset({"function_expression", "generator_function", "class"})
_SPACE = re.compile(r"\s")
_HEAD_END = re.compile(r"[.(\[]")  # what ends the name a type text starts from
# type texts of what an expression's value gives: (start, end) around the expression,
# longest starts first
_WRAPPERS = (
    ("list[iter(", ")]"),
    ("aenter(", ")"),
    ("enter(", ")"),
    ("iter(", ")"),
    ("item(", ")"),
)
# Python's builtins that make a collection of another's elements (`_copied`)
_COPIES = frozenset({"list", "tuple", "set", "frozenset", "sorted", "reversed"})
_INDEXED = re.compile(r"^([A-Za-z_]\w*)\[[^\[\]:]+\]$")  # `tokens[i]`, no slice nor nesting
# `tasks[key].scope.owner` (a member of an item): what is indexed, and the members after it
_ITEM_MEMBER = re.compile(r"^([A-Za-z_][\w.]*)\[[^\[\]():]+\]((?:\.[A-Za-z_]\w*)+)$")
# what ends the text before a member's name (`->*` and `.*`: C++'s pointers to members)
_MEMBER_END = re.compile(r"(?:->\*?|\.\*|[\s.:?\\])+\Z")
# a string literal: its prefix (r, b, f, rb…), its quotes and what they hold
_STRING_LITERAL = re.compile(r"[a-zA-Z]{0,2}(\"\"\"|'''|\"|')(.*)\1\Z", re.DOTALL)


def parse(text: str, language: str, source: bytes | None = None) -> Tree:
    """A tree-sitter tree of `text` (encoded as UTF-8, unless `source` is that already) for
    a registered language."""
    from tree_sitter import Parser

    if source is None:
        source = text.encode("utf-8", "replace")
    return Parser(_language(language)).parse(parsed_source(language, source))


def extract_tags(path: str, text: str, language: str, tree: Tree | None = None,
                 source: bytes | None = None) -> FileTags:  # fmt: skip
    """The file's tags; empty tags when the language is unknown or anything fails.

    `tree`, when given, must be the parse of `text` encoded as UTF-8 (as `parse` makes it)
    with the grammar of `language` (the chunker's, whose chunks the tags then match);
    `source`, when given, that encoding. Without a tree, the grammar is chosen as the
    chunker chooses it (`choose_parse`), except that no parse is refused for its errors.
    """
    if language not in LANGUAGES:
        return FileTags(path, language)
    try:
        if source is None:
            source = text.encode("utf-8", "replace")
        if tree is None:
            blank = blank_rows(text.split("\n"))

            def attempt(used: str) -> tuple[Tree, float]:
                parsed = parse(text, used, source)
                return parsed, error_share(parsed.root_node, blank)

            chosen = choose_parse(language, text, path, attempt)
            if chosen is None:  # none is refused here: every grammar gives a parse
                return FileTags(path, language)
            language, tree = chosen
        return _Extractor(path, language, tree.root_node, text, source).run()
    except Exception:  # the edge: a grammar or query failure must not stop indexing
        return FileTags(path, language)


@dataclass(slots=True)
class _Def:
    node: Node
    kind: str
    name_node: Node
    pattern: int
    receiver: Node | None = None
    doc: Node | None = None
    declared: Node | None = None  # its declared type (or constructor) as written
    declared_from: Node | None = None  # a local whose type it takes (`self.x = x`)
    declaration: bool = False  # no body (@declaration)


@dataclass(slots=True)
class _Ref:
    kind: str
    name_node: Node
    qualifier: Node | None
    node: Node
    typed: Node | None = None  # the receiver's type as the expression says it


class _Extractor:
    def __init__(self, path: str, language: str, root: Node, text: str, source: bytes) -> None:
        self.path, self.language, self.root = path, language, root
        # the whole file: byte offsets index it (the root's own text starts at its first
        # token, after any blank lines)
        self.source = source
        self.ascii = self.source.isascii()
        self.text = text if self.ascii else ""  # byte offsets index it when ASCII
        self.lines = text.split("\n")
        self.defs: dict[tuple[int, int], _Def] = {}
        self.refs: dict[tuple[int, int], _Ref] = {}
        # single-capture references, per capture name: (kind, is a member: qualified by its
        # parent, the names)
        self.bare: list[tuple[str, bool, list[Node]]] = []
        self.imports: list[tuple[Node, Node | None, Node | None, Node | None, bool]] = []
        self.default_imports: set[int] = set()  # their bound names' starts (`import X from`)
        # what the module exports of its own (statement, the name, as what: `_exports`)
        self.exported: list[tuple[Node, Node, str]] = []
        # …and of another module, required (statement, the `require(…)` call, as what)
        self.required: list[tuple[Node, Node, str]] = []
        # (name, its type, what it iterates over): bindings inside functions
        self.locals: list[tuple[Node, Node | None, Node | None]] = []
        # (function, name, line) of bindings typed only by what they copy (`_borrowed`)
        self.borrowed: set[tuple[str, str, int]] = set()
        self.constructor_params: list[Node] = []  # names local to a class's own body
        self.pending: list[tuple[int, Node]] = []  # (definition index, local it is set from)
        self.guessed: dict[tuple[int, int], Node] = {}  # name -> a declared type guess
        self.decorators: dict[tuple[int, int], Node] = {}  # name -> its outermost decorator
        self.returned: list[Node] = []  # what return statements return
        # `global x` / `nonlocal x` statements: in their function, x is no local of its own
        self.outer_names: list[tuple[Node, str]] = []  # (name node, "global" | "nonlocal")
        # ids of the callees of `with callee() as x` -> the wrapper of its type ("enter(" or,
        # under `async with`, "aenter(")
        self.entered: dict[int, str] = {}
        self.declared_outer: dict[str, dict[str, str]] = {}  # function -> name -> how
        self.ignored: set[tuple[int, int]] = set()
        self.qualifier_before: dict[tuple[int, int], Node] = {}  # name -> expression
        self.ignored_inside: list[Node] = []  # no reference inside these (use declarations)
        self.scope_nodes: list[Node] = []  # lambdas, comprehensions: their own local scope
        self.inner: dict[tuple[int, int], dict[str, str]] = {}  # such a scope -> name -> type
        self.regions = _Spans()
        self.package = ""
        self.grouped: Any = None  # the tags query read by matches (its patterns' settings)

    def run(self) -> FileTags:
        from tree_sitter import QueryCursor

        for start, _, written in namespaces(self.language, self.source):
            if written.startswith(b"namespace"):  # no use of the macro's first letters
                self.ignored.add((start, start + len(b"namespace")))

        queries = tags_queries(self.language)
        self.grouped = queries.grouped
        for pattern, captures in QueryCursor(queries.grouped).matches(self.root):
            self._take(pattern, captures)
        self._take_flat(QueryCursor(queries.flat).captures(self.root))
        definitions, spans = self._definitions()
        scopes = self._scopes(spans)
        self._outer_declarations(spans)
        self._class_scopes(spans)
        for index, node in self.pending:  # types that depend on a function's locals
            chain = spans.chain(node.start_byte)
            typed = self._substitute(self._type_text(node), node.start_point[0] + 1, chain, scopes)
            definitions[index] = replace(definitions[index], declared_type=typed)
        references = self._references(spans, scopes)
        references += self._macro_references(spans)
        imports, import_refs = self._imports(definitions, spans)
        references = sorted([*references, *import_refs], key=_LINE_AND_COLUMN)
        return FileTags(
            self.path, self.language, tuple(definitions), tuple(references), imports, self.package
        )

    # --- collecting captures -------------------------------------------------------------

    def _take(self, pattern: int, captures: dict[str, list[Node]]) -> None:
        names = captures.get("name")
        if "annotated" in captures:
            self._annotate(captures)
        else:
            for key, nodes in captures.items():
                group, _, kind = key.partition(".")
                if group == "reference":
                    name = names[0] if names else nodes[0]  # without @name, the node is it
                    qualifier = captures.get("qualifier")
                    typed = captures.get("receiver.type")
                    before = captures.get("qualifier.before")
                    if before:  # the qualifier is the expression's text before the name
                        self.qualifier_before[(name.start_byte, name.end_byte)] = before[0]
                    self._add_reference(
                        nodes[0], kind, name, qualifier[0] if qualifier else None,
                        typed[0] if typed else None,
                    )  # fmt: skip
                elif group == "definition" and kind and names:
                    self._add_definition(nodes[0], kind, names[0], pattern, captures)
                elif key == "scope" and names:
                    self._add_definition(nodes[0], "scope", names[0], pattern, captures)
        if "import" in captures or "import.module" in captures:
            first = _first_of(captures)
            statement = first("import") or first("import.module")
            self.imports.append(
                (statement, first("import.module"), first("import.name"), first("import.alias"),
                 "import.star" in captures)
            )  # fmt: skip
            if "import.default" in captures:
                self.default_imports.add(captures["import.default"][0].start_byte)
        elif "export.name" in captures or "export.statement" in captures:
            self._export(pattern, captures)
        defined = captures.get("local.definition")
        if defined:
            local_type = self._made_by((captures.get("local.type") or [None])[0])
            entered = captures.get("local.entered")
            if entered:  # `with make() as x`: what make() gives entered
                local_type = entered[0]
                self.entered[entered[0].id] = "aenter(" if _under_async(entered[0]) else "enter("
            iterable = (captures.get("local.iterable") or [None])[0]
            self.locals.extend((node, local_type, iterable) for node in defined)
        closure = captures.get("local.implicit")
        if closure and "local.iterable" in captures:  # `items.map { $0.price() }`
            names = str(self.grouped.pattern_settings(pattern).get("implicit") or "").split()
            iterable = captures["local.iterable"][0]
            self.locals.extend((node, None, iterable) for node in _uses(closure[0], names))
        if len(captures) > 2:
            self._take_flat({k: v for k, v in captures.items() if k in _FLAT_EXTRAS})

    def _export(self, pattern: int, captures: dict[str, list[Node]]) -> None:
        """What a JavaScript or TypeScript module exports of its own (`self.exported`), and
        its CommonJS variables (`exports.STATES = {…}`)."""
        first = _first_of(captures)
        statement = first("export.statement") or first("export.default") or first("export.named")
        name, value, member = first("export.name"), first("export.value"), first("export.member")
        named = first("export.as")
        if statement is None:
            return
        if name is not None:  # `export default X`, `export { X as Y }`
            binding = "default" if "export.default" in captures else self._exports(named or name)
            self.exported.append((statement, name, binding))
        elif value is not None:  # `module.exports = …`
            while value.type == "assignment_expression":  # `module.exports = exports = X`
                right = value.child_by_field_name("right")
                if right is None:
                    return
                value = right
            if value.type == "identifier":
                self.exported.append((statement, value, "module.exports"))
            elif value.type in _NAMED_VALUES and value.child_by_field_name("name") is not None:
                # `module.exports = function build() {…}`, `= class Store {…}`: that binding
                name = value.child_by_field_name("name")
                self.exported.append((statement, name, "module.exports"))
            elif _required(value, self._text) is not None:  # `module.exports = require("./y")`
                self.required.append((statement, value, "module.exports"))
            elif value.type == "object":  # `{ X, Y: X }`
                for item in value.named_children:
                    if item.type == "shorthand_property_identifier":
                        self.exported.append((statement, item, self._exports(item)))
                    elif item.type == "pair":
                        key, held = (
                            item.child_by_field_name("key"),
                            item.child_by_field_name("value"),
                        )
                        if key is not None and held is not None and held.type == "identifier":
                            self.exported.append((statement, held, self._exports(key)))
        elif member is not None and named is not None:  # `exports.Y = …`
            if member.type == "identifier":
                self.exported.append((statement, member, self._exports(named)))
            elif _required(member, self._text) is not None:  # `exports.Y = require("./y")`
                self.required.append((statement, member, self._exports(named)))
            elif (
                member.type in _EXPORTED_VALUES
                and statement.parent is not None
                and (statement.parent.type == "program")
            ):  # a module-level variable, named by the assignment's target
                left = first("export.left")
                if left is not None:
                    self._add_definition(statement, "variable", left, pattern, {})
                    self.ignored.add((named.start_byte, named.end_byte))

    def _exports(self, node: Node) -> str:
        """The binding a module's export under this name is (`default`, `exports.Y`): an
        import of module "" binds it (`memserver.graph.resolve`)."""
        text = self._text(node)
        return text if text == "default" else f"exports.{text}"

    def _annotate(self, captures: dict[str, list[Node]]) -> None:
        """A pattern naming a definition by @annotated: a type guess or a decorator."""
        node = captures["annotated"][0]
        key = (node.start_byte, node.end_byte)
        for guess in captures.get("declared.type", ())[:1]:
            self.guessed.setdefault(key, guess)
        for decorator in captures.get("decorator", ())[:1]:
            held = self.decorators.get(key)
            if held is None or decorator.start_byte < held.start_byte:
                self.decorators[key] = decorator

    def _take_flat(self, captures: dict[str, list[Node]]) -> None:
        """Patterns with a single capture: the nodes of each capture name, in one go."""
        for key, nodes in captures.items():
            group, _, kind = key.partition(".")
            if group in ("reference", "member"):  # kept apart: grouped matches win
                self.bare.append((_REFERENCE_KINDS.get(kind, "other"), group == "member", nodes))
            elif key == "ignore":
                self.ignored.update((n.start_byte, n.end_byte) for n in nodes)
            elif key == "ignore.inside":
                self.ignored_inside.extend(nodes)
            elif key == "local.definition":
                self.locals.extend((n, None, None) for n in nodes)
            elif key == "local.scope":
                self.scope_nodes.extend(nodes)
            elif key in ("local.global", "local.nonlocal"):
                self.outer_names.extend((n, key[6:]) for n in nodes)
            elif key == "local.constructor":
                self.constructor_params.extend(nodes)
            elif key == "returned":
                self.returned.extend(nodes)
            elif key == "package" and nodes and not self.package:
                self.package = _clean(self._text(min(nodes, key=lambda n: n.start_byte)))

    def _add_definition(
        self, node: Node, kind: str, name: Node, pattern: int, captures: dict[str, list[Node]]
    ) -> None:
        key = (name.start_byte, name.end_byte)
        held = self.defs.get(key)
        width = node.end_byte - node.start_byte
        if held is not None:
            held_width = held.node.end_byte - held.node.start_byte
            if (held_width, -held.pattern) >= (width, -pattern):
                return
        first = _first_of(captures)
        self.defs[key] = _Def(
            node, kind, name, pattern, first("receiver"), first("doc"),
            self._made_by(first("declared.type")), first("declared.from"),
            "declaration" in captures,
        )  # fmt: skip

    def _made_by(self, node: Node | None) -> Node | None:
        """A type's node, unless it is the callee of a call on an index that is no class's
        (`Ruler[T]()` makes a Ruler; `HANDLERS[name](event)` makes what a handler returns),
        or one of two different calls a conditional chooses between (`A() if c else B()`)."""
        if node is None or node.parent is None:
            return node
        call = node.parent
        if call.type == "subscript":
            last = self._text(node).rsplit(".", 1)[-1]
            if not last[:1].isupper() or (len(last) > 1 and last.isupper()):
                return None
            call = call.parent
        choice = call.parent if call is not None else None
        if choice is None or choice.type != "conditional_expression":
            return node
        branches = [choice.named_children[0], choice.named_children[-1]]
        made = [b.child_by_field_name("function") for b in branches if b.type == "call"]
        if len(made) == 2 and made[0] and made[1] and self._text(made[0]) != self._text(made[1]):
            return None
        return node

    def _add_reference(
        self, node: Node, kind: str, name: Node, qualifier: Node | None, typed: Node | None
    ) -> None:
        kind = _REFERENCE_KINDS.get(kind, "other")
        key = (name.start_byte, name.end_byte)
        held = self.refs.get(key)
        if held is not None:
            typed = typed or held.typed
            order, held_order = _REFERENCE_ORDER[kind], _REFERENCE_ORDER[held.kind]
            same = order == held_order and (held.qualifier is not None or qualifier is None)
            if held_order < order or same:
                held.typed = typed
                return
            qualifier = qualifier or held.qualifier
        self.refs[key] = _Ref(kind, name, qualifier, node, typed)

    # --- definitions -----------------------------------------------------------------------

    def _definitions(self) -> tuple[list[Definition], _Spans]:
        self._guess_returns()
        entries = sorted(
            self.defs.values(), key=lambda d: (d.node.start_byte, -d.node.end_byte, d.pattern)
        )
        stack: list[tuple[int, str, str]] = []  # (end byte, qualified, kind) of open containers
        out: list[Definition] = []
        fields: set[str] = set()
        spans = _Spans()
        for entry in entries:
            while stack and stack[-1][0] < entry.node.end_byte:
                stack.pop()
            written = _clean(self._text(entry.name_node))
            if " " in written and self.language in _DECLARATORS:
                written = _last_word(written)  # a parse recovering took a declaration for one
            if entry.receiver is not None:
                written = f"{_clean(self._text(entry.receiver))}.{written}"
            kind = entry.kind
            outer = stack[-1] if stack else (0, "", "")
            if kind == "field":  # `self.x = …` in a method belongs to the class
                outer = next((s for s in reversed(stack) if s[2] in _CONTAINERS), (0, "", ""))
                if not outer[1]:
                    continue
            qualified = f"{outer[1]}.{written}" if outer[1] else written
            if kind == "function" and outer[2] in _CONTAINERS:
                kind = "method"
            if kind == "field":
                if qualified in fields:
                    continue  # set again elsewhere: the first assignment declares it
                fields.add(qualified)
            else:
                stack.append((entry.node.end_byte, qualified, kind))
            if kind == "scope":  # qualifies and encloses, but is not itself a definition
                scope = Definition(self.path, self.language, written, qualified, "scope", "", 0, 0)
                spans.add(entry.node.start_byte, entry.node.end_byte, scope)
                continue
            definition = Definition(
                path=self.path,
                language=self.language,
                name=written.rsplit(".", 1)[-1],
                qualified=qualified,
                kind=kind,
                signature=self._signature(entry.node, entry.name_node),
                start_line=entry.node.start_point[0] + 1,
                end_line=max(entry.node.start_point[0] + 1, end_line(entry.node)),
                parent=qualified.rpartition(".")[0],
                doc=self._doc(entry),
                name_line=entry.name_node.start_point[0] + 1,
                declared_type=self._declared(entry),
                declaration=entry.declaration,
            )
            guess = self.guessed.get((entry.name_node.start_byte, entry.name_node.end_byte))
            later = entry.declared_from if entry.declared is None else None
            if not definition.declared_type and (later or guess) is not None:
                self.pending.append((len(out), later or guess))
            out.append(definition)
            if kind != "field":
                spans.add(entry.node.start_byte, entry.node.end_byte, definition)
        return out, spans

    def _guess_returns(self) -> None:
        """Each function's last `return` (a callee or a local) guesses its return type."""
        functions = _Spans()
        for d in sorted(self.defs.values(), key=lambda d: (d.node.start_byte, -d.node.end_byte)):
            functions.add(d.node.start_byte, d.node.end_byte, d if d.kind in _FUNCTIONS else None)
        for node in sorted(self.returned, key=lambda n: n.start_byte):
            chain = functions.chain(node.start_byte)
            if chain:
                name = chain[0].name_node
                self.guessed[(name.start_byte, name.end_byte)] = node  # later ones win

    def _declared(self, entry: _Def) -> str:
        """The declared type; without one (or `-> None`), a decorated function's value is its
        decorator's result ("@click.group()"); guesses (a returned constructor or local)
        come later."""
        key = (entry.name_node.start_byte, entry.name_node.end_byte)
        declared = self._type_text(entry.declared)
        decorator = self.decorators.get(key)
        if decorator is not None and declared in ("", "None"):  # a declared return type wins
            return "@" + self._type_text(decorator)
        return declared  # guesses are finished with the locals

    def _signature(self, node: Node, name: Node) -> str:
        first, last = node.start_point[0], name.start_point[0]
        rows = [self.lines[r].strip() for r in range(first, min(last, first + 8) + 1)]
        while len(rows) > 1 and rows[0].startswith(("@", "#[", "[")):
            rows.pop(0)  # decorators, attributes and annotations above the name
        return " ".join(" ".join(rows).split())[:200]

    def _doc(self, entry: _Def) -> str:
        if entry.doc is not None:
            return _first_line(_string_body(self._text(entry.doc)))
        return self._comment_above(entry.node)

    def _comment_above(self, node: Node) -> str:
        """The first line of the comment block directly above a definition (or its wrapper)."""
        row = node.start_point[0]
        while node.parent is not None and node.parent.start_point[0] == row:
            if node.prev_named_sibling is not None:
                break
            node = node.parent  # export_statement, decorated_definition, type_declaration…
        block: list[Node] = []
        sibling = node.prev_named_sibling
        while sibling is not None and "comment" in sibling.type:
            if end_line(sibling) < (block[-1] if block else node).start_point[0]:
                break  # a blank line between
            row, column = sibling.start_point
            if self.lines[row][:column].strip():
                break  # a trailing comment of the line above, not a doc comment
            block.append(sibling)
            sibling = sibling.prev_named_sibling
        if not block:
            return ""
        return _first_line(self._text(block[-1]))

    # --- references ------------------------------------------------------------------------

    def _references(
        self, spans: _Spans, scopes: dict[str, dict[str, list[tuple[int, str]]]]
    ) -> list[Reference]:
        named = {
            (d.name_node.start_byte, d.name_node.end_byte)
            for d in self.defs.values()
            if d.kind != "scope"  # `impl Shape for Circle` uses Circle
        }
        skipped = named | self.ignored
        blocked: _Spans | None = None
        if self.ignored_inside:
            blocked = _Spans()
            for node in sorted(self.ignored_inside, key=lambda n: (n.start_byte, -n.end_byte)):
                blocked.add(node.start_byte, node.end_byte, True)
        # names bound anywhere in a function or a lambda: only these can be locals
        local_names = {n for bound in scopes.values() for n in bound}
        local_names.update(n for bound in self.inner.values() for n in bound)
        local_names.update(n for bound in self._class_locals.values() for n in bound)
        source, text_of = self.source, self._text
        path = self.path
        out: list[Reference] = []
        for key, ref in self.refs.items():
            if key in skipped or (blocked is not None and blocked.chain(key[0])):
                continue
            written = source[key[0] : key[1]].decode("utf-8", "replace")
            if not written.isidentifier():
                written = _clean(written)
            prefix, _, name = written.rpartition(".")
            if not name:
                continue
            qualifier = prefix  # a qualified name node: Shop.Item, geometry::Circle
            if ref.qualifier is not None:
                qualifier = " ".join(text_of(ref.qualifier).split())[:_MAX_QUALIFIER]
            before = self.qualifier_before.get(key)
            if before is not None:
                qualifier = _before_member(
                    source[before.start_byte : key[0]].decode("utf-8", "replace")
                )
            if not qualifier and name in local_names and ref.kind != "inherit":
                chain = spans.chain(key[0])
                if self._is_local(name, chain, scopes) or any(
                    name in self.inner.get(r, {}) for r in self.regions.chain(key[0])
                ):
                    continue
            else:
                chain = spans.chain(key[0])
            line, column = self._position(ref.name_node)
            enclosing = chain[0].qualified if chain else ""
            typed = ""
            if ref.typed is not None:
                typed = self._substitute(self._type_text(ref.typed), line, chain, scopes)
            if qualifier and not typed:
                inner = None
                if self.inner:  # `$o->owner`: $o
                    head = dotted(qualifier).split(".", 1)[0].split("[", 1)[0]
                    inner = self._region_type(head, key[0])
                if inner is None:
                    typed = self._head_type(qualifier, line, chain, scopes)
                else:
                    typed = self._in_region(qualifier, inner, line, chain, scopes)
            out.append(
                make_reference(path, name, ref.kind, line, column, enclosing, qualifier, typed)
            )
        out += self._bare_references(spans, scopes, skipped, blocked, local_names)
        return out

    def _macro_references(self, spans: _Spans) -> list[Reference]:
        """The uses of macros the parse did not see (`macros.macro_uses`)."""
        out: list[Reference] = []
        row, counted = 0, 0  # the spans come in order: the lines before each, counted once
        for start, end in macro_uses(self.language, self.source):
            row += self.source.count(b"\n", counted, start)
            counted = start
            line_start = self.source.rfind(b"\n", 0, start) + 1
            column = len(self.source[line_start:start].decode("utf-8", "replace"))
            name = self.source[start:end].decode("ascii")
            innermost = spans.innermost(start)
            enclosing = innermost.qualified if innermost is not None else ""
            out.append(make_reference(self.path, name, "other", row + 1, column, enclosing, "", ""))
        return out

    def _bare_references(
        self,
        spans: _Spans,
        scopes: dict[str, dict[str, list[tuple[int, str]]]],
        skipped: set[tuple[int, int]],
        blocked: _Spans | None,
        local_names: set[str],
    ) -> list[Reference]:
        """References from single-capture patterns (mostly bare identifiers): no qualifier,
        no type; a name a grouped pattern also caught was taken there."""
        out: list[Reference] = []
        seen = self.refs.keys() | skipped
        source, path, inner, regions = self.source, self.path, self.inner, self.regions
        text, isascii = self.text, self.ascii
        order = _REFERENCE_ORDER
        kinds: dict[tuple[int, int], tuple[Node, str, bool]] = {}
        is_local: dict[tuple[int, str], bool] = {}  # (innermost definition, name)
        hold = kinds.setdefault
        for kind, member, nodes in self.bare:
            rank = order[kind]
            for node in nodes:
                key = (node.start_byte, node.end_byte)
                entry = (node, kind, member)
                held = hold(key, entry)
                if held is not entry and (rank < order[held[1]] or (member and not held[2])):
                    kinds[key] = (node, kind, member or held[2])
        for key, (node, kind, member) in kinds.items():
            if key in seen or (blocked is not None and blocked.chain(key[0])):
                continue
            if isascii:
                name = text[key[0] : key[1]]
            else:
                name = source[key[0] : key[1]].decode("utf-8", "replace")
            prefix = ""
            if not name.isidentifier():  # a qualified name node: Shop.Item
                prefix, _, name = _clean(name).rpartition(".")
                if not name:
                    continue
            if member:  # qualified by its parent's text before it: `self.client` . send
                start = node.parent.start_byte
                if isascii:
                    head = text[start : key[0]]
                else:
                    head = source[start : key[0]].decode("utf-8", "replace")
                prefix = _before_member(head)
            head = prefix.partition(".")[0].partition("->")[0].partition("[")[0] if prefix else ""
            if not prefix and name in local_names and kind != "inherit":
                at = spans.index(key[0])
                local = is_local.get((at, name))
                if local is None:
                    local = is_local[at, name] = self._is_local(name, spans.chain_at(at), scopes)
                if local or (inner and any(name in inner.get(r, {})
                                           for r in regions.chain(key[0]))):  # fmt: skip
                    continue
                chain = spans.chain_at(at)
            elif member and head in local_names:
                chain = spans.chain(key[0])  # the head's type is a local's
            else:
                innermost = spans.innermost(key[0])  # only the enclosing definition matters
                chain = [innermost] if innermost is not None else []
            if isascii:
                row, column = node.start_point
                line = row + 1
            else:
                line, column = self._position(node)
            enclosing = chain[0].qualified if chain else ""
            typed = ""
            if member and head in local_names:
                typed = self._head_type(prefix, line, chain, scopes)
                inner_type = self._region_type(head, key[0]) if inner else None
                if inner_type is not None:
                    typed = self._in_region(prefix, inner_type, line, chain, scopes)
            out.append(make_reference(path, name, kind, line, column, enclosing, prefix, typed))
        return out

    def _in_region(
        self, qualifier: str, inner: str, line: int, chain: list[Definition],
        scopes: dict[str, Any],
    ) -> str:  # fmt: skip
        """The receiver type of a member on `qualifier`, whose head a lambda or comprehension
        binds as of type `inner`, as `_head_type` gives a typed local's: for a plain chain
        (`r`, `r.owner`) the head's type (resolution walks the chain from it), for an index
        (`r[0]`) an element of it, for a chain with calls or indexes (`r.first().owner`) the
        whole chain around it ("(Row).first().owner")."""
        if not inner:
            return ""
        typed = self._substitute(inner, line, chain, scopes)
        qualifier = dotted(qualifier)
        rest = qualifier[len(qualifier.split(".", 1)[0].split("[", 1)[0]) :]
        if not rest or (
            rest.startswith(".") and all(p.isidentifier() for p in rest[1:].split("."))
        ):
            return typed
        if _INDEXED.match(qualifier):
            return f"item({typed})"
        return f"({typed}){rest}" if rest.startswith(".") else ""

    def _outer_declarations(self, spans: _Spans) -> None:
        """Which names each function declares `global` or `nonlocal` (at the module's level
        such a statement changes nothing)."""
        for node, how in self.outer_names:
            function = next((d for d in spans.chain(node.start_byte) if d.kind in _FUNCTIONS),
                            None)  # fmt: skip
            if function is not None:
                self.declared_outer.setdefault(function.qualified, {})[self._text(node)] = how

    def _class_scopes(self, spans: _Spans) -> None:
        self._class_locals: dict[str, set[str]] = {}
        for node in self.constructor_params:
            owner = next((d for d in spans.chain(node.start_byte) if d.kind in CLASS_KINDS), None)
            if owner is not None:
                self._class_locals.setdefault(owner.qualified, set()).add(self._text(node))

    def _scopes(self, spans: _Spans) -> dict[str, dict[str, list[tuple[int, str]]]]:
        """Per function (qualified): its local names, each with (line, type text) bindings."""
        scopes: dict[str, dict[str, list[tuple[int, str]]]] = {}
        for scope in sorted(self.scope_nodes, key=lambda n: (n.start_byte, -n.end_byte)):
            self.regions.add(scope.start_byte, scope.end_byte, (scope.start_byte, scope.end_byte))
        for node, type_node, iterable in self.locals:
            typed = (
                self._iterated(iterable) if iterable is not None else self._local_text(type_node)
            )
            region = self.regions.chain(node.start_byte)
            if region:  # a lambda's parameter, a comprehension's variable
                bound = self.inner.setdefault(region[0], {})
                bound[self._text(node)] = typed or bound.get(self._text(node), "")
                continue
            for definition in spans.chain(node.start_byte):
                if definition.kind in _FUNCTIONS:
                    bindings = scopes.setdefault(definition.qualified, {})
                    at = node.start_point[0] + 1
                    bindings.setdefault(self._text(node), []).append((at, typed))
                    if typed and _borrowed(type_node, iterable):
                        self.borrowed.add((definition.qualified, self._text(node), at))
                    break
        return scopes

    def _iterated(self, iterable: Node) -> str:
        """What a local takes from `iterable`: an element of it for a loop's variable
        (`sorted(items)`'s are items'), an item for an index's value (`tasks[key]`)."""
        if iterable.parent is not None and iterable.parent.type == "subscript":
            return f"item({self._type_text(iterable)})"
        return f"iter({self._type_text(self._copied(iterable) or iterable)})"

    def _local_text(self, type_node: Node | None) -> str:
        typed = self._type_text(type_node)
        wrapper = self.entered.get(type_node.id) if typed and type_node is not None else None
        return f"{wrapper}{typed})" if wrapper else typed

    def _head_type(
        self,
        qualifier: str,
        line: int,
        chain: list[Definition],
        scopes: dict[str, dict[str, list[tuple[int, str]]]],
    ) -> str:
        """The declared type of the qualifier's first name, if it is a typed local (the
        latest binding at or before the line); of a chain with more than names after it,
        the whole chain around that type (`s.first()` with `s: Store`: "(Store).first()",
        `s.items[0]`: "(Store).items[0]", which no member's name continues)."""
        qualifier = dotted(qualifier)  # `$s->first()`, `p->items[0]` as `s.first()` is
        head = qualifier.split(".", 1)[0]
        indexed = _INDEXED.match(qualifier) if "[" in qualifier else None
        if indexed is not None:  # `tokens[i].block()`: an item of a typed local
            typed = self._local_type(indexed.group(1), line, chain, scopes)
            return f"item({self._substitute(typed, line, chain, scopes)})" if typed else ""
        if not head.lstrip("$").isidentifier():
            return ""
        typed = self._local_type(head, line, chain, scopes)
        rest = qualifier[len(head) :]
        if (
            typed
            and rest.startswith(".")
            and not all(part.isidentifier() for part in rest[1:].split("."))
        ):
            return self._substitute(qualifier, line, chain, scopes)
        return self._substitute(typed, line, chain, scopes) if typed else ""

    def _region_type(self, name: str, byte: int) -> str | None:
        """The type of a name bound in a lambda or comprehension around `byte` (None when
        no such scope binds it)."""
        for region in self.regions.chain(byte):
            bound = self.inner.get(region, {})
            if name in bound:
                return bound[name]
        return None

    def _local_type(
        self, name: str, line: int, chain: list[Definition], scopes: dict[str, Any],
        depth: int = 3,
    ) -> str:  # fmt: skip
        """The type of the local `name` at `line`: its latest typed binding there (one that
        only copies a value types it only where no other does, `_borrowed`). A binding made
        from the name itself (`url = url.copy_with(…)`) is not yet made on its own line (its
        right side is read first), and after it is the earlier binding's type carried on.
        A name a nested function uses but does not bind is an enclosing function's, bound
        whenever the nested one runs: its latest typed binding anywhere there. One it
        declares `nonlocal` is so until it binds it itself; one it declares `global` is typed
        by its own bindings only."""
        closure = False  # past a function: the bindings around it hold at any line
        outer = self.declared_outer
        for definition in chain:
            how = outer.get(definition.qualified, {}).get(name) if outer else None
            bindings: list[tuple[int, str]] = scopes.get(definition.qualified, {}).get(name) or []
            if how is not None:  # its own bindings before the line, else the outer name's
                own = [(at, t) for at, t in bindings if t and at < line]
                if own:
                    return self._binding_type(name, *own[-1], chain, scopes, depth)
                if how == "global":  # the module's: no function's binding types it
                    return ""
                closure = True
                continue
            if not bindings:
                closure = closure or definition.kind in _FUNCTIONS
                continue
            before: list[tuple[int, str]] = [
                (at, t) for at, t in bindings if t and (
                    _head(t) != name if closure  # (a rebinding from itself: one of the others)
                    else at < line or (at == line and _head(t) != name))
            ]  # fmt: skip
            own = [(at, t) for at, t in before if (definition.qualified, name, at) not in
                   self.borrowed]  # fmt: skip
            if not (own or before):
                return ""
            return self._binding_type(name, *(own or before)[-1], chain, scopes, depth)
        return ""

    def _binding_type(
        self, name: str, at: int, typed: str, chain: list[Definition], scopes: dict[str, Any],
        depth: int,
    ) -> str:  # fmt: skip
        """A binding's type: of one made from the name itself (`url = url.copy_with(…)`),
        its binding before, at most `depth` back."""
        if _head(typed) != name:
            return typed
        return self._substitute(typed, at, chain, scopes, depth - 1) if depth else ""

    def _substitute(
        self, text: str, line: int, chain: list[Definition], scopes: dict[str, Any], depth: int = 3
    ) -> str:
        """A type expression whose head is a typed local, rewritten around the local's type:
        `formatter = ctx.make_formatter()` with `ctx: Context` gives "(Context).make_formatter";
        a bare local gives its own type."""
        for wrapper, end in _WRAPPERS:  # `iter(items)`, `enter(self.make)`: around what
            if text.startswith(wrapper) and text.endswith(end):  # they hold
                inner = text[len(wrapper) : -len(end)]
                return f"{wrapper}{self._substitute(inner, line, chain, scopes, depth)}{end}"
        if text.startswith("(item("):  # `(item(tasks)).scope`: tasks' own type inside
            close = text.find("))") + 1  # (the name inside holds no parenthesis)
            if close > 0:
                inner = self._substitute(text[1:close], line, chain, scopes, depth)
                return f"({inner}){text[close + 1 :]}"
        head = text.split(".", 1)[0].split("(", 1)[0]
        if depth <= 0 or not head.lstrip("$").isidentifier():
            return text
        typed = self._local_type(head, line, chain, scopes, depth)
        if not typed or typed == text:
            return text
        typed = self._substitute(typed, line, chain, scopes, depth - 1)
        rest = text[len(head) :]
        if not rest:
            return typed
        return f"({typed}){rest}" if rest.startswith(".") else text

    def _is_local(
        self, name: str, chain: list[Definition], scopes: dict[str, dict[str, Any]]
    ) -> bool:
        if (
            chain
            and chain[0].kind in CLASS_KINDS
            and name in self._class_locals.get(chain[0].qualified, ())
        ):
            return True  # a constructor parameter used in the class header or an initializer
        outer = self.declared_outer
        for d in chain:
            if d.kind not in _FUNCTIONS:
                continue
            how = outer.get(d.qualified, {}).get(name) if outer else None
            if how == "global":  # the module's name, whatever the functions around bind
                return False
            if how is None and name in scopes.get(d.qualified, ()):
                return True  # (`nonlocal`: an enclosing function's, looked up next)
        return False

    def _type_text(self, node: Node | None) -> str:
        if node is None:
            return ""
        text = " ".join(self._text(node).split())[:_MAX_QUALIFIER]
        if self.language != "python":
            return text
        if text in _COPIES:
            parent = node.parent
            copied = self._copied(parent) if parent is not None else None
            if copied is not None and parent.child_by_field_name("function") == node:
                return f"list[iter({self._type_text(copied)})]"  # `list(self._fields())`
        item = _ITEM_MEMBER.match(text) if "[" in text else None
        if item is not None and not item.group(1).rpartition(".")[2][:1].isupper():
            return f"(item({item.group(1)})){item.group(2)}"  # `tasks[key].scope` (not `A[T].x`)
        return text

    def _copied(self, call: Node) -> Node | None:
        """What a copy of a collection copies: the argument of Python's `list(x)`,
        `sorted(x)`, `tuple(x)`… (its elements are x's), or None for any other node."""
        if self.language != "python" or call.type != "call":
            return None
        function = call.child_by_field_name("function")
        arguments = call.child_by_field_name("arguments")
        if function is None or arguments is None or self._text(function) not in _COPIES:
            return None
        given = [a for a in arguments.named_children if a.type not in ("keyword_argument",
                                                                        "comment")]  # fmt: skip
        if len(given) != 1 or given[0].type in ("list_splat", "dictionary_splat",
                                                 "generator_expression"):  # fmt: skip
            return None
        return given[0]  # (`sorted(x, key=…)` too)

    # --- imports ---------------------------------------------------------------------------

    def _imports(
        self, definitions: list[Definition], spans: _Spans
    ) -> tuple[tuple[Import, ...], list[Reference]]:
        seen: set[tuple[str, str, str, int]] = set()
        imports: list[Import] = []
        refs: list[Reference] = []
        starred = {statement.id for statement, _m, _n, _a, star in self.imports if star}
        aliased = {
            (statement.id, name.start_byte)
            for statement, _m, name, alias, _s in self.imports
            if alias is not None and name is not None
        }
        # `import a.b.C` captured segment by segment: the last one is the name; with
        # selectors (`import a.b.{C, D}`) the path segments name nothing
        last_segment: dict[int, int] = {}
        selected: set[int] = set()
        segmented = {
            statement.id for statement, module, _n, _a, _s in self.imports
            if module is not None and module.id == statement.id
        }  # fmt: skip
        for statement, _m, name, _a, _s in self.imports:
            if name is None or statement.id not in segmented:
                continue
            if name.parent is not None and name.parent.id == statement.id:
                last_segment[statement.id] = max(
                    last_segment.get(statement.id, -1), name.start_byte
                )
            else:
                selected.add(statement.id)
        for statement, module, name, alias, star in self.imports:
            if (
                name is not None
                and statement.id in segmented
                and name.parent is not None
                and name.parent.id == statement.id
                and (statement.id in selected or name.start_byte != last_segment[statement.id])
            ):
                continue
            if not star and statement.id in starred:
                continue  # `import a.b.*` also matches the pattern for `import a.b.C`
            if alias is None and name is not None and (statement.id, name.start_byte) in aliased:
                continue  # …and `import a.b.C as D` the one for `import a.b.C`
            name_text = _clean(self._text(name)) if name is not None else ""
            module_text = ""
            if module is not None:  # the name cut off only where the module's text holds it
                within = name is not None and module.start_byte <= name.start_byte < module.end_byte
                module_text = _module_text(self._text(module), name_text if within else "")
            alias_text = self._text(alias).strip() if alias is not None else ""
            default = (
                name is None and alias is not None and alias.start_byte in self.default_imports
            )
            if default:
                name_text = "default"
            line = statement.start_point[0] + 1
            anchor = alias if default else name
            if anchor is not None:
                line = anchor.start_point[0] + 1
            key = (module_text, name_text, alias_text, line)
            if key in seen or not (module_text or name_text):
                continue
            seen.add(key)
            chain = spans.chain(statement.start_byte)
            enclosing = chain[0].qualified if chain else ""
            imports.append(
                Import(self.path, module_text, name_text, alias_text, line, star, enclosing)
            )
            if default and anchor is not None:  # `import Store from "./shop"`: ./shop's default
                ref_line, column = self._position(anchor)
                refs.append(Reference(self.path, alias_text, "import", ref_line, column,
                                      enclosing, module_text))  # fmt: skip
            elif name is None and module is not None and not star:
                refs += self._module_reference(module, module_text, enclosing)
            if name is not None and name_text and not star:
                ref_line, column = self._position(name)
                refs.append(
                    Reference(
                        self.path, name_text.rsplit(".", 1)[-1], "import", ref_line, column,
                        enclosing, module_text,
                    )
                )  # fmt: skip
        for statement, name, binding in self.exported:  # of this module: module ""
            enclosing = self._around(statement, spans)
            line = name.start_point[0] + 1
            imports.append(Import(self.path, "", self._text(name), binding, line, False, enclosing))
        for statement, call, binding in self.required:  # a module required whole, as `binding`
            enclosing = self._around(statement, spans)
            module = _required(call, self._text) or ""
            imports.append(
                Import(self.path, module, "", binding, call.start_point[0] + 1, False, enclosing)
            )
        return tuple(sorted(imports, key=lambda i: i.line)), refs

    def _around(self, statement: Node, spans: _Spans) -> str:
        """The definition a statement sits in, not one it is itself (`module.exports =
        function build() {…}` defines `build` and sits at the top level)."""
        own = (statement.start_byte, statement.end_byte)
        for start, end, definition in spans.spans_around(statement.start_byte):
            if (start, end) != own:
                return str(definition.qualified)
        return ""

    def _module_reference(self, module: Node, text: str, enclosing: str) -> list[Reference]:
        """An import of a whole module is a reference to it (a definition in Elixir, C#,
        Ruby…; in Python or Go nothing resolves it)."""
        cleaned = _clean(text)
        if "/" in cleaned:  # a path names its file: `./lib/parse.js` is parse, in "./lib/"
            spec = " ".join(text.split()).strip(_QUOTES).rstrip("/")
            qualifier, name = spec.rpartition("/")[0] + "/", module_stem(spec, self.language)
        else:
            qualifier, _, name = cleaned.rpartition(".")
        written = self._text(module)
        folder = written.rstrip(_QUOTES + "/ \t").rfind("/") if "/" in cleaned else -1
        offset = written.find(name, folder + 1) if folder >= 0 else written.rfind(name)
        if not name or not name.isidentifier() or offset < 0:
            return []
        line, column = self._position(module)
        if "\n" not in written[:offset]:
            column += len(written[:offset])
        return [Reference(self.path, name, "import", line, column, enclosing, qualifier)]

    # --- helpers -----------------------------------------------------------------------------

    def _text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def _position(self, node: Node) -> tuple[int, int]:
        """1-based line and 0-based character column of a node's start."""
        row, byte_column = node.start_point
        if self.ascii:
            return row + 1, byte_column
        line_start = node.start_byte - byte_column
        head = self.source[line_start : node.start_byte]
        column = byte_column if head.isascii() else len(head.decode("utf-8", "replace"))
        return row + 1, column


class _Spans:
    """Definitions (or other payloads) by byte span, for "which of them enclose this byte"
    (innermost first).

    Items come in start order and nest (they are syntax nodes), so each knows its parent and
    a lookup is one bisection plus a climb."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._items: list[tuple[int, int, Any, int]] = []

    def add(self, start: int, end: int, definition: Any) -> None:
        parent = len(self._items) - 1
        while parent >= 0 and not self._items[parent][1] >= end:
            parent = self._items[parent][3]
        self._starts.append(start)
        self._items.append((start, end, definition, parent))

    def innermost(self, byte: int) -> Any:
        """The innermost payload enclosing `byte`, or None."""
        index = bisect.bisect_right(self._starts, byte) - 1
        while index >= 0:
            start, end, definition, parent = self._items[index]
            if start <= byte < end and definition is not None:
                return definition
            index = parent
        return None

    def index(self, byte: int) -> int:
        """The place of the innermost payload enclosing `byte` (-1: none), for `chain_at`."""
        index = bisect.bisect_right(self._starts, byte) - 1
        while index >= 0:
            start, end, definition, parent = self._items[index]
            if start <= byte < end and definition is not None:
                return index
            index = parent
        return -1

    def chain_at(self, index: int) -> list[Any]:
        """`chain` from the place `index` gave."""
        out: list[Any] = []
        while index >= 0:
            _, _, definition, parent = self._items[index]
            if definition is not None:
                out.append(definition)
            index = parent
        return out

    def spans_around(self, byte: int) -> list[tuple[int, int, Any]]:
        """`chain` with each payload's span: (start, end, payload), innermost first."""
        index = bisect.bisect_right(self._starts, byte) - 1
        out: list[tuple[int, int, Any]] = []
        while index >= 0:
            start, end, definition, parent = self._items[index]
            if start <= byte < end and definition is not None:
                out.append((start, end, definition))
            index = parent
        return out

    def chain(self, byte: int) -> list[Any]:
        index = bisect.bisect_right(self._starts, byte) - 1
        out: list[Any] = []
        while index >= 0:
            start, end, definition, parent = self._items[index]
            if start <= byte < end and definition is not None:
                out.append(definition)
            index = parent
        return out


def _last_word(name: str) -> str:
    """The name a declaration's text ends with, outside brackets: `template <typename T>
    detail::helper<T (*)(T)> vectorize` (a parse recovering from an error took it for a
    name) is vectorize. An operator's name keeps its words (`operator new`), and a name
    whose brackets do not close stays as it is."""
    words, depth, start = [], 0, 0
    for at, char in enumerate(name):
        if char in "<([{":
            depth += 1
        elif char in ">)]}" and depth:
            depth -= 1
        elif char == " " and not depth:
            words.append(name[start:at])
            start = at + 1
    words.append(name[start:])
    words = [w for w in words if w]
    if depth or len(words) < 2 or any(w.endswith("operator") for w in words[:-1]):
        return name
    return words[-1]


def _before_member(head: str) -> str:
    """A member's qualifier from the text before its name: without the separators and the
    spaces that end it (`self.client.` → self.client, `ptr->`, `x?.`, a chain broken over
    lines, with a `\\` or without), but a closing bracket stays (`decay<Args>::type` →
    decay<Args>)."""
    if _SPACE.search(head):
        head = " ".join(head.split())
    cut = head.rstrip(".:->? \\")
    if ">" in head[len(cut) :] or cut.endswith(("->*", ".*")):  # `->`; a bracket is kept
        cut = _MEMBER_END.sub("", head)
    return cut[:_MAX_QUALIFIER]


def _clean(text: str) -> str:
    text = " ".join(text.split()).replace("::", ".").replace("\\", ".").strip(".")
    return text.strip(_QUOTES)[:200]


_IMPORT_WORDS = ("import static ", "import ", "using static ", "using ", "use ", "require ")


def _head(typed: str) -> str:
    """The name a type text starts from: "url" of "url.copy_with", "iter(items)" -> items."""
    for wrapper, _end in (("(item(", "))"), *_WRAPPERS):
        if typed.startswith(wrapper):
            typed = typed[len(wrapper) :]
            break
    return _HEAD_END.split(typed, maxsplit=1)[0]


def _under_async(node: Node) -> bool:
    """Whether the `with` item holding `node` is an `async with`'s."""
    while node is not None and node.type != "with_statement":
        node = node.parent
    return node is not None and node.child_count > 0 and node.children[0].type == "async"


def _borrowed(type_node: Node | None, iterable: Node | None) -> bool:
    """Whether a local's type is only what it copies: `info = self.info` (an attribute, not
    a constructor's callee nor an annotation), `token = tokens[i]` (an element of what it
    indexes). Such a binding types the name where no other binding in its function does:
    `converter = Converter(a.converter)` in one branch and `converter = a.converter` in
    the other keep the constructor's type."""
    if type_node is not None:
        parent = type_node.parent
        return type_node.type == "attribute" and parent is not None and parent.type == "assignment"
    parent = iterable.parent if iterable is not None else None
    return parent is not None and parent.type == "subscript"


def _module_text(text: str, name: str = "") -> str:
    """An import's module as written, from whatever node the query captured: the words
    `import`/`use`, a trailing `.{A, B}` selector, `._` / `.*`, and the imported name
    itself are cut off (`import a.b.{C, D}` and `import a.b.C` both give "a.b")."""
    text = " ".join(text.split())
    if text.startswith(("require", "include")):  # PHP: require_once __DIR__ . '/x.php'
        quoted = re.findall(r"""["']([^"']*)["']""", text)
        return quoted[-1][:300] if quoted else ""
    if text[:1] in _QUOTES:  # a path as written ("./util/normalize"): nothing to cut
        return text.strip(_QUOTES)[:300]
    text = text.rstrip(";").strip()
    for word in _IMPORT_WORDS:
        if text.startswith(word):
            text = text[len(word) :].strip()
            break
    if text.endswith("}") and "{" in text:
        text = text[: text.index("{")]
    for tail in ("._", ".*", "::*"):
        text = text.removesuffix(tail)
    if text.endswith((".", "::")) and text.strip("."):  # `a.b.{C}` left "a.b."; keep ".."
        text = text.rstrip(".:")
    for separator in (".", "::", "\\", "/"):
        if name and text.endswith(separator + name.replace(".", separator)):
            text = text[: -len(separator + name)]
            break
    return text.strip(_QUOTES)[:300]


def _string_body(literal: str) -> str:
    """What a string literal holds, without its prefix and quotes: a docstring that starts
    or ends with a backtick, a quote or a bracket keeps it."""
    match = _STRING_LITERAL.match(literal)
    return match.group(2) if match else literal.strip(_QUOTES)


def _first_line(text: str) -> str:
    for raw in text.split("\n"):
        line = raw.strip()
        for mark in _COMMENT_MARKS:
            if line.startswith(mark):
                line = line[len(mark) :].strip()
                break
        line = line.removesuffix("*/").strip()
        if line:
            return line[:200]
    return ""


__all__ = ["extract_tags", "parse"]


def _uses(closure: Node, names: list[str]) -> list[Node]:
    """The named leaves of `closure` written as one of `names`, outside the closures of its
    kind inside it (which bind those names again)."""
    wanted = {name.encode() for name in names}
    found: list[Node] = []
    stack = list(closure.children)
    while stack:
        node = stack.pop()
        if node.type == closure.type:
            continue
        if node.child_count:
            stack.extend(node.children)
        elif node.is_named and node.text in wanted:
            found.append(node)
    return found


def _required(node: Node, text: Callable[[Node], str]) -> str | None:
    """The module `require("./y")` names (as written), None for any other expression."""
    if node.type != "call_expression":
        return None
    function, arguments = (
        node.child_by_field_name("function"),
        node.child_by_field_name("arguments"),
    )
    if function is None or arguments is None or text(function) != "require":
        return None
    first = arguments.named_children[:1]
    if not first or first[0].type != "string":
        return None
    return text(first[0])[1:-1] or None


def _first_of(captures: dict[str, list[Node]]) -> Callable[[str], Node | None]:
    """The first node a match captured under a name, or None."""

    def first(name: str) -> Node | None:
        found = captures.get(name)
        return found[0] if found else None

    return first
