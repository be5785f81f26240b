"""The int8 copy run without fastembed (`embed.runtime`): the same vectors, bit for bit, as
fastembed's TextEmbedding over the same files, and no fastembed import on the way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memserver.embed import quantize
from memserver.embed.runtime import PooledModel, load_tokenizer
from memserver.embed.wordtable import WordTable
from tests.conftest import MODEL_CACHE, requires_model

TEXTS = [
    "",
    "a",
    "retry the http request when the server fails, waiting longer each time",
    "héllo wörld, 日本語のテキスト 🙂 and <b>markup</b> [CLS] [SEP] [PAD]",
    "src/config.py\nload_config\ndef load_config(path):\n    with open(path) as fh:\n"
    "        return json.load(fh)",
    "lib/document.js\nDocument.prototype.$set\n" + "this.$__setValue(path, val);\n" * 200,
]
VARIANT = quantize.VARIANTS["fp32-copy"]  # the copy's build path, quick to make


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> quantize.Quantized:
    built = quantize.resolve(VARIANT.model_name, MODEL_CACHE, tmp_path_factory.mktemp("m"))
    assert built is not None
    return built


@requires_model
@pytest.mark.model
def test_vectors_are_fastembeds_bit_for_bit_alone_and_in_padded_batches(
    copy: quantize.Quantized,
) -> None:
    fastembed = quantize.load(VARIANT.model_name, threads=1, source_cache=MODEL_CACHE,
                              cache=copy.cache_dir)  # fmt: skip
    ours = PooledModel(copy.snapshot, threads=1)
    for text in TEXTS:  # one at a time, as queries and the int8 copy embed
        theirs = next(iter(fastembed.query_embed(text)))
        mine = next(iter(ours.query_embed(text)))
        assert mine.dtype == theirs.dtype == np.float32
        assert np.array_equal(mine, theirs), text[:40]
    batched = np.asarray(list(ours.passage_embed(TEXTS, batch_size=4)))  # padded batches
    assert np.array_equal(batched, np.asarray(list(fastembed.passage_embed(TEXTS, batch_size=4))))
    assert batched.shape == (len(TEXTS), quantize.DIM)
    assert np.allclose(np.linalg.norm(batched[1:], axis=1), 1.0, atol=1e-5)


@requires_model
@pytest.mark.model
def test_the_tokenizer_truncates_at_the_configs_limit(copy: quantize.Quantized) -> None:
    limit = json.loads((copy.snapshot / "tokenizer_config.json").read_text())["model_max_length"]
    encoded = load_tokenizer(copy.snapshot).encode("word " * (2 * limit))
    assert len(encoded.ids) == limit
    assert encoded.tokens[0] == "[CLS]" and encoded.tokens[-1] == "[SEP]"


@requires_model
@pytest.mark.model
def test_embedding_a_query_with_a_copy_never_imports_fastembed(copy: quantize.Quantized) -> None:
    """What keeps fastembed's 20 MB of libraries out of a server that embeds queries (and
    onnx's 17 MB, which only a build of the copy needs)."""
    script = (
        "import sys\n"
        "from memserver.config import EmbeddingSettings\n"
        "from memserver.embed import make_embedder\n"
        f"e = make_embedder(EmbeddingSettings(model={VARIANT.model_name!r}))\n"
        "assert e is not None and e.cached()\n"
        "v = e.embed_query('where is the retry policy')\n"
        "print(len(v), 'fastembed' in sys.modules, 'onnx' in sys.modules)\n"
    )
    env = {**os.environ, quantize.ENV_CACHE: str(copy.cache_dir)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120, check=True)  # fmt: skip
    assert out.stdout.split() == [str(quantize.DIM), "False", "False"], out.stderr


@requires_model
@pytest.mark.model
def test_the_word_table_is_read_only_where_texts_need_it(
    copy: quantize.Quantized, tmp_path: Path
) -> None:
    """Sessions read the word-embedding table's rows from the weights file as their texts
    ask (one shared table per file), and embed exactly as a session that maps the whole
    table from the file."""
    plain_folder = tmp_path / "plain"  # the same copy without the table's place
    plain_folder.mkdir()
    for f in copy.snapshot.iterdir():
        if f.name != quantize.WORD_TABLE_FILE:
            (plain_folder / f.name).symlink_to(f)
    plain = PooledModel(plain_folder, threads=1)
    assert plain.words is None
    lazy = PooledModel(copy.snapshot, threads=1)
    assert lazy.words is not None and PooledModel(copy.snapshot, threads=1).words is lazy.words
    words = lazy.words
    before = set(np.flatnonzero(words.loaded).tolist())
    text = "retry the http request when the server fails"
    mine = next(iter(lazy.query_embed(text)))
    assert np.array_equal(mine, next(iter(plain.query_embed(text))))
    asked = set(load_tokenizer(copy.snapshot).encode(text).ids)
    assert set(np.flatnonzero(words.loaded).tolist()) == before | asked
    assert words.slots  # the graph reads the ids in the table's Gather alone: rows packed
    assert words.used == int(words.loaded.sum())
    assert sorted(words.slot_of[words.loaded].tolist()) == list(range(words.used))
    assert not words.table[words.used :].any()  # nothing read that no text asked for
    weights = np.memmap(copy.snapshot / quantize.WEIGHTS, np.float32, mode="r")
    table = weights[: words.rows * words.dim].reshape(words.rows, words.dim)
    rows = sorted(asked)
    assert np.array_equal(words.table[words.slot_of[rows]], table[rows])  # the file's values
    batched = np.asarray(list(lazy.passage_embed(TEXTS, batch_size=4)))
    assert np.array_equal(batched, np.asarray(list(plain.passage_embed(TEXTS, batch_size=4))))


@requires_model
@pytest.mark.model
def test_a_word_table_file_that_does_not_fit_the_weights_is_not_used(
    copy: quantize.Quantized, tmp_path: Path
) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    for f in copy.snapshot.iterdir():
        if f.name != quantize.WORD_TABLE_FILE:
            (folder / f.name).symlink_to(f)
    place = json.loads((copy.snapshot / quantize.WORD_TABLE_FILE).read_text())
    for wrong in ({"rows": place["rows"] * 4}, {"offset": 10**12}, {"location": "../x.data"}):
        (folder / quantize.WORD_TABLE_FILE).write_text(json.dumps({**place, **wrong}))
        assert WordTable.of(folder) is None
    (folder / quantize.WORD_TABLE_FILE).write_text("{not json")
    assert WordTable.of(folder) is None
    (folder / quantize.WORD_TABLE_FILE).unlink()
    quantize._write_word_table(folder)  # what `resolve` does for a copy built before it
    assert json.loads((folder / quantize.WORD_TABLE_FILE).read_text()) == place


@requires_model
@pytest.mark.model
def test_resolving_a_copy_writes_a_word_table_file_from_before_slots_again(
    copy: quantize.Quantized,
) -> None:
    """A copy built before the file said `slots` gets it on its next resolve, unless its
    folder cannot be written (then every process would parse the graph again for nothing)."""
    path = copy.snapshot / quantize.WORD_TABLE_FILE
    place = json.loads(path.read_text())
    old = json.dumps({k: v for k, v in place.items() if k != "slots"})
    try:
        path.write_text(old)
        copy.snapshot.chmod(0o555)
        if not os.access(copy.snapshot, os.W_OK):  # (root writes anyway)
            quantize.resolve(VARIANT.model_name, MODEL_CACHE, copy.cache_dir)
            assert path.read_text() == old
        copy.snapshot.chmod(0o755)
        quantize.resolve(VARIANT.model_name, MODEL_CACHE, copy.cache_dir)
        assert json.loads(path.read_text()) == place and place["slots"] is True
    finally:
        copy.snapshot.chmod(0o755)
        path.write_text(json.dumps(place))


def test_a_model_without_a_word_table_to_read_says_so_once(tmp_path: Path) -> None:
    """A graph with no fp32 table that a Gather of input_ids reads (an int8 table, here a
    graph with none) gets a `null` word_table.json: its sessions map the file, and no
    later process parses the graph again to find out."""
    import onnx
    from onnx import TensorProto, helper

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, None])
    out = helper.make_tensor_value_info("out", TensorProto.INT64, [1, None])
    graph = helper.make_graph([helper.make_node("Identity", ["input_ids"], ["out"])], "g",
                              [ids], [out])  # fmt: skip
    onnx.save(helper.make_model(graph), str(tmp_path / "model.onnx"))
    assert quantize.word_table_place(tmp_path / "model.onnx") is None
    quantize._write_word_table(tmp_path)
    assert json.loads((tmp_path / quantize.WORD_TABLE_FILE).read_text()) is None
    assert WordTable.of(tmp_path) is None
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {"model.onnx", quantize.WORD_TABLE_FILE}  # nothing left aside


def _tiny_model(folder: Path, also_read_by: str | None) -> np.ndarray:
    """A graph whose fp32 word table (6 rows of 3) is external data a Gather of input_ids
    reads, with a Shape of the ids and, when asked, one more node reading their values.
    The table's values."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    table = np.arange(18, dtype=np.float32).reshape(6, 3) + 0.5
    weights = numpy_helper.from_array(table, "m.embeddings.word_embeddings.weight")
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, None])
    outs = [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, None, 3]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2])]  # fmt: skip
    nodes = [helper.make_node("Gather", [weights.name, "input_ids"], ["hidden"]),
             helper.make_node("Shape", ["input_ids"], ["shape"])]  # fmt: skip
    if also_read_by == "If":  # a branch reads the ids from the outer graph, unlisted
        branch = helper.make_graph(
            [helper.make_node("Identity", ["input_ids"], ["seen"])], "branch", [],
            [helper.make_tensor_value_info("seen", TensorProto.INT64, [1, None])],
        )  # fmt: skip
        cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
        nodes += [helper.make_node("Constant", [], ["c"], value=cond),
                  helper.make_node("If", ["c"], ["more"], then_branch=branch,
                                   else_branch=branch)]  # fmt: skip
        outs.append(helper.make_tensor_value_info("more", TensorProto.INT64, [1, None]))
    elif also_read_by:
        nodes.append(helper.make_node(also_read_by, ["input_ids"], ["more"]))
        outs.append(helper.make_tensor_value_info("more", TensorProto.INT64, [1, None]))
    graph = helper.make_graph(nodes, "g", [ids], outs, [weights])
    onnx.save(
        helper.make_model(graph), str(folder / "model.onnx"), save_as_external_data=True,
        all_tensors_to_one_file=True, location=quantize.WEIGHTS, size_threshold=0,
    )  # fmt: skip
    return table


@pytest.mark.parametrize("also_read_by", [None, "Identity", "If"])
def test_word_table_rows_are_packed_only_where_the_gather_alone_reads_the_ids(
    tmp_path: Path, also_read_by: str | None
) -> None:
    """Rows sit in the order texts first ask for them (a slot each, the ids translated)
    when the table's Gather alone reads the ids' values; where another node reads them
    too, each row stays at its id and the ids are fed as they are."""
    table = _tiny_model(tmp_path, also_read_by)
    place = quantize.word_table_place(tmp_path / "model.onnx")
    assert place is not None and place["slots"] is (also_read_by is None)
    quantize._write_word_table(tmp_path)
    words = WordTable.of(tmp_path)
    assert words is not None and words.slots is place["slots"]
    asked = np.array([[4, 1, 4], [2, 0, 0]])
    fed = words.need(asked)
    if words.slots:  # the rows first asked for take the first slots, in id order
        expected = dict(zip([0, 1, 2, 4], range(4), strict=True))
        assert np.array_equal(fed, np.vectorize(expected.get)(asked))
    else:
        assert np.array_equal(fed, asked)
    assert np.array_equal(words.table[fed], table[asked])  # what the Gather reads
    assert words.used == 4 and not words.table[words.used if words.slots else 5 :].any()
    again = words.need(np.array([[5, 4]]))
    assert np.array_equal(words.table[again], table[[[5, 4]]])
    assert np.array_equal(words.need(np.array([[6, -1]])), [[6, -1]])  # the session rejects
    assert np.array_equal(words.need(asked), fed)  # a slot, once given, stays


def test_a_word_table_file_from_before_slots_is_written_again(tmp_path: Path) -> None:
    _tiny_model(tmp_path, None)
    place = quantize.word_table_place(tmp_path / "model.onnx")
    assert place is not None
    path = tmp_path / quantize.WORD_TABLE_FILE
    assert quantize._word_table_outdated(path)  # none yet
    path.write_text(json.dumps({k: v for k, v in place.items() if k != "slots"}))
    assert quantize._word_table_outdated(path)
    quantize._write_word_table(tmp_path)
    assert json.loads(path.read_text()) == place and not quantize._word_table_outdated(path)
    path.write_text("null")
    assert not quantize._word_table_outdated(path)  # final: no table to read lazily


def test_a_folder_without_a_tokenizer_config_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match=r"tokenizer_config\.json"):
        load_tokenizer(tmp_path)
