"""Erasure reaches every byte: after `forget --erase` no table version, data file, keyword
segment, event, derived memory, resource or later export holds the text."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memserver.cli import main
from memserver.core.requests import Note
from tests.store import scanner

MARKER = "EXPORTLEAKMARKER7777"
WHERE = "for the staging cluster in the eu-west region behind the bastion host of the ops team"
NOTE = f"{MARKER} is the admin passphrase {WHERE}."
TWIN = f"HUNTERTWO is the admin passphrase {WHERE}."
BLOCK = f"```sh\nexport ADMIN_HINT={MARKER}x\nrun-deploy --staging\n```"


def _everywhere(engine, export: Path | None = None) -> list[str]:
    found = scanner.in_table_versions(engine.index_dir, MARKER)
    found += scanner.in_keyword_index(engine.index_dir, [MARKER, "exportleakmarker"])
    found += scanner.in_files(engine.index_dir, MARKER)
    if export is not None:
        found += scanner.in_artifact(export, MARKER)
    return found


def test_erase_leaves_no_byte_of_a_note_anywhere(sample_repo: Path, make_engine) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    service = engine.memory_service()
    first = service.remember(Note(f"{NOTE}\n\n{BLOCK}", tags=("ops",)))
    twin = service.remember(Note(TWIN))
    assert first.memory_ids and first.code_blocks and not first.duplicate
    assert _everywhere(engine)  # the scanner sees it before
    report = engine.consolidator().run()
    merged = [a for a in report.abstractions if MARKER in a["text"]]
    assert merged, "the two notes should consolidate into one abstraction"

    # forget first, erase later: the second call still reaches what the first forgot
    service.forget([first.note_id], reason="leaked")
    assert _everywhere(engine)  # forgotten, not erased: still on disk
    service.forget([first.note_id], reason="leaked", erase=True)

    out = engine.index_dir.parent / "index.tar.zst"
    engine.export(out)
    assert _everywhere(engine, out) == []
    store = engine.open_store()
    abstraction = merged[0]["id"]
    assert store.memories.get([abstraction])[abstraction].status == "forgotten"
    # the twin is no longer superseded by an abstraction that is gone
    assert {store.memories.get(twin.memory_ids)[m].status for m in twin.memory_ids} == {"active"}
    recalled = engine.recaller(rerank=False).recall("admin passphrase staging cluster")
    assert all(MARKER not in e.text for e in recalled.evidence)
    assert any(e.id == twin.note_id for e in recalled.evidence)


def test_erase_through_the_cli_then_export(sample_repo: Path, make_engine) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    env = {"MEMSERVER_EMBEDDING_MODEL": "hashing"}
    runner = CliRunner()
    made = runner.invoke(main, ["remember", "--root", str(sample_repo), NOTE, "--json"], env=env)
    note_id = json.loads(made.stdout)["note_id"]
    gone = runner.invoke(main, ["forget", "--root", str(sample_repo), "--id", note_id,
                                "--erase", "--json"], env=env)  # fmt: skip
    assert gone.exit_code == 0, gone.output
    out = sample_repo.parent / "after.tar.zst"
    assert runner.invoke(main, ["export", "--root", str(sample_repo), "--out", str(out)],
                         env=env).exit_code == 0  # fmt: skip
    assert _everywhere(engine, out) == []
