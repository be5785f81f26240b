"""File discovery on real trees under tmp_path: what is indexed, what is skipped, and why."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexers.languages import LANGUAGES, detect_language, shebang_language
from indexers.walk import walk
from memserver.core.errors import ConfigError, PathError
from memserver.core.types import SourceFile, WalkOptions, WalkResult

CODE = "def handler(event):\n    return event\n"
# Key-shaped filler (not a real key): a BEGIN line followed by base64-looking material.
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + ("MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n" * 4)
    + "-----END RSA PRIVATE KEY-----\n"
)


def write(root: Path, rel: str, content: str | bytes = CODE) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def indexed(result: WalkResult) -> dict[str, SourceFile]:
    return {f.path: f for f in result.files}


def skipped(result: WalkResult) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


# --------------------------------------------------------------------------- the root


def test_missing_root_raises_path_error_with_hint(tmp_path: Path) -> None:
    with pytest.raises(PathError) as caught:
        walk(tmp_path / "nope")
    assert "does not exist" in caught.value.message
    assert caught.value.hint


def test_file_as_root_raises_path_error_with_hint(tmp_path: Path) -> None:
    file = write(tmp_path, "main.py")
    with pytest.raises(PathError) as caught:
        walk(file)
    assert "not a directory" in caught.value.message
    assert caught.value.hint


def test_source_file_fields_come_from_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "src/pkg/app.py", "print('hi')\n")
    result = walk(str(tmp_path))
    (source,) = result.files
    info = os.stat(path)
    assert source.path == "src/pkg/app.py"
    assert source.abs_path == str(path)
    assert (source.size, source.mtime_ns) == (info.st_size, info.st_mtime_ns)
    assert source.language == "python"
    assert result.skipped == ()


def test_result_is_sorted_and_repeatable(tmp_path: Path) -> None:
    for rel in ("zeta.py", "b/a.py", "a/z.py", "a/b.py", "B.md", "a.py"):
        write(tmp_path, rel)
    write(tmp_path, "z.lock", "x\n")
    write(tmp_path, "c.png", "x\n")
    first, second = walk(tmp_path), walk(tmp_path)
    paths = [f.path for f in first.files]
    assert paths == sorted(paths) == ["B.md", "a.py", "a/b.py", "a/z.py", "b/a.py", "zeta.py"]
    assert [s.path for s in first.skipped] == ["c.png", "z.lock"]
    assert first == second


# --------------------------------------------------------------------------- ignore files


def test_nested_gitignore_with_negation_anchoring_and_dir_only(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\nbuild/\n/top_only.py\ncache\n")
    write(tmp_path, "app.log", "x\n")
    write(tmp_path, "top_only.py")
    write(tmp_path, "build/out.py")
    write(tmp_path, "sub/top_only.py")  # "/top_only.py" is anchored to the root
    write(tmp_path, "sub/.gitignore", "!keep.log\n/local.py\n")
    write(tmp_path, "sub/keep.log", "kept\n")
    write(tmp_path, "sub/other.log", "x\n")
    write(tmp_path, "sub/local.py")
    write(tmp_path, "sub/deeper/local.py")  # "/local.py" is anchored to sub/
    write(tmp_path, "notes/cache", "a file named cache is ignored too\n")
    result = walk(tmp_path)
    assert set(indexed(result)) == {
        ".gitignore",
        "sub/.gitignore",
        "sub/top_only.py",
        "sub/keep.log",
        "sub/deeper/local.py",
    }
    # Ignored files are not listed one by one; an ignored folder is listed once.
    assert skipped(result) == {"build/": "ignored by .gitignore"}


def test_dir_only_pattern_leaves_a_file_of_that_name(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "output/\n")
    write(tmp_path, "output", "a file, not a folder\n")
    write(tmp_path, "src/output/x.py")
    result = walk(tmp_path)
    assert "output" in indexed(result)
    assert skipped(result) == {"src/output/": "ignored by .gitignore"}


def test_deeper_ignore_file_overrides_shallower(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.txt\n")
    write(tmp_path, "a.txt", "root text\n")
    write(tmp_path, "docs/.gitignore", "!*.txt\n")
    write(tmp_path, "docs/b.txt", "docs text\n")
    result = walk(tmp_path)
    assert "docs/b.txt" in indexed(result)
    assert "a.txt" not in indexed(result)


def test_contents_pattern_does_not_prune_the_folder_itself(tmp_path: Path) -> None:
    # As in git: "docs/**" ignores what is inside docs/, so a negation can still re-include a file.
    write(tmp_path, ".gitignore", "docs/**\n!docs/keep.md\n")
    write(tmp_path, "docs/keep.md", "# kept\n")
    write(tmp_path, "docs/drop.md", "# dropped\n")
    write(tmp_path, "docs/sub/drop.md", "# dropped\n")
    result = walk(tmp_path)
    assert set(indexed(result)) == {".gitignore", "docs/keep.md"}
    assert skipped(result) == {"docs/sub/": "ignored by .gitignore"}


def test_ignore_and_memserverignore_with_precedence(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.snap\n")
    write(tmp_path, ".ignore", "generated_docs/\n")
    write(tmp_path, ".memserverignore", "!important.snap\nscratch/\n")
    write(tmp_path, "important.snap", "kept: .memserverignore wins over .gitignore\n")
    write(tmp_path, "other.snap", "dropped\n")
    write(tmp_path, "generated_docs/a.md", "# a\n")
    write(tmp_path, "pkg/scratch/b.py")
    write(tmp_path, "pkg/.memserverignore", "*.py\n")
    write(tmp_path, "pkg/c.py")
    write(tmp_path, "pkg/readme.md", "# pkg\n")
    result = walk(tmp_path)
    files = indexed(result)
    assert "important.snap" in files
    assert "other.snap" not in files
    assert "pkg/c.py" not in files
    assert "pkg/readme.md" in files
    assert skipped(result) == {
        "generated_docs/": "ignored by .ignore",
        "pkg/scratch/": "ignored by .memserverignore",
    }


def test_git_info_exclude_at_the_root(tmp_path: Path) -> None:
    write(tmp_path, ".git/info/exclude", "# local only\nmy_notes/\n*.draft\n")
    write(tmp_path, "my_notes/todo.md", "# todo\n")
    write(tmp_path, "idea.draft", "x\n")
    write(tmp_path, "main.py")
    result = walk(tmp_path)
    assert set(indexed(result)) == {"main.py"}
    assert skipped(result) == {
        ".git/": "default exclude: .git",
        "my_notes/": "ignored by .git/info/exclude",
    }


def test_options_exclude_patterns(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.gen.py\n")
    write(tmp_path, "docs/site/index.md", "# docs\n")
    write(tmp_path, "tests/snapshots/a.snap", "x\n")
    write(tmp_path, "tests/test_a.py")
    write(tmp_path, "keep.gen.py")
    options = WalkOptions(exclude=("docs/", "*.snap", "!keep.gen.py"))
    result = walk(tmp_path, options)
    assert set(indexed(result)) == {".gitignore", "tests/test_a.py", "keep.gen.py"}
    assert skipped(result) == {"docs/": "excluded by index.exclude"}


def test_invalid_exclude_pattern_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        walk(tmp_path, WalkOptions(exclude=("!",)))
    assert "index.exclude" in caught.value.message
    assert caught.value.hint


def test_a_bad_line_in_an_ignore_file_keeps_the_other_lines(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "!\n*.tmp\n")
    write(tmp_path, "a.tmp", "x\n")
    write(tmp_path, "a.py")
    assert set(indexed(walk(tmp_path))) == {".gitignore", "a.py"}


# --------------------------------------------------------------------------- default excludes


@pytest.mark.parametrize(
    ("folder", "reason"),
    [
        (".git", "default exclude: .git"),
        (".hg", "default exclude: .hg"),
        (".svn", "default exclude: .svn"),
        (".bzr", "default exclude: .bzr"),
        ("node_modules", "default exclude: node_modules"),
        ("web/bower_components", "default exclude: bower_components"),
        ("jspm_packages", "default exclude: jspm_packages"),
        (".venv", "default exclude: .venv"),
        ("venv", "default exclude: venv"),
        (".env", "default exclude: .env"),
        ("pkg/__pycache__", "default exclude: __pycache__"),
        (".mypy_cache", "default exclude: .mypy_cache"),
        (".pytest_cache", "default exclude: .pytest_cache"),
        (".ruff_cache", "default exclude: .ruff_cache"),
        (".tox", "default exclude: .tox"),
        (".nox", "default exclude: .nox"),
        (".hypothesis", "default exclude: .hypothesis"),
        (".cache", "default exclude: .cache"),
        ("build", "default exclude: build"),
        ("dist", "default exclude: dist"),
        (".eggs", "default exclude: .eggs"),
        ("src/my_pkg.egg-info", "default exclude: *.egg-info"),
        (".next", "default exclude: .next"),
        (".nuxt", "default exclude: .nuxt"),
        (".svelte-kit", "default exclude: .svelte-kit"),
        (".parcel-cache", "default exclude: .parcel-cache"),
        (".turbo", "default exclude: .turbo"),
        ("htmlcov", "default exclude: htmlcov"),
        (".gradle", "default exclude: .gradle"),
        (".idea", "default exclude: .idea"),
        (".memserver", "default exclude: .memserver"),
        ("data/index.lance", "default exclude: *.lance"),
    ],
)
def test_default_excluded_folders_are_listed_once(tmp_path: Path, folder: str, reason: str) -> None:
    write(tmp_path, f"{folder}/inner/module.py")
    write(tmp_path, f"{folder}/top.py")
    write(tmp_path, "main.py")
    result = walk(tmp_path)
    assert set(indexed(result)) == {"main.py"}
    assert skipped(result) == {f"{folder}/": reason}


@pytest.mark.parametrize(
    ("marker", "reason"),
    [
        ("pyvenv.cfg", "default exclude: virtualenv (pyvenv.cfg)"),
        ("CACHEDIR.TAG", "default exclude: cache directory (CACHEDIR.TAG)"),
        ("conda-meta/history", "default exclude: conda environment"),
    ],
)
def test_tool_made_folders_are_recognised_by_marker(
    tmp_path: Path, marker: str, reason: str
) -> None:
    write(tmp_path, f"tools/py311/{marker}", "home = /usr/bin\n")
    write(tmp_path, "tools/py311/lib/site.py")
    write(tmp_path, "tools/run.py")
    result = walk(tmp_path)
    assert set(indexed(result)) == {"tools/run.py"}
    assert skipped(result) == {"tools/py311/": reason}


def test_folders_excluded_only_when_they_look_tool_made(tmp_path: Path) -> None:
    write(tmp_path, "target/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n")
    write(tmp_path, "target/debug/main.d", "x\n")
    write(tmp_path, "app/target/aim.py")  # a target/ without CACHEDIR.TAG is source
    write(tmp_path, "env/bin/activate", "# venv\n")
    write(tmp_path, "env/lib/x.py")
    write(tmp_path, "config/env/production.js", "module.exports = {}\n")  # not a virtualenv
    write(tmp_path, "coverage/lcov.info", "TN:\n")
    write(tmp_path, "lib/coverage/report.py")  # a module named coverage
    write(tmp_path, "pip/operations/build/__init__.py")  # a Python package named build
    write(tmp_path, "vendor/modules.txt", "# github.com/x/y v1\n")
    write(tmp_path, "vendor/github.com/x/y/y.go", "package y\n")
    result = walk(tmp_path)
    assert set(indexed(result)) == {
        "app/target/aim.py",
        "config/env/production.js",
        "lib/coverage/report.py",
        "pip/operations/build/__init__.py",
    }
    assert skipped(result) == {
        "coverage/": "default exclude: coverage",
        "env/": "default exclude: virtualenv",
        "target/": "default exclude: cache directory (CACHEDIR.TAG)",
        "vendor/": "default exclude: vendor",
    }


def test_ignore_dirs_absolute_and_relative(tmp_path: Path) -> None:
    write(tmp_path, "idx/chunks.json", "{}\n")
    write(tmp_path, "var/other-index/x.json", "{}\n")
    write(tmp_path, "src/main.py")
    result = walk(tmp_path, ignore_dirs=[str(tmp_path / "idx"), "var/other-index/", "/elsewhere"])
    assert set(indexed(result)) == {"src/main.py"}
    assert skipped(result) == {
        "idx/": "excluded folder (index dir)",
        "var/other-index/": "excluded folder (index dir)",
    }


def test_hidden_files_are_indexed_unless_switched_off(tmp_path: Path) -> None:
    write(tmp_path, ".github/workflows/ci.yml", "on: push\n")
    write(tmp_path, ".eslintrc.json", '{"root": true}\n')
    write(tmp_path, ".vscode/settings.json", "{}\n")
    write(tmp_path, "main.py")
    assert set(indexed(walk(tmp_path))) == {
        ".github/workflows/ci.yml",
        ".eslintrc.json",
        ".vscode/settings.json",
        "main.py",
    }
    result = walk(tmp_path, WalkOptions(include_hidden=False))
    assert set(indexed(result)) == {"main.py"}
    assert skipped(result) == {
        ".github/": "hidden (index.include_hidden is off)",
        ".vscode/": "hidden (index.include_hidden is off)",
    }


# --------------------------------------------------------------------------- file rules


@pytest.mark.parametrize(
    "name",
    [
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "Pipfile.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "uv.lock",
        "go.sum",
        "bun.lockb",
        "mix.lock",
    ],
)
def test_lock_files(tmp_path: Path, name: str) -> None:
    write(tmp_path, f"web/{name}", "{}\n")
    assert skipped(walk(tmp_path)) == {f"web/{name}": "lock file"}


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("static/app.min.js", "minified file"),
        ("static/site.min.css", "minified file"),
        ("static/app.js.map", "generated file"),
        ("proto/user_pb2.py", "generated file"),
        ("proto/user_pb2_grpc.py", "generated file"),
        ("api/user.pb.go", "generated file"),
        ("src/schema.generated.ts", "generated file"),
    ],
)
def test_generated_and_minified_by_name(tmp_path: Path, name: str, reason: str) -> None:
    write(tmp_path, name, "var a = 1;\n")
    assert skipped(walk(tmp_path)) == {name: reason}


def test_generated_by_header_in_the_first_five_lines(tmp_path: Path) -> None:
    write(tmp_path, "gen.go", "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n")
    write(tmp_path, "schema.py", '"""Schema.\n\n@generated by codegen\n"""\nX = 1\n')
    write(tmp_path, "Form.cs", "// <auto-generated />\nclass Form {}\n")
    write(tmp_path, "late.py", "a = 1\n" * 5 + "# DO NOT EDIT below: it is fine here\n")
    result = walk(tmp_path)
    assert set(indexed(result)) == {"late.py"}
    assert skipped(result) == {
        "Form.cs": "generated file",
        "gen.go": "generated file",
        "schema.py": "generated file",
    }


def test_minified_text_by_line_shape(tmp_path: Path) -> None:
    statement = "var a=function(b){return b*2};"
    write(tmp_path, "bundle.js", statement * 400)  # one 12,000-character line
    write(tmp_path, "packed.js", "/* header */\n" + (statement * 20 + "\n") * 10)  # avg > 300
    blob = "x" * 8000
    write(tmp_path, "data.txt", f"header\n{blob}\n")  # prose, but one line is most of the file
    long_paragraph = "This paragraph is written on one line, as soft-wrapped Markdown is. " * 6
    write(tmp_path, "guide.md", (long_paragraph * 2 + "\n\n") * 30)  # avg > 300, but prose
    write(tmp_path, ".eslintrc.json", '{"rules": {' + '"a": 1, ' * 40 + '"z": 2}}')  # small
    normal = "value = compute(value)  # an ordinary line\n" * 1000
    write(tmp_path, "table.py", normal + "TABLE = '" + "0" * 6000 + "'\n")  # long line, not most
    result = walk(tmp_path)
    assert set(indexed(result)) == {"guide.md", ".eslintrc.json", "table.py"}
    assert skipped(result) == {
        "bundle.js": "minified file",
        "data.txt": "minified file",
        "packed.js": "minified file",
    }


@pytest.mark.parametrize(
    "name",
    [
        *("logo.png", "photo.JPG", "font.woff2", "lib.so", "app.exe", "Main.class", "mod.pyc"),
        *("archive.tar.gz", "report.pdf", "app.sqlite", "model.onnx", "weights.safetensors"),
        *("data.parquet", "table.arrow", "frame.lance", "model.bin", "lib.jar", "code.wasm"),
    ],
)
def test_binary_extensions_are_skipped(tmp_path: Path, name: str) -> None:
    write(tmp_path, name, "looks like text, but the extension decides\n")
    assert skipped(walk(tmp_path)) == {name: "binary file"}


def test_nul_byte_means_binary(tmp_path: Path) -> None:
    write(tmp_path, "blob.txt", b"header\x00\x01\x02 more")
    write(tmp_path, "late_nul.txt", (b"a" * 79 + b"\n") * 120 + b"\x00")  # past the first 8 KiB
    result = walk(tmp_path)
    assert skipped(result) == {"blob.txt": "binary file"}
    assert "late_nul.txt" not in skipped(result)


def test_invalid_utf8_is_skipped_and_a_bom_is_fine(tmp_path: Path) -> None:
    write(tmp_path, "latin1.py", "caf\xe9 = 1\n".encode("latin-1"))
    write(tmp_path, "bom.py", b"\xef\xbb\xbfprint('hello')\n")
    result = walk(tmp_path)
    assert skipped(result) == {"latin1.py": "not valid UTF-8 text"}
    assert indexed(result)["bom.py"].language == "python"


def test_size_cap_skips_without_reading(tmp_path: Path) -> None:
    with open(tmp_path / "huge.txt", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: all NUL bytes, costs no disk
    write(tmp_path, "at_cap.py", "x" * 99 + "\n")
    write(tmp_path, "over_cap.py", "x" * 100 + "\n")
    reason = skipped(walk(tmp_path))["huge.txt"]
    # Reading it would have said "binary file": the size check came first.
    assert reason == "larger than 1000000 bytes (raise index.max_file_bytes)"
    result = walk(tmp_path, WalkOptions(max_file_bytes=100))
    assert "at_cap.py" in indexed(result)
    assert skipped(result)["over_cap.py"] == "larger than 100 bytes (raise index.max_file_bytes)"


def test_empty_and_whitespace_only_files(tmp_path: Path) -> None:
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "blank.md", "  \n\n\t\n")
    write(tmp_path, "one.py", "x = 1\n")
    result = walk(tmp_path)
    assert skipped(result) == {"blank.md": "empty", "pkg/__init__.py": "empty"}
    assert set(indexed(result)) == {"one.py"}


# --------------------------------------------------------------------------- secrets


@pytest.mark.parametrize(
    ("rel", "rule"),
    [
        (".env", ".env"),
        ("deploy/.env.production", ".env.*"),
        (".env.example", ".env.*"),
        ("docker/prod.env", "*.env"),
        (".envrc", ".envrc"),
        ("certs/server.pem", "*.pem"),
        ("certs/tls.key", "*.key"),
        ("certs/client.p12", "*.p12"),
        ("certs/client.pfx", "*.pfx"),
        ("android/app.jks", "*.jks"),
        ("android/release.keystore", "*.keystore"),
        ("vault.kdbx", "*.kdbx"),
        ("vpn/office.ovpn", "*.ovpn"),
        ("keys/id_rsa", "id_rsa*"),
        ("keys/id_dsa", "id_dsa*"),
        ("keys/id_ecdsa", "id_ecdsa*"),
        ("keys/id_ed25519", "id_ed25519*"),
        ("keys/id_rsa.pub", "id_rsa*"),
        (".npmrc", ".npmrc"),
        (".pypirc", ".pypirc"),
        (".netrc", ".netrc"),
        ("_netrc", "_netrc"),
        (".git-credentials", ".git-credentials"),
        ("web/.htpasswd", ".htpasswd"),
        ("credentials", "credentials"),
        ("config/credentials.json", "*credentials*.json"),
        ("config/gcp-credentials-prod.json", "*credentials*.json"),
        ("config/my-service-account.json", "*service-account*.json"),
        ("config/secrets.yml", "secrets.yml"),
        ("config/secrets.yaml", "secrets.yaml"),
        ("config/secrets.json", "secrets.json"),
        ("config/secrets.toml", "secrets.toml"),
        ("infra/terraform.tfstate", "*.tfstate*"),
        ("infra/terraform.tfstate.backup", "*.tfstate*"),
        (".docker/config.json", ".docker/config.json"),
        (".kube/config", ".kube/config"),
    ],
)
def test_secret_files_are_never_indexed(tmp_path: Path, rel: str, rule: str) -> None:
    write(tmp_path, rel, "TOKEN=not-a-real-secret\n")
    result = walk(tmp_path)
    assert result.files == ()
    assert skipped(result) == {rel: f"may contain secrets ({rule})"}


@pytest.mark.parametrize("folder", [".aws", ".gcloud", ".config/gcloud", ".azure", ".ssh"])
def test_secret_folders_are_never_walked(tmp_path: Path, folder: str) -> None:
    write(tmp_path, f"{folder}/notes.md", "# nothing\n")
    write(tmp_path, "main.py")
    result = walk(tmp_path)
    assert set(indexed(result)) == {"main.py"}
    assert skipped(result) == {f"{folder}/": f"may contain secrets ({folder})"}


def test_more_secret_folders(tmp_path: Path) -> None:
    write(tmp_path, ".gnupg/pubring.kbx.txt", "x\n")
    write(tmp_path, "infra/.terraform/providers/x.tf", "x\n")
    result = walk(tmp_path)
    assert result.files == ()
    assert skipped(result) == {
        ".gnupg/": "may contain secrets (.gnupg)",
        "infra/.terraform/": "may contain secrets (.terraform)",
    }


def test_private_key_block_in_an_innocent_file(tmp_path: Path) -> None:
    write(tmp_path, "docs/setup-notes.md", "# Setup\n\nPaste this:\n\n" + PEM)
    escaped = PEM.replace("\n", "\\n")
    write(tmp_path, "config/app.json", '{"private_key": "' + escaped + '"}\n')
    # Code that only names the header (a PEM parser) is not a key.
    write(
        tmp_path, "pem.py", 'HEADER = "-----BEGIN PRIVATE KEY-----"\n\ndef parse(text):\n    pass\n'
    )
    result = walk(tmp_path)
    assert set(indexed(result)) == {"pem.py"}
    assert skipped(result) == {
        "config/app.json": "may contain secrets (private key block)",
        "docs/setup-notes.md": "may contain secrets (private key block)",
    }


def test_a_link_cannot_reach_around_the_secret_rules(tmp_path: Path) -> None:
    write(tmp_path, ".env", "TOKEN=x\n")
    write(tmp_path, ".ssh/config", "Host x\n")
    (tmp_path / "settings.txt").symlink_to(".env")
    (tmp_path / "ssh_config").symlink_to(".ssh/config")
    (tmp_path / "keys").symlink_to(".ssh")
    result = walk(tmp_path)
    assert result.files == ()
    assert skipped(result) == {
        ".env": "may contain secrets (.env)",
        ".ssh/": "may contain secrets (.ssh)",
        "keys/": "may contain secrets (.ssh)",
        "settings.txt": "may contain secrets (.env)",
        "ssh_config": "may contain secrets (.ssh)",
    }


# --------------------------------------------------------------------------- symlinks


def test_symlink_loops_end(tmp_path: Path) -> None:
    write(tmp_path, "a/b/x.py")
    (tmp_path / "a" / "b" / "up").symlink_to("..")
    (tmp_path / "self").symlink_to(".")
    (tmp_path / "ping").symlink_to("pong")  # a file link ring: neither resolves
    (tmp_path / "pong").symlink_to("ping")
    result = walk(tmp_path)
    assert set(indexed(result)) == {"a/b/x.py"}
    assert skipped(result) == {
        "a/b/up/": "symlink loop",
        "ping": "symlink loop",
        "pong": "symlink loop",
        "self/": "symlink loop",
    }


def test_links_outside_the_root_and_broken_links(tmp_path: Path) -> None:
    root = tmp_path / "project"
    outside = tmp_path / "outside"
    write(outside, "lib/shared.py")
    write(root, "main.py")
    (root / "shared.py").symlink_to(outside / "lib" / "shared.py")
    (root / "lib").symlink_to(outside / "lib")
    (root / "gone.py").symlink_to(root / "deleted.py")
    (root / "gone_dir").symlink_to("no/such/folder")
    result = walk(root)
    assert set(indexed(result)) == {"main.py"}
    assert skipped(result) == {
        "gone.py": "broken symlink",
        "gone_dir": "broken symlink",
        "lib/": "symlink points outside the root",
        "shared.py": "symlink points outside the root",
    }


def test_file_reached_twice_is_indexed_once_under_its_real_path(tmp_path: Path) -> None:
    write(tmp_path, "src/real.py")
    (tmp_path / "alias.py").symlink_to("src/real.py")  # sorts first, but the real path wins
    write(tmp_path, "build_tools/gen.py")
    (tmp_path / "b_link.py").symlink_to("build_tools/gen.py")
    (tmp_path / "a_link.py").symlink_to("build_tools/gen.py")
    result = walk(tmp_path, WalkOptions(exclude=("build_tools/",)))
    # The real file is excluded, so of the two links the first in path order is kept.
    assert set(indexed(result)) == {"src/real.py", "a_link.py"}
    assert indexed(result)["a_link.py"].abs_path == str(tmp_path / "a_link.py")
    assert skipped(result) == {
        "alias.py": "duplicate of src/real.py",
        "b_link.py": "duplicate of a_link.py",
        "build_tools/": "excluded by index.exclude",
    }


def test_folder_reached_twice_keeps_the_real_path(tmp_path: Path) -> None:
    write(tmp_path, "src/pkg/mod.py")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "api").symlink_to("../src/pkg")
    write(tmp_path, "assets/logo.md", "# logo\n")
    (tmp_path / "static").symlink_to("assets")  # only reachable... twice, the real one first
    write(tmp_path, "shared/impl/code.py")
    write(tmp_path, ".gitignore", "shared/\n")
    (tmp_path / "linked").symlink_to("shared/impl")  # the real folder is ignored: walk the link
    result = walk(tmp_path)
    assert set(indexed(result)) == {
        ".gitignore",
        "src/pkg/mod.py",
        "assets/logo.md",
        "linked/code.py",
    }
    assert skipped(result) == {
        "docs/api/": "duplicate of src/pkg/",
        "shared/": "ignored by .gitignore",
        "static/": "duplicate of assets/",
    }


def test_symlinks_can_be_switched_off(tmp_path: Path) -> None:
    write(tmp_path, "src/real.py")
    (tmp_path / "alias.py").symlink_to("src/real.py")
    (tmp_path / "mirror").symlink_to("src")
    result = walk(tmp_path, WalkOptions(follow_symlinks=False))
    assert set(indexed(result)) == {"src/real.py"}
    assert skipped(result) == {
        "alias.py": "symlink (index.follow_symlinks is off)",
        "mirror/": "symlink (index.follow_symlinks is off)",
    }


# --------------------------------------------------------------------------- unreadable entries


def test_special_files_are_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "events.pipe")  # opening a FIFO for reading would block
    (tmp_path / "link_to_pipe.txt").symlink_to("events.pipe")
    write(tmp_path, "main.py")
    result = walk(tmp_path)
    assert set(indexed(result)) == {"main.py"}
    assert skipped(result) == {
        "events.pipe": "not a regular file",
        "link_to_pipe.txt": "not a regular file",
    }


def test_names_that_are_not_utf8_are_skipped(tmp_path: Path) -> None:
    folder = os.fsencode(tmp_path)
    with open(folder + b"/caf\xe9.py", "wb") as handle:
        handle.write(b"x = 1\n")
    os.mkdir(folder + b"/d\xe9j\xe0")
    write(tmp_path, "caf\u00e9_ok.py")  # a UTF-8 name is fine
    result = walk(tmp_path)
    assert set(indexed(result)) == {"caf\u00e9_ok.py"}
    assert skipped(result) == {
        "caf\\udce9.py": "name is not valid UTF-8",
        "d\\udce9j\\udce0/": "name is not valid UTF-8",
    }


def test_stat_errors_are_skipped_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "long.py").symlink_to("x" * 300)  # ENAMETOOLONG: a real OSError from stat
    write(tmp_path, "main.py")
    result = walk(tmp_path)
    assert set(indexed(result)) == {"main.py"}
    assert skipped(result) == {"long.py": "unreadable: file name too long"}


@contextlib.contextmanager
def unprivileged(tmp_path: Path, tree: Path) -> Iterator[None]:
    """Run the body as an unprivileged user, so permission bits apply even when tests run as root.

    As root: lets another user reach `tree` (search on the folders above it, read on the tree,
    for group and others, since the group stays root's), switches the effective uid for the
    body, and restores everything afterwards. Entries chmod-ed to 000 stay locked.
    """
    if os.geteuid() != 0:
        yield
        return
    reach, read = stat.S_IXGRP | stat.S_IXOTH, stat.S_IRGRP | stat.S_IROTH
    changed: list[tuple[Path, int]] = []
    folder = tmp_path
    while folder != folder.parent:
        mode = stat.S_IMODE(folder.stat().st_mode)
        if mode & reach != reach:
            changed.append((folder, mode))
            folder.chmod(mode | reach)
        folder = folder.parent
    for path in [tree, *tree.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode and not path.is_symlink():
            path.chmod(mode | read | (reach if path.is_dir() else 0))
    try:
        try:
            os.seteuid(65534)
        except PermissionError:
            pytest.skip("cannot drop privileges to check permission errors")
        try:
            yield
        finally:
            os.seteuid(0)
    finally:
        for path, mode in changed:
            path.chmod(mode)


def test_unreadable_file_and_folder_are_skipped_not_fatal(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(root, "main.py")
    locked = write(root, "locked.py")
    write(root, "closed/inner.py")
    locked.chmod(0)
    (root / "closed").chmod(0)
    try:
        with unprivileged(tmp_path, root):
            result = walk(root)
    finally:
        (root / "closed").chmod(0o755)
    assert set(indexed(result)) == {"main.py"}
    assert skipped(result) == {
        "closed/": "unreadable: permission denied",
        "locked.py": "unreadable: permission denied",
    }


# --------------------------------------------------------------------------- languages


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"),
        ("stubs/x.pyi", "python"),
        ("web/a.js", "javascript"),
        ("web/a.mjs", "javascript"),
        ("web/a.cjs", "javascript"),
        ("web/App.jsx", "javascript"),
        ("web/a.ts", "typescript"),
        ("web/a.mts", "typescript"),
        ("web/a.cts", "typescript"),
        ("types/index.d.ts", "typescript"),
        ("web/App.tsx", "tsx"),
        ("cmd/main.go", "go"),
        ("src/lib.rs", "rust"),
        ("src/Main.java", "java"),
        ("src/buf.c", "c"),
        ("src/buf.h", "c"),
        ("src/a.cc", "cpp"),
        ("src/a.cpp", "cpp"),
        ("src/a.cxx", "cpp"),
        ("src/a.hpp", "cpp"),
        ("src/a.hh", "cpp"),
        ("src/a.hxx", "cpp"),
        ("src/a.ipp", "cpp"),
        ("src/Billing.cs", "csharp"),
        ("lib/store.rb", "ruby"),
        ("lib/tasks/db.rake", "ruby"),
        ("gem.gemspec", "ruby"),
        ("Rakefile", "ruby"),
        ("Gemfile", "ruby"),
        ("src/Repo.php", "php"),
        ("bin/deploy.sh", "bash"),
        ("bin/x.bash", "bash"),
        ("bin/x.zsh", "bash"),
        ("README.md", "markdown"),
        ("doc.markdown", "markdown"),
        ("page.mdx", "markdown"),
        ("package.json", "json"),
        ("tsconfig.jsonc", "json"),
        ("ci.yml", "yaml"),
        ("ci.yaml", "yaml"),
        ("pyproject.toml", "toml"),
        ("Makefile", "text"),
        ("notes.txt", "text"),
        ("LICENSE", "text"),
        ("SRC/UPPER.PY", "python"),
        ("app/Ledger.kt", "kotlin"),
        ("build.gradle.kts", "kotlin"),
        ("Sources/Shapes.swift", "swift"),
        ("src/main/scala/Billing.scala", "scala"),
        ("script.sc", "scala"),
        ("lua/store.lua", "lua"),
        ("src/point.zig", "zig"),
        ("lib/cart.ex", "elixir"),
        ("test/cart_test.exs", "elixir"),
    ],
)
def test_detect_language(path: str, language: str) -> None:
    assert detect_language(path) == language
    assert language in LANGUAGES


def test_languages_are_the_chunker_names() -> None:
    assert LANGUAGES == (
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "c",
        "cpp",
        "csharp",
        "ruby",
        "php",
        "bash",
        "kotlin",
        "swift",
        "scala",
        "lua",
        "zig",
        "elixir",
        "markdown",
        "json",
        "yaml",
        "toml",
        "text",
    )


@pytest.mark.parametrize(
    ("line", "language"),
    [
        ("#!/usr/bin/env python3", "python"),
        ("#!/usr/bin/python3.11 -u", "python"),
        ("#!/bin/bash", "bash"),
        ("#!/bin/sh -e", "bash"),
        ("#!/usr/bin/env zsh", "bash"),
        ("#!/usr/bin/env ruby", "ruby"),
        ("#!/usr/bin/env node", "javascript"),
        ("#!/usr/bin/env -S node --no-warnings", "javascript"),
        ("#!/usr/bin/env NODE_ENV=production nodejs", "javascript"),
        ("#!/usr/bin/php", "php"),
        ("#!/usr/bin/env perl", None),
        ("#!", None),
        ("# just a comment", None),
        ("print('no shebang')", None),
    ],
)
def test_shebang_language(line: str, language: str | None) -> None:
    assert shebang_language(line) == language


def test_extensionless_scripts_get_their_language_from_the_shebang(tmp_path: Path) -> None:
    write(tmp_path, "bin/serve", "#!/usr/bin/env python3\nprint('serving')\n")
    write(tmp_path, "bin/setup", "#!/bin/sh\nset -e\n")
    write(tmp_path, "Makefile", "all:\n\techo hi\n")
    write(tmp_path, "notes.txt", "#!/bin/sh is how scripts start\n")  # has an extension: text
    languages = {f.path: f.language for f in walk(tmp_path).files}
    assert languages == {
        "bin/serve": "python",
        "bin/setup": "bash",
        "Makefile": "text",
        "notes.txt": "text",
    }
