"""Who said it: recall over conversation turns when the question names a speaker.

A remembered turn is stored as "<speaker>: <text>". In a two-person chat each name
prefixes half the turns, so as a search term it matches everything and favours the
shortest turns ("Jon: Thanks!"); yet who said a thing is what a question about a
person turns on. When a query names speakers of the turns it found:

- it is searched again without the speakers' names (`without_names`);
- its subject's turns are preferred (`prefer`): the one speaker it names, or the
  first of several unless they are joined ("Jon and Gina both"; `subject`);
- when it names one speaker, the answer is held back if what it asks is stated
  only by someone else (`stated_by_another`, over the keyword arm's best turns):
  "What did Caroline realise after her charity race?" when it was Melanie who ran.

And each of the best turns found is followed by its speaker's next turn in the
same conversation (`next_turn_paths`): an account often goes on after the other
person's reply ("I read that book." / "What did you think?" / "It taught me...").

Only the statements of a turn count when holding back: "How was the race?" asks,
it says nothing about the one asking.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memserver.core.text import words

TURN = "turn"  # the kind of a conversation turn chunk
COMPARED = 20  # the best turns `stated_by_another` compares
_PREFIX = re.compile(r"^([^\n:]{1,40}):\s")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_NUMBERED = re.compile(r"(.*?)(\d+)")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)


def speaker_of(evidence: Any) -> str:
    """Who said a turn ("" for anything else)."""
    if evidence.kind != TURN:
        return ""
    m = _PREFIX.match(evidence.text)
    return m.group(1).strip() if m else ""


def _named_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name)}(?:'s|’s)?(?!\w)")


def named_speakers(query: str, evidence: Sequence[Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
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


def prefer(evidence: Sequence[Any], speaker: str, boost: float) -> list[Any]:
    """`evidence` by score, with `speaker`'s turns' scores raised by `boost` × score."""
    return sorted(evidence, key=lambda e: -e.score * (1 + boost * (speaker_of(e) == speaker)))


def next_turn_paths(evidence: Any, reach: int) -> list[str]:
    """Paths of the turns that follow a turn, nearest first, up to `reach` on: a turn's id
    ends in its number in the conversation ("T7", "D3:12")."""
    head, _, turn = evidence.path.rpartition("/")
    m = _NUMBERED.fullmatch(turn)
    if evidence.kind != TURN or not m:
        return []
    return [f"{head}/{m.group(1)}{int(m.group(2)) + d}" for d in range(1, reach + 1)]


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


def stated_by_another(content_words: Sequence[str], evidence: Sequence[Any], speaker: str) -> bool:
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


__all__ = ["named_speakers", "next_turn_paths", "prefer", "speaker_of", "stated_by_another",
           "subject", "without_names"]  # fmt: skip
