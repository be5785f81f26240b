"""Turns through the write path, batched remembering, and the LoCoMo harness end to end."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from memserver.core.requests import Note
from memserver.engine import Engine
from memserver.eval.locomo import auroc, normalise_evidence, run, session_time, turns

CONVERSATION = {
    "speaker_a": "Ana",
    "speaker_b": "Ben",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {
            "speaker": "Ana",
            "dia_id": "D1:1",
            "text": "I adopted a greyhound called Pixel yesterday!",
        },
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Wow! I started pottery classes last week."},
        {"speaker": "Ana", "dia_id": "D1:3", "text": "Yes!", "blip_caption": "a dog on a sofa"},
    ],
    "session_2_date_time": "10:00 am on 20 June, 2023",
    "session_2": [
        {"speaker": "Ben", "dia_id": "D2:1", "text": "My pottery teacher moved to Lisbon."},
        {"speaker": "Ana", "dia_id": "D2:2", "text": "Yes!"},
    ],
}
QA = [
    {"question": "When did Ana adopt Pixel?", "answer": "7 May 2023", "evidence": ["D1:1"],
     "category": 2},
    {"question": "Where did Ben's pottery teacher move?", "answer": "Lisbon",
     "evidence": ["D:2:1; D1:02"], "category": 4},
    {"question": "What did Ben name his greyhound?", "evidence": ["D1:1"], "category": 5,
     "adversarial_answer": "Pixel"},
]  # fmt: skip


def test_turns_follow_sessions_and_carry_captions() -> None:
    got = list(turns(CONVERSATION))
    assert [t[0] for t in got] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert got[2][2] == "Ana: Yes! [shares image: a dog on a sofa]"
    assert got[0][3] == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert session_time("10:00 am on 20 June, 2023").month == 6


def test_evidence_ids_are_normalised_and_unknown_ones_dropped() -> None:
    known = {"D1:1", "D2:1", "D1:2", "D30:5"}
    assert normalise_evidence(["D:2:1; D1:02", "D30:05", "D9:9"], known) == {
        "D2:1", "D1:2", "D30:5",
    }  # fmt: skip
    assert auroc([0.9, 0.8], [0.1, 0.8]) == 0.875


def test_a_batch_remembers_each_turn_on_its_own(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    svc = Engine(root, tmp_path / "idx", embedder_flag="hashing", env={}).memory_service()
    scope = (("session", "s1"),)
    notes = [Note(text, event_time=when, scope=scope, turn_id=dia, speaker=speaker)
             for dia, speaker, text, when in turns(CONVERSATION)]  # fmt: skip
    results = svc.remember_many([*notes, notes[0]])
    assert [r.duplicate for r in results] == [False] * 5 + [True]
    assert results[-1].note_id == results[0].note_id
    assert results[2].note_id != results[4].note_id  # "Yes!" twice: two turns
    chunks = svc.store.chunks.get([r.note_id for r in results[:5]])
    assert {c.symbol for c, _ in chunks.values()} == {"D1:1", "D1:2", "D1:3", "D2:1", "D2:2"}
    assert all(c.origin == "turn" and embedded for c, embedded in chunks.values())
    first = svc.store.memories.get(results[0].memory_ids)
    assert any("(2023-05-07)" in m.text for m in first.values())  # "yesterday", dated
    assert all(m.entities[0] == "Ana" for m in first.values())  # the speaker, for every one
    again = svc.remember_many(notes)
    assert all(r.duplicate for r in again)
    assert svc.store.events.count() == 5  # one "add" per stored turn; duplicates log nothing


def test_the_locomo_harness_scores_a_small_conversation(tmp_path: Path) -> None:
    data = tmp_path / "mini.json"
    data.write_text(json.dumps([{"sample_id": "mini", "conversation": CONVERSATION, "qa": QA}]))

    def make(root: Path, index_dir: Path) -> Engine:
        return Engine(root, index_dir, embedder_flag="hashing", env={})

    report = run(data, tmp_path / "work", make_engine=make, consolidate=True)
    assert report["turns"] == 5 and report["conversations"] == 1
    assert report["pooled"]["questions"] == 2
    assert set(report["per_category"]) == {"2", "4"}
    assert report["per_category"]["4"]["recall@5"] == 1.0  # both evidence turns, 5 turns in all
    for k in ("recall@5", "recall@10", "recall@20", "all@10"):
        assert 0.0 <= report["pooled"][k] <= 1.0
    assert report["cat5"]["questions"] == 1
    assert 0.0 <= report["cat5"]["abstain"] <= 1.0
    after = report["consolidated"]
    assert after["memories"]["before"] >= after["memories"]["after"] > 0
    assert after["pooled"]["questions"] == 2


def test_a_jsonl_conversation_is_remembered_from_the_command_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memserver.cli import main

    root = tmp_path / "proj"
    root.mkdir()
    lines = [
        {"speaker": "Ana", "text": "We moved deploys to Fridays.", "time": "2024-03-12T10:00:00Z",
         "turn_id": "t1"},
        {"speaker": "Ben", "text": "My token is ghp_" + "a1B2c3D4e5" * 4, "time": "2024-03-12"},
    ]  # fmt: skip
    conv = tmp_path / "chat.jsonl"
    conv.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    args = ["remember", "--root", str(root), "--conversation", str(conv),
            "--scope", "session=s1", "--json"]  # fmt: skip
    env = {"MEMSERVER_EMBEDDING_MODEL": "hashing"}
    first = CliRunner().invoke(main, args, env=env)
    again = CliRunner().invoke(main, args, env=env)
    assert first.exit_code == 0, first.output
    out, repeat = json.loads(first.stdout), json.loads(again.stdout)
    assert (out["turns"], out["stored"], out["redactions"]) == (2, 2, 1)
    assert (repeat["stored"], repeat["duplicates"]) == (0, 2)
    engine = Engine(root, None, env={})
    chunks = engine.open_store().chunks.get(out["turn_ids"])
    assert sorted(c.symbol for c, _ in chunks.values()) == ["T2", "t1"]
    assert all("a1B2c3D4e5" not in c.text for c, _ in chunks.values())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"speaker": 3\n')
    broken = CliRunner().invoke(main, ["remember", "--root", str(root), "--conversation",
                                       str(bad)], env=env)  # fmt: skip
    assert broken.exit_code == 2 and "line 1" in broken.output


def test_low_information_turns_are_scored_low_dropped_and_counted(tmp_path: Path) -> None:
    from memserver.memory.salience import turn_scores

    texts = [
        "Ana: I adopted a greyhound called Pixel in Lisbon last spring.",
        "Ben: Haha, nice!",
        "Ben: Haha, nice!",
        "Ben: My pottery teacher moved to Porto and opened a studio.",
    ]
    import numpy as np

    from memserver.embed.hashing import HashingEmbedder

    vectors = np.asarray(HashingEmbedder().embed_documents(texts), dtype=np.float32)
    scores = turn_scores(texts, vectors)
    assert scores[2] < 0.07 < min(scores[0], scores[3])  # a repeat brings nothing new
    root = tmp_path / "empty"
    root.mkdir()
    svc = Engine(root, tmp_path / "idx", embedder_flag="hashing", env={}).memory_service()
    notes = [Note(t, event_time=datetime(2024, 1, 1, tzinfo=UTC), turn_id=f"T{i}",
                  scope=(("session", "s"),)) for i, t in enumerate(texts)]  # fmt: skip
    out = svc.remember_conversation(notes)
    assert out.discarded_turns == ["T2"] and out.stored == 3
    assert out.discard_rate == 0.25 and out.warning == ""
    chatter = [Note("Ben: Haha, nice!", turn_id=f"C{i}") for i in range(10)]
    noisy = svc.remember_conversation(chatter)
    assert noisy.discard_rate == 0.9 and "lower the threshold" in noisy.warning
