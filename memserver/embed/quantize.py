"""int8 copies of the embedding model, made locally with onnxruntime's quantization tools.

The copy is built from the cached fp32 model (never downloaded, never written
into that cache) into a per-user cache in the huggingface-hub layout fastembed
reads::

    <user cache>/models--memserver--all-MiniLM-L6-v2-onnx-int8-<variant>-v<N>/
      refs/main                       the revision: sha1 of model.onnx and its weights
      snapshots/<revision>/model.onnx (+ tokenizer and config files, copied)
      snapshots/<revision>/model.onnx.data     the weights (`WEIGHTS`)
      snapshots/<revision>/quantization.json   the recipe and the source digest
      snapshots/<revision>/word_table.json     where the word table sits in the weights
                                               (`embed.wordtable` reads it row by row)

The weights sit in a file of their own (ONNX external data) because onnxruntime maps such
a file instead of copying its tensors into the heap: a session over the int8 copy holds
39 MB resident after a run instead of 96 (the 47 MB word table is only read where a text's
tokens are), and every session and process on the machine shares the same pages.

It has a model name of its own (`memserver/all-MiniLM-L6-v2-int8-<variant>`), so an index
records which model built it and never mixes int8 with fp32 vectors. `embed.runtime` runs
it (mean pooling, L2 normalisation, 384-d: fastembed's steps, without fastembed); `load`
gives fastembed's `TextEmbedding` over the same files, registered with
`TextEmbedding.add_custom_model`, for comparisons.

Selecting it: set the embedding model to a quantized name, e.g.
`[embedding] model = "memserver/all-MiniLM-L6-v2-int8-<variant>"` (or
`MEMSERVER_EMBEDDING_MODEL`). The fastembed adapter then calls
`resolve(settings.model, its model cache)`: for a quantized name the copy is built on
first use from the cached fp32 model (dynamic variants need no data; `build` the static
one explicitly, with calibration texts) and loaded from where `resolve` says; any other
name gives None. `MEMSERVER_MODEL_CACHE` overrides the user cache (default: the
platform cache dir + `memserver/models`, e.g. `~/.cache/memserver/models`).

This module is the sole importer of `onnx` and `onnxruntime.quantization`; it
imports fastembed only in `register` / `load`, lazily.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from memserver.config import FP32_MODEL
from memserver.core.errors import ModelUnavailable
from memserver.embed.wordtable import WORD_TABLE_FILE

BASE_MODEL = FP32_MODEL  # the fp32 model every copy is made from
BASE_REPOS = ("models--Qdrant--all-MiniLM-L6-v2-onnx", "models--qdrant--all-MiniLM-L6-v2-onnx")
NAME_PREFIX = "memserver/all-MiniLM-L6-v2-int8-"
RECIPE_VERSION = 2  # bump when a recipe's output changes: the folder name carries it
# 2: the weights in `WEIGHTS` beside model.onnx (1 held them inside it)
DIM = 384
MAX_TOKENS = 256
COPIED = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
ENV_CACHE = "MEMSERVER_MODEL_CACHE"
WEIGHTS = "model.onnx.data"  # the copy's tensors, as ONNX external data

Exclude = Literal[
    "", "embeddings", "last-layer", "first-last-layers", "ffn-output", "ffn-output-early"
]


@dataclass(frozen=True, slots=True)
class Variant:
    """One quantization recipe."""

    name: str
    method: Literal["dynamic", "static", "none"]  # none: an fp32 copy (a control)
    per_channel: bool = False
    reduce_range: bool = False
    op_types: tuple[str, ...] = ()  # () = onnxruntime's default op types for the method
    exclude: Exclude = ""  # nodes kept in fp32, chosen by role in the BERT graph
    calibration_texts: int = 0  # static only: how many texts calibrate the activations
    calibrate: Literal["minmax", "percentile", "entropy"] = "minmax"  # static only
    # the word-embedding table (30,522 x 384: 47 MB of fp32, two thirds of an int8 copy's
    # file and a third of its session's memory): "int8-rows" stores it as int8 with one
    # scale per row, dequantized after the lookup (only the looked-up rows, per call)
    word_table: Literal["fp32", "int8-rows"] = "fp32"
    note: str = ""

    @property
    def model_name(self) -> str:
        return NAME_PREFIX + self.name

    @property
    def hf_repo(self) -> str:  # never on the hub: fastembed only resolves it in the cache
        return f"memserver/all-MiniLM-L6-v2-onnx-int8-{self.name}-v{RECIPE_VERSION}"

    @property
    def repo_folder(self) -> str:
        return "models--" + self.hf_repo.replace("/", "--")


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("fp32-copy", "none", note="control: the fp32 graph through the same path"),
        Variant("dyn", "dynamic", note="quantize_dynamic defaults (MatMul, Gather, ...)"),
        Variant("dyn-pc", "dynamic", per_channel=True),
        Variant("dyn-rr", "dynamic", reduce_range=True),
        Variant("dyn-matmul", "dynamic", op_types=("MatMul",)),
        Variant("dyn-matmul-pc", "dynamic", per_channel=True, op_types=("MatMul",)),
        Variant(
            "dyn-matmul-pc-no-ends",
            "dynamic",
            per_channel=True,
            op_types=("MatMul",),
            exclude="first-last-layers",
        ),
        Variant(
            "dyn-matmul-pc-no-last",
            "dynamic",
            per_channel=True,
            op_types=("MatMul",),
            exclude="last-layer",
        ),
        Variant(
            "dyn-matmul-pc-no-ffn-out",
            "dynamic",
            per_channel=True,
            op_types=("MatMul",),
            exclude="ffn-output",
        ),
        Variant(
            "dyn-matmul-pc-no-ffn-out-early",
            "dynamic",
            per_channel=True,
            op_types=("MatMul",),
            exclude="ffn-output-early",
        ),
        Variant(
            "dyn-matmul-pc-no-ffn-out-rows8",
            "dynamic",
            per_channel=True,
            op_types=("MatMul",),
            exclude="ffn-output",
            word_table="int8-rows",
            note="dyn-matmul-pc-no-ffn-out with an int8 word-embedding table",
        ),
        Variant("dyn-pc-no-ffn-out", "dynamic", per_channel=True, exclude="ffn-output"),
        Variant("dyn-pc-no-emb", "dynamic", per_channel=True, exclude="embeddings"),
        Variant(
            "qdq-static", "static", per_channel=True, op_types=("MatMul",), calibration_texts=200
        ),
        Variant(
            "qdq-static-pct",
            "static",
            per_channel=True,
            op_types=("MatMul",),
            calibration_texts=200,
            calibrate="percentile",
        ),
        Variant(
            "qdq-static-no-ffn-out",
            "static",
            per_channel=True,
            op_types=("MatMul",),
            exclude="ffn-output",
            calibration_texts=200,
        ),
    )
}


@dataclass(frozen=True, slots=True)
class Quantized:
    """Where a built copy is and how fastembed names it."""

    model_name: str
    cache_dir: Path  # pass as TextEmbedding(cache_dir=...)
    snapshot: Path
    recipe: dict[str, Any] = field(default_factory=dict)

    @property
    def model_file(self) -> Path:
        return self.snapshot / "model.onnx"


# -- where things are ---------------------------------------------------------------------


def user_cache(env: dict[str, str] | None = None) -> Path:
    """The per-user model cache: $MEMSERVER_MODEL_CACHE, else the platform's cache dir."""
    env = dict(os.environ) if env is None else env
    if env.get(ENV_CACHE):
        return Path(env[ENV_CACHE]).expanduser()
    if sys.platform == "win32":
        base = Path(env.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memserver" / "models"


def variant_of(model_name: str) -> Variant | None:
    """The variant a model name selects; None for a model that is not one of ours."""
    if not model_name.lower().startswith(NAME_PREFIX.lower()):
        return None
    name = model_name[len(NAME_PREFIX) :]
    found = VARIANTS.get(name)
    if found is None:
        raise ModelUnavailable(
            f"unknown quantized model {model_name!r}",
            hint=f"use one of: {', '.join(v.model_name for v in VARIANTS.values())}",
        )
    return found


def base_snapshot(caches: Iterable[Path | str]) -> Path:
    """The fp32 model's snapshot folder in the first cache that holds it."""
    tried = []
    for cache in caches:
        for repo in BASE_REPOS:
            folder = Path(cache) / repo
            tried.append(str(folder))
            ref = folder / "refs" / "main"
            if not ref.is_file():
                continue
            snap = folder / "snapshots" / ref.read_text().strip()
            if (snap / "model.onnx").is_file() and all((snap / f).is_file() for f in COPIED):
                return snap
    raise ModelUnavailable(
        f"no cached fp32 {BASE_MODEL} to quantize (looked in {', '.join(tried) or 'nothing'})",
        hint="point FASTEMBED_CACHE_PATH at a fastembed cache that holds the model "
        "(load it once with the fp32 model name), then try again",
    )


def find(variant: Variant, cache: Path | None = None) -> Quantized | None:
    """A copy already built in the user cache (complete: its ref and model exist)."""
    cache = cache or user_cache()
    folder = cache / variant.repo_folder
    ref = folder / "refs" / "main"
    if not ref.is_file():
        return None
    snap = folder / "snapshots" / ref.read_text().strip()
    recipe_file = snap / "quantization.json"
    if not all((snap / f).is_file() for f in ("model.onnx", WEIGHTS, "quantization.json")):
        return None
    return Quantized(variant.model_name, cache, snap, json.loads(recipe_file.read_text()))


# -- building -----------------------------------------------------------------------------


def excluded_nodes(model: Any, exclude: Exclude) -> list[str]:
    """Names of the nodes a recipe keeps in fp32, by their role in the exported BERT graph."""
    if not exclude:
        return []
    names = [n.name for n in model.graph.node]
    layers = sorted({_layer(n) for n in names if "/layer." in n})
    last = f"/layer.{layers[-1]}/" if layers else "\0"
    first = f"/layer.{layers[0]}/" if layers else "\0"
    rules = {
        "embeddings": lambda n: "/embeddings/" in n,
        "last-layer": lambda n: last in n,
        "first-last-layers": lambda n: last in n or first in n,
        # the FFN's second dense layer: BERT's widest activation outliers sit at its input
        "ffn-output": lambda n: _ffn_output(n),
        "ffn-output-early": lambda n: _ffn_output(n) and _layer(n) in layers[:3],
    }
    return [n for n in names if rules[exclude](n)]


def _ffn_output(node: str) -> bool:
    return "/output/dense/" in node and "/attention/" not in node


def _layer(node: str) -> int:
    return int(node.split("layer.")[1].split("/")[0]) if "/layer." in node else -1


class _Calibration:
    """onnxruntime's CalibrationDataReader over texts tokenized like fastembed does."""

    def __init__(self, tokenizer_json: Path, texts: Sequence[str], fixed: bool) -> None:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(tokenizer_json))
        tok.enable_truncation(MAX_TOKENS)
        if fixed:  # histogram calibrators stack every input: one shape for all
            tok.enable_padding(length=MAX_TOKENS)
        else:
            tok.no_padding()
        self._items: Iterator[dict[str, Any]] = iter(self._inputs(tok, texts))

    @staticmethod
    def _inputs(tok: Any, texts: Sequence[str]) -> list[dict[str, Any]]:
        import numpy as np

        out = []
        for enc in tok.encode_batch(list(texts)):
            ids = np.array([enc.ids], dtype=np.int64)
            mask = np.array([enc.attention_mask], dtype=np.int64)
            out.append({"input_ids": ids, "attention_mask": mask,
                        "token_type_ids": np.zeros_like(ids)})  # fmt: skip
        return out

    def get_next(self) -> dict[str, Any] | None:
        return next(self._items, None)


def _quantize(variant: Variant, src: Path, dst: Path, texts: Sequence[str], work: Path) -> None:
    import onnx
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    if variant.method == "none":
        shutil.copyfile(src / "model.onnx", dst)
        return
    prepared = work / "prepared.onnx"
    quant_pre_process(
        str(src / "model.onnx"), str(prepared), skip_symbolic_shape=True
    )  # needs sympy; ONNX shape inference suffices here
    exclude = excluded_nodes(onnx.load(str(prepared), load_external_data=False), variant.exclude)
    common: dict[str, Any] = {
        "per_channel": variant.per_channel,
        "reduce_range": variant.reduce_range,
        "weight_type": QuantType.QInt8,
        "op_types_to_quantize": list(variant.op_types) or None,
        "nodes_to_exclude": exclude or None,
    }
    if variant.method == "dynamic":
        quantize_dynamic(str(prepared), str(dst), **common)
        if variant.word_table == "int8-rows":
            _int8_word_table(dst)
        return
    if len(texts) < variant.calibration_texts:
        raise ModelUnavailable(
            f"{variant.model_name} needs {variant.calibration_texts} calibration texts, "
            f"got {len(texts)}",
            hint="build it with quantize.build(..., calibration=<code chunk texts>)",
        )
    import contextlib

    reader = _Calibration(src / "tokenizer.json", texts[: variant.calibration_texts],
                          fixed=variant.calibrate != "minmax")  # fmt: skip
    method = {"minmax": CalibrationMethod.MinMax, "percentile": CalibrationMethod.Percentile,
              "entropy": CalibrationMethod.Entropy}[variant.calibrate]  # fmt: skip
    # uint8 asymmetric activations (GELU and softmax outputs are one-sided); only MatMuls
    # with a constant weight, as in the dynamic recipes (scores × values stay fp32)
    with contextlib.redirect_stdout(sys.stderr):  # its calibrators print: stdout is for data
        quantize_static(str(prepared), str(dst), reader, quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, calibrate_method=method,
                        extra_options={"MatMulConstBOnly": True}, **common)  # fmt: skip


WORD_TABLE = "embeddings.word_embeddings.weight"  # the initializer's name ends so


def _int8_word_table(model_file: Path) -> None:
    """Store the word-embedding table as int8 rows with one fp32 scale per row (symmetric,
    the row's largest magnitude at 127): the lookup gathers the int8 rows and their scales
    and multiplies them back. No Gather of a quantized table is left for onnxruntime to
    fold into fp32 again at load time, since the ids are an input."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(model_file))
    graph = model.graph
    table = next(i for i in graph.initializer if i.name.endswith(WORD_TABLE))
    lookup = next(n for n in graph.node if n.op_type == "Gather" and n.input[0] == table.name)
    weights = numpy_helper.to_array(table).astype(np.float32)
    scale = np.abs(weights).max(axis=1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    rows = np.clip(np.rint(weights / scale), -127, 127).astype(np.int8)
    ids, out, base = lookup.input[1], lookup.output[0], table.name
    nodes = [
        helper.make_node("Gather", [f"{base}.int8", ids], [f"{out}.int8"], name=f"{out}.rows"),
        helper.make_node("Gather", [f"{base}.scale", ids], [f"{out}.scale"], name=f"{out}.scales"),
        helper.make_node(
            "Cast", [f"{out}.int8"], [f"{out}.fp32"], to=TensorProto.FLOAT, name=f"{out}.cast"
        ),
        helper.make_node("Mul", [f"{out}.fp32", f"{out}.scale"], [out], name=f"{out}.dequantize"),
    ]
    at = list(graph.node).index(lookup)
    graph.node.remove(lookup)
    for offset, node in enumerate(nodes):
        graph.node.insert(at + offset, node)
    graph.initializer.remove(table)
    graph.initializer.extend(
        [
            numpy_helper.from_array(rows, f"{base}.int8"),
            numpy_helper.from_array(scale.astype(np.float32), f"{base}.scale"),
        ]
    )
    onnx.checker.check_model(model)
    onnx.save(model, str(model_file))


def _weights_apart(model_file: Path) -> None:
    """Move the model's tensors into `WEIGHTS` beside it (one file, every tensor over 1 KiB),
    which onnxruntime maps rather than reads into the heap (see the module's docstring)."""
    import onnx

    model = onnx.load(str(model_file))
    onnx.save_model(
        model, str(model_file), save_as_external_data=True, all_tensors_to_one_file=True,
        location=WEIGHTS, size_threshold=1024,
    )  # fmt: skip


def word_table_place(model_file: Path) -> dict[str, Any] | None:
    """Where the fp32 word-embedding table sits in the weights file (`embed.wordtable`
    reads it from there row by row), or None when the graph does not hold one that a
    Gather of `input_ids` alone reads."""
    import onnx

    graph = onnx.load(str(model_file), load_external_data=False).graph
    inputs = {i.name for i in graph.input}
    for table in graph.initializer:
        if not table.name.endswith(WORD_TABLE) or table.data_type != onnx.TensorProto.FLOAT:
            continue
        users = [n for n in graph.node if table.name in n.input]
        place = {e.key: e.value for e in table.external_data}
        if (
            len(table.dims) != 2
            or table.data_location != onnx.TensorProto.EXTERNAL
            or place.get("location") != WEIGHTS
            or len(users) != 1
            or users[0].op_type != "Gather"
            or list(users[0].input) != [table.name, "input_ids"]
            or "input_ids" not in inputs
        ):
            return None
        # the ids' values are read by that Gather alone (a Shape reads only their shape, and
        # no subgraph can read them unseen): the table's rows may then sit in any order,
        # the ids translated to match
        readers = [n for n in graph.node if "input_ids" in n.input]
        nested = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        slots = all(n is users[0] or n.op_type == "Shape" for n in readers) and not any(
            a.type in nested for n in graph.node for a in n.attribute
        )
        return {
            "name": table.name, "location": WEIGHTS, "offset": int(place.get("offset", 0)),
            "length": int(place["length"]), "rows": int(table.dims[0]), "dim": int(table.dims[1]),
            "slots": slots,
        }  # fmt: skip
    return None


def _write_word_table(snap: Path) -> None:
    """`WORD_TABLE_FILE` beside the model: where its table is, or `null` when its graph has
    none to read lazily (an int8 table), so that no later process looks again (and imports
    onnx to do it). The file appears whole (written aside, then renamed). If writing
    fails, the copy still loads: its sessions map the table from the weights file."""
    try:
        place = word_table_place(snap / "model.onnx")
        aside = snap / f".{WORD_TABLE_FILE}.{os.getpid()}"
        aside.write_text(json.dumps(place, indent=1) + "\n", encoding="utf-8")
        os.replace(aside, snap / WORD_TABLE_FILE)
    except Exception:  # no onnx, a read-only cache: only the lazy table is lost
        return


def _digest(*paths: Path, algo: str) -> str:
    h = hashlib.new(algo)
    for path in paths:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def build(
    variant: Variant | str,
    source_caches: Iterable[Path | str],
    cache: Path | None = None,
    calibration: Sequence[str] = (),
) -> Quantized:
    """Build `variant` from the cached fp32 model into `cache` (default: the user cache), or
    return the copy already there. The folder appears whole or not at all (built aside,
    then renamed), so a crash or a concurrent build never leaves half a model behind."""
    variant = VARIANTS[variant] if isinstance(variant, str) else variant
    cache = cache or user_cache()
    done = find(variant, cache)
    if done is not None:
        return done
    src = base_snapshot(source_caches)
    if find(variant, cache) is None:  # (not made by another process meanwhile)
        _set_aside_broken(cache / variant.repo_folder)
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=cache))
    try:
        model = staging / "model.onnx"
        try:
            _quantize(variant, src, model, calibration, staging)
            _weights_apart(model)
        except ModelUnavailable:
            raise
        except ImportError as exc:
            raise ModelUnavailable(
                f"building {variant.model_name} needs the onnx package ({exc})",
                hint="pip install 'memserver[quantize]', or use the fp32 model",
            ) from exc
        except Exception as exc:  # onnx / onnxruntime errors: wrap at the adapter
            raise ModelUnavailable(
                f"could not build {variant.model_name}: {type(exc).__name__}: {str(exc)[:300]}",
                hint=f"use the fp32 model ({FP32_MODEL})",
            ) from exc
        weights = staging / WEIGHTS
        revision = _digest(model, weights, algo="sha1")
        repo = staging / variant.repo_folder
        snap = repo / "snapshots" / revision
        snap.mkdir(parents=True)
        model.rename(snap / "model.onnx")
        weights.rename(snap / WEIGHTS)
        for name in COPIED:
            shutil.copyfile(src / name, snap / name)
        recipe = _recipe(variant, src, snap / "model.onnx", len(calibration))
        (snap / "quantization.json").write_text(json.dumps(recipe, indent=1) + "\n")
        _write_word_table(snap)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(revision)  # no newline, like huggingface_hub
        try:
            repo.rename(cache / variant.repo_folder)
        except OSError:  # another process finished the same build first: keep its copy
            if find(variant, cache) is None:
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    built = find(variant, cache)
    assert built is not None
    _drop_older_recipes(variant, cache)
    return built


def _drop_older_recipes(variant: Variant, cache: Path) -> None:
    """Copies of the variant made by an older recipe (their folder names carry its version):
    nothing loads them any more, and each is tens of MB."""
    stem = variant.repo_folder.removesuffix(f"-v{RECIPE_VERSION}")
    for older in range(1, RECIPE_VERSION):
        if (cache / f"{stem}-v{older}").is_dir():
            _set_aside_broken(cache / f"{stem}-v{older}")


def _set_aside_broken(folder: Path) -> None:
    """A copy's folder that `find` does not accept (a file deleted, a disk that filled) is
    moved aside and removed, so that the new build can take its place."""
    if not folder.exists():
        return
    aside = folder.with_name(f".broken-{os.getpid()}-{folder.name}")
    try:
        folder.rename(aside)
    except OSError:  # another process set it aside (or rebuilt it) first
        return
    shutil.rmtree(aside, ignore_errors=True)


def _recipe(variant: Variant, src: Path, model: Path, calibrated: int) -> dict[str, Any]:
    import onnxruntime

    return {
        "variant": asdict(variant),
        "model_name": variant.model_name,
        "recipe_version": RECIPE_VERSION,
        "source_model": BASE_MODEL,
        "source_sha256": _digest(src / "model.onnx", algo="sha256"),
        "sha256": _digest(model, algo="sha256"),
        "weights_sha256": _digest(model.with_name(WEIGHTS), algo="sha256"),
        "bytes": model.stat().st_size + model.with_name(WEIGHTS).stat().st_size,
        "onnxruntime": onnxruntime.__version__,
        "calibration_texts": min(calibrated, variant.calibration_texts),
    }


# -- loading ------------------------------------------------------------------------------


def register(variant: Variant | str) -> str:
    """Make fastembed know the variant's model name (idempotent); returns that name."""
    variant = VARIANTS[variant] if isinstance(variant, str) else variant
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    with _REGISTER:  # two embedders loading at once (indexing and a query) in one process
        known = {str(m["model"]).lower() for m in TextEmbedding.list_supported_models()}
        if variant.model_name.lower() in known:
            return variant.model_name
        TextEmbedding.add_custom_model(
            model=variant.model_name,
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf=variant.hf_repo),
            dim=DIM,
            model_file="model.onnx",
            description=f"int8 copy of {BASE_MODEL} made locally ({variant.name})",
            license="apache-2.0",
        )
    return variant.model_name


_REGISTER = threading.Lock()


def resolve(
    model_name: str, source_cache: str | Path | None = None, cache: Path | None = None
) -> Quantized | None:
    """For a quantized model name: the copy (built on first use); None for any other name.
    `source_cache` is where the fp32 model is (default: $FASTEMBED_CACHE_PATH, else
    fastembed's default cache)."""
    variant = variant_of(model_name)
    if variant is None:
        return None
    default = (
        os.environ.get("FASTEMBED_CACHE_PATH") or Path(tempfile.gettempdir()) / "fastembed_cache"
    )
    sources = [Path(source_cache or default)]
    built = find(variant, cache or user_cache())
    if built is None:
        if variant.method == "static":
            raise ModelUnavailable(
                f"{model_name} is not built yet and needs calibration texts",
                hint="build it once with memserver.embed.quantize.build(...) "
                "(benchmarks/quantize_variants.py does), or pick a dynamic variant",
            )
        built = build(variant, sources, cache)
    elif _word_table_outdated(built.snapshot / WORD_TABLE_FILE) and os.access(
        built.snapshot, os.W_OK
    ):  # (a read-only copy: no process imports onnx for a file it cannot write)
        _write_word_table(built.snapshot)  # a copy built before the file (or its slots) was
    return built


def _word_table_outdated(path: Path) -> bool:
    """No word-table file, or one written before it said whether the rows may be packed
    (`slots`): read once more from the graph. A `null` file is final."""
    try:
        place = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False  # unreadable: `WordTable.of` ignores it, sessions map the file
    return isinstance(place, dict) and "slots" not in place


def load(model_name: str, threads: int | None = None, **kwargs: Any) -> Any:
    """fastembed's TextEmbedding over a quantized copy, from the cache only."""
    from fastembed import TextEmbedding

    q = resolve(model_name, kwargs.pop("source_cache", None), kwargs.pop("cache", None))
    if q is None:
        raise ModelUnavailable(f"{model_name!r} is not a quantized model name")
    register(variant_of(model_name) or model_name)
    return TextEmbedding(q.model_name, cache_dir=str(q.cache_dir), threads=threads,
                         local_files_only=True, **kwargs)  # fmt: skip


__all__ = [
    "ENV_CACHE",
    "VARIANTS",
    "Quantized",
    "Variant",
    "build",
    "find",
    "load",
    "register",
    "resolve",
    "user_cache",
    "variant_of",
]
