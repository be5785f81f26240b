"""The localization metrics on hand-made answers, small enough to check by hand."""

from __future__ import annotations

import pytest

from memserver.eval.localize import (
    GoldFunction,
    Hit,
    Scored,
    definitions,
    distinct_files,
    distinct_functions,
    file_rank,
    function_rank,
    is_doc_path,
    is_test_path,
    spans_of,
    summarise,
)


@pytest.mark.parametrize(
    ("path", "test", "doc"),
    [
        ("django/core/validators.py", False, False),
        ("tests/validators/tests.py", True, False),
        ("django/test/testcases.py", False, False),  # the test framework is code
        ("src/testing/util.py", True, False),
        ("pkg/test_client.py", True, False),
        ("pkg/client_test.py", True, False),
        ("conftest.py", True, False),
        ("docs/ref/settings.txt", False, True),
        ("docs/conf.py", False, True),
        ("README.rst", False, True),
        ("CHANGES.md", False, True),
    ],
)
def test_test_and_doc_paths(path: str, test: bool, doc: bool) -> None:
    assert (is_test_path(path), is_doc_path(path)) == (test, doc)


def test_definitions_have_qualified_names_and_whole_spans() -> None:
    source = (
        "class A:\n    def b(self):\n        def inner():\n            pass\n\n\n"
        "def f():\n    return 1\n"
    )
    defs = definitions(source)
    assert defs == {"A": [(1, 4)], "A.b": [(2, 4)], "A.b.inner": [(3, 4)], "f": [(7, 8)]}
    assert spans_of(defs, "b.inner") == [(3, 4)] and spans_of(defs, "b") == [(2, 4)]
    assert spans_of(defs, "A.c") == [] and spans_of(defs, "nner") == []  # whole names only
    assert definitions("def broken(:\n") == {}


HITS = [
    Hit("a.py", "A.b", 10, 20),
    Hit("tests/test_a.py", "test_b", 1, 5),
    Hit("a.py", "A.b", 30, 40),  # a second chunk of one function: still one function
    Hit("b.py", "", 1, 50),  # no symbol: stands for its span
    Hit("c.py", "X, Y", 1, 10),  # a merged chunk
]


def test_distinct_files_and_functions_in_rank_order() -> None:
    assert distinct_files(HITS) == ["a.py", "tests/test_a.py", "b.py", "c.py"]
    units = distinct_functions(HITS)
    assert [(u.path, u.symbol) for u in units] == [
        ("a.py", "A.b"), ("tests/test_a.py", "test_b"), ("b.py", "1-50"), ("c.py", "X, Y")
    ]  # fmt: skip
    assert units[0].spans == ((10, 20), (30, 40))


def test_file_rank_needs_every_gold_file() -> None:
    files = distinct_files(HITS)
    assert file_rank(files, ["a.py"]) == 1
    assert file_rank(files, ["a.py", "b.py"]) == 3
    assert file_rank(files, ["a.py", "z.py"]) is None
    assert file_rank(files, []) is None


def test_function_rank_by_symbol_suffix_merged_symbol_or_contained_definition() -> None:
    units = distinct_functions(HITS)
    by_suffix = GoldFunction("a.py", "b")  # `A.b` ends with `.b`
    by_span = GoldFunction("b.py", "g", ((5, 9),))  # its definition lies inside 1-50
    by_merged = GoldFunction("c.py", "Y")
    assert function_rank(units, [by_suffix]) == 1
    assert function_rank(units, [by_suffix, by_span]) == 3
    assert function_rank(units, [by_suffix, by_span, by_merged]) == 4
    assert function_rank(units, [GoldFunction("a.py", "Ab")]) is None  # not a name boundary
    assert function_rank(units, [GoldFunction("b.py", "h", ((45, 60),))]) is None  # overlaps only
    assert function_rank(units, [GoldFunction("z.py", "A.b")]) is None  # same name, other file
    assert function_rank(units, []) is None


def test_summarise_by_hand() -> None:
    answers = [
        Scored(("a.py", "tests/t.py"), 1, 2, True, True, True, 0.9, 100, 10.0),
        Scored(("x.py", "b.py", "c.py"), 3, 12, True, True, True, 0.8, 200, 20.0),
        Scored(("tests/t.py", "docs/d.txt"), None, None, True, False, False, 0.3, 300, 30.0),
        Scored(("x.py",) * 7, 7, None, False, False, True, 0.85, 400, 40.0),
    ]
    s = summarise(answers)
    assert [s[f"file_acc@{k}"] for k in (1, 3, 5, 10)] == [25.0, 50.0, 50.0, 75.0]
    assert s["function_n"] == 3  # the last answer's issue has no gold functions
    assert s["function_acc@5"] == pytest.approx(100 / 3)  # only the first holds all by 5
    assert s["function_acc@10"] == s["function_acc@5"]  # the second's 12 is past 10 too
    assert s["found_false_rate"] == 0.25
    assert s["tokens_mean"] == 250
    assert s["tests_docs_top10"] == (1 + 0 + 2 + 0) / 4
    assert s["test_at_1"] == 0.25
    # confidences of answers with a gold file in the top 5 (0.9, 0.8) against the rest
    # (0.3, 0.85): 3 of the 4 pairs ordered right
    assert s["auroc_gold_top5"] == 0.75
    assert (s["p50_ms"], s["p95_ms"]) == (20.0, 30.0)
    assert set(summarise(answers, ranking_only=True)) == {
        "n", "file_acc@1", "file_acc@3", "file_acc@5", "file_acc@10", "p50_ms", "p95_ms"
    }  # fmt: skip
