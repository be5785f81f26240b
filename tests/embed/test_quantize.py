"""int8 copies of the embedding model: built from the cached fp32 model, loaded by fastembed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from memserver.core.errors import ModelUnavailable
from memserver.embed import quantize
from tests.conftest import MODEL_CACHE, requires_model

KEPT = "dyn-matmul-pc-no-ffn-out"
TEXTS = [
    "src/config.py\nload_config\ndef load_config(path):\n    with open(path) as fh:\n"
    "        return json.load(fh)",
    "command.go\nCommand.Find\nfunc (c *Command) Find(args []string) (*Command, []string, error)",
    "retry the http request when the server fails, waiting longer each time",
    "lib/document.js\nDocument.prototype.$set\n" + "this.$__setValue(path, val);\n" * 40,
]


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.fixture(scope="module")
def fp32_vectors() -> np.ndarray:
    from fastembed import TextEmbedding

    model = TextEmbedding(quantize.BASE_MODEL, cache_dir=MODEL_CACHE, threads=1)
    return np.asarray(list(model.embed(TEXTS)))


def embed(model_name: str, cache: Path) -> np.ndarray:
    model = quantize.load(model_name, threads=1, source_cache=MODEL_CACHE, cache=cache)
    return np.asarray(list(model.embed(TEXTS)))


@requires_model
@pytest.mark.model
def test_an_int8_copy_is_built_in_the_hub_layout_and_loads_through_fastembed(
    tmp_path: Path, fp32_vectors: np.ndarray
) -> None:
    cache = tmp_path / "models"
    before = tree_state(Path(MODEL_CACHE))
    variant = quantize.VARIANTS[KEPT]
    vecs = embed(variant.model_name, cache)  # builds on first use, then loads
    assert tree_state(Path(MODEL_CACHE)) == before  # the fp32 cache is only read

    repo = cache / variant.repo_folder
    revision = (repo / "refs" / "main").read_text()
    snap = repo / "snapshots" / revision
    files = (snap / "model.onnx").read_bytes() + (snap / quantize.WEIGHTS).read_bytes()
    assert revision == hashlib.sha1(files).hexdigest()
    assert {p.name for p in snap.iterdir()} == {
        "model.onnx",
        quantize.WEIGHTS,
        "quantization.json",
        quantize.WORD_TABLE_FILE,
        *quantize.COPIED,
    }
    table = json.loads((snap / quantize.WORD_TABLE_FILE).read_text())  # where it sits
    assert (table["rows"], table["dim"], table["location"]) == (
        30522,
        quantize.DIM,
        quantize.WEIGHTS,
    )
    assert table["offset"] + table["length"] <= (snap / quantize.WEIGHTS).stat().st_size
    assert [p.name for p in cache.iterdir()] == [variant.repo_folder]  # no staging left
    recipe = json.loads((snap / "quantization.json").read_text())
    assert recipe["variant"]["name"] == KEPT and recipe["bytes"] < 0.8 * 90_359_559

    assert vecs.shape == (len(TEXTS), quantize.DIM)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-3)
    cos = (vecs * fp32_vectors).sum(axis=1)
    assert cos.min() > 0.98, cos

    again = quantize.resolve(variant.model_name, MODEL_CACHE, cache)  # reused, not rebuilt
    assert again is not None and again.snapshot == snap


@requires_model
@pytest.mark.model
def test_the_fp32_control_copy_embeds_exactly_like_the_builtin_model(
    tmp_path: Path, fp32_vectors: np.ndarray
) -> None:
    """Same graph, same registration path: pooling and normalisation match fastembed's own."""
    vecs = embed(quantize.VARIANTS["fp32-copy"].model_name, tmp_path / "models")
    assert (vecs * fp32_vectors).sum(axis=1).min() > 0.99999


@requires_model
@pytest.mark.model
def test_a_copy_keeps_its_weights_in_a_file_onnxruntime_maps(tmp_path: Path) -> None:
    """The tensors are external data beside the graph, so a session maps them (shared, read
    where used) instead of copying them into its heap; a copy by an older recipe, which
    nothing loads any more, is removed when the new one is made."""
    import onnx
    import onnxruntime

    cache = tmp_path / "models"
    variant = quantize.VARIANTS["fp32-copy"]
    stem = variant.repo_folder.removesuffix(f"-v{quantize.RECIPE_VERSION}")
    older, other = cache / f"{stem}-v1", cache / "models--someone--else-v1"
    for folder in (older, other):
        (folder / "refs").mkdir(parents=True)
    built = quantize.resolve(variant.model_name, MODEL_CACHE, cache)
    assert built is not None
    assert sorted(p.name for p in cache.iterdir()) == sorted([variant.repo_folder, other.name])

    graph = onnx.load(str(built.model_file), load_external_data=False)
    big = [t for t in graph.graph.initializer if t.dims and np.prod(t.dims) > 256]
    assert big and all(t.data_location == onnx.TensorProto.EXTERNAL for t in big)
    assert built.model_file.stat().st_size < 1_000_000  # the graph alone

    session = onnxruntime.InferenceSession(str(built.model_file))
    maps = Path("/proc/self/maps")
    if maps.exists():  # Linux: the weights file is mapped into this process
        assert str(built.snapshot / quantize.WEIGHTS) in maps.read_text()
    ids = np.array([[101, 7592, 2088, 102]], dtype=np.int64)
    out = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                             "token_type_ids": np.zeros_like(ids)})  # fmt: skip
    assert out[0].shape == (1, 4, quantize.DIM)


def test_no_cached_fp32_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="no cached fp32") as info:
        quantize.resolve(quantize.NAME_PREFIX + KEPT, tmp_path / "empty", tmp_path / "models")
    assert "FASTEMBED_CACHE_PATH" in info.value.hint
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


def test_a_static_variant_is_never_built_without_calibration_texts(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="calibration"):
        quantize.resolve(quantize.NAME_PREFIX + "qdq-static", tmp_path, tmp_path / "models")


def test_names_select_variants_and_leave_other_models_alone() -> None:
    assert quantize.resolve("sentence-transformers/all-MiniLM-L6-v2") is None
    assert quantize.variant_of("BAAI/bge-small-en-v1.5") is None
    assert quantize.variant_of(quantize.NAME_PREFIX + KEPT) is quantize.VARIANTS[KEPT]
    with pytest.raises(ModelUnavailable) as info:
        quantize.variant_of(quantize.NAME_PREFIX + "int4")
    assert quantize.NAME_PREFIX + KEPT in info.value.hint


def test_the_user_cache_is_per_user_and_overridable(tmp_path: Path) -> None:
    assert quantize.user_cache({quantize.ENV_CACHE: str(tmp_path)}) == tmp_path
    assert quantize.user_cache({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "memserver/models"
    default = quantize.user_cache({})  # not the temp dir, which many systems clear on reboot
    assert default.is_relative_to(Path.home()) and default.parts[-2:] == ("memserver", "models")


@requires_model
@pytest.mark.model
def test_the_embedder_makes_and_loads_the_int8_copy_its_settings_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fp32_vectors: np.ndarray
) -> None:
    from memserver.config import EmbeddingSettings
    from memserver.embed.fastembed import FastEmbedder, known_dim

    monkeypatch.setenv(quantize.ENV_CACHE, str(tmp_path / "models"))
    variant = quantize.VARIANTS[KEPT]
    embedder = FastEmbedder(EmbeddingSettings(model=variant.model_name, cache_dir=MODEL_CACHE))
    assert known_dim(variant.model_name) == embedder.dim == quantize.DIM
    assert embedder.cached()  # the fp32 model is there: the copy can be made
    assert quantize.find(variant, tmp_path / "models") is None
    assert embedder.location() == (
        f"{tmp_path / 'models'} (made on first use), from {quantize.BASE_MODEL} in {MODEL_CACHE}"
    )
    vecs = np.asarray(embedder.embed_documents(TEXTS))  # made now, then loaded
    built = quantize.find(variant, tmp_path / "models")
    assert built is not None
    assert embedder.location().startswith(f"{built.snapshot}, from {quantize.BASE_MODEL} in ")
    assert (vecs * fp32_vectors).sum(axis=1).min() > 0.98
    query = np.asarray(embedder.embed_query(TEXTS[2]))
    assert float(query @ fp32_vectors[2]) > 0.98
    made = quantize.find(variant, tmp_path / "models")
    assert made is not None
    made.model_file.unlink()  # a damaged copy: made again, not an error
    again = FastEmbedder(EmbeddingSettings(model=variant.model_name, cache_dir=MODEL_CACHE))
    assert (np.asarray(again.embed_documents(TEXTS)) * fp32_vectors).sum(axis=1).min() > 0.98
    assert [p.name for p in (tmp_path / "models").iterdir()] == [variant.repo_folder]


def test_an_int8_name_without_its_fp32_model_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memserver.config import EmbeddingSettings
    from memserver.embed.fastembed import FastEmbedder

    monkeypatch.setenv(quantize.ENV_CACHE, str(tmp_path / "models"))
    name = quantize.VARIANTS[KEPT].model_name
    embedder = FastEmbedder(EmbeddingSettings(model=name, cache_dir=str(tmp_path / "empty")))
    assert not embedder.cached()
    with pytest.raises(ModelUnavailable) as info:
        embedder.embed_query("where are requests retried")
    assert name in info.value.message
    assert quantize.BASE_MODEL in info.value.hint and "memserver model fetch" in info.value.hint


@requires_model
@pytest.mark.model
def test_an_int8_word_table_halves_the_copy_and_keeps_its_vectors(
    tmp_path: Path, fp32_vectors: np.ndarray
) -> None:
    import onnx

    cache = tmp_path / "models"
    rows8 = quantize.VARIANTS[KEPT + "-rows8"]
    vecs = embed(rows8.model_name, cache)
    built = quantize.find(rows8, cache)
    assert built is not None
    graph = onnx.load(str(built.model_file)).graph
    tables = {
        i.name: i for i in graph.initializer if i.name.endswith(quantize.WORD_TABLE + ".int8")
    }
    assert [t.data_type for t in tables.values()] == [onnx.TensorProto.INT8]
    assert [t.dims for t in tables.values()] == [[30522, quantize.DIM]]
    assert not any(i.name.endswith(quantize.WORD_TABLE) for i in graph.initializer)
    plain = embed(quantize.NAME_PREFIX + KEPT, cache)
    plain_file = quantize.find(quantize.VARIANTS[KEPT], cache)
    assert plain_file is not None
    assert built.recipe["bytes"] < 0.6 * plain_file.recipe["bytes"]  # graphs and weights
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-3)
    assert (vecs * plain).sum(axis=1).min() > 0.99  # the table's rounding moves little
    assert (vecs * fp32_vectors).sum(axis=1).min() > 0.98
