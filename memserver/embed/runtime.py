"""The int8 copy run on ONNX Runtime and tokenizers directly, without fastembed.

A process that embeds only with the copy (`embed.quantize`; the default model) never
imports fastembed: its hub client, image pipeline and logging libraries are 20 MB of a
server's resident set and nothing a query needs. The steps are fastembed's for a
mean-pooled, L2-normalised text model (`PooledNormalizedEmbedding`), one for one, so a
vector is bit-identical to the one fastembed computes over the same copy (a model test
holds the two side by side):

- the tokenizer from the folder's tokenizer.json, truncated at the stricter of
  tokenizer_config.json's `model_max_length` / `max_length`, the special tokens of
  special_tokens_map.json added, padded to the longest text of a batch;
- a CPU session at `ORT_ENABLE_ALL`; `threads` sets the intra- and inter-op pools;
- `input_ids`, `attention_mask` and zero `token_type_ids` (each when the graph asks);
  the word-embedding table's rows read as texts need them (`embed.wordtable`), where the
  folder says where the table is;
- the first output, averaged over the real tokens in float64, L2-normalised, float32.

Everything else fastembed does (downloads, other models, the fp32 model) stays in
`embed.fastembed`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from memserver.embed.wordtable import WordTable

MODEL_FILE = "model.onnx"


def _context(tokenizer_config: dict[str, Any]) -> int:
    """The truncation limit: the stricter of the two config keys that hold a real one."""
    found = [
        v for v in (tokenizer_config.get("model_max_length"), tokenizer_config.get("max_length"))
        if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= sys.maxsize
    ]  # fmt: skip
    if not found:
        raise ValueError("tokenizer_config.json names no maximum length")
    return min(found)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def load_tokenizer(folder: Path) -> Any:
    """The folder's tokenizer, set up as fastembed sets it (`load_tokenizer` there)."""
    from tokenizers import AddedToken, Tokenizer

    config = _read_json(folder / "config.json")
    tokenizer_config = _read_json(folder / "tokenizer_config.json")
    if not tokenizer_config:
        raise ValueError(f"no tokenizer_config.json in {folder}")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(
        max_length=_context(tokenizer_config),
        direction=tokenizer_config.get("truncation_side") or truncation.get("direction", "right"),
    )
    for value in _read_json(folder / "special_tokens_map.json").values():
        for token in value if isinstance(value, list) else [value]:
            if isinstance(token, str):
                tokenizer.add_special_tokens([token])
            elif isinstance(token, dict):
                tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or tokenizer_config.get("pad_token")
    if pad_token is None:
        raise ValueError(f"no pad token for {folder}")
    pad_id = padding.get("pad_id", config.get("pad_token_id"))
    if pad_id is None:
        pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        raise ValueError(f"no id for the pad token {pad_token!r} in {folder}")
    tokenizer.enable_padding(
        direction=tokenizer_config.get("padding_side") or padding.get("direction", "right"),
        pad_id=pad_id,
        pad_type_id=padding.get("pad_type_id", 0),
        pad_token=pad_token,
        pad_to_multiple_of=padding.get("pad_to_multiple_of"),
        length=None,
    )
    return tokenizer


class PooledModel:
    """A mean-pooled, normalised text model in `folder` (model.onnx beside its tokenizer),
    with fastembed's `passage_embed` / `query_embed` interface."""

    def __init__(self, folder: str | Path, threads: int | None = None) -> None:
        import onnxruntime as ort

        self.folder = Path(folder)
        self.tokenizer = load_tokenizer(self.folder)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = threads
        self.words = WordTable.of(self.folder)  # its rows read as texts need them
        if self.words is not None:
            options.add_initializer(self.words.name, self.words.value)
        self.session = ort.InferenceSession(
            str(self.folder / MODEL_FILE), sess_options=options,
            providers=["CPUExecutionProvider"],
        )  # fmt: skip
        self._inputs = {i.name for i in self.session.get_inputs()}

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """One batch, padded to its longest text: a float32 row per text."""
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        if self.words is not None:
            ids = self.words.need(ids)
        feed: dict[str, np.ndarray] = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        summed = np.sum(hidden, axis=1, where=mask[:, :, np.newaxis].astype(bool),
                        dtype=np.float64)  # fmt: skip
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norm = np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        out: np.ndarray = (pooled / norm).astype(hidden.dtype, copy=False)
        return out

    def passage_embed(self, texts: Iterable[str], batch_size: int = 256) -> Iterator[np.ndarray]:
        batch: list[str] = []
        for text in texts:
            batch.append(text)
            if len(batch) == batch_size:
                yield from self.embed_batch(batch)
                batch = []
        if batch:
            yield from self.embed_batch(batch)

    def query_embed(self, query: str | Iterable[str]) -> Iterator[np.ndarray]:
        yield from self.passage_embed([query] if isinstance(query, str) else query)


__all__ = ["MODEL_FILE", "PooledModel", "load_tokenizer"]
