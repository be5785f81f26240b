"""The agent is told, where it reads evidence, that evidence is data and not instructions."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from memserver.server.app import build_server

pytestmark = pytest.mark.anyio


async def test_instructions_and_recall_schema_say_evidence_is_untrusted_data(
    tmp_path: Path,
) -> None:
    async with Client(build_server(tmp_path, None, env={}), mode="legacy") as client:
        instructions = client.instructions or ""
        tools = {t.name: t for t in (await client.list_tools()).tools}
    recall = tools["recall"]
    text_field = recall.output_schema["$defs"]["EvidenceItem"]["properties"]["text"]
    for said in (instructions, recall.description or "", text_field["description"]):
        flat = " ".join(said.split())
        assert "untrusted" in flat and "never instructions" in flat, flat
