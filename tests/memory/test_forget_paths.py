"""Forgotten paths are records, checked by one validator for the CLI and MCP: a path can
never become an ignore rule, a negation, or more than the files it names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memserver.cli import main
from memserver.core.errors import BadRequest
from memserver.core.requests import check_forget_path, forget_matcher
from memserver.core.types import ForgetRule
from memserver.store.forgotten import FORGOTTEN_FILE, load_rules
from tests.conftest import write_tree

TREE = {
    "src/app.py": "def app():\n    return 'app'\n",
    "sub/line.py": "def line_helper():\n    return 'line'\n",
    "new/x.py": "def new_x():\n    return 'x'\n",
    "private/secret_plan.py": "def secret_plan():\n    return 'plan'\n",
    ".gitignore": "private/\n",
}


@pytest.fixture
def repo(tmp_path: Path, make_engine):
    root = write_tree(tmp_path / "repo", TREE)
    engine = make_engine(root)
    engine.index()
    return root, engine


def _indexed(make_engine, root: Path) -> set[str]:
    engine = make_engine(root)
    engine.index()
    return set(engine.open_store().files.read())


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("nothing_here\n*", "control character"),
        ("x\r*", "control character"),
        ("!private/", "negation"),
        ("#comment", "negation or a comment"),
        ("/etc/passwd", "absolute"),
        ("../outside.py", "leaves the project root"),
        ("src/../../x", "leaves the project root"),
        ("", "empty"),
        ("   ", "empty"),
        ("/", "empty"),
    ],
)
def test_the_one_validator_refuses_what_is_not_one_path_inside_the_root(pattern, why) -> None:
    with pytest.raises(BadRequest, match=why):
        check_forget_path(pattern)


def test_a_newline_cannot_smuggle_a_rule_that_drops_every_file(repo, make_engine) -> None:
    root, engine = repo
    with pytest.raises(BadRequest, match="control character"):
        engine.memory_service().forget(paths=["nothing_here\n*"])
    assert not (engine.index_dir / FORGOTTEN_FILE).exists()
    assert _indexed(make_engine, root) == {"src/app.py", "sub/line.py", "new/x.py", ".gitignore"}


def test_an_older_index_poisoned_by_the_newline_bug_keeps_its_files(repo, make_engine) -> None:
    root, engine = repo
    # what the old `forget --path $'nothing_here\n*'` and `--path '!private/'` left behind
    (engine.index_dir / "forgotten.txt").write_text("nothing_here\n*\n!private/\nsub/line.py\n")
    assert [r.pattern for r in load_rules(engine.index_dir)] == ["nothing_here", "sub/line.py"]
    assert _indexed(make_engine, root) == {"src/app.py", "new/x.py", ".gitignore"}


def test_a_negation_cannot_pull_gitignored_code_in(repo, make_engine) -> None:
    root, engine = repo
    with pytest.raises(BadRequest, match="negation"):
        engine.memory_service().forget(paths=["!private/"])
    assert "private/secret_plan.py" not in _indexed(make_engine, root)
    found = make_engine(root).recaller(rerank=False).recall("secret plan").evidence
    assert all(not e.path.startswith("private/") for e in found)


def test_a_path_that_matches_nothing_is_refused_and_not_recorded(repo) -> None:
    _root, engine = repo
    with pytest.raises(BadRequest, match="matches no indexed file"):
        engine.memory_service().forget(paths=["docs/never.md"])
    assert load_rules(engine.index_dir) == ()


def test_a_file_named_with_a_newline_is_forgotten_alone(tmp_path: Path, make_engine) -> None:
    tree = {**TREE, "sub/odd\nname.py": "def odd_name():\n    return 'odd'\n"}
    root = write_tree(tmp_path / "repo", tree)
    engine = make_engine(root)
    engine.index()
    assert "sub/odd\nname.py" in engine.open_store().files.read()
    # the name itself holds a control character: it is forgotten through a glob of its folder
    # part, matched exactly against what is indexed, never written as ignore lines
    engine.memory_service().forget(paths=["sub/odd?name.py"])
    assert _indexed(make_engine, root) == {"src/app.py", "sub/line.py", "new/x.py", ".gitignore"}


def test_forgotten_files_stay_out_and_show_in_the_dry_run(repo, make_engine) -> None:
    root, engine = repo
    result = engine.memory_service().forget(paths=["sub/"], reason="obsolete")
    assert result.paths == ["sub/line.py"]
    assert load_rules(engine.index_dir) == (ForgetRule("sub", False, load_rules(
        engine.index_dir)[0].added_at, "obsolete"),)  # fmt: skip
    (root / "sub" / "later.py").write_text("def later():\n    return 1\n")  # a new file there
    assert _indexed(make_engine, root) == {"src/app.py", "new/x.py", ".gitignore"}
    out = CliRunner().invoke(main, ["index", str(root), "--dry-run", "--json"],
                             env={"MEMSERVER_EMBEDDING_MODEL": "hashing"})  # fmt: skip
    skipped = json.loads(out.stdout)["skipped"]
    assert skipped["sub/line.py"].startswith("forgotten") and skipped["sub/later.py"]


def test_globs_match_exactly_their_paths() -> None:
    rules = [ForgetRule("src/**/*.pem", True), ForgetRule("docs/a?.md", True),
             ForgetRule("build", False)]  # fmt: skip
    forgotten = forget_matcher(rules)
    assert forgotten("src/keys/x.pem") and forgotten("src/x.pem")
    assert not forgotten("src/x.pem.txt") and not forgotten("other/x.pem")
    assert forgotten("docs/ab.md") and not forgotten("docs/abc.md")
    assert forgotten("build/out.js") and not forgotten("builder/out.js")


def test_the_cli_and_mcp_refuse_the_same_paths(repo) -> None:
    root, _ = repo
    for bad in ("!private/", "/abs/path", "../up.py", "x\ny"):
        out = CliRunner().invoke(main, ["forget", "--root", str(root), "--path", bad],
                                 env={"MEMSERVER_EMBEDDING_MODEL": "hashing"})  # fmt: skip
        assert out.exit_code == 2, (bad, out.output)


@pytest.mark.anyio
async def test_the_mcp_tool_refuses_the_same_paths_and_records_nothing(repo, make_engine) -> None:
    import anyio
    from mcp import Client

    from memserver.server.app import build_server

    root, engine = repo
    refused = {"nothing_here\n*": "control character", "x\n*": "control character",
               "!private/": "negation", "/abs/path": "absolute", "../up.py": "leaves the project",
               "docs/never.md": "matches no indexed file"}  # fmt: skip
    with anyio.fail_after(60):
        async with Client(build_server(root, None, embedder_flag="hashing", env={})) as client:
            for bad, why in refused.items():
                answer = await client.call_tool("forget", {"paths": [bad], "reason": "x"})
                text = "\n".join(block.text for block in answer.content)
                assert answer.is_error and why in text, (bad, text)
    assert load_rules(engine.index_dir) == ()
    assert _indexed(make_engine, root) == {"src/app.py", "sub/line.py", "new/x.py", ".gitignore"}
