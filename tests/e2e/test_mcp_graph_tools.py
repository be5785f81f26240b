"""The code graph's MCP tools in-process: outline, symbol, references and neighbors answer
with items that compose with recall (paths, lines, chunk ids), within the budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memserver.engine import Engine
from memserver.server.app import build_server
from memserver.tokens import default_counter
from tests.conftest import SAMPLE, write_tree

pytestmark = pytest.mark.anyio
WAIT = 30


async def call(client: Client, tool: str, **args: Any) -> Any:
    with anyio.fail_after(WAIT):
        return await client.call_tool(tool, args)


def within(result: Any, budget: int) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    count = default_counter().count
    assert data["tokens"] <= budget
    assert count(result.content[0].text) <= budget
    assert count(json.dumps(data, ensure_ascii=False, separators=(",", ":"))) <= budget
    return data


async def test_the_graph_tools_answer_with_items_that_compose(indexed_repo: Path) -> None:
    async with Client(build_server(indexed_repo, None, env={})) as client:
        found = within(await call(client, "symbol", name="RetryPolicy.delays"), 4096)
        [d] = found["definitions"]
        assert (d["path"], d["symbol"], d["kind"]) == (
            "src/http_client.py",
            "RetryPolicy.delays",
            "method",
        )
        assert d["signature"].startswith("def delays(self)")
        chunk = json.loads((await client.read_resource(f"memserver://chunk/{d['chunk_id']}"))
                           .contents[0].text)  # fmt: skip
        assert chunk["start_line"] <= d["start_line"] <= chunk["end_line"]
        refs = within(await call(client, "references", name_or_id=d["id"]), 4096)
        [group] = refs["files"]
        [use] = group["references"]
        assert (group["path"], use["kind"], use["enclosing"]["symbol"]) == (
            "src/http_client.py",
            "call",
            "send_with_retry",
        )
        callers = within(await call(client, "references", name_or_id="RetryPolicy",
                                    kinds=["call"]), 4096)  # fmt: skip
        assert callers["total"] == 0  # made nowhere in the sample, only named as a type
        near = within(await call(client, "neighbors", id=use["chunk_id"]), 4096)
        assert "RetryPolicy.delays" in {c["symbol"] for c in near["callees"]}
        whole = within(await call(client, "outline", budget_tokens=256), 256)
        assert whole["files"] and whole["total"] > 0
        one = within(await call(client, "outline", path="src/http_client.py"), 4096)
        [file] = one["files"]
        tree = {e["symbol"]: e for e in file["definitions"]}
        assert {c["symbol"] for c in tree["RetryPolicy"]["children"]} == {
            "RetryPolicy.__init__",
            "RetryPolicy.delays",
        }


async def test_bad_graph_calls_are_error_results(indexed_repo: Path) -> None:
    async with Client(build_server(indexed_repo, None, env={})) as client:
        empty = await call(client, "symbol", name="  ")
        kind = await call(client, "references", name_or_id="send", kinds=["calls"])
        deep = await call(client, "neighbors", id="send", depth=3)
        path = await call(client, "outline", path="../etc")
        after = await call(client, "symbol", name="load_settings")
    assert empty.is_error and "name is empty" in empty.content[0].text
    assert kind.is_error and "unknown reference kind" in kind.content[0].text
    assert deep.is_error and path.is_error
    assert not after.is_error and after.structured_content["definitions"]


async def test_a_changed_file_is_stale_until_indexed_again(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE)
    Engine(root, None, embedder_flag="hashing", env={}).index()
    (root / "src/config.py").write_text((root / "src/config.py").read_text() + "\n# edited\n")
    async with Client(build_server(root, None, env={})) as client:
        found = within(await call(client, "symbol", name="load_settings"), 4096)
        listed = within(await call(client, "outline", path="src/"), 4096)
    assert found["definitions"][0]["stale"] is True
    assert {f["path"]: f.get("stale", False) for f in listed["files"]} == {
        "src/config.py": True,
        "src/http_client.py": False,
    }


async def test_the_warm_up_reads_the_code_graph_the_first_call_then_uses(
    indexed_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server reads the code graph after loading the index, in the background, so its
    first `symbol` does not wait for the reading (Django 3.2's takes 1.8 s)."""
    from memserver.navigate.view import GraphView
    from memserver.server.backend import Backend

    readings: list[object] = []
    update = GraphView._update
    monkeypatch.setattr(GraphView, "_update", lambda self, held: readings.append(held)
                        or update(self, held))  # fmt: skip
    backend = Backend(indexed_repo, env={})
    backend.warm_up()
    assert backend._thread is not None
    backend._thread.join(WAIT)
    assert readings == [None]  # one whole reading, made before any navigation call
    async with Client(build_server(indexed_repo, None, env={}, backend=backend)) as client:
        found = within(await call(client, "symbol", name="RetryPolicy.delays"), 4096)
    assert found["definitions"] and readings == [None]  # the call used it
