"""What discovery leaves out, and the short reason it gives (users see skips grouped by reason).

Three kinds of rule:

- ignore files: `.gitignore`, `.ignore` and `.memserverignore` in any folder (plus
  `.git/info/exclude` at the root), each relative to its own folder, with gitignore semantics from
  `pathspec`. Deeper folders win over shallower ones; within one folder `.memserverignore` wins over
  `.ignore`, which wins over `.gitignore`, which wins over `.git/info/exclude`. The
  `index.exclude` patterns (relative to the root) win over all of them.
- names: default excludes (VCS, dependency, virtualenv, cache and build folders), secret-bearing
  files and folders, lock files, generated and minified files by name, binary extensions.
- contents: NUL bytes, invalid UTF-8, whitespace only, a private-key block, a "generated" header
  in the first 5 lines, minified text (see `looks_minified`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import dataclass
from fnmatch import translate
from typing import Any, cast

from pathspec import GitIgnoreSpec
from pathspec.pattern import Pattern

from indexers.read import Refused, read_regular_file
from memserver.core.errors import BadRequest, ConfigError

IGNORE_FILES = (".gitignore", ".ignore", ".memserverignore")  # lowest precedence first
PROSE = frozenset({"markdown", "text"})
_IGNORE_FILE_CAP = 1 << 20  # soft-wrapped paragraphs make long lines normal here

# --------------------------------------------------------------------------- ignore files


@dataclass(frozen=True, slots=True)
class IgnoreLayer:
    """The ignore patterns of one folder, compiled once."""

    base: str  # the folder, relative to the root: "" or "src/pkg/"
    spec: GitIgnoreSpec
    reasons: tuple[tuple[int, str], ...]  # (end of a source's patterns, its skip reason)
    prefilter: _Prefilter | None  # all patterns at once: most paths match none of them

    def decide(self, rel: str, is_dir: bool) -> tuple[bool, str] | None:
        """(ignored, reason) from the last pattern matching `rel`, or None when none does."""
        sub = rel[len(self.base) :]
        if self.prefilter is not None and not self.prefilter.hits(sub + "/" if is_dir else sub):
            return None
        if not is_dir:
            result = self.spec.check_file(sub)
            if result.include is None or result.index is None:
                return None
            return result.include, self._reason(result.index)
        if self.spec.check_file(sub + "/").include is None:
            return None  # no pattern can match this folder in any form
        # Match the folder as git does: by its own name, with dir-only patterns ("build/") allowed.
        # pathspec alone would also let "docs/**" exclude the folder "docs" itself, which git does
        # not (so that "!docs/keep.md" still works).
        patterns = self.spec.patterns
        for index in range(len(patterns) - 1, -1, -1):
            pattern = patterns[index]
            if pattern.include is None:
                continue
            if pattern.match_file(sub) is not None or (
                _dir_only(pattern) and pattern.match_file(sub + "/") is not None
            ):
                return pattern.include, self._reason(index)
        return None

    def _reason(self, index: int) -> str:
        for end, reason in self.reasons:
            if index < end:
                return reason
        return self.reasons[-1][1]


def first_decision(layers: Iterable[IgnoreLayer], rel: str, is_dir: bool) -> str | None:
    """The skip reason when `rel` is ignored; `layers` are in precedence order, highest first."""
    for layer in layers:
        decision = layer.decide(rel, is_dir)
        if decision is not None:
            ignored, reason = decision
            return reason if ignored else None
    return None


def load_layer(directory: str, base: str, names: Set[str]) -> IgnoreLayer | None:
    """The ignore files of one folder (`names` is its listing), or None when it has none."""
    sources: list[tuple[str, str]] = []
    if base == "":
        exclude = os.path.join(directory, ".git", "info", "exclude")
        sources.append((exclude, "ignored by .git/info/exclude"))
    sources += [(os.path.join(directory, n), f"ignored by {n}") for n in IGNORE_FILES if n in names]
    patterns: list[Pattern] = []
    reasons: list[tuple[int, str]] = []
    for path, reason in sources:
        data = read_regular_file(path, _IGNORE_FILE_CAP)  # not a FIFO, a link or a device
        if isinstance(data, Refused):
            continue  # missing or unreadable ignore file: nothing to apply
        lines = data.decode("utf-8", errors="replace").splitlines()
        patterns += _parse(lines, strict=False)
        reasons.append((len(patterns), reason))
    return _layer(base, patterns, reasons)


def config_layer(exclude: Sequence[str]) -> IgnoreLayer | None:
    """The `index.exclude` patterns, relative to the root."""
    patterns = _parse(exclude, strict=True)
    return _layer("", patterns, [(len(patterns), "excluded by index.exclude")])


def _layer(
    base: str, patterns: list[Pattern], reasons: list[tuple[int, str]]
) -> IgnoreLayer | None:
    if not any(p.include is not None for p in patterns):
        return None
    spec = GitIgnoreSpec(cast(Any, patterns))
    return IgnoreLayer(base, spec, tuple(reasons), _prefilter(patterns))


@dataclass(frozen=True, slots=True)
class _Prefilter:
    """The patterns' regexes joined, to rule out most paths in one or two regex calls."""

    anchored: re.Pattern[str] | None
    floating: re.Pattern[str] | None

    def hits(self, path: str) -> bool:
        return bool(
            (self.anchored is not None and self.anchored.match(path))
            or (self.floating is not None and self.floating.search(path))
        )


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
_ANY_FOLDER = "(?:.+/)?"  # how pathspec starts an unanchored gitignore pattern


def _prefilter(patterns: Sequence[Pattern]) -> _Prefilter | None:
    """None when the regexes cannot be joined (then every pattern is tried)."""
    any_folder, anchored, floating = [], [], []
    for pattern in patterns:
        if pattern.include is None:
            continue
        regex = getattr(pattern, "regex", None)
        if not isinstance(regex, re.Pattern) or not isinstance(regex.pattern, str):
            return None
        if regex.flags != re.UNICODE:
            return None
        source = _NAMED_GROUP.sub("(?:", regex.pattern)  # the same name twice is an error
        if not source.startswith("^"):
            floating.append(source)
        elif source.startswith("^" + _ANY_FOLDER):
            any_folder.append(source[1 + len(_ANY_FOLDER) :])  # shared prefix: tried once
        else:
            anchored.append(source[1:])
    if any_folder:
        anchored.append(_ANY_FOLDER + _alternatives(any_folder))
    try:
        return _Prefilter(
            re.compile("^" + _alternatives(anchored)) if anchored else None,
            re.compile(_alternatives(floating)) if floating else None,
        )
    except re.error:
        return None


def _alternatives(sources: Sequence[str]) -> str:
    return "(?:" + "|".join(f"(?:{source})" for source in sources) + ")"


def _parse(lines: Sequence[str], *, strict: bool) -> list[Pattern]:
    try:
        return list(GitIgnoreSpec.from_lines(lines).patterns)
    except ValueError:
        pass
    patterns: list[Pattern] = []  # one bad line must not cost the whole file
    for line in lines:
        try:
            patterns += GitIgnoreSpec.from_lines([line]).patterns
        except ValueError as exc:
            if strict:
                raise ConfigError(
                    f"invalid pattern in index.exclude: {line!r}",
                    hint="use gitignore syntax, e.g. 'docs/build/' or '*.snap'",
                ) from exc
    return patterns


def _dir_only(pattern: Pattern) -> bool:
    text = getattr(pattern, "pattern", None)
    return isinstance(text, str) and text.rstrip().endswith("/")


# --------------------------------------------------------------------------- names

_EXCLUDED_DIRS = frozenset(
    ".git .hg .svn .bzr _darcs .jj"  # version control
    " node_modules bower_components jspm_packages .pnpm-store .yarn"  # dependencies
    " .venv venv .env __pypackages__"  # virtualenvs by name (others by marker, below)
    " __pycache__ .mypy_cache .pytest_cache .ruff_cache .pytype .pyre .tox .nox .hypothesis"
    " .cache .eggs .ipynb_checkpoints .next .nuxt .svelte-kit .parcel-cache .turbo .angular"
    " .vercel .docusaurus .expo .serverless .sass-cache .dart_tool .stack-work htmlcov .gradle"
    " .idea .vs .bundle"
    " .memserver".split()  # our own index
)
_EXCLUDED_DIR_SUFFIXES = (".egg-info", ".lance")
_SECRET_DIRS = frozenset({".aws", ".gcloud", ".azure", ".ssh", ".gnupg", ".terraform"})

_SECRET_FILES = (  # checked in order against the lower-cased name; the first match names the rule
    *(".env", ".env.*", "*.env", ".envrc"),
    *("*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.ovpn"),
    *("id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*"),
    *(".npmrc", ".pypirc", ".netrc", "_netrc", ".git-credentials", ".htpasswd", ".pgpass"),
    *("credentials", "*credentials*.json", "*service-account*.json"),
    *("secrets.yml", "secrets.yaml", "secrets.json", "secrets.toml"),
    *("*.tfstate*", "*.tfvars", "*.tfvars.json"),
    # cloud and storage tool configs: keys in plain text
    *(".s3cfg", ".boto", "rclone.conf", "kubeconfig*", "vault-token*", ".vault-token"),
    # Kubernetes Secret manifests
    *("secret.yaml", "secret.yml", "*-secret.yaml", "*-secret.yml", "*-secrets.yaml"),
    "*-secrets.yml",
    # app configs that hold database passwords and API keys by convention
    *("wp-config.php", "google-services.json", "googleservice-info.plist"),
    *("keystore.properties", "local.properties"),
)
_SECRET_PATHS = {(".docker", "config.json"), (".kube", "config")}  # (parent, name)
_SECRET_ANY = re.compile("|".join(translate(p) for p in _SECRET_FILES))
_SECRET_EACH = tuple((p, re.compile(translate(p))) for p in _SECRET_FILES)

_LOCK_FILES = frozenset(  # besides any "*.lock"
    "package-lock.json npm-shrinkwrap.json pnpm-lock.yaml bun.lockb go.sum packages.lock.json"
    " yarn.lock poetry.lock pipfile.lock uv.lock cargo.lock gemfile.lock composer.lock".split()
)
# swap, backup and save-by-rename files of vim, emacs, JetBrains IDEs and others
_HASHED = re.compile(r"#.+#$")  # emacs auto-save
_EDITOR_TEMP_SUFFIXES = ("~", ".swp", ".swo", ".swx", ".tmp", "___jb_tmp___", "___jb_old___")
_MINIFIED_SUFFIXES = (".min.js", ".min.css", ".min.mjs")
_GENERATED_SUFFIXES = (".map", "_pb2.py", "_pb2.pyi", "_pb2_grpc.py", ".pb.go", ".pb.gw.go")
_BINARY_EXTENSIONS = frozenset(
    ".png .jpg .jpeg .gif .bmp .ico .icns .tif .tiff .webp .avif .heic .psd .xcf"  # images
    " .zip .tar .gz .tgz .bz2 .xz .7z .rar .zst .lz4 .lzma .jar .war .ear .whl .egg .apk .ipa"
    " .dmg .iso .deb .rpm .msi .cab"  # archives and packages
    " .so .dylib .dll .exe .o .a .obj .lib .class .pyc .pyo .pyd .wasm .elc .beam"  # compiled
    " .ttf .otf .woff .woff2 .eot"  # fonts
    " .mp3 .mp4 .wav .ogg .flac .aac .m4a .mov .avi .mkv .webm .wmv .flv"  # media
    " .pdf .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp"  # documents
    " .sqlite .sqlite3 .db .mdb"  # databases
    " .onnx .bin .pt .pth .ckpt .safetensors .h5 .hdf5 .pkl .pickle .npy .npz .tflite .gguf"
    " .parquet .arrow .feather .lance .avro .orc".split()  # models and data
)
_COVERAGE_MARKERS = frozenset(
    {"lcov.info", "lcov-report", "coverage-final.json", "coverage-summary.json", "clover.xml"}
    | {"cobertura-coverage.xml", "coverage.xml", "index.html"}
)


def dir_reason(rel: str) -> str | None:
    """Why the folder `rel` is left out by its name alone, or None."""
    parts = rel.rsplit("/", 2)
    name = parts[-1]
    if name in _EXCLUDED_DIRS:
        return f"default exclude: {name}"
    if name.endswith(_EXCLUDED_DIR_SUFFIXES):
        return f"default exclude: *{os.path.splitext(name)[1]}"
    return _secret_dir(parts)


def marker_reason(name: str, names: Set[str], directory: str) -> str | None:
    """Why a folder is left out given its listing `names` (tool-made folders say so), or None."""
    if "pyvenv.cfg" in names:
        return "default exclude: virtualenv (pyvenv.cfg)"
    if "conda-meta" in names:
        return "default exclude: conda environment"
    if "CACHEDIR.TAG" in names:
        return "default exclude: cache directory (CACHEDIR.TAG)"
    lower = name.lower()
    if lower == "env" and ("bin" in names or "Scripts" in names):
        for activate in ("bin/activate", "Scripts/activate"):
            if os.path.isfile(os.path.join(directory, activate)):
                return "default exclude: virtualenv"
    if lower in ("build", "dist") and "__init__.py" not in names:  # a package of that name is code
        return f"default exclude: {lower}"
    if lower == "coverage" and names & _COVERAGE_MARKERS:
        return "default exclude: coverage"
    if lower == "vendor" and names & {"modules.txt", "autoload.php"}:  # Go, Composer
        return "default exclude: vendor"
    return None


def file_reason(rel: str) -> str | None:
    """Why the file `rel` is left out by its name alone, or None."""
    parts = rel.rsplit("/", 2)
    name = parts[-1].lower()
    secret = _secret_file(name, parts[-2] if len(parts) > 1 else "")
    if secret is not None:
        return secret
    if name.endswith(_EDITOR_TEMP_SUFFIXES) or name.startswith(".#") or _HASHED.match(name):
        return "editor temporary file"
    if name in _LOCK_FILES or name.endswith(".lock"):
        return "lock file"
    if name.endswith(_MINIFIED_SUFFIXES):
        return "minified file"
    if name.endswith(_GENERATED_SUFFIXES) or ".generated." in name:
        return "generated file"
    if os.path.splitext(name)[1] in _BINARY_EXTENSIONS:
        return "binary file"
    return None


def target_reason(rel: str, is_dir: bool) -> str | None:
    """The name rules over every part of a symlink's target, so a link cannot reach around them."""
    parts = rel.split("/") if rel else []
    for i in range(len(parts) if is_dir else len(parts) - 1):
        reason = dir_reason("/".join(parts[: i + 1]))
        if reason is not None:
            return reason
    return None if is_dir else file_reason(rel)


def relative_dirs(root_real: str, dirs: Sequence[str]) -> frozenset[str]:
    """`ignore_dirs` as root-relative POSIX paths; folders outside the root are dropped."""
    relative = set()
    prefix = root_real.rstrip(os.sep) + os.sep
    for directory in dirs:
        path = os.fspath(directory)
        if os.path.isabs(path):
            real = os.path.realpath(path)
            if not real.startswith(prefix):
                continue
            path = real[len(prefix) :]
        rel = os.path.normpath(path).replace(os.sep, "/").strip("/")
        if rel not in ("", ".") and not rel.startswith("../"):
            relative.add(rel)
    return frozenset(relative)


def utf8_name(name: str) -> bool:
    """False for a file name with bytes that are not UTF-8 (it could not be stored or shown)."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
        return False
    return True


def _secret_dir(parts: Sequence[str]) -> str | None:
    name = parts[-1]
    if name in _SECRET_DIRS:
        return f"may contain secrets ({name})"
    if name == "gcloud" and len(parts) > 1 and parts[-2] == ".config":
        return "may contain secrets (.config/gcloud)"
    return None


def _secret_file(name: str, parent: str) -> str | None:
    if (parent, name) in _SECRET_PATHS:
        return f"may contain secrets ({parent}/{name})"
    if not _SECRET_ANY.match(name):
        return None
    return next(f"may contain secrets ({p})" for p, regex in _SECRET_EACH if regex.match(name))


# --------------------------------------------------------------------------- contents

_PRIVATE_KEY = re.compile(  # a header followed by key material, not code that names the header
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----[\s\S]{0,200}?[A-Za-z0-9+/]{40}"
)
_GENERATED_MARKERS = ("@generated", "DO NOT EDIT", "<auto-generated")


def binary_reason(data: bytes) -> str | None:
    return "binary file" if b"\0" in data[:8192] else None


def text_reason(text: str, language: str) -> str | None:
    """Why decoded text is left out by its contents, or None."""
    if not text or text.isspace():
        return "empty"
    if "PRIVATE KEY" in text and _PRIVATE_KEY.search(text):
        return "may contain secrets (private key block)"
    head = text[: _line_end(text, 5)]
    if any(marker in head for marker in _GENERATED_MARKERS):
        return "generated file"
    if looks_minified(text, language):
        return "minified file"
    return None


def looks_minified(text: str, language: str) -> bool:
    """Minified or machine-packed text, by line shape.

    Either (code and data only, files of 2,000+ characters) the average line is over 300
    characters, or (any language) one line of over 5,000 characters holds more than half the file.
    Prose is exempt from the first rule: soft-wrapped Markdown paragraphs are long lines by design.
    """
    size = len(text)
    if size < 2000:
        return False
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if language not in PROSE and size / lines > 300:
        return True
    if size <= 5000:
        return False
    # A line holding over half the file must hold its middle character: measure just that line.
    middle = size // 2
    end = text.find("\n", middle)
    longest = (size if end < 0 else end) - (text.rfind("\n", 0, middle) + 1)
    return longest > 5000 and longest * 2 > size


def _line_end(text: str, count: int) -> int:
    end = -1
    for _ in range(count):
        end = text.find("\n", end + 1)
        if end < 0:
            return len(text)
    return end


def path_matcher(patterns: Sequence[str], what: str = "path pattern") -> Callable[[str], bool]:
    """Whether a root-relative file path matches gitignore-style globs (a later `!glob`
    excludes part of an earlier one): path filters of recall, paths of forget."""
    try:
        spec = GitIgnoreSpec.from_lines(list(patterns))
    except Exception as exc:
        raise BadRequest(
            f"invalid {what} {list(patterns)}: {exc}",
            hint="use gitignore-style globs relative to the root, e.g. 'src/**/*.py' or 'docs/'",
        ) from exc
    return spec.match_file
