"""remember, forget and attribute through the SDK's in-memory client, over real stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memserver.server.app import build_server
from tests.conftest import requires_model

pytestmark = pytest.mark.anyio
WAIT = 30
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


async def call(client: Client, tool: str, **args: Any) -> Any:
    with anyio.fail_after(WAIT):
        return await client.call_tool(tool, args)


def error_text(result: Any) -> str:
    assert result.is_error, result
    return "\n".join(block.text for block in result.content)


@pytest.fixture
def repo(sample_repo: Path, make_engine) -> Path:
    make_engine(sample_repo).index()
    return sample_repo


@pytest.fixture
def model_repo(sample_repo: Path, make_engine) -> Path:
    make_engine(sample_repo, embedder=MODEL).index()
    return sample_repo


@requires_model
@pytest.mark.model
async def test_remember_recall_attribute_forget_round_trip(model_repo: Path) -> None:
    repo = model_repo
    note = (
        "We decided that `send_with_retry` waits 0.5 s, then doubles the delay each attempt. "
        "Ask ops@example.com before changing it."
    )
    async with Client(build_server(repo, None, env={})) as client:
        first = await call(client, "remember", text=note, paths=["src/http_client.py"],
                           tags=["retries"], event_time="2025-01-02")  # fmt: skip
        stored = first.structured_content
        again = (await call(client, "remember", text=note)).structured_content
        found = (await call(client, "recall", query="how long does send_with_retry wait")
                 ).structured_content  # fmt: skip
        ids = [e["id"] for e in found["evidence"]]
        answer = (
            "send_with_retry waits 0.5 s and doubles the delay on each attempt. "
            "The web app registers a /health route."
        )
        attributed = (await call(client, "attribute", answer=answer, evidence_ids=ids)
                      ).structured_content  # fmt: skip
        gone = (await call(client, "forget", ids=[stored["note_id"]], reason="test",
                           erase=True)).structured_content  # fmt: skip
        after = (await call(client, "recall", query="how long does send_with_retry wait")
                 ).structured_content  # fmt: skip
    assert not stored["duplicate"] and again["duplicate"] and stored["redactions"] == 1
    assert again["note_id"] == stored["note_id"] and stored["memory_ids"]
    assert stored["note_id"] in ids
    assert set(attributed["cited"]) <= set(ids) and attributed["cited"]
    assert len(attributed["claims"]) == 2
    assert all(s["id"] in ids for c in attributed["claims"] for s in c["supported_by"])
    assert set(gone["forgotten"]) >= {stored["note_id"], *stored["memory_ids"]}
    assert stored["note_id"] not in {e["id"] for e in after["evidence"]}


async def test_scoped_notes_stay_in_their_scope(repo: Path) -> None:
    async with Client(build_server(repo, None, env={})) as client:
        mine = (await call(client, "remember", text="The platypus flag is on for alice.",
                           scope={"user": "alice"})).structured_content  # fmt: skip
        theirs = (await call(client, "recall", query="platypus flag", scope={"user": "bob"})
                  ).structured_content  # fmt: skip
        own = (await call(client, "recall", query="platypus flag", scope={"user": "alice"})
               ).structured_content  # fmt: skip
        bad = await call(client, "recall", query="platypus", scope={"team": "x"})
    assert mine["note_id"] not in {e["id"] for e in theirs["evidence"]}
    assert mine["note_id"] in {e["id"] for e in own["evidence"]}
    assert "scope keys are user, session, agent" in error_text(bad)


async def test_memory_tools_explain_bad_input(repo: Path) -> None:
    async with Client(build_server(repo, None, env={})) as client:
        cases = {
            "empty note": await call(client, "remember", text="  "),
            "huge note": await call(client, "remember", text="x" * 300_000),
            "bad kind": await call(client, "remember", text="hello", kind="gossip"),
            "bad time": await call(client, "remember", text="hello", event_time="soonish"),
            "escaping path": await call(client, "remember", text="hello", paths=["../x.py"]),
            "no target": await call(client, "forget", reason="x"),
            "bad id": await call(client, "forget", ids=["nope"], reason="x"),
            "unknown id": await call(client, "forget", ids=["m_" + "0" * 32], reason="x"),
            "code chunk": None,
            "no evidence": await call(client, "attribute", answer="It retries.", evidence_ids=[]),
            "empty answer": await call(
                client, "attribute", answer=" ", evidence_ids=["c_" + "0" * 32]
            ),
        }
        found = (await call(client, "recall", query="send_with_retry")).structured_content
        code_id = next(e["id"] for e in found["evidence"] if e["path"].endswith(".py"))
        cases["code chunk"] = await call(client, "forget", ids=[code_id], reason="x")
        unknown = (await call(client, "attribute", answer="It retries.",
                              evidence_ids=["c_" + "1" * 32])).structured_content  # fmt: skip
        alive = await call(client, "status")
    expected = {
        "empty note": "empty", "huge note": "256 KB", "bad kind": "unknown kind",
        "bad time": "ISO-8601", "escaping path": "leaves the project root",
        "no target": "nothing to forget", "bad id": "not a chunk or memory id",
        "unknown id": "unknown id", "code chunk": "forget path",
        "no evidence": "no evidence ids", "empty answer": "empty",
    }  # fmt: skip
    for name, result in cases.items():
        text = error_text(result)
        assert expected[name] in text, (name, text)
        assert "What to do" in text, name
    assert unknown["rejected"] == ["c_" + "1" * 32] and unknown["cited"] == []
    assert unknown["unsupported"] == ["It retries."]
    assert not alive.is_error
