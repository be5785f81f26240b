"""`navigate.render.fit`: the most items whose text and JSON both fit the budget, found in
few renders (each one is counted with the tokenizer)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from memserver.navigate.render import Form, fit


def _answer(lengths: list[int]) -> tuple[Any, list[int]]:
    """A render of items of these many words, and the renders it was asked for."""
    asked: list[int] = []

    def render(n: int, truncated: bool) -> Form:
        asked.append(n)
        text = "\n".join(["header " * 3, *(" ".join(["w"] * k) for k in lengths[:n])])
        return text, {"items": lengths[:n], "more": truncated}

    return render, asked


def _words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("seed", range(40))
def test_fit_keeps_the_most_items_that_fit_and_renders_few(seed: int) -> None:
    rng = random.Random(seed)
    total = rng.choice([1, 3, 40, 300, 3000])
    alike = rng.random() < 0.5  # items of about one size, or of any size
    lengths = [rng.randint(20, 24) if alike else rng.choice([1, 2, 50, 400]) for _ in range(total)]
    budget = rng.randint(256, 8000)
    render, asked = _answer(lengths)
    off = rng.uniform(0.9, 1.1)  # an estimate a few per cent off, either way
    sizes = [round((k + 1) * off) for k in lengths] if rng.random() < 0.7 else None
    answer = fit(total, render, budget, _words, sizes)

    def used(n: int) -> int:
        return _words(render(n, n < total)[0])

    kept = len(answer.data["items"])
    calls = len(asked)
    assert answer.truncated is (kept < total)
    if kept:
        assert used(kept) <= budget
    assert kept == total or used(kept + 1) > budget  # the most that fit
    assert calls <= 4 + 2 * math.ceil(math.log2(total + 2)), (calls, asked)


def test_items_of_about_one_size_take_a_few_renders_from_an_estimate_a_little_off() -> None:
    """A render that does not fit says how many would at its tokens per item: the cut, or
    next to it (halving from there took up to 11 renders)."""
    for seed in range(60):
        rng = random.Random(seed)
        total = rng.choice([40, 300, 3000])
        lengths = [rng.randint(20, 24) for _ in range(total)]
        off = rng.uniform(0.9, 1.1)
        render, asked = _answer(lengths)
        fit(total, render, rng.randint(256, 8000), _words,
            [round((k + 1) * off) for k in lengths])  # fmt: skip
        assert len(asked) <= 4, (seed, asked)


def test_a_cut_found_from_below_never_renders_far_past_it() -> None:
    """Items that add nothing (a map's entries a better one already brought in as a parent)
    stall the steering below the cut; what follows doubles what fits, it does not halve the
    way to the last of thousands of items."""
    lengths = [20] * 45 + [0] * 30 + [20] * 5000
    render, asked = _answer(lengths)
    answer = fit(len(lengths), render, 1000, _words, [21] * len(lengths))
    kept = len(answer.data["items"])
    assert kept == 79  # 45 + 30 + 4 items of 20 words and the header's 3: 983 words
    assert max(asked) <= 2 * kept + 2, asked
