"""Type expressions as written, reduced to what resolution needs: the class a type names
(`Optional[Client]` -> Client), the element of a container (`list[Item]`, Go `[]*Item`),
the result of a callable (`Callable[[F], Group]` -> Group)."""

from __future__ import annotations

import re

_OPTIONAL = re.compile(r"^(?:[\w.]*\.)?(?:Optional|Final|ClassVar|Annotated|Type|type)\[(.*)\]$")
_WRAPPERS = ("*", "&mut ", "&", "?", "!", "const ", "mut ")
_NONE = ("None", "null", "undefined", "void", "false")  # PHP's `User|false`


def _unwrap(text: str, wrappers: re.Pattern[str]) -> str:
    """`Optional[Client]`, `Annotated[Client, meta]` -> "Client" (up to three deep); ""
    for a wrapper with nothing inside (`Optional[]`)."""
    for _ in range(3):
        match = wrappers.match(text)
        if match is None:
            break
        arguments = split_arguments(match.group(1))
        if not arguments:
            return ""
        text = arguments[0].strip().strip("\"'")
    return text


def main_type(text: str) -> str:
    """The class a type expression names: Optional[Client] / Client | None / "Client" /
    *Client / Client<T> / Client? -> Client; "" for anything else (unions, literals…)."""
    text = _unwrap(text.strip().strip("\"'"), _OPTIONAL)
    parts = [p.strip() for p in text.split("|") if p.strip() not in _NONE]
    if len(parts) != 1:
        return ""
    text = parts[0]
    for keyword in ("struct ", "union ", "enum ", "class ", "typename "):
        text = text.removeprefix(keyword)
    for wrapper in _WRAPPERS:
        text = text.removeprefix(wrapper).removesuffix(wrapper.strip())
    if text.endswith("[]"):  # an array (`Cell[]`, `Cell[][]`, `Cell[]?`): none of Cell's members
        return ""
    for bracket in ("[", "<", "("):
        text = text.split(bracket, 1)[0]
    text = text.replace("::", ".").strip()
    return text if all(p.isidentifier() for p in text.split(".")) else ""


_WRAPPED = re.compile(r"^(?:[\w.]*\.)?(?:Optional|Final|ClassVar|Annotated)\[(.*)\]$")
_TUPLE = re.compile(r"^(?:[\w.]*\.)?(?:tuple|Tuple)\[")
_UNION = re.compile(r"^(?:[\w.]*\.)?Union\[(.*)\]$")


def union_members(text: str) -> list[str]:
    """The alternatives of a union of two or more types, as written, None left out:
    `A | B | None`, `Union[A, B]`, `Optional[Union[A, B]]` -> ["A", "B"]; [] for anything
    else (one type, `X | None`)."""
    text = _unwrap(text.strip().strip("\"'"), _WRAPPED)
    match = _UNION.match(text)
    if match:  # `Union["A", "B"]`: names, quoted or not
        parts = [p.strip("\"' ") for p in split_arguments(match.group(1))]
    else:  # `A | B` (TypeScript's `"a" | "b"` are values: no type's names)
        parts = [p.strip() for p in split_arguments(text, "|")]
    parts = [p for p in parts if p not in _NONE]
    if any(not p or p[0] in "\"'`" for p in parts):
        return []
    return parts if len(parts) > 1 else []


_CONTAINERS = re.compile(
    r"^(?:[\w.]*\.)?(?:list|List|Sequence|MutableSequence|Iterable|Iterator|Collection|set|Set|"
    r"frozenset|FrozenSet|AbstractSet|MutableSet|tuple|Tuple|Generator|AsyncIterator|"
    r"AsyncIterable|deque|Deque|KeysView|ValuesView)\[(.*)\]$"
)


def closing(text: str, pair: str = "()") -> int:
    """Index of the parenthesis (or the other `pair`) closing the one that opens `text`, or
    -1."""
    depth = 0
    for index, char in enumerate(text):
        depth += (char == pair[0]) - (char == pair[1])
        if depth == 0:
            return index
    return -1


# generic containers written `Name<Element>` (Java, Kotlin, C#, TypeScript, Swift, Rust)
_GENERICS = re.compile(
    r"^(?:[\w.:]*[.:])?(?:List|MutableList|ArrayList|LinkedList|Set|MutableSet|HashSet|"
    r"LinkedHashSet|TreeSet|SortedSet|Array|ReadonlyArray|Sequence|Iterable|Collection|"
    r"MutableCollection|Iterator|Vec|VecDeque|IEnumerable|IList|ICollection|IReadOnlyList|"
    r"IReadOnlyCollection|Deque|ArrayDeque|Queue|Stack)<(.*)>$"
)


# Python's mappings: iterating one gives its keys, indexing it its values
_MAPPINGS = re.compile(
    r"^(?:[\w.]*\.)?(?:dict|Dict|Mapping|MutableMapping|defaultdict|DefaultDict|OrderedDict|"
    r"WeakKeyDictionary|WeakValueDictionary|ChainMap)\[(.*)\]$"
)


def element_type(text: str) -> str:
    """`list[Parameter]` / `t.Iterator[Option]` / `tuple[Arg, ...]` / Go `[]*Item`,
    `map[string]*Item` / Swift `[Item]` / `Item[]` / `List<Item>`, `Vec<Item>` -> the
    element type; a Python mapping's are its keys (`dict[Key, Item]` -> "Key"; a Swift
    dictionary `[Key: Item]` gives pairs: "")."""
    text = text.strip().removesuffix("?")
    if text.startswith("[]"):
        return text[2:]
    if text.startswith("map[") and "]" in text:
        return text.split("]", 1)[1]
    if text.endswith("[]") and len(text) > 2:
        return text[:-2].strip()
    if text.startswith("[") and closing(text, "[]") == len(text) - 1:
        inner = text[1:-1].strip()
        if "(" in inner or len(split_arguments(inner)) > 1:  # a list's values, not a type
            return ""
        return "" if len(split_arguments(inner, ":")) > 1 else inner
    match = (
        _GENERICS.match(text)
        or _CONTAINERS.match(text.strip("\"'"))
        or _MAPPINGS.match(text.strip("\"'"))
    )  # a mapping's elements are its keys
    if match is None or not match.group(1):
        return ""
    arguments = split_arguments(match.group(1))
    if not arguments or (_TUPLE.match(text.strip("\"'")) and len(arguments) > 1
                         and arguments[1] != "..."):  # fmt: skip
        return ""  # `tuple[Key, Node]`: each place its own type
    return arguments[0]


def item_type(text: str) -> str:
    """What indexing a value of type `text` gives: a mapping's value (`dict[str, Task]`,
    `WeakKeyDictionary[Task, State]` -> "Task", "State"), a sequence's element (as
    `element_type`); "" for anything else."""
    match = _MAPPINGS.match(text.strip().strip("\"'"))
    if match is None:
        return element_type(text)
    arguments = split_arguments(match.group(1))
    return arguments[1] if len(arguments) == 2 else ""


# what a callee declared to return one of these gives `with callee() as x`: its first argument
_ENTERED = re.compile(
    r"^(?:[\w.]*\.)?(?:ContextManager|AbstractContextManager|AsyncContextManager|"
    r"AbstractAsyncContextManager|Iterator|Generator|AsyncIterator|AsyncGenerator)\[(.*)\]$"
)


def entered_type(text: str) -> str:
    """What `with f() as x` binds x to, f declared to return `text`: a context manager's
    value (`ContextManager[Session]`), or what a `@contextmanager` generator yields
    (`Iterator[Runner]`, `Generator[Runner, None, None]`: no iterator is entered, so such
    a callee is a decorated generator); "" for anything else."""
    match = _ENTERED.match(text.strip().strip("\"'"))
    arguments = split_arguments(match.group(1)) if match is not None else []
    return arguments[0] if arguments else ""


def callable_result(text: str) -> str:
    """`t.Callable[[F], Group]` -> "Group"; "" for anything that is not a Callable."""
    text = text.strip().strip("\"'")
    head, _, inner = text.partition("[")
    if not head.endswith("Callable") or not inner.endswith("]"):
        return ""
    arguments = split_arguments(inner[:-1])
    return arguments[-1] if len(arguments) == 2 else ""


def split_arguments(text: str, mark: str = ",") -> list[str]:
    """Top-level comma-separated (or `mark`-separated) parts of a type's arguments."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "[(<":
            depth += 1
        elif char in "])>":
            depth -= 1
        elif char == mark and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


__all__ = [
    "callable_result", "closing", "element_type", "entered_type", "item_type", "main_type",
    "split_arguments", "union_members",
]  # fmt: skip
