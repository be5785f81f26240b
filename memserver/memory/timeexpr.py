"""Relative time in a note → absolute dates, against the note's event time.

Candidates are found by a small vocabulary of relative phrases ("yesterday", "last
Friday", "two weeks ago", "next month", "in 3 days"); each is parsed by `dateparser`
with the event time as its base. Only phrases dateparser resolves are rewritten,
and the original phrase is kept next to the date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from memserver.core.text import splice

__all__ = ["Resolved", "resolve_relative"]

_NUM = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"a\s+few|(?:a\s+)?couple\s+of)"
)
_UNIT = r"(?:day|week|month|year|fortnight|weekend)s?"
_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_PHRASE = re.compile(
    rf"""\b(?:
        (?:the\s+day\s+(?:before|after)\s+)?(?:yesterday|tomorrow)
      | today | tonight
      | (?:last|next|this|past|coming)\s+(?:{_DAY}|{_UNIT}|summer|winter|spring|fall|autumn)
      | {_NUM}\s+{_UNIT}\s+(?:ago|later|from\s+now|before|earlier)
      | in\s+{_NUM}\s+{_UNIT}
      | (?:on\s+)?{_DAY}
    )\b""",
    re.I | re.X,
)


@dataclass(frozen=True, slots=True)
class Resolved:
    phrase: str
    date: str  # ISO-8601 date
    start: int
    end: int


@cache
def _parser() -> object:
    import dateparser

    return dateparser


def _parse(phrase: str, base: datetime) -> datetime | None:
    dateparser = _parser()
    text = phrase.lower()
    text = re.sub(r"^on\s+", "", text)
    text = re.sub(r"\bweekends?\b", "saturday", text)
    text = re.sub(r"\b(?:a\s+)?couple\s+of\b", "2", text)
    text = re.sub(r"\ba\s+few\b", "3", text)
    text = text.replace("fortnight", "2 weeks").replace("tonight", "today")
    text = re.sub(
        r"^(?:past|this|coming)\s+(?=\w)",
        lambda m: "next " if "coming" in m.group() else "this ",
        text,
    )
    bare_day = re.fullmatch(_DAY, text, re.I) is not None
    settings = {
        "RELATIVE_BASE": base.replace(tzinfo=None),
        "PREFER_DATES_FROM": "past"
        if bare_day or "last" in text or "ago" in text
        else "current_period",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }
    try:
        return dateparser.parse(text, languages=["en"], settings=settings)  # type: ignore[attr-defined]
    except Exception:  # dateparser raises on odd input; the phrase is then left as written
        return None


def resolve_relative(text: str, event_time: datetime) -> tuple[str, list[Resolved]]:
    """The text with each resolvable phrase followed by its date, and what was resolved.

    "We shipped it yesterday" at 2023-05-08 → "We shipped it yesterday (2023-05-07)".
    """
    found: list[Resolved] = []
    for m in _PHRASE.finditer(text):
        when = _parse(m.group(), event_time)
        if when is not None:
            found.append(Resolved(m.group(), when.date().isoformat(), m.start(), m.end()))
    return splice(text, ((r.end, r.end, f" ({r.date})") for r in found)), found
