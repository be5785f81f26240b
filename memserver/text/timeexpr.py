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
from typing import Any

from memserver.text.terms import splice

__all__ = ["Resolved", "dates_named", "resolve_relative"]

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
def _parser() -> Any:
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
        found: datetime | None = dateparser.parse(text, languages=["en"], settings=settings)
    except Exception:  # dateparser raises on odd input; the phrase is then left as written
        return None
    return found


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


_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")  # fmt: skip
_ORD = r"(?:st|nd|rd|th)?"
_DAY_DATE = re.compile(
    rf"\b(?:\d{{1,2}}{_ORD}\s+(?:of\s+)?{_MONTH},?\s+\d{{4}}|{_MONTH}\s+\d{{1,2}}{_ORD},?\s+\d{{4}}"
    rf"|\d{{4}}-\d{{2}}-\d{{2}})\b",
    re.I,
)
_MONTH_DATE = re.compile(rf"\b{_MONTH},?\s+\d{{4}}\b", re.I)


def dates_named(text: str) -> list[tuple[datetime, datetime]]:
    """The calendar days and months `text` names in full ("on 3 June, 2023", "May 2023",
    "2023-06-03"), each as a [start, end) span in UTC; relative phrases are not read here
    (a question's "last week" has no base to resolve against)."""
    from datetime import UTC, timedelta

    spans: list[tuple[datetime, datetime]] = []
    taken: list[tuple[int, int]] = []
    for pattern, month in ((_DAY_DATE, False), (_MONTH_DATE, True)):
        for m in pattern.finditer(text):
            if any(a <= m.start() < b for a, b in taken):
                continue
            phrase = re.sub(r"(\d)(?:st|nd|rd|th)\b|\bof\s+", r"\1", m.group(), flags=re.I)
            settings = {"PREFER_DAY_OF_MONTH": "first", "RETURN_AS_TIMEZONE_AWARE": False}
            try:  # dateparser is loaded only for a text that names a date (12 MB resident)
                when = _parser().parse(phrase, languages=["en"], settings=settings)
            except Exception:
                when = None
            if when is None:
                continue
            taken.append((m.start(), m.end()))
            start = when.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=UTC)
            if month:
                start = start.replace(day=1)
                end = (start + timedelta(days=32)).replace(day=1)
            else:
                end = start + timedelta(days=1)
            spans.append((start, end))
    return spans
