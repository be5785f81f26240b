"""Settings: loaded once at the edge, then each component gets its own section.

Precedence, lowest first: the defaults below (documented one by one in
`configs/default.toml`, which a test keeps in step with them) < the user
config (`$XDG_CONFIG_HOME/memserver/config.toml`) < `<root>/.memserver.toml`
< environment variables `MEMSERVER_<SECTION>_<KEY>` < command-line flags.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memserver.core.errors import ConfigError
from memserver.core.types import ChunkOptions, WalkOptions
from memserver.llm.settings import LlmSettings

FP32_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# the default: an int8 copy of FP32_MODEL, made locally from it (memserver/embed/quantize.py)
DEFAULT_MODEL = "memserver/all-MiniLM-L6-v2-int8-dyn-matmul-pc-no-ffn-out"


@dataclass(frozen=True)
class IndexSettings:
    dir: str = ".memserver"  # relative paths are taken from the project root
    max_file_bytes: int = 1_000_000
    exclude: tuple[str, ...] = ()
    follow_symlinks: bool = True
    include_hidden: bool = True
    lock_timeout_seconds: float = 10.0
    batch_files: int = 200
    embed_batch_chunks: int = 256
    graph_workers: int = 1  # processes tagging for the code graph beside the chunker
    memory_vectors: str = "none"  # or "definitions", "own", "chunk" (configs/default.toml)

    def walk_options(self) -> WalkOptions:
        return WalkOptions(
            max_file_bytes=self.max_file_bytes,
            exclude=self.exclude,
            follow_symlinks=self.follow_symlinks,
            include_hidden=self.include_hidden,
        )


@dataclass(frozen=True)
class EmbeddingSettings:
    model: str = DEFAULT_MODEL  # a fastembed model name, or "hashing", or "none"
    batch_tokens: int = 256
    threads: int = 0  # 0: ONNX Runtime decides (one per session with several sessions)
    sessions: int = 2  # model sessions embedding side by side while indexing (≤ cores)
    query_threads: int = 1
    cache_dir: str = ""  # "": fastembed's default (honours FASTEMBED_CACHE_PATH)
    max_chars: int = 384  # of a chunk's code, the model sees this much (configs/default.toml)


@dataclass(frozen=True)
class RecallSettings:
    k: int = 10
    budget_tokens: int = 4096
    max_files: int = 10
    rrf_k: int = 60
    candidates: int = 30
    expansions: int = 3
    dense_routes: int = 1
    original_weight: float = 1.0
    canonical_weight: float = 1.0
    expansion_weight: float = 0.5
    exact_weight: float = 1.0
    memory_weight: float = 0.3
    graph_weight: float = 1.0  # the code graph's arms (see configs/default.toml)
    graph_near_weight: float = 0.0
    graph_near_top: int = 3
    graph_near_depth: int = 10
    speaker_boost: float = 1.0
    turn_continuations: int = 2
    date_weight: float = 1.0
    rerank_candidates: int = 30
    # the default model's (retrieve/gate.py FITTED_GATES has the other models')
    gate_weights: tuple[float, ...] = (26.4713, 0.0, 0.0, 0.0, 0.0, -6.7399)
    gate_bias: float = -4.4137
    gate_threshold: float = 0.647
    ann_min_rows: int = 20_000  # from this many chunks on: ANN index, lean recall view
    ann_nprobes: int = 20
    ann_probe_factor: float = 5.4
    ann_memory_probe_factor: float = 4.0
    ann_refine: int = 2
    ann_memory_refine: int = 1
    # the lean view scores chunks' vectors exactly while they fit in this many MiB (0: never)
    exact_dense_mb: int = 128
    # long queries (task descriptions, issues): ranked by file (retrieve/longquery.py)
    long_query_words: int = 25  # distinct content words from which a query is one (0: never)
    title_weight: float = 4.0  # a title word counts this many times more
    long_candidates: int = 300  # chunks each arm of a long query returns
    long_file_candidates: int = 200  # files the whole-file keyword arm returns
    long_dense_candidates: int = 100  # chunks a long query's dense arm returns
    file_weights: tuple[float, ...] = (1.0, 0.3, 0.3, 0.3, 0.5)  # file chunk names paths dense
    long_dense: bool = True  # embed a long query's prose for its dense arm (configs/default.toml)
    secondary_weight: float = 0.3  # tests, docs, examples, vendored, generated, data files
    second_chunk_weight: float = 0.7  # a file's n-th chunk ranks at its score times this**n
    chunk_name_weight: float = 0.05  # within a file: a chunk whose symbol the query names
    within_file_candidates: int = 1000  # keyword hits that order chunks within files
    test_paths: tuple[str, ...] = ()  # globs: more tests than the built-in rules know
    doc_paths: tuple[str, ...] = ()
    vendored_paths: tuple[str, ...] = ()
    code_paths: tuple[str, ...] = ()  # globs of first-party code the rules would demote
    map_files: int = 20  # files a map answer lists
    map_budget_tokens: int = 1000  # a map answer's budget unless the call gives one
    llm_files: int = 15  # a long query's first files re-ordered by the LLM ([llm]); 0: never
    # the long-query gate (retrieve/gate.py LONG_FEATURES): found when share + agree >= 0.52
    long_gate_weights: tuple[float, ...] = (10.0, 10.0)
    long_gate_bias: float = -5.2
    long_gate_threshold: float = 0.5


@dataclass(frozen=True)
class AttributionSettings:
    # logistic weights over retrieve.attribute.FEATURES; fitted by
    # `memserver eval attribution` on the DEV code bench
    weights: tuple[float, ...] = (
        3.0815, 0.2222, -0.8686, 0.5499, 0.6742, 7.3205, 4.0631, -0.655, 3.7246,
    )  # fmt: skip
    bias: float = -2.9968
    threshold: float = 0.61


@dataclass(frozen=True)
class RerankSettings:
    enabled: bool = True
    model: str = "Xenova/ms-marco-MiniLM-L-6-v2"
    cache_dir: str = ""
    max_chars: int = 2000
    batch_size: int = 16
    threads: int = 0


@dataclass(frozen=True)
class MemorySettings:
    redact_emails: bool = True
    redact_phones: bool = True
    phone_region: str = "US"  # region for numbers written without a country code
    max_text_bytes: int = 262_144
    max_cited_chunks: int = 50  # chunks a note may cite through `paths` and symbols
    # conversation turns scoring below this (novelty + divergence, 0-1) are not stored;
    # set on LoCoMo DEV just below its lowest-scoring evidence turn (0.073)
    turn_min_score: float = 0.07


@dataclass(frozen=True)
class WatchSettings:
    debounce_ms: int = 150  # a batch starts once the tree has been quiet this long...
    max_delay_ms: int = 1000  # ...or its oldest change has waited this long
    max_batch_paths: int = 2000  # more changed paths than this: walk the whole tree
    embed_threads: int = 1  # ONNX Runtime threads for the watcher's (small) batches
    housekeep_after_commits: int = 10  # compact after this many changing batches...
    housekeep_idle_seconds: float = 30.0  # ...or once quiet this long after any
    keep_versions_minutes: float = 10.0  # table versions younger than this survive


@dataclass(frozen=True)
class ConsolidateSettings:
    affinity: float = 0.85  # cosine (damped by time) at which two memories merge
    neighbours: int = 20  # earlier memories each one is compared with
    half_life_days: float = 180.0  # affinity halves with every this many days between them


@dataclass(frozen=True)
class ServerSettings:
    max_parallel_calls: int = 4  # engine calls in worker threads at once; the rest queue


@dataclass(frozen=True)
class ProjectSettings:
    name: str = ""  # "": the root folder's name


@dataclass(frozen=True)
class Settings:
    project: ProjectSettings = field(default_factory=ProjectSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    chunking: ChunkOptions = field(default_factory=ChunkOptions)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    llm: LlmSettings = field(default_factory=LlmSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    watch: WatchSettings = field(default_factory=WatchSettings)
    attribution: AttributionSettings = field(default_factory=AttributionSettings)
    consolidate: ConsolidateSettings = field(default_factory=ConsolidateSettings)
    server: ServerSettings = field(default_factory=ServerSettings)


SECTIONS = tuple(f.name for f in dataclasses.fields(Settings))


def _coerce(section: str, key: str, value: Any, default: Any) -> Any:
    where = f"[{section}] {key}"
    if isinstance(default, bool):
        if isinstance(value, str):
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        try:
            return int(value)
        except (TypeError, ValueError):
            pass
    elif isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    elif isinstance(default, tuple):
        items = value.split(",") if isinstance(value, str) else value
        if isinstance(items, list | tuple):
            cast = float if default and isinstance(default[0], float) else str
            try:
                return tuple(cast(str(v).strip()) for v in items if str(v).strip())
            except ValueError:
                pass
    elif isinstance(default, str):
        return str(value)
    raise ConfigError(
        f"setting {where} = {value!r} is not a valid {type(default).__name__}",
        hint="fix the value in your config file or MEMSERVER_* variable; "
        "configs/default.toml documents every setting",
    )


def _apply(settings: Settings, overrides: Mapping[str, Mapping[str, Any]], origin: str) -> Settings:
    changes: dict[str, Any] = {}
    for section, values in overrides.items():
        if section not in SECTIONS or not isinstance(values, Mapping):
            raise ConfigError(
                f"unknown config section [{section}] in {origin}",
                hint=f"known sections: {', '.join(SECTIONS)}",
            )
        current = getattr(settings, section)
        known = {f.name for f in dataclasses.fields(current)}
        fixed: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                raise ConfigError(
                    f"unknown setting [{section}] {key} in {origin}",
                    hint=f"known keys in [{section}]: {', '.join(sorted(known))}",
                )
            fixed[key] = _coerce(section, key, value, getattr(current, key))
        changes[section] = dataclasses.replace(current, **fixed)
    return dataclasses.replace(settings, **changes)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot parse {path}: {exc}", hint="fix the TOML syntax") from exc


def _env_overrides(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for name, value in env.items():
        if not name.startswith("MEMSERVER_"):
            continue
        rest = name[len("MEMSERVER_") :].lower()
        for section in SECTIONS:
            if rest.startswith(section + "_"):
                out.setdefault(section, {})[rest[len(section) + 1 :]] = value
                break
    return out


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memserver" / "config.toml"


def load_settings(
    root: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    user_config: Path | None = None,
) -> Settings:
    """Build Settings from every layer; `overrides` are the command-line flags."""
    env = os.environ if env is None else env
    settings = Settings()
    layers: list[tuple[Path, str]] = [(user_config or user_config_path(env), "user config")]
    if root is not None:
        layers.append((root / ".memserver.toml", "project config"))
    for path, origin in layers:
        if path.is_file():
            settings = _apply(settings, _read_toml(path), f"{origin} {path}")
    settings = _apply(settings, _env_overrides(env), "environment")
    if overrides:
        settings = _apply(settings, overrides, "command line")
    return settings


def settings_from_toml(path: Path) -> Settings:
    """Settings exactly as one TOML file states them (used to check default.toml)."""
    return _apply(Settings(), _read_toml(path), str(path))
