"""A task description split into what names the code and the prose around it."""

from __future__ import annotations

from memserver.text.task import looks_like_code_name, parse_task

ISSUE = """QuerySet.only() crashes after select_related() on a reverse relation
Description

Calling `only()` after select_related() raises. See core.validators.URLValidator too, and
the docs at https://docs.example.com/en/stable/ref/models/querysets.py for the API.

>>> Author.objects.select_related("profile").only("name")
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/django/db/models/query.py", line 248, in __repr__
    data = list(self[:REPR_OUTPUT_SIZE + 1])
  File "/venv/lib/site-packages/django/db/models/sql/compiler.py", line 1105, in get_related
    raise FieldError(msg)
django.core.exceptions.FieldError: Invalid field name(s) given in select_related: 'profile'

```python
def test_it():
    Author.objects.only("name")
```
It used to work in 4.1; see src/app/models.py:12 and setup.py.
"""


def test_the_parts_of_an_issue() -> None:
    t = parse_task(ISSUE)
    assert t.title.startswith("QuerySet.only() crashes")
    assert [(f.path.rsplit("/", 3)[-1], f.line, f.function) for f in t.frames] == [
        ("query.py", 248, "__repr__"), ("compiler.py", 1105, "get_related"),
    ]  # fmt: skip
    assert "src/app/models.py" in t.paths and "setup.py" in t.paths
    assert not any("docs.example.com" in p for p in t.paths)  # a URL is not a file here
    assert "core.validators.URLValidator" in t.modules
    names = dict(t.names)
    assert names["select_related"] >= 3 and "only" in names  # called: `only()`
    assert "get_related" in names and "URLValidator" in names
    assert "Calling" not in names and "Description" not in names  # prose, not code
    assert [e.split(":")[0] for e in t.errors] == ["django.core.exceptions.FieldError"]
    assert 'Author.objects.only("name")' in t.code and "def test_it" in t.code
    assert "Traceback" not in t.prose and "It used to work" in t.prose


def test_what_looks_like_a_name_of_code() -> None:
    for word in ("parse_duration", "URLValidator", "getElementById", "FILE_UPLOAD_PERMISSIONS",
                 "__init__"):  # fmt: skip
        assert looks_like_code_name(word), word
    for word in ("Description", "However", "URL", "an", "the"):
        assert not looks_like_code_name(word), word
    assert looks_like_code_name("only", called=True) and looks_like_code_name("flush", quoted=True)


def test_a_one_line_question_has_no_code_parts() -> None:
    t = parse_task("where are redirects followed")
    assert (t.paths, t.frames, t.modules, t.names, t.errors, t.code) == ((), (), (), (), (), "")
    assert t.title == t.prose == "where are redirects followed"


def test_names_symbol_scores_the_symbols_an_issue_names() -> None:
    from memserver.retrieve.files import names_symbol

    task = parse_task(
        "QuerySet.only() crashes with select_related\n\nCalling `only()` after select_related "
        "fails in __init__ of the iterable:\n\n"
        'Traceback (most recent call last):\n  File "django/db/models/query.py", line 5, in '
        "__iter__\n    x\nTypeError: bad\n"
    )
    named = names_symbol(task)
    assert named("QuerySet.only") == 1.0  # a name it calls (and the qualified name)
    assert named("ModelIterable.__iter__") == 1.0  # a traceback's frame, dunder or not
    assert named("Query.select_related, Query.add_fields") == 1.0  # a merged chunk's part
    assert named("Model.__init__") == 0.0  # a dunder in prose names no one in particular
    assert named("QuerySet.filter") == 0.0 and named("") == 0.0


def test_what_a_code_sample_imports_is_a_name_however_short() -> None:
    t = parse_task(
        "A Q object fails with the | operator\n"
        ">>> from django.db.models import Q, Count as C  # aliased\n"
        ">>> Q() | Q(x__in={}.keys())\n"
        "from app.utils import (fmt,\n    go)\n"
        "It, too, fails; from here on the prose is not an import list, a, b\n"
    )
    names = dict(t.names)
    assert names["Q"] == 4  # every mention counts once it is imported
    assert {"Count", "fmt", "go"} <= names.keys()
    assert "C" not in names and "here" not in names and "a" not in names
    assert "django.db.models" in t.modules


def test_a_dotted_module_part_may_start_with_a_digit() -> None:
    t = parse_task("Migration auth.0011_update_proxy_permissions fails on Django 2.2")
    assert "auth.0011_update_proxy_permissions" in t.modules
    assert not any(m.startswith("2") for m in t.modules)  # a version is not a module
