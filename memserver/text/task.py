"""The parts of a task description: what names the code, and the prose around it.

An issue or task text mixes a title, prose, code samples, tracebacks and error messages.
`parse_task` splits it so each part can be searched the way it names code:

- `paths`: file paths it mentions (`django/db/models/query.py`, `src/app.ts:12`), the
  frames of a traceback included, with the function each frame was in (`frames`);
- `modules`: dotted names that may be modules or qualified names (`core.validators.URLValidator`);
- `names`: identifiers that look like code (`parse_duration`, `URLValidator`,
  `FILE_UPLOAD_PERMISSIONS`, `only()`) or that a code sample imports (`Q` after `from
  django.db.models import Q`), with how often each is mentioned;
- `errors`: lines that report an error (`TypeError: ...`);
- `code`: the fenced, indented and `>>>` blocks and inline `code`;
- `prose`: the rest, the title first (`title`).

Standard library only; nothing here knows about any index.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

__all__ = ["Frame", "Task", "parse_task"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_TRACE_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ([\w<>.]+)')
_PATH = re.compile(
    r"(?<![\w/.-])(?:[A-Za-z]:)?(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,5}"
    r"(?::\d+)?(?![\w/])"
)
# a later part may start with a digit: migration modules (`auth.0011_update_proxy_permissions`)
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.\w+)+")
# `from a.b import C, D as E`: what a code sample imports is named, however short
_FROM_IMPORT = re.compile(
    r"^[ \t]*(?:>>>[ \t]*)?from[ \t]+[\w.]+[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE
)
_IDENT = re.compile(r"(?<![\w$])[A-Za-z_$][\w$]*")
_INLINE = re.compile(r"`([^`\n]+)`")
_ERROR = re.compile(
    r"^\s*((?:\w+\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt))\b(?::\s*(.*))?$"
)
_TRACE_START = re.compile(r"^\s*Traceback \(most recent call last\)")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
# file extensions a path of code or docs ends with (a dotted name ending `.py` is a path)
_CODE_EXT = frozenset(
    "py pyi pyx js jsx mjs cjs ts tsx go rs java kt kts scala swift c h cc cpp hpp cs rb php "
    "lua zig ex exs erl sh bash zsh sql html htm css scss vue svelte md rst txt toml yaml yml "
    "json ini cfg tpl".split()
)
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")


@dataclass(frozen=True, slots=True)
class Frame:
    path: str
    line: int
    function: str


@dataclass(frozen=True, slots=True)
class Task:
    title: str
    prose: str
    code: str
    paths: tuple[str, ...]
    frames: tuple[Frame, ...]
    modules: tuple[str, ...]
    names: tuple[tuple[str, int], ...]  # (identifier, mentions), most mentioned first
    errors: tuple[str, ...]


def looks_like_code_name(word: str, *, called: bool = False, quoted: bool = False) -> bool:
    """`snake_case`, `camelCase`, `CamelCase` with two humps, `UPPER_CASE`, or any word
    written as a call (`only()`) or quoted as code: a name the code may define."""
    bare = word.strip("_$")
    if len(bare) < 3:
        return False
    if called or quoted or (word.startswith("__") and word.endswith("__")):
        return True
    return "_" in bare or bool(_CAMEL.search(bare)) or (bare.isupper() and len(bare) > 3)


def _blocks(text: str) -> tuple[list[str], list[str]]:
    """Lines of prose and lines of code (fenced, `>>>` sessions, indented under prose,
    traceback bodies)."""
    prose: list[str] = []
    code: list[str] = []
    fenced = traced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        stripped = line.strip()
        if not fenced and _TRACE_START.match(line):
            traced = True
        if traced:  # a traceback runs to its exception line, the first one not indented
            code.append(line)
            traced = not stripped or line[0] in " \t" or bool(_TRACE_START.match(line))
            continue
        if (
            fenced
            or stripped.startswith((">>>", "...", "$ ", 'File "'))
            or (line.startswith(("    ", "\t")) and _codeish(stripped))
        ):
            code.append(line)
        else:
            prose.append(line)
    return prose, code


def _codeish(line: str) -> bool:
    """An indented line that reads as code rather than a wrapped paragraph."""
    if not line:
        return False
    return bool(re.search(r"[=(){}\[\]:;]|^(def|class|import|from|return|if|for)\b", line))


def parse_task(text: str) -> Task:
    title = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    prose_lines, code_lines = _blocks(text)
    inline = [m.group(1) for m in _INLINE.finditer(text)]
    frames = tuple(
        Frame(m.group(1).replace("\\", "/"), int(m.group(2)), m.group(3))
        for m in _TRACE_FRAME.finditer(text)
    )
    unurled = _URL.sub(" ", text)
    paths: dict[str, None] = {}
    for f in frames:
        paths[f.path] = None
    for m in _PATH.finditer(unurled):
        p = m.group(0).split(":")[0] if not re.match(r"[A-Za-z]:", m.group(0)) else m.group(0)
        ext = p.rsplit(".", 1)[-1].lower()
        if ext in _CODE_EXT and ("/" in p or not _is_dotted_name(p)):
            paths[p] = None
    modules: dict[str, None] = {}
    for m in _DOTTED.finditer(unurled):
        name = m.group(0)
        if name.rsplit(".", 1)[-1].lower() not in _CODE_EXT and not name[0].isdigit():
            modules[name] = None
    quoted = {w for chunk in inline for w in _IDENT.findall(chunk)}
    imported = _imported(text)
    counts: Counter[str] = Counter()
    for m in _IDENT.finditer(unurled):
        word = m.group(0)
        called = unurled[m.end() : m.end() + 1] == "("
        if word in imported or looks_like_code_name(word, called=called, quoted=word in quoted):
            counts[word] += 1
    for f in frames:
        if looks_like_code_name(f.function, called=True):
            counts[f.function] += 1
    errors = tuple(
        ln.strip() for ln in text.splitlines() if _ERROR.match(ln) and len(ln.strip()) < 300
    )
    code = "\n".join([*code_lines, *inline])
    return Task(
        title=title, prose="\n".join(prose_lines).strip(), code=code.strip(),
        paths=tuple(paths), frames=frames, modules=tuple(modules),
        names=tuple(counts.most_common()), errors=errors,
    )  # fmt: skip


def _imported(text: str) -> set[str]:
    """The names `from … import …` lines bring in (`Q` from `from django.db.models import
    Q`; an alias's original name, not the alias)."""
    out: set[str] = set()
    for m in _FROM_IMPORT.finditer(text):
        for item in m.group(1).strip("()").split(","):
            words = item.split()
            if words and words[0].isidentifier():  # not `*`
                out.add(words[0])
    return out


def _is_dotted_name(p: str) -> bool:
    """`self.request.path` or `os.path.join` rather than a file name: more than one dot and
    no slash, or a last part that is not an extension people give files."""
    return p.count(".") > 1 and "/" not in p
