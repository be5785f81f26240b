"""Portable index artifacts for CI pre-indexing (the sole zstandard importer).

An artifact is a zstd-compressed tar: `artifact.json` first (what built the index, at
which commit, how big), then the index directory under `index/`, without what belongs
to one machine or one run: the writer lock, the crash marker, the stat cache and
tantivy's lock files. Paths inside the index are relative to the project root, so
the index works in any checkout; import rewrites `meta.json`'s `root`.

Import never touches the current index until the new one is complete and verified:
it extracts into a temporary folder beside the index, checks it, then renames it
into place.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from memserver.core.errors import IndexMismatch, PathError, StoreError
from memserver.store import graphsync
from memserver.store.failures import write_error
from memserver.store.index import IndexStore, drop_reshaped_graph
from memserver.store.lock import LOCK_FILE, WriterLock
from memserver.store.meta import META_FILE, SCHEMA_VERSION, read_meta, write_meta
from memserver.store.statecache import DIRTY, STATE_FILE

FORMAT_VERSION = 1
INFO_NAME = "artifact.json"
PREFIX = "index"
_SKIP = frozenset({LOCK_FILE, DIRTY, STATE_FILE, f"{STATE_FILE}.tmp", f"{META_FILE}.tmp"})
_LEVEL = 10  # zstd level: vectors barely compress, text does; higher levels cost time


@dataclass(frozen=True)
class ArtifactInfo:
    """`artifact.json`: what an artifact holds and what built it."""

    format: int
    project: str
    git_commit: str
    git_branch: str
    embedder: str
    dim: int
    schema_version: int
    chunker: str
    tokenizer: str
    created_at: str
    files: int
    chunks: int
    memories: int
    chunks_unembedded: int = 0
    memserver_version: str = ""
    definitions: int = 0  # the code graph's current definitions and references
    references: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ExportResult:
    artifact: ArtifactInfo
    path: str
    bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "artifact": self.artifact.to_dict(),
        }


@dataclass(frozen=True)
class ImportResult:
    artifact: ArtifactInfo
    index_dir: str
    replaced: bool
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "index_dir": self.index_dir,
            "replaced": self.replaced,
            "seconds": round(self.seconds, 3),
            "artifact": self.artifact.to_dict(),
        }


def _damaged(archive: Path, why: str) -> StoreError:
    return StoreError(
        f"{archive} is not a usable memserver artifact: {why}",
        hint="download it again, or build the index here with `memserver index`",
    )


# -- export ------------------------------------------------------------------------


def export_index(
    index_dir: Path, out: Path, *, embedder: str, dim: int, lock_timeout: float
) -> ExportResult:
    """Write the index at `index_dir` to `out`, holding the writer lock throughout."""
    started = time.monotonic()
    out = out.expanduser().resolve()
    if out.is_relative_to(index_dir):
        raise PathError(
            f"{out} is inside the index it exports",
            hint="write the artifact somewhere else, e.g. --out index.tar.zst",
        )
    if not out.parent.is_dir():
        raise PathError(
            f"{out.parent} does not exist", hint="create the folder, or pick another --out"
        )
    store = IndexStore.open(index_dir, embedder, dim)
    with store.lock(lock_timeout):
        if store.dirty:
            raise StoreError(
                f"the index at {index_dir} was left half-written by an interrupted run",
                hint="run `memserver index` to repair and finish it, then export",
            )
        info = _describe(store)
        _write(index_dir, out, info)
    return ExportResult(info, str(out), out.stat().st_size, time.monotonic() - started)


def _describe(store: IndexStore) -> ArtifactInfo:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("memserver")
    except PackageNotFoundError:
        ours = ""
    meta = store.meta
    return ArtifactInfo(
        format=FORMAT_VERSION,
        project=meta.project,
        git_commit=meta.git_commit,
        git_branch=meta.git_branch,
        embedder=meta.embedder,
        dim=meta.dim,
        schema_version=meta.schema_version,
        chunker=meta.chunker,
        tokenizer=meta.tokenizer,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        files=store.files.count(),
        chunks=store.chunks.count_current(),
        memories=store.memories.count_active(),
        chunks_unembedded=store.chunks.count_unembedded() if meta.dim else 0,
        memserver_version=ours,
        definitions=store.graph.count_current()[1],
        references=store.graph.count_current()[2],
    )


def _members(index_dir: Path) -> Iterator[tuple[Path, str]]:
    """(file or folder, name in the archive), sorted, without per-machine files."""
    for here, dirs, files in os.walk(index_dir):
        dirs.sort()
        base = Path(here)
        rel = base.relative_to(index_dir)
        yield base, (PurePosixPath(PREFIX) / rel.as_posix()).as_posix()
        for name in sorted(files):
            if (rel == Path(".") and name in _SKIP) or _is_tantivy_lock(name):
                continue
            if (base / name).is_symlink():
                continue
            yield base / name, (PurePosixPath(PREFIX) / rel.as_posix() / name).as_posix()


def _is_tantivy_lock(name: str) -> bool:
    return name.startswith(".tantivy-") and name.endswith(".lock")


def _normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o755 if info.isdir() else 0o644
    return info


def _write(index_dir: Path, out: Path, info: ArtifactInfo) -> None:
    import zstandard

    tmp = out.with_name(f".{out.name}.tmp")
    body = json.dumps(info.to_dict(), indent=2, sort_keys=True).encode()
    try:
        with (
            tmp.open("wb") as fh,
            zstandard.ZstdCompressor(level=_LEVEL, threads=-1).stream_writer(
                fh, closefd=False
            ) as zw,
            tarfile.open(fileobj=zw, mode="w|", format=tarfile.PAX_FORMAT) as tar,
        ):
            head = _normalised(tarfile.TarInfo(INFO_NAME))
            head.size, head.mtime = len(body), int(time.time())
            tar.addfile(head, io.BytesIO(body))
            for path, name in _members(index_dir):
                tar.add(path, name, recursive=False, filter=_normalised)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(
            f"cannot write the artifact {out}: {exc.strerror or exc}",
            hint="check that the folder is writable and the disk is not full",
        ) from exc


# -- import ------------------------------------------------------------------------


@contextmanager
def _open_tar(archive: Path) -> Iterator[tarfile.TarFile]:
    import zstandard

    try:
        fh: IO[bytes] = archive.open("rb")
    except OSError as exc:
        raise PathError(
            f"cannot read the artifact {archive}: {exc.strerror or exc}",
            hint="pass the .tar.zst file that `memserver export` wrote",
        ) from exc
    try:
        with (
            fh,
            zstandard.ZstdDecompressor().stream_reader(fh, closefd=False) as zr,
            tarfile.open(fileobj=zr, mode="r|") as tar,
        ):
            yield tar
    except (tarfile.TarError, zstandard.ZstdError, EOFError) as exc:
        raise _damaged(archive, f"{type(exc).__name__}: {exc}") from exc


def read_info(archive: Path) -> ArtifactInfo:
    """The artifact's `artifact.json` (its first member); refuses another format version."""
    with _open_tar(archive) as tar:
        first = tar.next()
        if first is None or first.name != INFO_NAME or not first.isfile():
            raise _damaged(archive, f"it does not start with {INFO_NAME}")
        data = tar.extractfile(first)
        try:
            raw = json.loads(data.read()) if data is not None else None
        except ValueError as exc:
            raise _damaged(archive, f"{INFO_NAME} is not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise _damaged(archive, f"{INFO_NAME} is not a JSON object")
    if raw.get("format") != FORMAT_VERSION:
        raise IndexMismatch(
            f"{archive} has artifact format {raw.get('format')!r}; this memserver reads "
            f"format {FORMAT_VERSION}",
            hint="export it with the same memserver version, or build the index here "
            "with `memserver index`",
        )
    names = {f.name for f in fields(ArtifactInfo)}
    try:
        return ArtifactInfo(**{k: v for k, v in raw.items() if k in names})
    except TypeError as exc:
        raise _damaged(archive, f"{INFO_NAME} lacks a field: {exc}") from exc


def check_artifact(archive: Path, info: ArtifactInfo, embedder: str, dim: int) -> None:
    """Refuse an artifact of another schema, or built by another embedder than configured."""
    if info.schema_version != SCHEMA_VERSION:
        raise IndexMismatch(
            f"{archive} holds an index of schema version {info.schema_version}; this "
            f"memserver uses version {SCHEMA_VERSION}",
            hint="export it with the same memserver version, or build the index here "
            "with `memserver index`",
        )
    if (info.embedder, info.dim) != (embedder, dim):
        raise IndexMismatch(
            f"{archive} was built with embedder {info.embedder} (dim {info.dim}), but "
            f"{embedder} (dim {dim}) is configured here",
            hint=f"pass --embedder {info.embedder} (or set [embedding] model in "
            ".memserver.toml) to use it, or build the index here with `memserver index`",
        )


def import_index(
    archive: Path,
    index_dir: Path,
    *,
    root: Path,
    embedder: str,
    dim: int,
    force: bool,
    lock_timeout: float,
) -> ImportResult:
    """Restore an artifact as the index at `index_dir` for the checkout at `root`."""
    started = time.monotonic()
    info = read_info(archive)
    check_artifact(archive, info, embedder, dim)
    replaced = _check_existing(index_dir, info, force)
    try:
        index_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{index_dir.name}.import-", dir=index_dir.parent))
    except OSError as exc:
        raise StoreError(
            f"cannot create a folder beside {index_dir}: {exc.strerror or exc}",
            hint="choose a writable place with --index-dir",
        ) from exc
    try:
        _extract(archive, staging)
        _verify(archive, staging, info, root)
        _swap(staging, index_dir, lock_timeout)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ImportResult(info, str(index_dir), replaced, time.monotonic() - started)


def _check_existing(index_dir: Path, info: ArtifactInfo, force: bool) -> bool:
    """Whether an index will be replaced; refuses a non-empty one unless `force`."""
    if not index_dir.exists():
        return False
    if not index_dir.is_dir():
        raise PathError(
            f"{index_dir} exists and is not a folder",
            hint="remove it, or import into another place with --index-dir",
        )
    if not any(index_dir.iterdir()):
        return False
    if force:
        return True
    try:
        meta = read_meta(index_dir)
    except StoreError:
        meta = None
    if meta is not None and (meta.embedder, meta.dim) != (info.embedder, info.dim):
        raise IndexMismatch(
            f"the index at {index_dir} was built with {meta.embedder} (dim {meta.dim}), "
            f"the artifact with {info.embedder} (dim {info.dim})",
            hint="pass --force to replace the index with the artifact, or keep it and run "
            "`memserver index` (`--rebuild` to start over)",
        )
    raise PathError(
        f"an index already exists at {index_dir}",
        hint="pass --force to replace it with the artifact (the current index stays until "
        "the new one is complete)",
    )


def _member_path(archive: Path, member: tarfile.TarInfo) -> PurePosixPath | None:
    """The member's path inside the index folder; None for what import skips."""
    pure = PurePosixPath(member.name)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or pure.parts[0] != PREFIX:
        raise _damaged(archive, f"member {member.name!r} points outside the index folder")
    if not (member.isfile() or member.isdir()):
        raise _damaged(archive, f"member {member.name!r} is a link or a device")
    rel = PurePosixPath(*pure.parts[1:]) if len(pure.parts) > 1 else PurePosixPath()
    if (len(rel.parts) == 1 and rel.name in _SKIP) or _is_tantivy_lock(rel.name):
        return None  # the stat cache or a lock from another machine: never carried over
    if member.isfile() and not rel.parts:
        raise _damaged(archive, f"member {member.name!r} is a file where the index folder goes")
    return rel


def _extract(archive: Path, dest: Path) -> None:
    """Extract the `index/` members into `dest`, refusing anything that would land outside."""
    with _open_tar(archive) as tar:
        for n, member in enumerate(tar):
            if n == 0:
                continue  # artifact.json, read and checked already
            rel = _member_path(archive, member)
            if rel is None:
                continue
            target = dest.joinpath(*rel.parts)
            try:
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(member)
                if src is None:
                    raise _damaged(archive, f"member {member.name!r} has no data")
                with target.open("xb") as fh:
                    shutil.copyfileobj(src, fh)
            except OSError as exc:
                raise write_error(f"write {target}", exc) from exc


def _verify(archive: Path, staged: Path, info: ArtifactInfo, root: Path) -> None:
    """Point the staged index at this checkout and check it opens and holds what it says."""
    meta = read_meta(staged)
    if meta is None:
        raise _damaged(archive, f"it holds no {META_FILE}")
    if (meta.embedder, meta.dim, meta.schema_version) != (
        info.embedder,
        info.dim,
        info.schema_version,
    ):
        raise _damaged(archive, f"its {META_FILE} disagrees with {INFO_NAME}")
    meta = replace(meta, root=str(root))
    write_meta(staged, meta)
    # an older memserver's code graph: dropped here (its empty tables made again), and made
    # by the checkout's next `memserver index`; the artifact's chunks and vectors are kept
    old_graph = drop_reshaped_graph(staged, None)
    store = IndexStore(staged, meta, create=old_graph)
    found = store.chunks.count_current()
    if found != info.chunks:
        raise _damaged(archive, f"it holds {found} chunks, {INFO_NAME} says {info.chunks}")
    if old_graph:
        return
    _, definitions, references = store.graph.count_current()
    if (definitions, references) != (info.definitions, info.references):
        raise _damaged(archive, f"its code graph holds {definitions} definitions and "
                       f"{references} references, {INFO_NAME} says {info.definitions} and "
                       f"{info.references}")  # fmt: skip
    if not graphsync.agrees(store.files.read(), store.graph):
        raise _damaged(archive, "its code graph does not match its files manifest")


def _swap(staged: Path, index_dir: Path, lock_timeout: float) -> None:
    """Rename the staged index into place; an old one is moved aside under its lock."""
    try:
        if not index_dir.exists():
            os.rename(staged, index_dir)
            return
        aside = index_dir.with_name(f".{index_dir.name}.old-{os.getpid()}")
        shutil.rmtree(aside, ignore_errors=True)
        with WriterLock(index_dir, lock_timeout, "memserver import"):
            os.rename(index_dir, aside)
            try:
                os.rename(staged, index_dir)
            except OSError:
                os.rename(aside, index_dir)
                raise
        shutil.rmtree(aside, ignore_errors=True)
    except OSError as exc:
        raise StoreError(
            f"cannot move the imported index into {index_dir}: {exc.strerror or exc}",
            hint="check that the folder is writable; the previous index was left in place",
        ) from exc


__all__ = [
    "FORMAT_VERSION",
    "ArtifactInfo",
    "ExportResult",
    "ImportResult",
    "check_artifact",
    "export_index",
    "import_index",
    "read_info",
]
