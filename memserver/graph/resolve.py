"""Resolution: a reference to its most likely definitions, ranked, from what its file says.

Order of evidence (each a score tier; the first tier that finds something decides, and every
candidate of that tier is kept, so an ambiguous name returns all its homonyms):

1. lexical scope — a definition nested in an enclosing function (Python closures);
2. imports and module paths — the name (or the qualifier's head) is bound by an import:
   Python packages, relative imports and `__init__` re-exports, JS/TS specifiers and index
   files, Go packages (folders), Rust `use` paths and `mod` files, Java/Kotlin/Scala/C#
   packages and namespaces, Elixir aliases; re-exports are followed a few hops;
3. the enclosing class for `self.x` / `this.x` / `cls.x` (and bare names in languages with an
   implicit `this`), then its bases;
4. the same file; 5. star imports; 6. the same package or folder; 7. every file's top level
   (languages without modules: C, Ruby, Bash, Lua, Swift, PHP functions);
8. global by name — for a receiver of unknown type, every method of that name; for a bare
   name a module-scoped language cannot see, homonyms with score `HOMONYM` (kept, ranked last).

A name bound by an import whose module is not in the project (`os.path.join`) resolves to
nothing: it is external, and a homonym in the project would be a false link.
"""

from __future__ import annotations

import posixpath
import re
import weakref
from collections.abc import Callable
from typing import cast

from memserver.core.graph import (
    CLASS_KINDS,
    Definition,
    FileTags,
    Import,
    Reference,
    dotted,
    module_stem,
    only_declares,
)
from memserver.graph.languages import (
    exported_as,
    family,
    rules,
)
from memserver.graph.modules import Modules, Target
from memserver.graph.table import SymbolTable
from memserver.graph.typetext import (
    callable_result,
    closing,
    element_type,
    entered_type,
    item_type,
    main_type,
    union_members,
)

Candidate = tuple[Definition, float]

LEXICAL = 1.0
IMPORTED = 1.0
MEMBER = 0.95  # self.x / this.x, and bare names with an implicit this
SAME_FILE = 0.9
STAR = 0.85
QUALIFIED = 0.8  # Class.member, Namespace.function through a visible class or namespace
PACKAGE = 0.75
TOP_LEVEL = 0.6  # open-scope languages: any file's top-level definition
TYPED = 0.9  # obj.name with obj's type declared or constructed in the file
UNKNOWN_RECEIVER = 0.4  # obj.name with obj of unknown type: the one method of that name
AMBIGUOUS_RECEIVER = 0.08  # …when several methods have that name: all kept, none trusted
HOMONYM = 0.05  # a bare name nothing in scope explains: definitions elsewhere with that name
_GLOBAL_BEST = max(UNKNOWN_RECEIVER, AMBIGUOUS_RECEIVER, HOMONYM * 4)  # their best score
MIN_CONFIDENCE = 0.5  # below this a candidate is a guess (kept, ranked), not a resolution
# `with X() as x`, X of a base from elsewhere and no __enter__ of the project's: x is
# likely an X (contextlib's bases return the instance), but may be anything
_GUESSED_ENTRY = 0.4
# what `with`'s type texts call, and `async with`'s (the longer start first)
_ENTERING = (("aenter(", "__aenter__"), ("enter(", "__enter__"))
# what iterating a value gives, and indexing it
_CONTAINED: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("iter(", element_type),
    ("item(", item_type),
)
# texts of what a value gives (no expression's own name)
_WRAPPED = tuple(wrapper for wrapper, _ in (*_CONTAINED, *_ENTERING))
# Python's methods that take an item out of a container (a list's, a deque's, a dict's):
# `(deque[Worker]).popleft` is a Worker
_TAKING = (["pop"], ["popleft"])
_INHERITED = 0.03  # taken off per base-class level
# A union's alternatives (`A | B`) rank in the order written, each this much below the one
# before: more than a few levels of inheritance, so that `B.f` does not pass `A`'s
# inherited `f`. A union of more alternatives than this is left unknown.
_UNION_STEP = 0.1
_UNION_MEMBERS = 4
_MAX_DEPTH = 6
_CLOSED_SCOPE = frozenset({"python", "ecmascript", "go", "rust", "jvm", "csharp", "zig", "elixir"})
_LITERAL = re.compile(r"""^(?:["'`\[{(]|\d|[rbfu]+["'])""")
_GO_RECEIVER = re.compile(r"^func\s*\(\s*(\w+)")
_REQUIRED = re.compile(r"""^require\(\s*["'`]([^"'`]+)["'`]\s*\)$""")  # require("./x").name


def resolve(reference: Reference, tags: FileTags, table: SymbolTable, floor: float = 0.0
            ) -> list[Candidate]:  # fmt: skip
    """Ranked candidate definitions of `reference` (found in the file `tags`), best first.

    `floor`: the lowest score the caller keeps. With a floor above `_GLOBAL_BEST` the global
    tiers (every method of the name for a receiver of unknown type, homonyms) are skipped:
    where only they would answer, the answer is empty. Nothing else changes: where one step
    of resolution builds on another's candidates, it takes only those at or above
    MIN_CONFIDENCE, which the global tiers never reach. Navigation keeps what reaches
    MIN_CONFIDENCE: `references("get")` on Django 3.2 ranked every method named get for each
    of its 3,039 uses on receivers of unknown type, to keep none.
    """
    resolver = _RESOLVERS.get(table)
    if resolver is None:
        resolver = _RESOLVERS[table] = _Resolver(table)
    resolver.global_tiers = floor <= _GLOBAL_BEST
    return resolver.reference(reference, tags)


# A table's resolver (its memos) lives as long as the table: it holds the table by a weak
# proxy, so the table's last reading going frees both (a strong hold kept every table a
# watcher's readings ever resolved with, and their memos, for the life of the process).
_RESOLVERS: weakref.WeakKeyDictionary[SymbolTable, _Resolver] = weakref.WeakKeyDictionary()


class _Resolver:
    def __init__(self, table: SymbolTable) -> None:
        self.table = cast(SymbolTable, weakref.proxy(table))
        self.modules = Modules(self.table)
        self._bound: dict[str, dict[str, list[Import]]] = {}
        self._bases: dict[Definition, list[Definition]] = {}
        self._values: dict[Definition, list[Candidate]] = {}
        self._class_like: dict[Definition, bool] = {}
        self.global_tiers = True  # whether the global tiers are ranked (see `resolve`)
        # (class, name, depth) -> the members it inherits under that name. Held: C++'s
        # specializations share a name and inherit from one another (pybind11's 31
        # `process_attribute<...>`), and each base is reached again through every other
        # one: a use of `name` in one of them took 14 s, its bases walked six deep.
        self._inherited: dict[tuple[Definition, str, int], list[Candidate]] = {}
        self._bases_open = 0  # classes whose bases are being resolved right now
        # (path, name, depth) -> what the file re-exports under the name. Held: a C or C++
        # header's includes are star imports, walked six deep, and pybind11's headers
        # include one another: resolving its 20k references took minutes.
        self._reexports: dict[tuple[str, str, int], list[Definition]] = {}

    # --- entry -------------------------------------------------------------------------------

    def reference(self, ref: Reference, tags: FileTags) -> list[Candidate]:
        if ref.kind == "import":
            return self._import_reference(ref, tags)
        if ref.qualifier:
            return self._qualified(ref, tags)
        return self._bare(ref.name, ref, tags, 0)

    def _import_reference(self, ref: Reference, tags: FileTags) -> list[Candidate]:
        language = tags.language
        imports = [
            i for i in tags.imports
            if i.line == ref.line
            and ((_last(i.name) if i.name else module_stem(i.module, language)) == ref.name
                 or (i.name == "default" and i.alias == ref.name))
        ]  # fmt: skip
        found: list[Definition] = []
        for imp in imports or [Import(tags.path, ref.qualifier, ref.name, line=ref.line)]:
            found += self._imported(imp, tags, [], 0)
        if found:
            return self._ranked(found, IMPORTED, tags.path)
        if self._external(imports, tags):
            return []
        return self._homonyms(ref.name, tags, bare=False)

    # --- bare names ----------------------------------------------------------------------------

    def _bare(self, name: str, ref: Reference, tags: FileTags, depth: int) -> list[Candidate]:
        path = tags.path
        r = rules(tags.language)
        found = self._lexical(name, ref, tags)
        if found:
            return self._ranked(found, LEXICAL, path)
        bound = self._imports_for(tags, name, ref.enclosing)
        if bound:
            found = [d for imp in bound for d in self._imported(imp, tags, [], depth)]
            if found:
                return self._ranked(found, IMPORTED, path)
            if self._external(bound, tags):
                return []
        if r.implicit_self and depth < _MAX_DEPTH:
            owner = self._enclosing_class(ref, tags)
            if owner is not None:
                members = [  # a class's constructor is named after it: the name means the class
                    (d, s)
                    for d, s in self._member_of(owner, name, depth + 1)
                    if not _is_constructor(d)
                ]
                if members:
                    return self._shift(members, MEMBER, path)
        found = self.table.defined_in(path, name)
        if found:
            return self._ranked(found, SAME_FILE, path)
        star = [i for i in tags.imports if i.star and _within(ref.enclosing, i.enclosing)]
        found = [d for imp in star for d in self._imported(imp, tags, [name], depth)]
        if found:
            return self._ranked(found, STAR, path)
        found = self._package(name, tags)
        if found:
            return self._ranked(found, PACKAGE, path)
        if r.global_scope:
            found = [d for d in self.table.by_name.get(name, []) if _top_level(d, self.table)]
            if found:
                return self._ranked(found, TOP_LEVEL, path)
        return self._homonyms(name, tags, bare=not r.implicit_self)

    def _lexical(self, name: str, ref: Reference, tags: FileTags) -> list[Definition]:
        """A definition nested in an enclosing definition (innermost first). Python methods
        do not see their class's names."""
        python = family(tags.language) == "python"
        scoped_only = rules(tags.language).assigned_names  # only definitions are scopes
        prefix = ref.enclosing
        innermost = True
        while prefix:
            owner = self.table.defined_in(tags.path, prefix)
            in_class = bool(owner) and owner[0].kind in CLASS_KINDS
            if scoped_only and owner and _names_itself(owner[0], name):
                return owner  # `exports.deepEqual = function deepEqual() {… deepEqual(…) …}`
            if (owner or not scoped_only) and not (python and in_class and not innermost):
                found = self.table.defined_in(tags.path, f"{prefix}.{name}")
                if python and in_class:  # a class body runs top to bottom
                    found = [d for d in found if d.start_line < ref.line]
                if in_class:  # a constructor is named after its class: the name means the class
                    found = [d for d in found if not _is_constructor(d)]
                if found:
                    return found
            innermost = False
            prefix = prefix.rpartition(".")[0]
        return []

    # --- qualified names -------------------------------------------------------------------------

    def _qualified(self, ref: Reference, tags: FileTags) -> list[Candidate]:
        qualifier = dotted(ref.qualifier)
        r = rules(tags.language)
        path = tags.path
        if _LITERAL.match(qualifier):
            return []
        if exported_as(f"{qualifier}.{ref.name}", tags.language) == "":
            return []  # `module.exports`: no definition here (nor any file's `module.exports = …`)
        required = _REQUIRED.match(qualifier) if r.module_value else None
        if required is not None:  # what the module required there exports
            imp = Import(path, required.group(1), line=ref.line, enclosing=ref.enclosing)
            exported = self._imported(imp, tags, [ref.name], 0)
            return self._ranked(exported, IMPORTED, path) if exported else []
        segments = qualifier.split(".")
        plain = all(s.isidentifier() or s.startswith("$") for s in segments)
        rest = segments[1:] if plain else []
        if ref.receiver_type:
            owners = self._classes_of_type(ref.receiver_type, ref, tags, 0)
            if owners:
                found, known = self._walk(owners, rest, ref.name)
                if found:
                    return self._shift(found, TYPED, path)
                if known:
                    return []
            elif not rest:
                extension = self._extension(ref.receiver_type, ref, tags)
                if extension:
                    return self._ranked(extension, TYPED, path)
        if plain and (segments[0] in r.self_names or self._is_go_receiver(segments[0], ref, tags)):
            owner = self._enclosing_class(ref, tags)
            if owner is not None:
                found, known = self._walk([(owner, 1.0)], rest, ref.name)
                if found:
                    return self._shift(found, TYPED if rest else MEMBER, path)
                if known:
                    return []  # an attribute set at run time, not a definition
            return self._unknown_receiver(ref.name, tags)
        if qualifier in r.super_names:
            owner = self._enclosing_class(ref, tags)
            if owner is not None:
                bases = [(base, 1.0) for base in self._bases_of(owner, 0)]
                found, known = self._walk(bases, [], ref.name)
                if found:
                    return self._shift(found, MEMBER, path)
            return self._unknown_receiver(ref.name, tags)
        if not plain:  # a call's result (`make().send`, `Store.create().first()`), an index…
            chain = _CALLS.match(qualifier) is not None
            owners = self._classes_of_type(qualifier, ref, tags, 0) if chain else []
            found, known = self._walk(owners, [], ref.name) if owners else ([], False)
            if found:
                return self._shift(found, TYPED, path)
            return [] if owners and known else self._unknown_receiver(ref.name, tags)
        bound = self._binding(tags, segments, ref.enclosing)
        if bound is not None:
            imports, consumed = bound
            tail = [*segments[consumed:], ref.name]
            found_defs = [d for imp in imports for d in self._imported(imp, tags, tail, 0)]
            if found_defs:
                return self._ranked(found_defs, IMPORTED, path)
            if self._external(imports, tags):
                return []
        found, known = self._through_definition(segments, ref, tags)
        if found:
            return self._shift(found, QUALIFIED, path)
        if known:
            return []
        if family(tags.language) == "rust":  # `shapes::area` names a module of this crate
            for root in ("self", "crate"):
                targets = self.modules.rust("::".join([root, *segments]), tags)
                found_defs = self._members(targets, [ref.name], tags.language, 0)
                if found_defs:
                    return self._ranked(found_defs, IMPORTED, path)
        full = ".".join([*segments, ref.name])
        found_defs = self.table.by_qualified.get(full, []) or self.table.by_tail.get(full, [])
        if found_defs:
            return self._ranked(found_defs, QUALIFIED, path)
        return self._unknown_receiver(ref.name, tags)

    def _through_definition(
        self, segments: list[str], ref: Reference, tags: FileTags
    ) -> tuple[list[Candidate], bool]:
        """`Client.create`, `geometry.Circle.area`, `registry.add`: the head is a visible
        class or namespace, or a variable whose declared type is a class."""
        probe = Reference(tags.path, segments[0], "type", ref.line, 0, ref.enclosing)
        heads = [(d, s) for d, s in self._bare(segments[0], probe, tags, 1) if s >= MIN_CONFIDENCE]
        out: list[Candidate] = []
        known = bool(heads)
        for head, score in heads:
            if head.kind in CLASS_KINDS or head.kind == "module":
                out += [(d, score) for d in self._attribute(head, [*segments[1:], ref.name], 1)]
                known = known and (head.kind == "module" or self._bases_known(head))
                continue
            owners = self._classes_of(head, 0)
            found, walked = self._walk([(o, s * score) for o, s in owners], segments[1:], ref.name)
            out += found
            known = known and bool(owners) and walked
        return out, known

    def _walk(
        self, owners: list[Candidate], segments: list[str], name: str
    ) -> tuple[list[Candidate], bool]:
        """Members `name` of `owner.seg1.seg2…`, following the declared types of fields and
        functions; and whether every step was fully known (then nothing found means a
        run-time attribute, not a missing definition)."""
        current, known = owners, True
        for segment in segments:
            following: list[Candidate] = []
            for owner, score in current:
                members = self._member_of(owner, segment, 1)
                if not members:
                    known = known and self._bases_known(owner)
                for member, s in members:
                    if member.kind in CLASS_KINDS:
                        following.append((member, score * s))
                        continue
                    classes = self._classes_of(member, 0)
                    known = known and bool(classes)
                    following += [(c, score * s * cs) for c, cs in classes]
            current = following
            if not current:
                return [], known
        found: list[Candidate] = []
        for owner, score in current:
            members = self._member_of(owner, name, 1)
            if not members:
                known = known and self._bases_known(owner)
            found += [(m, score * s) for m, s in members]
        return found, known

    def _classes_of(self, definition: Definition, depth: int) -> list[Candidate]:
        """The classes a field, variable or function's result is, by its declared type."""
        if not definition.declared_type or depth > _MAX_DEPTH:
            return []
        held = self._values.get(definition)
        if held is None:
            self._values[definition] = []  # a cycle (x = f(); def f(): return x) stops here
            held = self._values[definition] = self._value_classes(definition, depth)
        return held

    def _acts_as_class(self, definition: Definition) -> bool:
        """A definition that is no class but holds members its own file defines, so that a
        value of it (`self`, `this`, what a type names) has them: a table used as a class
        (Lua's `local Store = {}` with `function Store:add()`, a variable of no declared
        type), a JavaScript constructor (`function Connection()` with
        `Connection.prototype.open = …`)."""
        if definition.kind in ("variable", "constant") and not definition.declared_type:
            owner = definition.qualified
        elif definition.kind == "function":
            owner = f"{definition.qualified}.prototype"
        else:
            return False
        held = self._class_like.get(definition)
        if held is None:
            tags = self.table.files.get(definition.path)
            held = tags is not None and any(d.parent == owner for d in tags.definitions)
            self._class_like[definition] = held
        return held

    def _value_classes(self, definition: Definition, depth: int) -> list[Candidate]:
        tags = self.table.files.get(definition.path)
        if tags is None:
            return []
        probe = Reference(definition.path, "", "type", definition.start_line, 0,
                          definition.parent)  # fmt: skip
        declared = definition.declared_type
        if declared in rules(tags.language).self_names:  # `return self`
            owner = self._enclosing_class(probe, tags)
            return [(owner, 1.0)] if owner is not None else []
        if _last(declared) == "TypeAlias":  # `Stream: TypeAlias = A | B`: what it names
            declared = definition.signature.partition("=")[2].partition(" #")[0].strip()
        return self._classes_of_type(declared, probe, tags, depth + 1)

    def _classes_of_type(
        self, text: str, ref: Reference, tags: FileTags, depth: int
    ) -> list[Candidate]:
        """The classes a type expression means where `ref` sits. Beside types it takes
        "(T).a.b" (attribute b of attribute a of a T), "iter(<expression>)" (an element of
        what the expression gives: a loop variable), "item(<expression>)" (what indexing it
        gives: a mapping's value, a sequence's element), "enter(<callee>)" (what `with
        callee() as x` binds; "aenter(…)": `async with`) and "@<decorator>" (a decorated
        function's value: what the decorator returns)."""
        if depth > _MAX_DEPTH:
            return []
        for wrapper, take in _CONTAINED:
            if text.startswith(wrapper) and text.endswith(")"):
                return self._elements(text[len(wrapper) : -1], take, ref, tags, depth)
        for wrapper, methods in _ENTERING:
            if text.startswith(wrapper) and text.endswith(")"):
                return self._entered(text[len(wrapper) : -1], methods, ref, tags, depth)
        if text.startswith("@"):
            return self._decorated(text[1:], ref, tags, depth)
        members = union_members(text)
        if members:  # each alternative's classes, in the order written; all, or none known
            ranked: dict[Definition, float] = {}
            if len(members) > _UNION_MEMBERS:
                return []
            for rank, member in enumerate(members):
                classes = self._classes_of_type(member, ref, tags, depth + 1)
                if not classes:  # `Node | str`: a receiver that may be no class of ours
                    return []
                for found, score in classes:
                    score *= 1 - _UNION_STEP * rank
                    ranked[found] = max(score, ranked.get(found, 0.0))
            return list(ranked.items())
        out: list[Candidate] = []
        for found, score in self._expression(text, ref, tags, depth):
            if found.kind in CLASS_KINDS or self._acts_as_class(found):
                out.append((found, score))
            else:  # a factory function, or a variable holding an instance
                out += [(c, s * score) for c, s in self._classes_of(found, depth + 1)]
        return out

    def _expression(self, text: str, ref: Reference, tags: FileTags, depth: int) -> list[Candidate]:
        """Definitions an expression names: a type (`t.Optional[Client]`), a callee
        (`ctx.make_formatter`), or a member chain of a typed head (`(Context).command`)."""
        if text.startswith(_WRAPPED):
            return []
        if not text.startswith("("):
            call = text.find("(")
            end = call + closing(text[call:]) + 1 if call > 0 else 0
            if end > call > 0 and text[end:].startswith("."):  # `a.b().c`: a.b()'s, then c
                return self._expression(f"({text[:end]}){text[end:]}", ref, tags, depth + 1)
            return self._type_named(main_type(text) or text.split("(", 1)[0], ref, tags)
        close = closing(text)
        if close < 0:
            return []
        owners = self._classes_of_type(text[1:close], ref, tags, depth + 1)
        segments = _without_arguments(text[close + 1 :]).strip(".").split(".")
        if not owners and segments in _TAKING and family(tags.language) == "python":
            item = _contained(text[1:close], item_type)
            return self._classes_of_type(item, ref, tags, depth + 1) if item else []
        if not owners or not all(s.isidentifier() for s in segments):
            return []
        found, _known = self._walk(owners, segments[:-1], segments[-1])
        return found

    def _elements(
        self, expression: str, take: Callable[[str], str], ref: Reference, tags: FileTags,
        depth: int,
    ) -> list[Candidate]:  # fmt: skip
        """Classes of the elements (`take`: `element_type`) or the items (`item_type`) of
        `expression` (`self.get_params(ctx)`, `self._args`), or of a container's type as a
        typed local's is substituted (`Sequence[Token]`)."""
        element = _contained(expression, take)
        if element:
            return self._classes_of_type(element, ref, tags, depth + 1)
        out: list[Candidate] = []
        for found, score in self._expression(expression, ref, tags, depth):
            element = take(found.declared_type)
            holder = self.table.files.get(found.path)
            if element and holder is not None:
                probe = Reference(found.path, "", "type", found.start_line, 0, found.parent)
                out += [
                    (c, s * score)
                    for c, s in self._classes_of_type(element, probe, holder, depth + 1)
                ]
        return out

    def _entered(self, callee: str, method: str, ref: Reference, tags: FileTags, depth: int
                 ) -> list[Candidate]:  # fmt: skip
        """What `with callee(…) as x` binds x to: for a class, what its `method`
        (`__enter__`, or `async with`'s `__aenter__`) returns, or the instance itself where
        no class of the project defines it (a base from elsewhere: contextlib's return the
        instance); for a function, what the context manager it returns gives, or what it
        yields when it is a `@contextmanager` generator (`-> Iterator[Runner]`)."""
        out: list[Candidate] = []
        for found, score in self._expression(callee, ref, tags, depth):
            if found.kind in CLASS_KINDS or self._acts_as_class(found):
                out += [(c, s * score) for c, s in self._instance_entered(found, method, depth)]
                continue
            holder = self.table.files.get(found.path)
            inner = entered_type(found.declared_type)
            if holder is not None and inner:
                probe = Reference(found.path, "", "type", found.start_line, 0, found.parent)
                out += [
                    (c, s * score)
                    for c, s in self._classes_of_type(inner, probe, holder, depth + 1)
                ]
                continue
            for made, s in self._classes_of(found, depth + 1):
                entered = self._instance_entered(made, method, depth)
                out += [(c, t * s * score) for c, t in entered]
        return out

    def _instance_entered(self, cls: Definition, method: str, depth: int) -> list[Candidate]:
        """What entering an instance of `cls` gives (see `_entered`): its `method`'s declared
        type; the instance for one of none, of `Self` or of its `self`'s (`def
        __enter__(self: T) -> T`), and (a guess, below confidence, where a base is from
        elsewhere and may define it otherwise) for a class of the project defining none."""
        found, _known = self._walk([(cls, 1.0)], [], method)
        if not found:
            return [(cls, 1.0 if self._bases_known(cls) else _GUESSED_ENTRY)]
        out: list[Candidate] = []
        for entered, score in found:
            declared = entered.declared_type
            if (
                not declared
                or _last(declared) == "Self"
                or _types_self(entered.signature, declared)
            ):
                out.append((cls, score))  # (of a subclass's instance: that class)
            else:
                out += [(c, s * score) for c, s in self._classes_of(entered, depth + 1)]
        return out

    def _decorated(
        self, decorator: str, ref: Reference, tags: FileTags, depth: int
    ) -> list[Candidate]:
        """What `@decorator` makes of a function: `@click.group()` calls click.group and
        applies its result; `@make_command` applies make_command itself."""
        called = decorator.endswith(")")
        callee = decorator.split("(", 1)[0]
        out: list[Candidate] = []
        for found, score in self._type_named(callee, ref, tags):
            if found.kind in CLASS_KINDS:
                out.append((found, score))  # @SomeClass wraps the function in an instance
                continue
            returned = found.declared_type
            if called:
                returned = callable_result(returned)
            result = callable_result(returned) or returned
            holder = self.table.files.get(found.path)
            if result and holder is not None and not result.startswith(("@", "iter(")):
                probe = Reference(found.path, "", "type", found.start_line, 0, found.parent)
                out += [
                    (c, s * score)
                    for c, s in self._classes_of_type(result, probe, holder, depth + 1)
                ]
        return out

    def _type_named(self, name: str, ref: Reference, tags: FileTags) -> list[Candidate]:
        if not name:
            return []
        qualifier, _, last = name.rpartition(".")
        probe = Reference(tags.path, last, "type", ref.line, 0, ref.enclosing, qualifier)
        found = self._qualified(probe, tags) if qualifier else self._bare(last, probe, tags, 1)
        found = [(d, s) for d, s in found if s >= MIN_CONFIDENCE]
        # a type found with confidence is the type: chains of types do not decay
        return [(d, s / found[0][1]) for d, s in found] if found else []

    def _extension(self, text: str, ref: Reference, tags: FileTags) -> list[Definition]:
        """`"x".shout()` with `fun String.shout()`: a function declared on a type that is
        not in the project (the receiver's type, or the declared type of what it calls)."""
        written = main_type(text)
        names = [written.rpartition(".")[2]] if written else []
        for found, _score in self._type_named(written, ref, tags) if written else []:
            declared = main_type(found.declared_type)
            if declared:
                names.append(declared.rpartition(".")[2])
        by_qualified = self.table.by_qualified
        return [
            d for type_name in names for d in by_qualified.get(f"{type_name}.{ref.name}", [])
            if d.kind == "function"
        ]  # fmt: skip

    def _unknown_receiver(self, name: str, tags: FileTags) -> list[Candidate]:
        if not self.global_tiers:
            return []
        found = [d for d in self.table.by_name.get(name, []) if _is_member(d, self.table)]
        if not found:
            return []
        score = UNKNOWN_RECEIVER if len(found) == 1 else AMBIGUOUS_RECEIVER
        return self._ranked(found, score, tags.path, spread=True)

    # --- classes ---------------------------------------------------------------------------------

    def _enclosing_class(self, ref: Reference, tags: FileTags) -> Definition | None:
        prefix = ref.enclosing
        while prefix:
            for definition in self._class_named(prefix, tags):
                return definition
            prefix = prefix.rpartition(".")[0]
        return None

    def _class_named(self, qualified: str, tags: FileTags) -> list[Definition]:
        defined = self.table.defined_in(tags.path, qualified)
        here = [d for d in defined if d.kind in CLASS_KINDS]
        if here:
            return here
        near = [
            d for d in self.table.by_qualified.get(qualified, []) if d.kind in CLASS_KINDS
        ]  # a Go receiver type, a Rust impl or a Swift extension of a type defined elsewhere
        if near:
            return sorted(near, key=lambda d: _distance(tags.path, d.path))
        return [d for d in defined if self._acts_as_class(d)]  # a JavaScript constructor

    def _is_go_receiver(self, qualifier: str, ref: Reference, tags: FileTags) -> bool:
        if family(tags.language) != "go" or not ref.enclosing:
            return False
        method = ".".join(ref.enclosing.split(".")[:2])
        for definition in self.table.defined_in(tags.path, method):
            match = _GO_RECEIVER.match(definition.signature)
            if match and match.group(1) == qualifier:
                return True
        return False

    def _member_of(self, owner: Definition, name: str, depth: int) -> list[Candidate]:
        """`owner.name` of a value of the class `owner`: defined in the class (nearest file
        first), else in its bases. The instances of a JavaScript constructor (a function)
        have the members set on its prototype (`Document.prototype.save = function…`)
        before those set on the function itself (`Document.save = …`: a static one); those
        of a class, its own (a TypeScript declaration's, with their types), else those."""
        keys = [f"{owner.qualified}.{name}", f"{owner.qualified}.prototype.{name}"]
        if owner.kind == "function":
            keys.reverse()
        direct = self.table.by_qualified.get(keys[0], []) or self.table.by_qualified.get(
            keys[1], []
        )
        bodies = [d for d in direct if not d.declaration]
        direct = bodies or direct  # C++: Circle::area's definition, not its declaration
        if direct and rules(owner.language).members_at_home:
            direct = [d for d in direct if d.path == owner.path]
        if direct:  # the class's own file, else its folder (Go), else anywhere (Rust impls)
            nearest = min(_distance(owner.path, d.path) for d in direct)
            return [
                (d, 1.0 - 0.001 * nearest)
                for d in direct
                if _distance(owner.path, d.path) == nearest
            ]
        if depth >= _MAX_DEPTH:
            return []
        key = (owner, name, depth)
        held = self._inherited.get(key)
        if held is not None:
            return held
        best: dict[Definition, float] = {}  # each inherited member once, by its nearest base
        for base in self._bases_of(owner, depth):
            for d, s in self._member_of(base, name, depth + 1):
                if s - _INHERITED > best.get(d, -1.0):
                    best[d] = s - _INHERITED
        found = list(best.items())
        if not self._bases_open:  # not while a class's bases are half known (a cycle)
            self._inherited[key] = found
        return found

    def _bases_known(self, owner: Definition, depth: int = 0) -> bool:
        """Does every base of the class (transitively) resolve inside the project?"""
        tags = self.table.files.get(owner.path)
        if tags is None or depth > _MAX_DEPTH:
            return False
        written = sum(
            1 for r in tags.references if r.kind == "inherit" and r.enclosing == owner.qualified
        )
        bases = self._bases_of(owner, depth)
        return len(bases) >= written and all(self._bases_known(b, depth + 1) for b in bases)

    def _bases_of(self, owner: Definition, depth: int) -> list[Definition]:
        held = self._bases.get(owner)
        if held is not None:
            return held
        self._bases[owner] = []  # a cycle stops here
        tags = self.table.files.get(owner.path)
        bases: list[Definition] = []
        self._bases_open += 1
        try:
            if tags is not None and depth < _MAX_DEPTH:
                for ref in tags.references:
                    if ref.kind != "inherit" or ref.enclosing != owner.qualified:
                        continue
                    outer = Reference(ref.path, ref.name, "type", ref.line, ref.column,
                                      owner.parent, ref.qualifier)  # fmt: skip
                    for d, score in self.reference(outer, tags):
                        if score >= MIN_CONFIDENCE and d.kind in CLASS_KINDS and d != owner:
                            bases.append(d)
        finally:
            self._bases_open -= 1
        self._bases[owner] = bases
        return bases

    def _attribute(self, start: Definition, segments: list[str], depth: int) -> list[Definition]:
        """Walk `start.a.b…` through class members and namespace contents."""
        current = [start]
        for segment in segments:
            following: list[Definition] = []
            for definition in current:
                if definition.kind in CLASS_KINDS:
                    following += [d for d, _ in self._member_of(definition, segment, depth)]
                else:
                    following += self.table.by_qualified.get(
                        f"{definition.qualified}.{segment}", []
                    )
            current = following
        return current

    # --- imports ---------------------------------------------------------------------------------

    def _bound_in(self, tags: FileTags) -> dict[str, list[Import]]:
        """Local name -> the imports binding it. Python `import a.b` binds "a" and "a.b"."""
        held = self._bound.get(tags.path)
        if held is None:
            held = {}
            fam = family(tags.language)
            for imp in tags.imports:
                if fam == "python" and not imp.name and not imp.alias and not imp.star:
                    parts = imp.module.split(".")
                    for size in range(1, len(parts) + 1):
                        prefix = ".".join(parts[:size])
                        bound = Import(imp.path, prefix, line=imp.line, enclosing=imp.enclosing)
                        held.setdefault(prefix, []).append(bound)
                    continue
                name = _bound_name(imp, fam)
                if name:
                    held.setdefault(name, []).append(imp)
            self._bound[tags.path] = held
        return held

    def _imports_for(self, tags: FileTags, name: str, enclosing: str) -> list[Import]:
        """The imports binding `name` where a reference inside `enclosing` sits (a function's
        own imports only inside it)."""
        found = self._bound_in(tags).get(name, [])
        return [i for i in found if _within(enclosing, i.enclosing)]

    def _binding(
        self, tags: FileTags, segments: list[str], enclosing: str = ""
    ) -> tuple[list[Import], int] | None:
        """The imports binding the longest prefix of a dotted qualifier, and its length."""
        for size in range(len(segments), 0, -1):
            found = self._imports_for(tags, ".".join(segments[:size]), enclosing)
            if found:
                return found, size
        return None

    def _imported(
        self, imp: Import, tags: FileTags, rest: list[str], depth: int
    ) -> list[Definition]:
        """Definitions `imp` binds, then `.rest` walked from them."""
        if depth > _MAX_DEPTH:
            return []
        if not imp.module:
            return self._own(imp, tags, rest, depth)
        targets = self.modules.targets(imp.module, tags)
        value = rules(tags.language).module_value
        if imp.star or not imp.name:
            if rest:
                found = self._members(targets, rest, tags.language, depth)
                if not found and value and not imp.star:  # `Store.create()`, Store required
                    found = [m for d in self._module_value(targets, depth)
                             for m in self._attribute(d, rest, depth + 1)]  # fmt: skip
                return found
            if imp.star:
                return []
            # the module itself, when a definition is it (Elixir `alias Shop.Item`, C# `using`)
            found = [
                d for path, prefix in targets if prefix for d in self.table.defined_in(path, prefix)
            ]
            if not found and imp.alias and value:  # what it exports under the name, or whole
                plain = [t for t in targets if not t[1]]
                found = self._members(plain, [imp.alias], tags.language, depth)
                found = found or self._module_value(plain, depth)
            return found
        names = imp.name.split(".")
        found = self._members(targets, [*names, *rest], tags.language, depth)
        if not found and value and imp.name == "default" and imp.alias:
            # a default export not told by its text (`export default connect(Store)`): the
            # definition it is named after
            found = self._members(targets, [imp.alias, *rest], tags.language, depth)
        if found or family(tags.language) != "python":
            return found
        sub = self.modules.targets(_join_module(imp.module, imp.name), tags)  # a submodule
        return self._members(sub, rest, tags.language, depth) if rest else []

    def _own(self, imp: Import, tags: FileTags, rest: list[str], depth: int) -> list[Definition]:
        """What a module exports of its own bindings (`export default Store`, `exports.parse =
        parse`: an Import of module ""): the definition here, or what an import binds."""
        found = self.table.defined_in(tags.path, imp.name)
        if not found:
            found = [
                d for bound in self._imports_for(tags, imp.name, "") if bound.module
                for d in self._imported(bound, tags, [], depth + 1)
            ]  # fmt: skip
        if rest:
            found = [m for d in found for m in self._attribute(d, rest, depth + 1)]
        return found

    def _members(
        self, targets: list[Target], segments: list[str], language: str, depth: int
    ) -> list[Definition]:
        if not segments:
            return []
        first, rest = segments[0], segments[1:]
        found: list[Definition] = []
        for path, prefix in targets:
            here = self.table.defined_in(path, f"{prefix}.{first}" if prefix else first)
            if not here and not prefix:  # `exports.x = function…`, `exports.x = x`
                for exported in rules(language).export_prefixes:
                    here = here or self.table.defined_in(path, f"{exported}.{first}")
                for exported in rules(language).export_prefixes:
                    here = here or self._reexported(path, f"{exported}.{first}", depth + 1)
            if not here and not prefix:
                here = self._reexported(path, first, depth + 1)
            if not here and not prefix and first == "default" and rules(language).module_value:
                here = self._default_export(path, depth)
            if not here and not prefix and rules(language).loose_members:
                here = [d for d in self.table.named_in(path, first) if d.kind == "function"]
            if not here and rest:
                sub = self.modules.submodule(path, first)
                if sub:
                    found += self._members(sub, rest, language, depth + 1)
                    continue
            if rest:
                here = [m for d in here for m in self._attribute(d, rest, depth + 1)]
            found += here
        return list(dict.fromkeys(found))

    def _default_export(self, path: str, depth: int) -> list[Definition]:
        """What a module exports as its default: `export default class Store {…}`,
        `export default function build() {…}` (`export { default as Store } from …`); for a
        CommonJS module, its value (`_module_value`). `export default Store;` is a binding of
        the module's own (`_reexported`)."""
        tags = self.table.files.get(path)
        found = [
            d for d in (tags.definitions if tags is not None else ())
            if not d.parent and d.signature.startswith("export default ")
        ]  # fmt: skip
        return found or self._module_value([(path, "")], depth)

    def _module_value(self, targets: list[Target], depth: int) -> list[Definition]:
        """What CommonJS modules export whole: `module.exports = function build() {…}` (a
        definition named `module.exports`), `module.exports = Store` (a binding of the
        module's own, `_reexported`)."""
        found: list[Definition] = []
        for path, prefix in targets:
            if not prefix:
                found += self.table.defined_in(path, "module.exports") or self._reexported(
                    path, "module.exports", depth + 1
                )
        return list(dict.fromkeys(found))

    def _reexported(self, path: str, name: str, depth: int) -> list[Definition]:
        """`name` as a module re-exports it (`from .core import Command` in `__init__.py`)."""
        tags = self.table.files.get(path)
        if tags is None or depth > _MAX_DEPTH:
            return []
        key = (path, name, depth)
        held = self._reexports.get(key)
        if held is not None:
            return held
        found: list[Definition] = []
        for imp in self._imports_for(tags, name, ""):
            if imp.name or exported_as(name, tags.language) is not None:
                found += self._imported(imp, tags, [], depth)  # `exports.Y = require("./y")`
        if not found:
            for imp in tags.imports:
                if imp.star and not imp.enclosing:
                    found += self._imported(imp, tags, [name], depth)
        if not self._bases_open:  # as `_member_of`'s
            self._reexports[key] = found
        return found

    def _external(self, imports: list[Import], tags: FileTags) -> bool:
        """Do these imports name modules outside the project? (A module's export of its own
        binding, module "", names this one.)"""
        return bool(imports) and all(
            i.module and not self.modules.targets(i.module, tags) for i in imports
        )

    # --- scope helpers -------------------------------------------------------------------------

    def _package(self, name: str, tags: FileTags) -> list[Definition]:
        r = rules(tags.language)
        if not r.package_scope:
            return []
        paths = set(self.table.folder_paths(posixpath.dirname(tags.path)))
        if tags.package:
            paths.update(self.table.package_paths(tags.language, tags.package))
        paths.discard(tags.path)
        fam = family(tags.language)
        return [
            d for p in sorted(paths) if family(self.table.files[p].language) == fam
            for d in self.table.defined_in(p, name)
        ]  # fmt: skip

    def _homonyms(self, name: str, tags: FileTags, bare: bool) -> list[Candidate]:
        if not self.global_tiers:
            return []
        found = self.table.by_name.get(name, [])
        if bare:
            found = [d for d in found if d.kind != "method"]
        if not found:
            return []
        closed = family(tags.language) in _CLOSED_SCOPE
        unresolved_star = any(
            i.star and not self.modules.targets(i.module, tags) for i in tags.imports
        )
        score = HOMONYM if closed and not unresolved_star else HOMONYM * 4
        return self._ranked(found, score, tags.path, spread=True)

    # --- ranking -----------------------------------------------------------------------------

    def _ranked(
        self, found: list[Definition], score: float, path: str, spread: bool = False
    ) -> list[Candidate]:
        """One tier's candidates; nearer files first (by at most 0.01 per step when spread)."""
        step = 0.01 if spread else 0.001
        out = {d: score - step * _distance(path, d.path) - _stub(d) for d in found}
        return sorted(out.items(), key=lambda item: (-item[1], item[0].path, item[0].start_line))

    def _shift(self, found: list[Candidate], score: float, path: str) -> list[Candidate]:
        out: dict[Definition, float] = {}
        for d, s in found:
            value = score * s - 0.001 * _distance(path, d.path) - _stub(d)
            out[d] = max(out.get(d, 0.0), value)
        return sorted(out.items(), key=lambda item: (-item[1], item[0].path, item[0].start_line))


def _bound_name(imp: Import, fam: str) -> str:
    if imp.star:
        return ""
    if imp.alias:
        return imp.alias
    if imp.name:
        return _last(imp.name)
    if fam == "python":
        return imp.module
    return _last(imp.module.replace("::", ".").replace("/", ".").replace("\\", "."))


def _names_itself(d: Definition, name: str) -> bool:
    """Whether a JavaScript function expression is named `name` (`exports.x = function
    x() {…}`): inside it the name is the function, whatever it is assigned to."""
    if d.kind != "function" or d.name != name:
        return False
    return re.search(rf"\bfunction\s*\*?\s*{re.escape(name)}\s*\(", d.signature) is not None


def _types_self(signature: str, declared: str) -> bool:
    """Whether a method's signature gives its first parameter the type it returns
    (`def __enter__(self: T) -> T`: a type variable bound to the instance's class)."""
    return re.search(rf"\(\s*\w+\s*:\s*{re.escape(declared)}\s*[,)]", signature) is not None


def _within(enclosing: str, scope: str) -> bool:
    return not scope or enclosing == scope or enclosing.startswith(scope + ".")


def _join_module(module: str, name: str) -> str:
    return f"{module}{name}" if module.endswith(".") else f"{module}.{name}"


def _contained(text: str, take: Callable[[str], str]) -> str:
    """What `take` (`element_type`, `item_type`) gives of a container type's text, of an
    element's or item's as well ("iter(list[list[Key]])" -> "Key"); "" where the text
    names no container type."""
    for wrapper, inner_take in _CONTAINED:
        if text.startswith(wrapper) and text.endswith(")"):
            inner = _contained(text[len(wrapper) : -1], inner_take)
            return take(inner) if inner else ""
    return take(text)


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


# a chain of names and calls whose arguments hold no call (`make().a`, `A.b(x).c()`): the
# classes of what it makes can be told from the calls' declared or guessed types
_CALLS = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*|\([^()]*\))*\Z")


def _without_arguments(text: str) -> str:
    """`text` without its calls' arguments and parentheses, nor spaces: ".plus(entry.amount())
    .total" gives ".plus.total" (an index stays: `items[0]` is no member's name)."""
    out, depth = [], 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and not char.isspace():  # a chain broken over lines
            out.append(char)
    return "".join(out)


def _is_member(definition: Definition, table: SymbolTable) -> bool:
    if definition.kind == "method":
        return True
    if not definition.parent or definition.kind not in ("function", "constant"):
        return False
    parents = table.defined_in(definition.path, definition.parent)
    return not parents or parents[0].kind not in ("function", "method")


def _is_constructor(definition: Definition) -> bool:
    return definition.kind == "method" and definition.name == definition.parent.rpartition(".")[2]


def _top_level(definition: Definition, table: SymbolTable) -> bool:
    if not definition.parent:
        return True
    parents = table.defined_in(definition.path, definition.parent)
    return bool(parents) and parents[0].kind == "module"


def _stub(definition: Definition) -> float:
    """Declarations (.pyi, .d.ts files, prototypes) rank just below what they declare."""
    return 0.0005 if only_declares(definition) else 0.0


def _distance(a: str, b: str) -> int:
    if a == b:
        return 0
    folder_a, folder_b = posixpath.dirname(a), posixpath.dirname(b)
    if folder_a == folder_b:
        return 1
    parts_a, parts_b = folder_a.split("/"), folder_b.split("/")
    common = 0
    for x, y in zip(parts_a, parts_b, strict=False):
        if x != y:
            break
        common += 1
    return 1 + min(8, len(parts_a) + len(parts_b) - 2 * common)


__all__ = [
    "HOMONYM",
    "IMPORTED",
    "MEMBER",
    "MIN_CONFIDENCE",
    "Candidate",
    "resolve",
]
