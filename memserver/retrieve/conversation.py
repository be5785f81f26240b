"""Who said it: the recall stage for conversation turns, run only when turns are found.

A remembered turn is stored as "<speaker>: <text>", with its speaker and its number in the
conversation as columns. In a two-person chat each name prefixes half the turns, so as a
search term it matches everything and favours the shortest turns ("Jon: Thanks!"); yet who
said a thing is what a question about a person turns on. When a query names speakers of the
turns it found:

- it is searched again without the speakers' names (`without_names`);
- its subject's turns are preferred (`prefer`): the one speaker it names, or the
  first of several unless they are joined ("Jon and Gina both"; `subject`);
- when it names one speaker, the answer is held back if what it asks is stated
  only by someone else (`stated_by_another`, over the keyword arm's best turns):
  "What did Caroline realise after her charity race?" when it was Melanie who ran.

And each of the best turns found is followed by its speaker's next turn in the
same conversation (`continue_turns`): an account often goes on after the other
person's reply ("I read that book." / "What did you think?" / "It taught me...").

Only the statements of a turn count when holding back: "How was the race?" asks,
it says nothing about the one asking.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memserver.core.types import Evidence
from memserver.text.terms import query_terms, words

TURN = "turn"  # the kind of a conversation turn chunk
COMPARED = 20  # the best turns `stated_by_another` compares
_PREFIX = re.compile(r"^([^\n:]{1,40}):\s")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)


def speaker_of(evidence: Evidence) -> str:
    """Who said a turn ("" for anything else)."""
    return evidence.speaker if evidence.kind == TURN else ""


def _named_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name)}(?:'s|’s)?(?!\w)")


def named_speakers(query: str, evidence: Sequence[Evidence]
                   ) -> tuple[tuple[str, ...], tuple[str, ...]]:  # fmt: skip
    """(the speakers the query names, in its order; every speaker of the turns in
    `evidence`); nothing named unless the turns have two speakers or more."""
    speakers = tuple(dict.fromkeys(s for s in map(speaker_of, evidence) if s))
    if len(speakers) < 2:
        return (), speakers
    at = {s: m.start() for s in speakers if (m := _named_pattern(s).search(query))}
    return tuple(sorted(at, key=at.__getitem__)), speakers


def subject(query: str, named: Sequence[str]) -> str:
    """Whom a question is about: the one speaker it names, or the first of several
    ("What did Jon say about Gina's store?"), unless it joins them ("Jon and Gina")."""
    if len(named) == 1:
        return named[0]
    if not named:
        return ""
    first, second = (re.escape(n) for n in named[:2])
    joined = re.search(rf"{first}(?:'s|’s)?\s*(?:,|and|&)\s*{second}", query)
    return "" if joined else named[0]


def without_names(query: str, names: Sequence[str]) -> str:
    for name in names:
        query = _named_pattern(name).sub(" ", query)
    return re.sub(r"\s+", " ", query).strip()


def prefer(evidence: Sequence[Evidence], speaker: str, boost: float) -> list[Evidence]:
    """`evidence` by score, with `speaker`'s turns' scores raised by `boost` × score."""
    return sorted(evidence, key=lambda e: -e.score * (1 + boost * (speaker_of(e) == speaker)))


def _statements(text: str) -> set[str]:
    """The words of what a turn states about its speaker: not its questions, and not
    what it says to the listener ("your son's okay" is the listener's news)."""
    body = _PREFIX.sub("", text, count=1)
    said = " ".join(s for s in _SENTENCE.split(body)
                    if not s.rstrip().endswith("?") and not _SECOND_PERSON.search(s))  # fmt: skip
    return set(words(said))


def _covered(content_words: Sequence[str], have: set[str]) -> float:
    stems = {w[:5] for w in have}
    return sum(1 for w in content_words if w in have or w[:5] in stems) / len(content_words)


def stated_by_another(content_words: Sequence[str], evidence: Sequence[Evidence],
                      speaker: str) -> bool:  # fmt: skip
    """Whether another speaker's turns state more of `content_words` than `speaker`'s do:
    the mean coverage of each side's two best turns (an account usually spans a turn or
    two), statements only."""
    if not content_words:
        return False
    covered: dict[bool, list[float]] = {True: [0.0, 0.0], False: [0.0, 0.0]}  # by `speaker`?
    for e in evidence:
        who = speaker_of(e)
        if who:
            covered[who == speaker].append(_covered(content_words, _statements(e.text)))
    own, other = (sum(sorted(covered[side])[-2:]) for side in (True, False))
    return other > own


@dataclass(frozen=True, slots=True)
class Conversation:
    """The stage's settings: `speaker_boost` and `turn_continuations` of [recall], and the
    gate threshold a hold-back pushes confidence below."""

    speaker_boost: float
    turn_continuations: int
    gate_threshold: float

    def names(self, query: str, evidence: Sequence[Evidence]) -> tuple[tuple[str, ...], str]:
        """(the speakers a query names, the query without them: "" when it names none)."""
        named, speakers = named_speakers(query, evidence)
        stripped = without_names(query, speakers) if named else ""
        return named, stripped if stripped and stripped != query and query_terms(stripped) else ""

    def hold_back(self, named: Sequence[str], stripped: str, confidence: float,
                  lexical: Sequence[Evidence]) -> float:  # fmt: skip
        """With one speaker named, confidence falls below the gate when what the question
        asks is stated only by someone else (over the keyword arm's best turns)."""
        if len(named) == 1 and stated_by_another(query_terms(stripped), lexical, named[0]):
            return min(confidence, self.gate_threshold / 2)
        return confidence

    def prefer_subject(self, query: str, named: Sequence[str], evidence: list[Evidence]
                       ) -> list[Evidence]:  # fmt: skip
        who = subject(query, named)
        return prefer(evidence, who, self.speaker_boost) if who else evidence


def continue_turns(evidence: list[Evidence], best: int, next_of: Any) -> list[Evidence]:
    """After each of the `best` first turns, its speaker's next turn: `next_of(e)` gives the
    turns that follow `e` in its conversation, nearest first, as evidence."""
    out = list(evidence)
    for e in evidence[:best]:
        who = speaker_of(e)
        if not who:
            continue
        for n in next_of(e):
            if speaker_of(n) == who:
                ids = [x.id for x in out]
                at = ids.index(e.id)
                if n.id not in ids[: at + 1]:  # moved up when it is further down
                    out = [x for x in out if x.id != n.id]
                    out.insert(at + 1, n)
                break
    return out


__all__ = [
    "Conversation", "continue_turns", "named_speakers", "prefer", "speaker_of",
    "stated_by_another", "subject", "without_names",
]  # fmt: skip
