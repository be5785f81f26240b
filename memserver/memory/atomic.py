"""A note's prose → self-contained statements, each typed and with its entities.

Deterministic: sentences (code spans, paths and versions never split), a sentence
that opens with a pronoun or a connective joined to the one before it so it still
says what it is about, then a type from cue words and the entities it names. The
same splitter cuts an answer into claims for attribution.
"""

from __future__ import annotations

import re

from memserver.core.types import MemoryDraft
from memserver.text.sentences import entities, sentences

__all__ = ["atomise", "makes_statements", "memory_type"]

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


def makes_statements(prose: str) -> bool:
    """Whether remembering `prose` stores at least one memory."""
    return bool(atomise(prose))
