"""Recall over remembered conversation turns: who said it, what came next, and when."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from memserver.core.requests import Filters, Note
from memserver.core.types import RecallResult
from memserver.engine import Engine
from memserver.retrieve.conversation import (
    _statements,
    named_speakers,
    stated_by_another,
    subject,
    without_names,
)  # fmt: skip
from memserver.text.timeexpr import dates_named
from tests.conftest import requires_model


def turn(text: str, path: str = "conversations/s1/T1") -> SimpleNamespace:
    speaker = text.split(":", 1)[0] if ":" in text else ""
    return SimpleNamespace(kind="turn", text=text, path=path, score=1.0, speaker=speaker)


def test_the_named_speakers_the_subject_and_the_query_without_names() -> None:
    found = [turn("Ana: I ran a race."), turn("Ben: Nice!"), turn("Ana: It was hard.")]
    assert named_speakers("What did Ben's teacher say?", found) == (("Ben",), ("Ana", "Ben"))
    assert named_speakers("What did Bengt do?", found)[0] == ()  # a name, not a prefix
    assert named_speakers("What did Ana do?", found[:1])[0] == ()  # one speaker: no contrast
    note = SimpleNamespace(kind="note", text="Ana: notes", path="notes/a.md", score=1.0)
    assert named_speakers("What did Ana do?", [note, found[1]])[0] == ()
    named = named_speakers("What did Ben tell Ana about the race?", found)[0]
    assert named == ("Ben", "Ana")
    assert subject("What did Ben tell Ana about the race?", named) == "Ben"
    assert subject("What do Ben and Ana both like?", ("Ben", "Ana")) == ""
    assert subject("What did Ana do?", ("Ana",)) == "Ana"
    assert without_names("What did Ben's teacher tell Ana?", ["Ana", "Ben"]) == (
        "What did teacher tell ?"
    )


def test_statements_leave_out_questions_and_what_is_said_to_the_listener() -> None:
    said = _statements("Ben: Glad your son is okay. I ran a race! How did the race go?")
    assert {"ran", "race"} <= said
    assert not {"son", "okay", "go"} & said


def test_stated_by_another_compares_each_speakers_best_turns() -> None:
    turns = [turn("Ana: I ran a charity race for the shelter."),
             turn("Ben: How was the charity race?"), turn("Ben: I love pottery.")]  # fmt: skip
    words = ["charity", "race"]
    assert stated_by_another(words, turns, "Ben")
    assert not stated_by_another(words, turns, "Ana")
    assert not stated_by_another([], turns, "Ben")


def test_next_turns_follow_the_turn_number_within_a_conversation(
    tmp_path: Path, make_engine
) -> None:
    """A turn's speaker and number are columns; the turns that follow one are those of the
    same conversation and id prefix with the next numbers (a gap is skipped)."""
    root = tmp_path / "chat"
    root.mkdir()
    (root / "readme.md").write_text("# chat\n")
    engine = make_engine(root)
    engine.index()
    ids = ["D7:11", "D7:12", "D7:14", "D8:12", "intro"]
    notes = [Note(f"Ana: turn {i} about topic {n}", scope=(("session", "s1"),), turn_id=i,
                  speaker="Ana") for n, i in enumerate(ids)]  # fmt: skip
    engine.memory_service().remember_many(notes)
    snap = engine.recaller(rerank=False).snapshots()
    rows = {snap.fetch([r])[0].symbol: r for r in range(snap.size())}
    assert snap.fetch([rows["D7:11"]])[0].speaker == "Ana"
    assert snap.fetch([rows["D7:11"]])[0].turn == 11
    nxt = snap.next_turns(rows["D7:11"], 3)
    assert [snap.fetch([r])[0].symbol for r in nxt] == ["D7:12", "D7:14"]
    assert snap.next_turns(rows["intro"], 3) == []


def test_dates_named_reads_days_and_months_not_bare_words() -> None:
    day = dates_named("What did she start on 3 June, 2023?")
    assert day == [(datetime(2023, 6, 3, tzinfo=UTC), datetime(2023, 6, 4, tzinfo=UTC))]
    assert dates_named("What happened on October 13, 2023?")[0][0].day == 13
    month = dates_named("What did he host in May 2023?")
    assert month == [(datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC))]
    assert dates_named("May I ask what she did in march?") == []


def test_a_query_naming_no_date_never_loads_dateparser() -> None:
    """Most queries name no date: dateparser (12 MB resident) stays out of the server."""
    script = (
        "import sys\n"
        "from memserver.text.timeexpr import dates_named\n"
        "print(dates_named('send a request again with backoff'), 'dateparser' in sys.modules)\n"
        "print(len(dates_named('on 3 June, 2023')), 'dateparser' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    assert out.stdout.split("\n")[:2] == ["[] False", "1 True"]


CHAT = [  # (turn id, speaker, text, day)
    ("T1", "Ana", "I ran a charity race for the animal shelter last Saturday.", 8),
    ("T2", "Ben", "Wow, that is great! How did the race go for you?", 8),
    ("T3", "Ana", "It made me realize how much I love running with my greyhound Pixel.", 8),
    ("T4", "Ben", "My pottery teacher moved to Lisbon, so the class has a new teacher.", 8),
    ("T5", "Ana", "Sorry to hear that. Do you like the new teacher?", 8),
    ("T6", "Ben", "I started a glazing workshop at the studio downtown.", 20),
    ("T7", "Ana", "Cool! Send me photos of the glazes.", 20),
    ("T8", "Ben", "Sure, I will bring the bowls next time we meet.", 20),
]


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("chat")
    (root / "repo").mkdir()
    engine = Engine(root / "repo", root / "index", env={})
    scope = (("session", "chat"),)
    notes = [Note(f"{who}: {text}", event_time=datetime(2023, 5 if day == 8 else 6, day, 13,
                                                        tzinfo=UTC),
                  scope=scope, turn_id=tid, speaker=who)
             for tid, who, text, day in CHAT]  # fmt: skip
    engine.memory_service().remember_many(notes)
    return engine


def _ask(engine: Engine, query: str) -> RecallResult:
    scope = Filters(scope=(("session", "chat"),))
    return engine.recaller(rerank=False).recall(query, k=5, filters=scope)


@requires_model
def test_what_another_speaker_did_is_held_back(chat: Engine) -> None:
    threshold = chat.settings.recall.gate_threshold
    trap = _ask(chat, "What did Ben realize after his charity race?")
    assert not trap.found and trap.confidence <= round(threshold / 2, 4)  # as results round
    asked = _ask(chat, "What did Ana realize after her charity race?")
    assert asked.confidence > threshold / 2
    assert asked.evidence[0].symbol in {"T1", "T3"}


@requires_model
def test_the_named_speakers_turn_comes_with_its_next_turn(chat: Engine) -> None:
    symbols = [e.symbol for e in _ask(chat, "Why did Ana run the charity race?").evidence]
    assert symbols[0] == "T1"
    assert symbols[1] == "T3"  # Ana's next turn, after Ben's question


@requires_model
def test_a_named_day_brings_what_was_said_that_day(chat: Engine) -> None:
    symbols = [e.symbol for e in _ask(chat, "What did Ben start on 20 June, 2023?").evidence]
    assert "T6" in symbols[:2]
