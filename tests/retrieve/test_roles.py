"""What a file is for, from its path (the usual layouts) and, for tests, its code."""

from __future__ import annotations

import pytest

from memserver.retrieve.roles import Roles, content_is_test, path_role

CASES = {
    "django/db/models/query.py": "code",
    "src/httpx/_client.py": "code",
    "django/db/migrations/autodetector.py": "code",  # the migration framework is code
    "tests/test_client.py": "test",
    "js_tests/admin/SelectFilter2.test.js": "test",
    "pkg/client_test.go": "test",
    "src/__tests__/button.tsx": "test",
    "web/src/button.spec.ts": "test",
    "spec/models/user_spec.rb": "test",
    "conftest.py": "test",
    "tests/fixtures/data.json": "test",
    "docs/ref/models.txt": "doc",
    "README.md": "doc",
    "examples/basic/app.py": "example",
    "src/pip/_vendor/requests/api.py": "vendored",
    "third_party/zlib/inflate.c": "vendored",
    "app/migrations/0001_initial.py": "generated",
    "api/service_pb2.py": "generated",
    "static/app.min.js": "generated",
    "django/contrib/admin/static/admin/img/search.svg": "data",
    "locale/fr/LC_MESSAGES/django.po": "data",
}


@pytest.mark.parametrize("path", list(CASES))
def test_roles_from_paths(path: str) -> None:
    assert path_role(path) == CASES[path]


def test_project_globs_come_before_the_rules() -> None:
    roles = Roles(test_paths=("qa/**",), vendored_paths=("libs/**",), code_paths=("examples/**",))
    assert roles.of("qa/check_login.py") == "test"
    assert roles.of("libs/left_pad.js") == "vendored"
    assert roles.of("examples/app.py") == "code"  # a package named `examples` is first-party
    assert roles.of("src/app.py") == "code" and roles.of("tests/x.py") == "test"


def test_tests_by_their_code() -> None:
    assert content_is_test("class TestParser:\n    def test_empty(self):\n        assert 1\n")
    assert content_is_test("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    assert content_is_test("describe('button', () => {\n  it('renders', () => {})\n  it('x', f)\n")
    assert not content_is_test("def parse(line):\n    return line.split()\n")
    assert not content_is_test("def test_connection(self):\n    return self.ping()\n")


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("Add tests for the URL validator", {"test"}),
        ("TestCase.setUpTestData() docs are out of date", {"test", "doc"}),
        ("Typo in the docs of QuerySet.update()", {"doc"}),
        # a class whose name holds the word is not a question about tests
        ("LiveServerTestCase's ThreadedWSGIServer doesn't close database connections", set()),
        ("test_client keeps cookies across redirects", set()),
        # a failing test is about the code under test
        ("Tests failing on Python 3.10 after the upgrade", set()),
    ],
)
def test_the_roles_a_title_asks_about_come_from_its_words(text: str, asked: set[str]) -> None:
    from memserver.retrieve.files import asked_roles

    assert set(asked_roles(text)) == asked


def test_a_title_naming_fixtures_is_about_a_feature_a_question_about_them_is_about_tests(
) -> None:  # fmt: skip
    from memserver.retrieve.files import about_tests_or_docs, asked_roles
    from memserver.text.task import parse_task

    title = "Fixture dirs duplicates undetected if dir is Path instance"
    body = "When FIXTURE_DIRS contains Path instances, the duplicate check does not detect them."
    assert about_tests_or_docs(parse_task(f"{title}\nDescription\n{body}")) == frozenset()
    assert set(asked_roles("where is the database fixture for the orders")) == {"test"}


def test_a_short_issue_is_asked_about_as_a_long_one_a_question_line_as_a_question() -> None:
    from memserver.core.types import Evidence
    from memserver.retrieve.recall import tests_after_code

    def hit(path: str, score: float) -> Evidence:
        return Evidence(id=path, path=path, start_line=1, end_line=2, symbol="", kind="function",
                        language="python", text="", score=score, tokens=10)  # fmt: skip

    found = [hit("tests/fixtures_regress/tests.py", 1.0), hit("django/core/loaddata.py", 0.9)]
    issue = ("Fixture dirs duplicates undetected if dir is Path instance\nDescription\n"
             "When FIXTURE_DIRS contains Path instances, the check misses them.")  # fmt: skip
    assert tests_after_code(found, issue, 0.3)[0].path == "django/core/loaddata.py"
    question = "where is the fixture for duplicate fixture dirs"
    assert tests_after_code(found, question, 0.3) == found  # asks about tests: kept
    issue = "Add tests for the duplicate check of FIXTURE_DIRS\nThe check has no test yet."
    assert tests_after_code(found, issue, 0.3) == found
