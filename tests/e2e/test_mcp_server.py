"""The MCP server in-process through the SDK's in-memory client, over real stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from memserver.engine import Engine
from memserver.server.app import build_server
from memserver.server.backend import Backend
from tests.conftest import SAMPLE, write_tree

pytestmark = pytest.mark.anyio
WAIT = 30  # seconds: the first call in a process waits for the stores to import and load
EVIDENCE_KEYS = {"id", "path", "start_line", "end_line", "symbol", "kind", "text"}
EXPLAINED_KEYS = {*EVIDENCE_KEYS, "language", "score", "tokens", "routes", "memory_ids"}


def server_for(root: Path) -> Any:
    return build_server(root, None, env={})


async def recall(client: Client, **args: Any) -> Any:
    with anyio.fail_after(WAIT):
        return await client.call_tool("recall", args)


def error_text(result: Any) -> str:
    assert result.is_error, result
    return "\n".join(block.text for block in result.content)


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 requests; initialize handshake
async def test_tools_list_shows_schemas_and_annotations(indexed_repo: Path, mode: str) -> None:
    async with Client(server_for(indexed_repo), mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"recall", "remember", "attribute", "forget", "status", "outline",
                          "symbol", "references", "neighbors"}  # fmt: skip
    writes = {"remember": False, "forget": True}  # tool → destructive
    for name, tool in tools.items():
        ann = tool.annotations
        assert ann is not None and ann.idempotent_hint and ann.open_world_hint is False
        assert ann.read_only_hint is (name not in writes)
        assert ann.destructive_hint is writes.get(name, False)
        assert tool.output_schema is not None and tool.description
    rec = tools["recall"]
    props = rec.input_schema["properties"]
    assert rec.input_schema["required"] == ["query"]
    assert set(props) == {"query", "budget_tokens", "paths", "languages", "kinds",
                          "include_memories", "scope", "explain", "format"}  # fmt: skip
    assert tools["remember"].input_schema["required"] == ["text"]
    assert set(tools["attribute"].input_schema["required"]) == {"answer", "evidence_ids"}
    assert {"forgotten", "stale_marked"} <= set(tools["forget"].output_schema["properties"])
    assert (props["budget_tokens"]["minimum"], props["budget_tokens"]["maximum"]) == (256, 32768)
    assert all(p.get("description") for p in props.values())
    assert {"found", "confidence", "evidence", "tokens", "truncated"} <= set(
        rec.output_schema["properties"]
    )
    for words in ("found", "budget_tokens", "memserver://chunk/{id}", "truncated"):
        assert words in rec.description
    graph = {"outline": [], "symbol": ["name"], "references": ["name_or_id"], "neighbors": ["id"]}
    for name, required in graph.items():
        schema = tools[name].input_schema
        assert schema.get("required", []) == required and "budget_tokens" in schema["properties"]
        assert {"tokens", "truncated"} <= set(tools[name].output_schema["properties"])
        for words in ("chunk_id", "stale", "budget_tokens"):
            assert words in tools[name].description


async def test_recall_returns_structured_evidence_within_budget(indexed_repo: Path) -> None:
    async with Client(server_for(indexed_repo)) as client:
        result = await recall(client, query="RetryPolicy delays backoff", budget_tokens=512)
        scoped = await recall(client, query="register routes", paths=["web/**"])
        python = await recall(client, query="settings", languages=["python"], kinds=["function"],
                              explain=True)  # fmt: skip
    assert not result.is_error
    pack = result.structured_content
    assert pack["tokens"] <= 512 and isinstance(pack["truncated"], bool)
    assert pack["evidence"] and pack["evidence"][0]["path"] == "src/http_client.py"
    for item in pack["evidence"]:
        assert set(item) >= EVIDENCE_KEYS
        lines = (indexed_repo / item["path"]).read_text().splitlines()
        assert item["text"] == "\n".join(lines[item["start_line"] - 1 : item["end_line"]])
    first = pack["evidence"][0]
    text = result.content[0].text  # what the agent reads: compact, within the same budget
    assert text.startswith("found: ") and f"## {first['path']}:{first['start_line']}-" in text
    from memserver.tokens import default_counter

    assert default_counter().count(text) <= 512
    assert all(set(e) >= EXPLAINED_KEYS for e in python.structured_content["evidence"])
    assert {e["path"] for e in scoped.structured_content["evidence"]} == {"web/app.js"}
    evidence = python.structured_content["evidence"]
    assert evidence and all(e["language"] == "python" for e in evidence)
    assert all(e["kind"] == "function" for e in evidence)


async def test_recall_as_a_map_names_files_and_places_within_budget(indexed_repo: Path) -> None:
    async with Client(server_for(indexed_repo)) as client:
        result = await recall(client, query="RetryPolicy delays backoff", format="map")
        bad = await recall(client, query="retry", format="tree")
    assert not result.is_error
    pack = result.structured_content
    assert not pack.get("evidence") and pack["files"]
    top = pack["files"][0]
    assert top["path"] == "src/http_client.py" and top["places"]
    lines = (indexed_repo / top["path"]).read_text().splitlines()
    for start, end, first in top["places"]:
        assert isinstance(first, str) and 1 <= int(start) <= int(end) <= len(lines)
    assert top["path"] in result.content[0].text
    assert "format" in error_text(bad)


BAD_CALLS = {
    "empty query": ({"query": "   "}, "query is empty"),
    "budget too small": ({"query": "retry", "budget_tokens": 10}, "between 256 and 32768"),
    "budget too big": ({"query": "retry", "budget_tokens": 100_000}, "between 256 and 32768"),
    "escaping path": ({"query": "retry", "paths": ["src/../../etc/*"]}, "leaves the project root"),
    "absolute path": ({"query": "retry", "paths": ["/etc/passwd"]}, "is absolute"),
    "invalid glob": ({"query": "retry", "paths": ["src/[z-a].py"]}, "invalid path filter"),
    "oversize query": ({"query": "x" * (256 * 1024 + 1)}, "limit is 262,144 bytes"),
    "oversize filters": ({"query": "retry", "kinds": ["k" * 1024] * 300}, "kinds is"),
    "wrong type": ({"query": "retry", "budget_tokens": "lots"}, "budget_tokens"),
}


@pytest.mark.parametrize("args, expected", BAD_CALLS.values(), ids=BAD_CALLS.keys())
async def test_bad_arguments_are_error_results_and_the_server_keeps_working(
    indexed_repo: Path, args: dict[str, Any], expected: str
) -> None:
    async with Client(server_for(indexed_repo)) as client:
        text = error_text(await recall(client, **args))
        after = await recall(client, query="parse HTTP response")
    assert expected in text
    if "What to do:" not in text:  # the SDK's own schema check names the field instead
        assert args.keys() & set(text.split())
    assert not after.is_error and after.structured_content["evidence"]


async def test_missing_index_says_run_index_then_recovers_without_restart(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "fresh", SAMPLE)
    async with Client(server_for(root)) as client:
        missing = error_text(await recall(client, query="retry"))
        with anyio.fail_after(WAIT):
            status = await client.call_tool("status", {})
        await anyio.to_thread.run_sync(
            lambda: Engine(root, None, embedder_flag="hashing", env={}).index()
        )
        found = await recall(client, query="send with retry")
    assert "no index at" in missing and "run `memserver index`" in missing
    assert "run `memserver index`" in error_text(status)
    assert not found.is_error and found.structured_content["evidence"]


async def test_rebuilt_index_is_reloaded_without_restart(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "rebuilt", SAMPLE)
    Engine(root, None, embedder_flag="hashing", env={}).index()
    async with Client(server_for(root)) as client:
        before = await client.call_tool("status", {})
        await recall(client, query="retry")

        def rebuild() -> None:  # BM25 only: another embedder and vector size
            Engine(root, None, embedder_flag="none", env={}).index(rebuild=True)

        await anyio.to_thread.run_sync(rebuild)
        result = await recall(client, query="send with retry")
        after = await client.call_tool("status", {})
    assert before.structured_content["embedder"] == "hashing-256"
    assert not result.is_error and result.structured_content["evidence"]
    assert after.structured_content["embedder"] == "none"


async def test_status_tool_and_resources(indexed_repo: Path) -> None:
    async with Client(server_for(indexed_repo)) as client:
        with anyio.fail_after(WAIT):
            status = (await client.call_tool("status", {})).structured_content
            listed = [str(r.uri) for r in (await client.list_resources()).resources]
            templates = (await client.list_resource_templates()).resource_templates
            as_resource = await client.read_resource("memserver://status")
        item = (await recall(client, query="createUser")).structured_content["evidence"][0]
        with anyio.fail_after(WAIT):
            chunk = await client.read_resource(f"memserver://chunk/{item['id']}")
            with pytest.raises(MCPError, match=r"no chunk with id c_0+ in this index"):
                await client.read_resource("memserver://chunk/c_" + "0" * 32)
            with pytest.raises(MCPError, match="not a chunk id"):
                await client.read_resource("memserver://chunk/nope")
    assert status["files"] == 4 and status["up_to_date"] and "reranker" in status
    assert status["server"]["engine"] == "ready"
    assert listed == ["memserver://status"]
    assert {t.uri_template for t in templates} == {
        "memserver://chunk/{id}", "memserver://memory/{id}"
    }  # fmt: skip
    assert json.loads(as_resource.contents[0].text)["chunks"] == status["chunks"]
    body = json.loads(chunk.contents[0].text)
    assert (body["id"], body["path"], body["start_line"]) == (
        item["id"], item["path"], item["start_line"]
    )  # fmt: skip
    assert body["text"] in item["text"]


async def test_memory_resource_reads_a_cited_memory(indexed_repo: Path) -> None:
    async with Client(server_for(indexed_repo)) as client:
        pack = (await recall(client, query="load the JSON settings file", explain=True)
                ).structured_content  # fmt: skip
        memory_ids = [m for e in pack["evidence"] for m in e["memory_ids"]]
        if not memory_ids:
            pytest.skip("the distiller wrote no memory for this corpus")
        with anyio.fail_after(WAIT):
            read = await client.read_resource(f"memserver://memory/{memory_ids[0]}")
    memory = json.loads(read.contents[0].text)
    assert memory["id"] == memory_ids[0] and memory["source_ids"] and memory["text"]


async def test_event_loop_answers_while_the_engine_is_busy(indexed_repo: Path) -> None:
    """A blocked engine call must not block other requests (it runs in a worker thread)."""
    backend = Backend(indexed_repo, env={})
    backend.lock.acquire()  # the engine stays "loading" until released
    done = anyio.Event()
    results: list[Any] = []

    async def slow_recall(client: Client) -> None:
        results.append(await client.call_tool("recall", {"query": "retry"}))
        done.set()

    server = build_server(indexed_repo, backend=backend)
    async with Client(server) as client, anyio.create_task_group() as tg:
        try:
            tg.start_soon(slow_recall, client)
            with anyio.fail_after(5):
                tools = await client.list_tools()
                templates = await client.list_resource_templates()
            assert not done.is_set()
        finally:
            backend.lock.release()  # never leave the worker thread waiting
        with anyio.fail_after(WAIT):
            await done.wait()
    assert len(tools.tools) == 9 and len(templates.resource_templates) == 2
    assert not results[0].is_error
