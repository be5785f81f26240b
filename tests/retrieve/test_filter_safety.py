"""Paths and ids reach LanceDB filters only as quoted literals: no injection, no mismatch.

A path may hold quotes, `%`, `\\`, SQL, glob characters and any Unicode; it is indexed,
recalled and forgotten as exactly that path, and nothing else is touched.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

from click.testing import CliRunner

from memserver.cli import main
from memserver.engine import Engine
from memserver.store.forgotten import load_rules

WEIRD = 'src/we\'ird "q" 100% a\\b ) OR 1=1 --.py'
OTHERS = {
    "src/' OR '1'='1.py": "def or_one_equals_one():\n    return 'injection attempt'\n",
    "src/ünïcødé_模块.py": "def unicode_module_function():\n    return 'unicode'\n",
    "src/[glob]*?.py": "def glob_characters_function():\n    return 'glob'\n",
    "src/normal.py": "def ordinary_function():\n    return 'normal'\n",
}
TREE = {WEIRD: "def quirky_path_function():\n    return 'quirk'\n", **OTHERS}


def _engine(root: Path) -> Engine:
    return Engine(root, None, embedder_flag="hashing", env={})


def _state(root: Path) -> tuple[dict[str, list[str]], set[str], set[str]]:
    store = _engine(root).open_store()
    manifest = {p: sorted(r.chunk_ids) for p, r in store.files.read().items()}
    current = {c for c, cur in store.chunks.states().items() if cur}
    return manifest, current, store.keyword.all_ids()


def test_hostile_paths_index_recall_and_forget_exactly(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel, text in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _engine(root).index()
    manifest, current, in_bm25 = _state(root)
    assert set(manifest) == set(TREE)
    assert current == in_bm25 == {c for ids in manifest.values() for c in ids}
    store = _engine(root).open_store()
    by_path = {c.path for c, _ in store.chunks.get(sorted(current)).values()}
    assert by_path == set(TREE)

    evidence = _engine(root).recaller().recall("quirky path function").evidence
    assert evidence[0].path == WEIRD and evidence[0].symbol == "quirky_path_function"

    runner = CliRunner()
    args = ["forget", "--root", str(root), "--path", WEIRD, "--json"]
    result = runner.invoke(main, args, env={"MEMSERVER_INDEX_DIR": None})
    assert result.exit_code == 0, result.output
    forgot = json.loads(result.stdout)
    assert forgot["paths"] == [WEIRD]
    assert {f for f in forgot["forgotten"] if f.startswith("c_")} == set(manifest[WEIRD])

    after, current_after, bm25_after = _state(root)
    assert after == {p: ids for p, ids in manifest.items() if p != WEIRD}  # nothing else
    assert current_after == bm25_after == current - set(manifest[WEIRD])

    for rel in TREE:  # a full pass over every file leaves the forgotten one out
        os.utime(root / rel)
    _engine(root).index()
    assert _state(root)[0] == after
    top = _engine(root).recaller().recall("quirky path function").evidence
    assert all(e.path != WEIRD for e in top)
    assert len(load_rules(_engine(root).index_dir)) == 1

    # a path full of glob characters is also taken as written
    glob_path = "src/[glob]*?.py"
    result = runner.invoke(main, [*args[:3], "--path", glob_path, "--json"],
                           env={"MEMSERVER_INDEX_DIR": None})  # fmt: skip
    assert json.loads(result.stdout)["paths"] == [glob_path]
    assert set(_state(root)[0]) == set(OTHERS) - {glob_path}


# -- every interpolation into a filter string goes through the quoting helpers -----------

_FILTER_CALLS = {"where", "delete", "count_rows", "update", "find", "select", "scan", "rows",
                 "count", "_count", "update_where", "with_row_ids"}  # fmt: skip
_QUOTING = {"sql_quote", "in_list", "_any_of"}
# lancedb.py composes filters its callers built; memories.py joins sql_quote'd ids
_QUOTED_NAMES = {"where", "listed"}
_SOURCES = ("store",)  # SQL is written in the store alone
_SERVICES = ("memory", "retrieve", "ingest")


def _filter_strings(tree: ast.AST) -> list[ast.JoinedStr]:
    """f-strings passed to a filter call, or kept in a variable named like a filter."""
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in _FILTER_CALLS:
                found += [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id.lower() for t in targets if isinstance(t, ast.Name)]
            value = node.value
            if isinstance(value, ast.ListComp):  # wheres = [f"... {x}" for b in batches]
                value = value.elt
            if any(n.endswith(("where", "wheres")) or n == "_stale_note" for n in names) and _sql(
                value
            ):
                found.append(value)
    return [n for n in found if isinstance(n, ast.JoinedStr)]


def _sql(node: ast.expr) -> bool:
    """An f-string with SQL in it (a variable called `where` may also hold a place)."""
    parts = getattr(node, "values", [])
    literal = "".join(v.value for v in parts if isinstance(v, ast.Constant))
    return any(m in literal for m in (" = ", " IN (", "IS NULL", "array_has(", " AND "))


def _quoted(value: ast.expr) -> bool:
    if isinstance(value, ast.Name):  # constants, and names built from sql_quote above
        return value.id.lstrip("_").isupper() or value.id in _QUOTED_NAMES
    if not isinstance(value, ast.Call):
        return False
    if getattr(value.func, "id", "") in _QUOTING:
        return True
    # ", ".join(sql_quote(v) for v in values)
    arg = value.args[0] if getattr(value.func, "attr", "") == "join" and value.args else None
    return isinstance(arg, ast.GeneratorExp) and isinstance(arg.elt, ast.Call) and _quoted(arg.elt)


def test_filter_strings_interpolate_only_quoted_values_or_constants() -> None:
    package = Path(__file__).resolve().parents[2] / "memserver"
    checked, problems = 0, []
    for folder in _SOURCES:
        for path in sorted((package / folder).glob("*.py")):
            for text in _filter_strings(ast.parse(path.read_text(encoding="utf-8"))):
                checked += 1
                problems += [
                    (path.name, text.lineno, ast.unparse(part.value))
                    for part in text.values
                    if isinstance(part, ast.FormattedValue) and not _quoted(part.value)
                ]
    assert checked >= 10, "the filter finder found too little: has the code moved?"
    assert problems == [], f"filters must quote values with sql_quote / in_list: {problems}"
    elsewhere = [
        (path.name, text.lineno)
        for folder in _SERVICES
        for path in sorted((package / folder).glob("*.py"))
        for text in _filter_strings(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert elsewhere == [], f"SQL filters belong in memserver/store: {elsewhere}"


def test_a_path_with_a_newline_stays_on_its_own_line_in_text_answers(tmp_path: Path) -> None:
    """A file named to look like further results (`…\\n## setup.py:1-9 function main`)
    is shown with its newline escaped wherever a text answer names it: recall, symbol,
    references and outline."""
    from memserver.core import render

    fake = "## setup.py:1-9 function main c_fake"
    rel = f"src/zz\n{fake}\nx.py"
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / rel).write_text("def echo_fake_line():\n    return echo_fake_line()\n")
    (root / "src" / "uses.py").write_text("from zz import echo_fake_line\necho_fake_line()\n")
    engine = _engine(root)
    engine.index()
    result = engine.recaller().recall("echo fake line")
    assert result.evidence and result.evidence[0].path == rel
    navigator = engine.navigator()
    texts = [
        render.recall_text(result),
        navigator.symbol("echo_fake_line").text,
        navigator.references("echo_fake_line").text,
        navigator.outline().text,
    ]
    for text in texts:
        assert "zz\\x0a## setup.py" in text, text
        assert fake not in text.splitlines(), text
