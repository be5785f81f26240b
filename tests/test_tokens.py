"""The token counter keeps counts it has made; a kept count is the count."""

from __future__ import annotations

from memserver import tokens
from memserver.tokens import TiktokenCounter


def test_kept_counts_equal_fresh_counts_and_stay_bounded(monkeypatch) -> None:
    monkeypatch.setattr(tokens, "_MEMO_SIZE", 8)
    counter, fresh = TiktokenCounter(), TiktokenCounter()
    long_text = "def parse_http_response(raw):\n    return raw.split(b'\\r\\n')\n" * 40
    texts = ["", "x", "    return value", long_text, long_text + " ", "\ud800 lone surrogate"]
    texts += [f"line {i} of a file" for i in range(20)]
    for _ in range(2):  # the second round comes from what was kept
        for text in texts:
            want = len(fresh._enc.encode_ordinary(text))
            assert counter.count(text) == want, text[:40]
    assert len(counter._memo) <= 8


def test_the_counter_without_the_python_ranks_encodes_like_a_whole_encoding() -> None:
    import tiktoken
    from tiktoken.registry import ENCODING_CONSTRUCTORS, get_encoding

    counter = TiktokenCounter()
    get_encoding(tokens.ENCODING)  # registers the offline constructors
    whole = tiktoken.Encoding(**ENCODING_CONSTRUCTORS[tokens.ENCODING]())
    assert "_mergeable_ranks" not in vars(counter._enc) and whole._mergeable_ranks
    texts = ["def f(x):\n    return x  # ünïcode ✓ 日本語", "\ud800 lone", "<|endoftext|> as text"]
    texts += ["    " * 30 + "deeply_indented_name = [1, 2, 3]" * 20]
    assert [counter._enc.encode_ordinary(t) for t in texts] == [
        whole.encode_ordinary(t) for t in texts
    ]
    assert counter.count_many(texts) == [len(whole.encode_ordinary(t)) for t in texts]
