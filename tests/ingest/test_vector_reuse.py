"""A text is embedded once: vectors are found again by (model, text) whatever the row id,
through the real stores with the hashing embedder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memserver.core.errors import ConfigError
from memserver.engine import Engine
from memserver.ingest.pipeline import keyword_only
from memserver.store import statecache
from memserver.text.passages import chunk_vector_key
from tests.conftest import SAMPLE, write_tree


def _engine(root: Path, memory_vectors: str = "own") -> Engine:
    env = {"MEMSERVER_INDEX_MEMORY_VECTORS": memory_vectors}
    return Engine(root, root.parent / "index", embedder_flag="hashing", env=env)


def _vectors(engine: Engine, path: str) -> dict[str, list[float]]:
    """Chunk text → vector of the current chunks of `path`."""
    store = engine.open_store()
    chunks = store.chunks.find(f"valid_to IS NULL AND path = '{path}'")
    got = store.chunks.vectors_of([c.id for c in chunks])
    return {c.text: got[c.id] for c in chunks}


def test_a_moved_file_keeps_its_chunks_vectors(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    first = _engine(root).index()
    assert first.texts_embedded > 0
    before = _vectors(_engine(root), "src/config.py")
    (root / "lib").mkdir()
    shutil.move(root / "src/config.py", root / "lib/settings.py")
    report = _engine(root).index()
    assert report.chunks_added == len(before) and report.chunks_reused == len(before)
    after = _vectors(_engine(root), "lib/settings.py")
    assert after == before  # copied, not embedded again under the new path
    # only memories that name the path are new text
    assert report.texts_embedded == report.memories_embedded - report.memories_reused


def test_the_same_code_at_two_paths_is_embedded_once(tmp_path: Path) -> None:
    """One vector a key, within a run as across runs: embedded once per path, the vectors
    a run ended with would depend on which one a run cut short had stored before."""
    body = SAMPLE["src/config.py"]
    root = write_tree(tmp_path / "repo", {"a/config.py": body, "b/config.py": body})
    report = _engine(root, "none").index()
    a, b = _vectors(_engine(root), "a/config.py"), _vectors(_engine(root), "b/config.py")
    assert a and a == b
    assert report.chunks_embedded == 2 * len(a) and report.texts_embedded == len(a)
    assert _engine(root).open_store().chunks.count_unembedded() == 0


def test_a_moved_file_embeds_nothing_when_memories_share_their_chunks_vector(
    tmp_path: Path,
) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    first = _engine(root, "chunk").index()
    assert first.memories_added > 0 and first.memories_reused == first.memories_embedded
    assert first.texts_embedded == first.chunks_embedded  # one text per chunk, none per memory
    shutil.move(root / "src/config.py", root / "src/settings.py")
    report = _engine(root, "chunk").index()
    assert report.chunks_added > 0 and report.memories_added > 0
    assert report.texts_embedded == 0


def test_a_tree_seen_before_embeds_nothing(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    old = {p: (root / p).read_text() for p in SAMPLE}
    _engine(root).index()
    client = root / "src/http_client.py"
    client.write_text(client.read_text().replace("attempts", "tries"))
    (root / "src/config.py").unlink()
    write_tree(root, {"src/extra.py": "def shout(text):\n    return text.upper() + '!'\n"})
    changed = _engine(root).index()
    assert changed.texts_embedded > 0
    (root / "src/extra.py").unlink()
    write_tree(root, old)  # back to the first version
    back = _engine(root).index()
    assert back.chunks_added > 0
    assert back.texts_embedded == 0
    assert _engine(root).open_store().chunks.count_unembedded() == 0


def test_an_erased_chunk_hands_on_no_vector(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    engine = _engine(root)
    engine.index()
    store = engine.open_store()
    chunks = store.chunks.find("valid_to IS NULL AND path = 'src/config.py'")
    keys = [chunk_vector_key(store.meta.embedder, c) for c in chunks]
    assert len(store.chunks.vectors_by_key(keys)) == len(set(keys))
    engine.memory_service().forget(paths=["src/config.py"], erase=True)
    assert _engine(root).open_store().chunks.vectors_by_key(keys) == {}
    # the same text at another path is embedded afresh
    write_tree(root, {"lib/config.py": SAMPLE["src/config.py"]})
    report = _engine(root).index()
    assert report.chunks_reused == 0 and report.texts_embedded >= len(chunks)


def test_keyword_only_memories_are_never_pending(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    report = _engine(root, "none").index()
    assert report.memories_added > 0 and report.memories_embedded == 0
    assert report.texts_embedded == report.chunks_embedded
    store = _engine(root, "none").open_store()
    assert store.memories.count_unembedded() == report.memories_added
    hits = _engine(root, "none").recaller(rerank=False).recall("parse HTTP response").evidence
    assert any(e.path == "src/config.py" for e in hits)


def _embedded_types(engine: Engine) -> dict[str, set[bool]]:
    """Memory type → whether its memories have a vector (the set of values seen)."""
    rows = engine.open_store().memories.table.to_arrow().to_pylist()
    seen: dict[str, set[bool]] = {}
    for r in rows:
        seen.setdefault(r["type"], set()).add(bool(r["embedded"]))
    return seen


def test_definitions_embeds_one_memory_per_chunk_and_a_switch_keeps_to_the_setting(
    tmp_path: Path,
) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    own = _engine(root, "own").index()
    assert _embedded_types(_engine(root))["fact"] == {True}
    # the same tree under "definitions": the facts and procedures lose their vectors,
    # and nothing is embedded again
    again = _engine(root, "definitions").index()
    assert again.texts_embedded == 0
    seen = _embedded_types(_engine(root, "definitions"))
    assert seen.pop("definition") == {True}
    assert seen and all(v == {False} for v in seen.values())
    store = _engine(root, "definitions").open_store()
    definitions = store.memories.count_active() - store.memories.count_unembedded()
    assert 0 < definitions < own.memories_embedded
    # nothing waits for a vector the setting does not give
    assert store.memories.count_unembedded(keyword_only("definitions")) == 0
    # a fresh index under "definitions" embeds the same memories
    fresh = write_tree(tmp_path / "other" / "repo", SAMPLE)  # an index of its own
    first = _engine(fresh, "definitions").index()
    assert first.memories_embedded == definitions
    assert first.texts_embedded == first.chunks_embedded + definitions
    # and back to "own": the others are embedded again
    back = _engine(root, "own").index()
    assert back.memories_embedded == own.memories_embedded - definitions
    assert all(v == {True} for v in _embedded_types(_engine(root)).values())


def test_an_unknown_memory_vectors_setting_is_refused(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    with pytest.raises(ConfigError, match="memory_vectors"):
        _engine(root, "some").index()


class _Recorder:
    """A `Progress` that keeps what it was told: phase → (total, advanced)."""

    def __init__(self) -> None:
        self.phases: dict[str, list[int]] = {}
        self._at = ""

    def start(self, phase: str, total: int) -> None:
        self._at = phase
        self.phases[phase] = [total, 0]

    def advance(self, n: int = 1) -> None:
        self.phases[self._at][1] += n

    def finish(self) -> None:
        pass


def test_progress_counts_chunks_and_memories_apart_as_the_summary_does(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    seen = _Recorder()
    report = _engine(root).index(progress=seen)
    assert seen.phases["chunks"] == [report.chunks_embedded] * 2
    assert seen.phases["memories"] == [report.memories_embedded] * 2
    # a second tree with a file moved: copied vectors count where the model's would
    shutil.move(root / "src/config.py", root / "src/settings.py")
    seen = _Recorder()
    moved = _engine(root).index(progress=seen)
    assert moved.chunks_reused > 0
    assert seen.phases["chunks"] == [moved.chunks_embedded] * 2
    assert seen.phases["memories"] == [moved.memories_embedded] * 2


def test_an_index_embedded_from_another_chunk_text_embeds_its_chunks_again(
    tmp_path: Path,
) -> None:
    """An index from a release whose model read another text of a chunk (or another
    `[embedding] max_chars`) embeds its file chunks again, once; a fresh index does not."""
    import json

    root = write_tree(tmp_path / "repo", SAMPLE)
    first = _engine(root).index()
    assert first.chunks_embedded > 0 and first.chunks_embedded_again == 0
    meta_file = root.parent / "index" / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta.pop("passages")  # as an index written before the record existed
    meta_file.write_text(json.dumps(meta))
    statecache.forget(meta_file.parent)  # whose run left another state key
    again = _engine(root).index()
    files = _engine(root).open_store().chunks.count_current(origin="file")
    assert again.chunks_embedded_again == files == again.chunks_embedded
    assert again.texts_embedded == files and again.memories_embedded == 0
    assert _engine(root).index().chunks_embedded_again == 0  # recorded: once
    env = {"MEMSERVER_INDEX_MEMORY_VECTORS": "own", "MEMSERVER_EMBEDDING_MAX_CHARS": "100"}
    shorter = Engine(root, root.parent / "index", embedder_flag="hashing", env=env).index()
    assert shorter.chunks_embedded_again == files and shorter.texts_embedded == files
