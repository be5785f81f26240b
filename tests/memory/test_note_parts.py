"""The pure parts of the write path: scrubbing, code blocks, relative time, statements."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memserver.eval.scrub import run, source_lines
from memserver.memory.atomic import atomise
from memserver.memory.codeblocks import split_code
from memserver.text.secrets import Scrubber
from memserver.text.sentences import entities, sentences
from memserver.text.timeexpr import resolve_relative

PROJECT = Path(__file__).resolve().parents[2]


def test_planted_secrets_never_leak_and_code_is_left_alone() -> None:
    lines = source_lines([PROJECT / "memserver", PROJECT / "indexers"], 3000, seed=7)
    report = run(n_secrets=400, n_harmless=400, code_lines=lines, seed=11)
    assert report.secrets == 400
    assert report.leaked == 0, report.leaked_examples
    assert report.harmless_tokens > 5000
    assert report.harmless_redacted / report.harmless_tokens <= 0.01, report.redacted_examples


@pytest.mark.parametrize(
    "keep",
    [
        "3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f",
        "123e4567-e89b-12d3-a456-426614174000",
        "src/memserver/store/lance.py",
        "v2.14.3",
        "#1e90ff",
        "token_count = len(tokens)",
        "password = read_password()",
        "localhost:8765",
    ],
)
def test_code_memory_tokens_are_kept(keep: str) -> None:
    text = f"Fixed in {keep} today."
    clean, found = Scrubber().scrub(text)
    assert clean == text and found == []


def test_secrets_and_personal_data_are_replaced_and_counted() -> None:
    key = "sk-ant-api03-" + "".join(random.Random(3).choices("abcdefXYZ0123456789", k=60))
    text = (
        f"Use {key} for staging. Ping jane.doe@example.org or +1 415-555-0132.\n"
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----\n"
        "DSN postgres://app:Sup3rS3cret!@db.internal:5432/app"
    )
    clean, found = Scrubber().scrub(text)
    for secret in (
        key,
        "jane.doe@example.org",
        "415-555-0132",
        "MIIEowIBAAKCAQEA7",
        "Sup3rS3cret!",
    ):
        assert secret not in clean
    assert {r.kind for r in found} >= {"api_key", "email", "phone", "private_key", "password"}
    assert "db.internal:5432/app" in clean  # only the password goes
    kept, none = Scrubber(emails=False, phones=False).scrub(
        "mail jane@example.org, +1 415-555-0132"
    )
    assert none == [] and "jane@example.org" in kept


def test_code_blocks_come_out_verbatim_with_references() -> None:
    code = "def f(x):\n    return x  # keep   spacing\n"
    loop = "    for i in range(3):\n        go(i);\n        done();\n"
    text = f"Before.\n```python\n{code}```\nAfter.\n{loop}End."
    prose, blocks = split_code(text)
    assert blocks[0].text == code.rstrip("\n") and blocks[0].language == "python"
    assert blocks[0].fenced and not blocks[1].fenced
    assert blocks[1].text.splitlines()[0] == "    for i in range(3):"
    assert "[code block 1]" in prose and "[code block 2]" in prose
    assert "return x" not in prose and "Before." in prose and "End." in prose


def test_relative_time_becomes_iso_dates_against_the_event_time() -> None:
    base = datetime(2023, 5, 10, 15, 0, tzinfo=UTC)  # a Wednesday
    text = "I moved yesterday. Two weeks ago it broke; next month we ship, last Friday we met."
    out, found = resolve_relative(text, base)
    got = {r.phrase.lower(): r.date for r in found}
    assert got["yesterday"] == (base - timedelta(days=1)).date().isoformat()
    assert got["two weeks ago"] == (base - timedelta(weeks=2)).date().isoformat()
    assert got["next month"].startswith("2023-06")
    last_friday = base - timedelta(days=(base.weekday() - 4) % 7 or 7)
    assert got["last friday"] == last_friday.date().isoformat()
    assert "yesterday (2023-05-09)" in out  # the phrase is kept, the date follows it


def test_sentences_keep_code_spans_paths_and_versions_whole() -> None:
    text = "Call `a.b(). c` first. See src/x.py and v1.2.3 e.g. here. Done!"
    assert sentences(text) == [
        "Call `a.b(). c` first.",
        "See src/x.py and v1.2.3 e.g. here.",
        "Done!",
    ]


def test_statements_join_pronoun_led_sentences_and_carry_entities() -> None:
    drafts = atomise(
        "Caroline moved `RetryPolicy` to src/net/retry.py. It now caps backoff at 30 s. "
        "We decided to pin httpx to 0.27."
    )
    assert len(drafts) == 2
    assert drafts[0].text.endswith("caps backoff at 30 s.")
    assert {"RetryPolicy", "src/net/retry.py", "Caroline"} <= set(drafts[0].entities)
    assert drafts[1].type == "decision"
    assert "0.27" in entities(drafts[1].text)
