"""A note's prose → self-contained statements, each typed and with its entities.

Deterministic: sentences (code spans, paths and versions never split), a sentence
that opens with a pronoun or a connective joined to the one before it so it still
says what it is about, then a type from cue words and the entities it names. The
same splitter cuts an answer into claims for attribution.
"""

from __future__ import annotations

import re

from memserver.core.types import MemoryDraft

__all__ = ["atomise", "entities", "memory_type", "sentences"]

_ABBREV = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|No|Fig)\.$", re.I)
_SPAN = re.compile(r"`[^`\n]*`|\[code block \d+\]|\([^()\n]{0,200}\)")
_BOUNDARY = re.compile(
    r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`]?[A-Z0-9`])|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)"
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_LEADING = re.compile(
    r"^(?:it|its|it's|this|that|these|those|they|them|their|he|she|his|her|him|there|"
    r"also|but|and|so|then|however|because|which|as\s+well)\b",
    re.I,
)
MAX_JOINED_CHARS = 600

_TYPE_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("decision", re.compile(r"\b(?:decided|decision|we chose|chose to|we will use|opted|"
                            r"agreed to|going with|switched to)\b", re.I)),
    ("bugfix", re.compile(r"\b(?:bug|fix(?:ed|es)?|crash(?:es|ed)?|regression|root cause|"
                          r"workaround|broke|broken|fails?|failing|error)\b", re.I)),
    ("requirement", re.compile(r"\b(?:must|shall|required?|requires|has to|have to|needs? to|"
                               r"should never|should always)\b", re.I)),
    ("convention", re.compile(r"\b(?:always|never|convention|prefer|style|naming|by default "
                              r"we)\b", re.I)),
    ("dependency", re.compile(r"\b(?:depends on|dependency|pinned|requires? version|upgrade|"
                              r"downgrade|bump(?:ed)?)\b|\b\d+\.\d+(?:\.\d+)?\b", re.I)),
    ("procedure", re.compile(r"^(?:to\s+\w+.*?,\s*)?(?:run|use|call|set|add|install|"
                             r"open|start|restart|build|deploy|create|delete|remove|check|"
                             r"first|then|next)\b|\bstep\b", re.I)),
    ("definition", re.compile(r"^\W*[\w.`/-]+`?\s+(?:is|are|means|refers to|stands for)\s+"
                              r"(?:a|an|the)\b", re.I)),
)  # fmt: skip

_IDENT = re.compile(
    r"`([^`\n]+)`"  # code span
    r"|\b((?:[A-Za-z_][\w-]*/)+[\w.-]+|[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|java|rb|c|h|cpp|md|"
    r"toml|yaml|yml|json|sh|sql))\b"  # path / file name
    r"|\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*|"
    r"[a-z0-9]+_[a-z0-9_]+|[A-Z][A-Z0-9_]{2,})\b"  # dotted, camelCase, PascalCase, snake, CONST
    r"|\b(v?\d+(?:\.\d+)+)\b"  # versions
)
_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
_STOP_NAMES = frozenset(
    "I The A An It Its This That These Those We Our You Your They Their He His She Her My "
    "Me Also But And Or So Then However When While If What Why How Where Who Which Yes No "
    "Oh Hey Hi Hello Thanks Thank Wow Well Sure Great Just Let Run Use See Note Please "
    "After Before Since Until Today Yesterday Tomorrow There Here Now Not Do Does Did "
    "In On At For From With By To Of As Is Are Was Were Be Have Has Had Can Will Would "
    "Should Could Maybe Some All Any Every Each One Two First Next Last Never Always".split()
)
_ABBREVIATION = re.compile(r"(?:[a-z]\.)+[a-z]?", re.I)


def sentences(text: str) -> list[str]:
    """Sentences of `text`; code spans, parentheticals and file names are never cut."""
    protected: dict[str, str] = {}

    def hide(m: re.Match[str]) -> str:
        key = f"\x00{len(protected)}\x00"
        protected[key] = m.group()
        return key

    masked = _SPAN.sub(hide, text)
    pieces: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(masked):
        head = masked[start : m.start()].rstrip()
        if _ABBREV.search(head):
            continue
        pieces.append(masked[start : m.start()])
        start = m.end()
    pieces.append(masked[start:])
    out = []
    for p in pieces:
        for key, value in protected.items():
            p = p.replace(key, value)
        p = _BULLET.sub("", " ".join(p.split()))
        if p:
            out.append(p)
    return out


def entities(text: str) -> tuple[str, ...]:
    """Identifiers, paths, versions and proper names the text mentions, in order."""
    found: list[str] = []
    for m in _IDENT.finditer(text):
        value = next(g for g in m.groups() if g).strip()
        if not _ABBREVIATION.fullmatch(value):
            found.append(value)
    for m in _NAME.finditer(text):
        parts = [w for w in m.group(1).split() if w not in _STOP_NAMES]
        if parts:
            found.append(" ".join(parts))
    return tuple(dict.fromkeys(x for x in found if x))


def memory_type(sentence: str) -> str:
    for name, cue in _TYPE_CUES:
        if cue.search(sentence):
            return name
    return "fact"


def atomise(prose: str, kind: str | None = None) -> list[MemoryDraft]:
    """Self-contained statements of a note; `kind`, when given, types every one."""
    statements: list[str] = []
    for s in sentences(prose):
        if re.fullmatch(r"\[code block \d+\]\.?", s):
            continue
        joinable = statements and len(statements[-1]) + len(s) < MAX_JOINED_CHARS
        if joinable and _LEADING.match(s):
            statements[-1] = f"{statements[-1]} {s}"
        else:
            statements.append(s)
    drafts = []
    for s in statements:
        ents = entities(s)
        key = ", ".join(ents[:4]) if ents else " ".join(s.split()[:8])
        drafts.append(MemoryDraft(kind or memory_type(s), key[:200], s, ents))
    return drafts
