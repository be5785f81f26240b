"""CI pre-indexing end to end: `index --ci`, `export`, `import`, then incremental `index`."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import zstandard
from click.testing import CliRunner

from memserver.cli import main
from memserver.engine import Engine

QUERIES = ["retry failed requests with backoff", "load settings", "registerRoutes", "guide"]
COMMIT = "1" * 40


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env={"MEMSERVER_INDEX_DIR": None})
    return result.exit_code, result.stdout, result.stderr


def ok(*args: str) -> dict[str, Any]:
    code, out, err = run(*args, "--json")
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def fake_git(root: Path, commit: str, branch: str = "main") -> None:
    """What `memserver.ingest.git.head` reads: HEAD naming a branch, the branch a commit."""
    (root / ".git/refs/heads").mkdir(parents=True, exist_ok=True)
    (root / ".git/HEAD").write_text(f"ref: refs/heads/{branch}\n")
    (root / f".git/refs/heads/{branch}").write_text(commit + "\n")


def checkout(src: Path, dest: Path) -> Path:
    """A fresh copy of the tree, without its index and with new mtimes (like a clone)."""
    shutil.copytree(
        src, dest, ignore=shutil.ignore_patterns(".memserver"), copy_function=shutil.copy
    )
    for path in dest.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    return dest


def recall_all(root: Path) -> list[dict[str, Any]]:
    return [ok("recall", q, "--root", str(root), "--no-rerank") for q in QUERIES]


def members(artifact: Path) -> list[str]:
    with artifact.open("rb") as fh, zstandard.ZstdDecompressor().stream_reader(fh) as zr:
        return [m.name for m in tarfile.open(fileobj=io.BytesIO(zr.read()), mode="r:")]


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".import-" in p.name or ".old-" in p.name)


@pytest.fixture
def exported(sample_repo: Path, tmp_path: Path) -> Path:
    fake_git(sample_repo, COMMIT)
    ok("index", str(sample_repo), "--embedder", "hashing", "--ci")
    out = tmp_path / "index.tar.zst"
    ok("export", "--root", str(sample_repo), "--out", str(out))
    return out


def test_round_trip_recalls_the_same(sample_repo: Path, exported: Path, tmp_path: Path) -> None:
    before = recall_all(sample_repo)
    assert all(r["evidence"] for r in before)
    copy = checkout(sample_repo, tmp_path / "elsewhere" / "repo")

    result = ok("import", str(exported), "--root", str(copy), "--embedder", "hashing")

    a = result["artifact"]
    assert (a["format"], a["project"], a["git_commit"], a["embedder"]) == (
        1, "repo", COMMIT, "hashing-256",
    )  # fmt: skip
    assert a["files"] == 4 and a["chunks"] > 0 and result["replaced"] is False
    index = copy / ".memserver"
    assert json.loads((index / "meta.json").read_text())["root"] == str(copy.resolve())
    assert not {"state.json", "writer.lock", "DIRTY"} & {p.name for p in index.iterdir()}
    names = members(exported)
    assert names[0] == "artifact.json" and "index/meta.json" in names
    assert not [n for n in names if n.endswith((".lock", "state.json", "DIRTY"))]
    assert recall_all(copy) == before
    assert leftovers(copy) == []


def test_the_code_graph_travels_with_the_artifact(
    sample_repo: Path, exported: Path, tmp_path: Path
) -> None:
    asked = [("symbol", "RetryPolicy.delays"), ("references", "RetryPolicy"),
             ("outline", "src/http_client.py")]  # fmt: skip
    before = [ok(*q, "--root", str(sample_repo)) for q in asked]
    assert before[0]["definitions"] and before[1]["files"] and before[2]["files"]
    copy = checkout(sample_repo, tmp_path / "elsewhere" / "repo")
    result = ok("import", str(exported), "--root", str(copy), "--embedder", "hashing")
    assert result["artifact"]["definitions"] > 0 and result["artifact"]["references"] > 0
    assert [ok(*q, "--root", str(copy)) for q in asked] == before


def test_index_after_import_redoes_only_what_changed(
    sample_repo: Path, exported: Path, tmp_path: Path
) -> None:
    copy = checkout(sample_repo, tmp_path / "elsewhere" / "repo")
    fake_git(copy, "2" * 40)
    (copy / "src/config.py").write_text("def changed():\n    return 2\n")
    (copy / "src/new.py").write_text("def brand_new():\n    return 3\n")
    (copy / "web/app.js").unlink()

    result = ok("import", str(exported), "--root", str(copy), "--embedder", "hashing")
    assert any("redoes only the files that differ" in n for n in result["notes"])
    report = ok("index", str(copy))

    assert (report["files_indexed"], report["files_removed"], report["files_unchanged"]) == (
        2,
        1,
        2,
    )
    assert report["chunks_added"] == report["chunks_embedded"] == 2  # one function per file
    assert ok("status", "--root", str(copy))["up_to_date"]
    again = ok("index", str(copy))
    assert (again["files_indexed"], again["chunks_added"], again["chunks_embedded"]) == (0, 0, 0)


def _rows(root: Path) -> dict[str, list[Any]]:
    store = Engine(root, None, env={}).open_store()
    chunks = store.table("chunks").to_arrow().to_pylist()
    memories = store.table("memories").to_arrow().to_pylist()
    files = store.table("files").to_arrow().to_pylist()
    return {
        "chunks": sorted(
            (r["id"], r["path"], r["start_line"], r["end_line"], r["text"], r["vector"])
            for r in chunks
        ),
        "memories": sorted((r["id"], r["text"], r["source_ids"], r["vector"]) for r in memories),
        "files": sorted((r["path"], r["content_hash"], r["chunk_ids"]) for r in files),
    }


def test_ci_builds_are_deterministic_and_compact(sample_repo: Path, tmp_path: Path) -> None:
    one = checkout(sample_repo, tmp_path / "one" / "repo")
    two = checkout(sample_repo, tmp_path / "two" / "repo")
    os.utime(two / "src/config.py", ns=(5_000_000_000, 5_000_000_000))
    for root in (one, two):
        code, out, err = run("index", str(root), "--embedder", "hashing", "--ci")
        assert code == 0, err
        assert json.loads(out)["files_indexed"] == 4  # --ci prints one JSON object

    first, second = _rows(one), _rows(two)
    assert first == second and first["chunks"] and first["memories"]
    for root in (one, two):
        store = Engine(root, None, env={}).open_store()
        tables = [store.table(n) for n in ("chunks", "files", "memories", "events")]
        assert [len(t.list_versions()) for t in tables] == [1, 1, 1, 1]
        assert not (root / ".memserver/state.json").exists()


def test_import_refuses_another_embedder(sample_repo: Path, exported: Path, tmp_path: Path) -> None:
    copy = checkout(sample_repo, tmp_path / "elsewhere" / "repo")
    code, _, err = run("import", str(exported), "--root", str(copy), "--embedder", "none")
    assert code == 4 and "built with embedder hashing-256" in err
    assert "--embedder hashing-256" in err
    assert not (copy / ".memserver").exists() and leftovers(copy) == []

    ok("index", str(copy), "--embedder", "none")  # an index of its own, BM25 only
    code, _, err = run("import", str(exported), "--root", str(copy), "--embedder", "hashing")
    assert code == 4 and "--force" in err
    assert json.loads((copy / ".memserver/meta.json").read_text())["embedder"] == "none"

    result = ok("import", str(exported), "--root", str(copy), "--embedder", "hashing", "--force")
    assert result["replaced"] is True and leftovers(copy) == []
    assert recall_all(copy) == recall_all(sample_repo)


def test_import_refuses_an_existing_index_without_force(sample_repo: Path, exported: Path) -> None:
    code, _, err = run("import", str(exported), "--root", str(sample_repo), "--embedder", "hashing")
    assert code == 2 and "already exists" in err and "--force" in err


def _tampered(exported: Path, dest: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    """A copy of a real artifact with one extra member appended."""
    with exported.open("rb") as fh, zstandard.ZstdDecompressor().stream_reader(fh) as zr:
        raw = zr.read()
    buf = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as src,
        tarfile.open(fileobj=buf, mode="w:") as tar,
    ):
        for m in src.getmembers():
            tar.addfile(m, src.extractfile(m) if m.isfile() else None)
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data) if member.isfile() else None)
    dest.write_bytes(zstandard.ZstdCompressor().compress(buf.getvalue()))
    return dest


@pytest.mark.parametrize(
    "name, kind", [("index/../../evil.txt", tarfile.REGTYPE), ("/tmp/evil.txt", tarfile.REGTYPE),
                   ("index/lance/evil", tarfile.SYMTYPE)],
)  # fmt: skip
def test_import_refuses_members_outside_the_index(
    sample_repo: Path, exported: Path, tmp_path: Path, name: str, kind: bytes
) -> None:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
    bad = _tampered(exported, tmp_path / "bad.tar.zst", member, b"pwned")
    before = recall_all(sample_repo)

    code, _, err = run("import", str(bad), "--root", str(sample_repo), "--embedder", "hashing",
                       "--force")  # fmt: skip

    assert code == 6 and ("outside the index folder" in err or "a link or a device" in err)
    assert not list(tmp_path.rglob("evil*")) and not Path("/tmp/evil.txt").exists()
    assert leftovers(sample_repo) == [] and recall_all(sample_repo) == before


def test_a_failed_import_leaves_the_old_index(
    sample_repo: Path, exported: Path, tmp_path: Path
) -> None:
    before = recall_all(sample_repo)
    cut = tmp_path / "cut.tar.zst"
    cut.write_bytes(exported.read_bytes()[: exported.stat().st_size // 2])
    code, _, err = run("import", str(cut), "--root", str(sample_repo), "--embedder", "hashing",
                       "--force")  # fmt: skip
    assert code == 6 and "not a usable memserver artifact" in err
    assert leftovers(sample_repo) == [] and recall_all(sample_repo) == before


def test_import_refuses_another_format(sample_repo: Path, tmp_path: Path) -> None:
    body = json.dumps({"format": 99}).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:") as tar:
        info = tarfile.TarInfo("artifact.json")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    future = tmp_path / "future.tar.zst"
    future.write_bytes(zstandard.ZstdCompressor().compress(buf.getvalue()))
    code, _, err = run("import", str(future), "--root", str(sample_repo))
    assert code == 4 and "artifact format 99" in err


def test_export_refuses_an_interrupted_index(sample_repo: Path, tmp_path: Path) -> None:
    ok("index", str(sample_repo), "--embedder", "hashing")
    (sample_repo / ".memserver/DIRTY").write_text("1")
    code, _, err = run("export", "--root", str(sample_repo), "--out", str(tmp_path / "x.tar.zst"))
    assert code == 6 and "memserver index" in err and not (tmp_path / "x.tar.zst").exists()
