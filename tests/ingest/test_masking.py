"""Secrets in indexed files: masked before chunking, so nothing stored, indexed or embedded
holds them; counted per file and kind in the report, the manifest and status."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from memserver.cli import main
from memserver.core.ids import content_hash
from memserver.text.secrets import mask_code
from memserver.text.terms import query_terms

GHP = "ghp_" + "Q7dL2xVb9TmK4pWc8RnZ3fHs6YjA1gEu5iOk"
AKIA = "AKIA" + "Q7DL2XVB9TMK4PWC"
PASSWORD = "s3cr3t-Pa55word"
APP = f'''"""Settings."""

GITHUB = "{GHP}"
AWS_ACCESS_KEY_ID = "{AKIA}"


def connect(host):
    return open_db(host, password="{PASSWORD}")
'''
VALUES = f"db:\n  host: db.internal\n  password: {PASSWORD}\n"


def _repo(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src/app.py").write_text(APP, encoding="utf-8")
    (root / "deploy.yaml").write_text(VALUES, encoding="utf-8")
    (root / "README.md").write_text("# demo\n\nNothing secret here.\n", encoding="utf-8")
    return root


def test_the_index_holds_masked_text_and_counts(tmp_path: Path, make_engine) -> None:
    root = _repo(tmp_path / "repo")
    report = make_engine(root).index()
    assert report.masked == {
        "src/app.py": {"aws-access-key": 1, "github-token": 1, "password": 1},
        "deploy.yaml": {"password": 1},
    }
    assert report.to_dict()["masked_total"] == 4
    engine = make_engine(root)
    store = engine.open_store()
    manifest = store.files.read()
    app = manifest["src/app.py"]
    assert app.content_hash == content_hash((root / "src/app.py").read_bytes())  # the bytes'
    assert dict(app.masked) == report.masked["src/app.py"] and manifest["README.md"].masked == ()
    chunks = [c for c, _ in store.chunks.get(list(store.chunks.states())).values()]
    text = "\n".join(c.text for c in chunks)
    memories = store.memories.get(list(store.memories.states())).values()
    for secret in (GHP, AKIA, PASSWORD):
        assert secret not in text and all(secret not in m.text for m in memories)
        assert not store.keyword.search(query_terms(secret), 5, "chunk")
    assert "«secret:github-token»" in text and "password: «secret:password»" in text
    body = "\n".join(c.text for c in chunks if c.path == "src/app.py" and c.kind != "module")
    assert 'return open_db(host, password="«secret:password»")' in body
    # the spans still point at the file's own lines, each masked where it holds a secret
    lines = APP.splitlines()
    for c in (c for c in chunks if c.path == "src/app.py"):
        want = [mask_code(line, "python")[0] for line in lines[c.start_line - 1 : c.end_line]]
        assert c.text.splitlines() == want
    status = engine.status().to_dict()
    assert status["masked"] == report.masked and status["masked_total"] == 4
    assert status["masked_by_kind"] == {"aws-access-key": 1, "github-token": 1, "password": 2}


def test_counts_follow_the_file(tmp_path: Path, make_engine) -> None:
    root = _repo(tmp_path / "repo")
    make_engine(root).index()
    path = root / "src/app.py"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))  # touched
    again = make_engine(root).index()
    assert again.files_indexed == 0 and again.masked == {}
    assert make_engine(root).status().masked["src/app.py"]["github-token"] == 1
    path.write_text(APP.replace(f'GITHUB = "{GHP}"\n', ""), encoding="utf-8")
    changed = make_engine(root).index()
    assert changed.masked == {"src/app.py": {"aws-access-key": 1, "password": 1}}
    (root / "deploy.yaml").unlink()
    make_engine(root).index()
    assert set(make_engine(root).status().masked) == {"src/app.py"}


def test_the_cli_reports_kinds_and_counts_never_values(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    runner = CliRunner()
    done = runner.invoke(main, ["index", str(root), "--embedder", "hashing", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["masked"]["deploy.yaml"] == {"password": 1}
    (root / "new.py").write_text(f'TOKEN = "{GHP[:-1]}X"\n', encoding="utf-8")
    text = runner.invoke(main, ["index", str(root), "--embedder", "hashing"]).output
    assert "secrets masked: 1 values in 1 file (github-token 1): new.py" in text
    status = runner.invoke(main, ["status", "--root", str(root)]).output
    assert "5 values in 3 files" in status and "github-token 2" in status
    assert "deploy.yaml, new.py, src/app.py" in " ".join(status.split())
    for out in (done.output, text, status):
        assert GHP not in out and PASSWORD not in out and AKIA not in out
