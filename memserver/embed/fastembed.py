"""fastembed adapter (the sole fastembed importer).

The model is loaded on first use, so commands that embed nothing never pay
for it. Documents are sorted by length before batching so a batch holds texts
of similar length and little compute goes to padding.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from memserver.config import EmbeddingSettings
from memserver.core.errors import ModelUnavailable
from memserver.embed import QUERY_CHARS, quantize
from memserver.embed.models import HUB_HOST, cache_dir, fix_hint, reachable

logger = logging.getLogger(__name__)

# a model that failed to load, per (model, cache, may download): every embedder of the
# process gives up at once for RETRY_SECONDS (a long-lived server then looks again: the
# cache is read in milliseconds), and a load that succeeds clears it
RETRY_SECONDS = 300.0
_FAILED: dict[tuple[str, str, bool], tuple[float, ModelUnavailable]] = {}
_FAILED_LOCK = threading.Lock()

_KNOWN_DIMS = {
    "sentence-transformers/all-minilm-l6-v2": 384,
    "baai/bge-small-en-v1.5": 384,
    "baai/bge-base-en-v1.5": 768,
    "jinaai/jina-embeddings-v2-small-en": 512,
    "nomic-ai/nomic-embed-text-v1.5": 768,
}


_MAX_TOKENS = 256  # what the default model reads; longer texts are truncated by it
# a chunk's name line and header, read before its first max_chars of code (text.passages)
LABEL_CHARS = 256


def known_dim(model: str) -> int:
    """The model's dimension, from a table or fastembed's registry (no download)."""
    dim = _KNOWN_DIMS.get(model.lower())
    if dim:
        return dim
    if quantize.variant_of(model) is not None:  # an int8 copy of the default model
        return quantize.DIM
    from fastembed import TextEmbedding

    for desc in TextEmbedding.list_supported_models():
        if str(desc.get("model", "")).lower() == model.lower():
            return int(desc["dim"])
    raise ModelUnavailable(
        f"unknown embedding model {model!r}",
        hint="set [embedding] model to a fastembed model name "
        "(e.g. sentence-transformers/all-MiniLM-L6-v2), 'hashing' or 'none'",
    )


def _quiet() -> None:
    """fastembed logs through loguru to stderr (and its INFO lines would reach stdout users);
    a missing model is reported by us, once, with the fix."""
    try:
        from loguru import logger

        logger.disable("fastembed")
    except ImportError:  # pragma: no cover - fastembed depends on loguru today
        pass


class FastEmbedder:
    """`Embedder` over fastembed's TextEmbedding (ONNX Runtime on the CPU)."""

    def __init__(self, settings: EmbeddingSettings, *, download: bool = False) -> None:
        """`download`: fetch the model from the hub when the cache lacks it (indexing and
        `memserver model fetch`); otherwise only the cache is read (the recall path)."""
        self.settings = settings
        self.name = settings.model
        self.dim = known_dim(settings.model)
        self.download = download
        self.cache = cache_dir(settings)
        self._model: Any = None
        self._lock = threading.Lock()
        self._spare: queue.SimpleQueue[Any] | None = None  # sessions beyond the first
        self.sessions = max(1, min(settings.sessions, os.cpu_count() or 1))

    def load(self) -> Any:
        """The model, loaded once; a failure is remembered for the whole process (see
        RETRY_SECONDS), so nothing waits on a missing model twice."""
        with self._lock:
            if self._model is None:
                key = (self.name, str(self.cache), self.download)
                with _FAILED_LOCK:
                    failed = _FAILED.get(key)
                if failed is not None and time.monotonic() - failed[0] < RETRY_SECONDS:
                    raise failed[1]
                try:
                    self._model = self._load()
                except ModelUnavailable as exc:
                    with _FAILED_LOCK:
                        _FAILED[key] = (time.monotonic(), exc)
                    raise
                with _FAILED_LOCK:
                    _FAILED.pop(key, None)
            return self._model

    def cached(self) -> bool:
        """Whether the model's files are in the cache (checked without loading the model)."""
        variant = quantize.variant_of(self.name)
        if variant is not None and quantize.find(variant) is not None:
            return True
        _quiet()
        from fastembed import TextEmbedding

        name = quantize.BASE_MODEL if variant is not None else self.name  # made from it
        try:
            TextEmbedding(name, cache_dir=str(self.cache), local_files_only=True,
                          lazy_load=True)  # fmt: skip
        except Exception:
            return False
        return True

    def location(self) -> str:
        """Where the model is, in words: its cache; for an int8 copy, the copy's folder (or
        where it will be made) and the fp32 model's cache it is made from."""
        variant = quantize.variant_of(self.name)
        if variant is None:
            return str(self.cache)
        built = quantize.find(variant)
        where = str(built.snapshot) if built is not None else (
            f"{quantize.user_cache()} (made on first use)"
        )  # fmt: skip
        return f"{where}, from {quantize.BASE_MODEL} in {self.cache}"

    def _load(self) -> Any:
        kwargs: dict[str, Any] = {"cache_dir": str(self.cache)}
        if self.settings.threads:
            kwargs["threads"] = self.settings.threads
        elif self.sessions > 1:  # sessions side by side: one thread each
            kwargs["threads"] = 1
        model, hint = self.settings.model, fix_hint(self.settings.model, self.cache)
        variant = quantize.variant_of(model)
        if variant is not None:
            return self._load_int8(variant, kwargs)
        _quiet()
        from fastembed import TextEmbedding

        try:  # the cache alone: milliseconds when the model is there, no network ever
            return TextEmbedding(model, local_files_only=True, **kwargs)
        except Exception as exc:
            missing = exc
        if not self.download:
            raise ModelUnavailable(
                f"embedding model {model!r} is not in the model cache {self.cache}", hint=hint
            ) from missing
        offline = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES"}
        if offline or not reachable():
            why = "HF_HUB_OFFLINE is set" if offline else f"{HUB_HOST} cannot be reached"
            raise ModelUnavailable(
                f"embedding model {model!r} is not in the model cache {self.cache}, and {why}",
                hint=hint,
            ) from missing
        try:
            Path(self.cache).mkdir(parents=True, exist_ok=True)
            return TextEmbedding(model, **kwargs)
        except Exception as exc:
            raise ModelUnavailable(
                f"cannot download embedding model {model!r} to {self.cache}: "
                f"{type(exc).__name__}: {str(exc)[:300]}",
                hint=hint,
            ) from exc

    def _load_int8(self, variant: quantize.Variant, kwargs: dict[str, Any]) -> Any:
        """An int8 copy of the fp32 model (`embed.quantize`): made from the cached fp32
        model once, into the per-user model cache, then run from there by `embed.runtime`
        (fastembed's steps without importing fastembed)."""
        from memserver.embed.runtime import PooledModel

        model = variant.model_name
        if self.download and quantize.find(variant) is None:
            base = dataclasses.replace(self.settings, model=quantize.BASE_MODEL, sessions=1)
            FastEmbedder(base, download=True).load()  # the fp32 model, fetched if missing
        try:
            built = quantize.resolve(model, source_cache=self.cache)
        except OSError as exc:
            raise ModelUnavailable(
                f"cannot make {model} in {quantize.user_cache()}: {exc.strerror or exc}",
                hint=f"free space or fix the permissions there, or point {quantize.ENV_CACHE} "
                "at a writable folder",
            ) from exc
        except ModelUnavailable as exc:
            raise ModelUnavailable(
                f"cannot make {model}: {exc.message}",
                hint=f"its fp32 model ({quantize.BASE_MODEL}) must be in the model cache "
                f"first: {fix_hint(quantize.BASE_MODEL, self.cache)}",
            ) from exc
        assert built is not None  # a quantized name
        try:
            return PooledModel(built.snapshot, threads=kwargs.get("threads"))
        except Exception as exc:
            raise ModelUnavailable(
                f"cannot load {model} from {built.snapshot}: {type(exc).__name__}: "
                f"{str(exc)[:300]}",
                hint=f"delete {built.snapshot.parent.parent} to have it made again",
            ) from exc

    def _clip(self, text: str) -> str:
        return text[: self.settings.max_chars + LABEL_CHARS]

    def embed_documents(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> list[list[float]]:
        """Texts in groups of similar length (`_groups`), run on the free sessions side by
        side; `progress` hears of each group as it is done."""
        if not texts:
            return []
        model = self.load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        groups = self._groups(order, texts)

        def run(session: Any, group: list[int]) -> None:
            vectors = session.passage_embed(
                [self._clip(texts[i]) for i in group], batch_size=len(group)
            )
            for i, vec in zip(group, vectors, strict=True):
                out[i] = vec.tolist()

        told = progress or (lambda _n: None)
        sessions = self._sessions(model, len(groups))
        if sessions is None:
            for group in groups:
                run(model, group)
                told(len(group))
            return out

        def lend(group: list[int]) -> None:  # a free session for this group, then back
            session = sessions.get()
            try:
                run(session, group)
            finally:
                sessions.put(session)

        with ThreadPoolExecutor(self.sessions, thread_name_prefix="embed") as pool:
            running = {pool.submit(lend, g): len(g) for g in groups}
            for done in as_completed(running):
                done.result()
                told(running[done])
        return out

    def _sessions(self, model: Any, groups: int) -> queue.SimpleQueue[Any] | None:
        """The model's sessions to run groups side by side (ONNX Runtime releases the GIL),
        loaded on first use; None with one session or one group."""
        if self.sessions < 2 or groups < 2:
            return None
        with self._lock:
            if self._spare is None:
                spare: queue.SimpleQueue[Any] = queue.SimpleQueue()
                spare.put(model)
                for _ in range(self.sessions - 1):
                    try:  # the first session works: a spare that cannot load is done without
                        spare.put(self._load())
                    except ModelUnavailable as exc:
                        logger.warning("embedding with one model session: %s", exc.message)
                        self.sessions = 1
                        return None
                self._spare = spare
            return self._spare

    def _groups(self, order: list[int], texts: Sequence[str]) -> list[list[int]]:
        """Batches of similar length holding about `batch_tokens` padded tokens each.

        Attention cost grows with the square of the padded length, so long texts go
        in small batches and short ones a few to a batch (measured on 2 cores: see
        `batch_tokens` in configs/default.toml).

        An int8 copy embeds one text per call instead: its dynamic quantization scales
        the activations over the whole batch, so a text's vector would depend on the
        texts beside it (cosine 0.993 to its vector alone, about the copy's distance from
        the fp32 model); alone, a text gets the same vector wherever it is embedded, as
        a query does. It cost nothing measurable: 1,200 click texts took 38.7 and 36.2 s
        in batches, 39.7 and 34.4 s one by one (2 cores, a busy machine).
        """
        if quantize.variant_of(self.name) is not None:
            return [[i] for i in order]  # one text per call (see above)
        budget = self.settings.batch_tokens
        groups: list[list[int]] = []
        current: list[int] = []
        for i in order:
            est = min(_MAX_TOKENS, len(self._clip(texts[i])) // 3 + 2)
            if current and (len(current) + 1) * est > budget:
                groups.append(current)
                current = []
            current.append(i)
        if current:
            groups.append(current)
        return groups

    def embed_query(self, text: str) -> list[float]:
        model = self.load()
        vector: list[float] = next(iter(model.query_embed(text[:QUERY_CHARS]))).tolist()
        return vector
