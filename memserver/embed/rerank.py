"""Cross-encoder reranking over fastembed's TextCrossEncoder (fastembed stays inside `embed/`).

`cross_encoder_available` answers from the file system alone, following the path fastembed 0.9
takes through its cache when offline, so start-up and `memserver status` can skip reranking when
the model is missing instead of downloading it, or failing, in the middle of a search.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memserver.core.errors import ModelUnavailable
from memserver.core.protocols import Reranker
from memserver.embed.models import ENV, default_cache_dir

DEFAULT_MODEL = "Xenova/ms-marco-MiniLM-L-6-v2"
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")  # fastembed cannot load without
_METADATA_FILE = "files_metadata.json"  # fastembed's record of the sizes it downloaded


def cache_root(cache_dir: str | None) -> Path:
    """The folder models are read from: `cache_dir`, else FASTEMBED_CACHE_PATH, else the
    per-user model cache (`memserver.embed.models`), as for the embedding model."""
    chosen = cache_dir or os.environ.get(ENV)
    return Path(chosen).expanduser() if chosen else default_cache_dir()


def _maybe_cached(model: str, cache_dir: str | None) -> bool:
    """A cheap first look: does any cache folder name mention the model at all?

    Every fastembed cross-encoder's Hugging Face repo contains the model's own name, so
    when no folder does, the model is surely absent, and fastembed (which imports ONNX
    Runtime, ~1.5 s) need not be imported to say so.
    """
    base = model.rsplit("/", 1)[-1].lower()
    try:
        return any(base in entry.lower() for entry in os.listdir(cache_root(cache_dir)))
    except OSError:
        return False


def _description(model: str) -> dict[str, Any] | None:
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    for desc in TextCrossEncoder.list_supported_models():
        if str(desc["model"]).lower() == model.lower():
            return desc
    return None


def _snapshots(root: Path, repo: str) -> Iterator[tuple[Path, Path]]:
    """(repo folder, snapshot folder) pairs in the order fastembed tries them offline.

    The exact `models--<org>--<name>` first, then the same id under another casing: fastembed 0.9
    canonicalised org names (e.g. qdrant -> Qdrant) and falls back to folders older versions wrote.
    """
    expected = "models--" + repo.replace("/", "--")
    try:
        folders = [e for e in root.iterdir() if e.name.lower() == expected.lower() and e.is_dir()]
    except OSError:
        return
    for folder in sorted(folders, key=lambda e: e.name != expected):
        try:  # huggingface_hub resolves revision "main" through this file, read verbatim
            revision = (folder / "refs" / "main").read_text()
        except OSError:
            continue
        if revision:
            yield folder, folder / "snapshots" / revision


def _sizes_match(folder: Path, weights: set[str]) -> bool:
    """False if fastembed's metadata says a weights file was cut short (it would not load it)."""
    try:
        meta = json.loads((folder / _METADATA_FILE).read_text())
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict):
        return False
    for rel, info in meta.items():
        path = folder / rel
        if "/".join(Path(rel).parts[2:]) not in weights or not path.is_file():
            continue  # parts[2:] strips "snapshots/<revision>/"
        if not isinstance(info, dict) or path.stat().st_size != info.get("size"):
            return False
    return True


def cross_encoder_available(model: str = DEFAULT_MODEL, cache_dir: str | None = None) -> bool:
    """Whether fastembed would find cross-encoder `model` in its cache without the network.

    Reads files only (no ONNX session, no download). False for a model fastembed does not know.
    """
    if not _maybe_cached(model, cache_dir):
        return False
    desc = _description(model)
    if desc is None or not desc["sources"].get("hf"):
        return False  # unknown, or only in the legacy GCS layout, which we do not read
    weights = {desc["model_file"], *desc.get("additional_files", [])}
    needed = [*weights, *_TOKENIZER_FILES]
    for folder, snapshot in _snapshots(cache_root(cache_dir), desc["sources"]["hf"]):
        if all((snapshot / name).is_file() for name in needed) and _sizes_match(folder, weights):
            return True
    return False


def _fetch_hint(model: str) -> str:
    return (
        f"run once with network access (HF_HUB_OFFLINE unset) so fastembed downloads {model} "
        "into FASTEMBED_CACHE_PATH (or [rerank] cache_dir), or turn reranking off: "
        "[rerank] enabled = false"
    )


class FastEmbedReranker:
    """`Reranker` over fastembed's TextCrossEncoder; the model loads on the first `score`."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        cache_dir: str | None = None,
        *,
        max_chars: int = 2000,
        batch_size: int = 16,
        threads: int | None = None,
    ) -> None:
        self.name = model
        self.cache_dir = cache_dir
        self.max_chars = max_chars
        self.batch_size = batch_size
        self.threads = threads
        self._model: Any = None
        self._failure: ModelUnavailable | None = None  # a failed load is not retried per query
        self._lock = threading.Lock()

    def load(self) -> Any:
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._model is None:
                try:
                    self._model = self._open()
                except ModelUnavailable as exc:
                    self._failure = exc
                    raise
            return self._model

    def _open(self) -> Any:
        try:
            from loguru import logger

            logger.disable("fastembed")  # its cache-miss lines are noise; our error says it all
        except ImportError:  # pragma: no cover - fastembed depends on loguru today
            pass
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        root = cache_root(self.cache_dir)
        try:
            return TextCrossEncoder(self.name, cache_dir=str(root), threads=self.threads)
        except Exception as exc:
            raise ModelUnavailable(
                f"cannot load cross-encoder {self.name!r} from {root}: "
                f"{type(exc).__name__}: {str(exc)[:300]}",
                hint=_fetch_hint(self.name),
            ) from exc

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """Relevance of each passage to `query`, in input order (higher is more relevant)."""
        if not passages:
            return []
        model = self.load()
        clipped = [p[: self.max_chars] for p in passages]
        try:
            scores = model.rerank(query[: self.max_chars], clipped, batch_size=self.batch_size)
            return [float(s) for s in scores]
        except Exception as exc:
            raise ModelUnavailable(
                f"cross-encoder {self.name!r} failed on {len(passages)} passages: "
                f"{type(exc).__name__}: {str(exc)[:300]}",
                hint="check the cached model files, or turn reranking off: "
                "[rerank] enabled = false",
            ) from exc


def _unavailable(model: str, cache_dir: str | None) -> str:
    where = cache_root(cache_dir)
    return f"unavailable: {model} is not in the model cache ({where}); reranking is skipped"


def make_reranker(
    model: str,
    cache_dir: str | None,
    enabled: bool,
    *,
    max_chars: int = 2000,
    batch_size: int = 16,
    threads: int | None = None,
) -> tuple[Reranker | None, str]:
    """The reranker to use (None to skip reranking) and a one-line status for `memserver status`."""
    if not enabled:
        return None, "off (disabled in config)"
    if not _maybe_cached(model, cache_dir):
        return None, _unavailable(model, cache_dir)
    if _description(model) is None:
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        known = ", ".join(d["model"] for d in TextCrossEncoder.list_supported_models())
        raise ModelUnavailable(
            f"unknown cross-encoder model {model!r}",
            hint=f"set [rerank] model to one of: {known}; or [rerank] enabled = false",
        )
    if not cross_encoder_available(model, cache_dir):
        return None, _unavailable(model, cache_dir)
    reranker = FastEmbedReranker(
        model, cache_dir, max_chars=max_chars, batch_size=batch_size, threads=threads
    )
    return reranker, model
